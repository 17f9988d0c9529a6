"""The command line: flags map onto Config."""

from __future__ import annotations

import argparse

import pytest

from kapi.__main__ import _duration_s, build_parser, config_from_args
from kapi.config import Config


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("12", 12)])
def test_durations(text: str, seconds: float) -> None:
    assert _duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5x", "m", "1h30"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        _duration_s(text)


def test_flags_to_config() -> None:
    args = build_parser().parse_args([
        "serve", "--data-dir", "/tmp/x", "--secure-port", "0", "--storage-backend", "memory",
        "--authorization-mode", "AlwaysAllow,AlwaysDeny", "--anonymous-auth", "false",
        "--min-request-timeout", "30m", "--shutdown-delay-duration", "2s", "--watch-cache-sizes", "pods#1000",
        "--group-commit", "false", "--watch-cache-index", "pods=spec.nodeName,status.phase",
        "--watch-cache-index", "events=involvedObject.name", "--watch-cache", "false",
        "--max-object-bytes", "2000000"])
    cfg = config_from_args(args)
    assert cfg.data_dir == "/tmp/x" and cfg.secure_port == 0 and cfg.storage_backend == "memory"
    assert cfg.authorization_mode == ("AlwaysAllow", "AlwaysDeny") and not cfg.anonymous_auth
    assert cfg.min_request_timeout_s == 1800 and cfg.shutdown_delay_s == 2
    assert cfg.watch_cache_sizes == {"pods": 1000} and not cfg.group_commit
    assert cfg.watch_cache_indexes == {"pods": ("spec.nodeName", "status.phase"),
                                       "events": ("involvedObject.name",)}
    assert not cfg.watch_cache and cfg.max_object_bytes == 2_000_000


def test_default_index_is_pods_by_node() -> None:
    cfg = config_from_args(build_parser().parse_args(["serve"]))
    assert cfg.watch_cache_indexes == {"pods": ("spec.nodeName",)} and cfg.watch_cache


@pytest.mark.parametrize("flags", [["--secure-port", "65536"], ["--secure-port", "-1"], ["--max-body-bytes", "-5"],
                                   ["--max-object-bytes", "big"],
                                   ["--request-timeout", "-3s"], ["--default-watch-cache-size", "ten"]])
def test_bad_flag_values_are_one_line_errors(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 10: a bad flag value is refused in one line (no usage block), exit status 2."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", *flags])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flags[0] in err, err


def test_authorization_defaults_to_node_rbac() -> None:
    """Issue 12: safe by default, as kubeadm's and k3s's kube-apiserver (no AlwaysAllow unless asked)."""
    assert Config().authorization_mode == ("Node", "RBAC")
    assert config_from_args(build_parser().parse_args(["serve"])).authorization_mode == ("Node", "RBAC")
    serve = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["serve"]
    assert "default: Node,RBAC" in " ".join(serve.format_help().split())
