"""``kapi version`` / ``kapi --version`` and the start-up warning of the pure twins (issue 31), in process.

tests/packaging/test_wheel.py checks both again in an installed wheel and an installed sdist.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import kapi._fast
from kapi import __version__
from kapi.__main__ import main
from kapi.config import Config
from kapi.server.serve import KUBE_VERSION, serve
from kapi.server.supervise import FatalError

WARNING = "the compiled twins are not loaded"


def _expected_twins() -> str:
    if kapi._fast.USING_EXTENSIONS:
        return "compiled twins: loaded"
    if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
        return "compiled twins: not loaded: KAPI_NO_EXTENSIONS=1 chose the pure twins"
    return "compiled twins: " + kapi._fast.twins()


def test_version_prints_kapi_kubernetes_and_the_twins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"kapi {__version__}", f"Kubernetes {KUBE_VERSION['gitVersion']}",
                                                    _expected_twins()]
    assert KUBE_VERSION["gitVersion"].startswith("v1.33.")


def test_dash_dash_version_prints_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    main(["version"])
    expected = capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == expected


def test_twins_say_why_the_pure_ones_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kapi._fast, "USING_EXTENSIONS", True)
    assert kapi._fast.twins() == "loaded"
    monkeypatch.setattr(kapi._fast, "USING_EXTENSIONS", False)
    monkeypatch.setenv("KAPI_NO_EXTENSIONS", "1")
    assert kapi._fast.twins() == "not loaded: KAPI_NO_EXTENSIONS=1 chose the pure twins"
    monkeypatch.delenv("KAPI_NO_EXTENSIONS")
    monkeypatch.setattr(kapi._fast, "_want_c", True)
    assert kapi._fast.twins().startswith("not loaded: not built (no C compiler")
    monkeypatch.setattr(kapi._fast, "_want_c", False)
    assert "runs the pure twins (the compiled ones are CPython's)" in kapi._fast.twins()


def test_extensions_missing_only_when_wanted_and_not_loaded() -> None:
    assert kapi._fast.EXTENSIONS_MISSING == (kapi._fast._want_c and not kapi._fast.USING_EXTENSIONS)
    if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
        assert not kapi._fast.EXTENSIONS_MISSING  # a choice is not warned about


@pytest.mark.parametrize("missing", [True, False])
async def test_serve_warns_once_at_start_up_when_the_compiled_twins_are_missing(
        missing: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    monkeypatch.setattr(kapi._fast, "EXTENSIONS_MISSING", missing)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")  # the server stops at its data directory, right after the warning
    with caplog.at_level(logging.WARNING, logger="kapi"), pytest.raises(FatalError):
        await serve(Config(data_dir=str(not_a_dir), storage_backend="memory", secure_port=0))
    warnings = [r for r in caplog.records if WARNING in r.getMessage()]
    assert len(warnings) == (1 if missing else 0)
    if missing:
        assert warnings[0].levelno == logging.WARNING and warnings[0].name == "kapi"
        assert "pure-Python twins, slower" in warnings[0].getMessage()
