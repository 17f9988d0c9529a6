"""A restarted ``kapi serve`` serves the CRDs it stored before its first request (issue 14): the
group in discovery, the custom objects, and ``kubectl api-resources`` listing them."""

from __future__ import annotations

import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.crd.test_lifecycle import CRD_PATH, crd
from tests.e2e.conftest import Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e


def client(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, verify=ssl.create_default_context(cafile=str(server.ca_file)), headers={"Authorization": f"Bearer {server.token}"},
                        timeout=30)


def wait_established(c: httpx.Client, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = c.get(f"{CRD_PATH}/{name}").json()
        if any(x["type"] == "Established" and x["status"] == "True" for x in (got.get("status") or {}).get("conditions") or []):
            return got
        time.sleep(0.05)
    raise AssertionError(f"{name} never established")


def test_restart_serves_stored_crds(tmp_path: Path) -> None:
    data = tmp_path / "d"
    server = start_server(data)
    try:
        with client(server) as c:
            assert c.post(CRD_PATH, json=crd(shortNames=["wg"], categories=["all"])).status_code == 201
            wait_established(c, "widgets.example.com")
            obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"a": 1}}
            reply = c.post("/apis/example.com/v1/namespaces/default/widgets", json=obj)
            assert reply.status_code == 201, reply.text
    finally:
        stop_server(server)
    server = start_server(data)
    try:
        with client(server) as c:
            # The first requests after start-up: no waiting.
            listed = c.get("/apis/example.com/v1")
            assert listed.status_code == 200, listed.text
            assert [r["name"] for r in listed.json()["resources"]] == ["widgets", "widgets/status"]
            got = c.get("/apis/example.com/v1/namespaces/default/widgets/w1")
            assert got.status_code == 200 and got.json()["spec"] == {"a": 1}
        out = subprocess.run([kubectl_binary("1.33"), "--kubeconfig", str(server.kubeconfig), "api-resources",
                              "--api-group=example.com"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        row = out.stdout.splitlines()[1].split()
        assert row == ["widgets", "wg", "example.com/v1", "true", "Widget"], out.stdout
    finally:
        stop_server(server)
