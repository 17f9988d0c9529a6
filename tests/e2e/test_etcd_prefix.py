"""--etcd-prefix is the root of every storage key, as kube-apiserver's (issue 11)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kapi.__main__ import build_parser, config_from_args
from kapi.object.meta import key_root

from .conftest import start_server, stop_server


def test_key_root_joins_as_kube_does() -> None:
    assert key_root("/registry") == "/registry"
    assert key_root("registry/") == "/registry"
    assert key_root("//a//b/") == "/a/b"
    assert key_root("/") == ""


def test_flag_sets_the_config() -> None:
    args = build_parser().parse_args(["serve", "--etcd-prefix", "/custom"])
    assert config_from_args(args).etcd_prefix == "/custom"
    assert config_from_args(build_parser().parse_args(["serve"])).etcd_prefix == "/registry"


@pytest.mark.e2e
def test_objects_are_stored_under_the_prefix(tmp_path: Path) -> None:
    data = tmp_path / "d"
    srv = start_server(data, "--etcd-prefix", "/custom/")
    try:
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "under-prefix"}}).encode()
        status, _, _ = srv.request("POST", "/api/v1/namespaces/default/configmaps", body,
                                   {"Content-Type": "application/json"})
        assert status == 201
        status, _, listed = srv.request("GET", "/api/v1/namespaces/default/configmaps")
        assert status == 200 and "under-prefix" in {i["metadata"]["name"] for i in json.loads(listed)["items"]}
    finally:
        assert stop_server(srv) == 0
    with sqlite3.connect(data / "kapi.db") as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM current")]
    assert "/custom/configmaps/default/under-prefix" in keys
    assert "/custom/namespaces/default" in keys
    assert not [k for k in keys if k.startswith("/registry/")]
