"""The server process: start-up files, restart, kill -9, graceful shutdown, HTTP/2, health."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import httpx
import pytest
import yaml

from .conftest import Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e


def _cm(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"k": name}}).encode()


def test_startup_files_and_kubeconfig(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d")
    try:
        cfg = yaml.safe_load(srv.kubeconfig.read_text())
        assert cfg["current-context"] == "kapi"
        assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
        assert (tmp_path / "d" / "pki" / "ca.crt").exists()
        assert (tmp_path / "d" / "pki" / "apiserver.key").stat().st_mode & 0o077 == 0
        assert srv.url.startswith("https://127.0.0.1:") and not srv.url.endswith(":0")
        status, _, body = srv.request("GET", "/readyz?verbose")
        assert status == 200 and body.decode().splitlines()[-1] == "readyz check passed"
        log = srv.log.read_text()
        assert "admin.kubeconfig" in log and "ca.crt" in log
    finally:
        assert stop_server(srv) == 0


def test_state_survives_restart_and_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "d"
    srv = start_server(data)
    acknowledged = []
    for i in range(50):
        status, _, _ = srv.request("POST", "/api/v1/namespaces/default/configmaps", _cm(f"c{i}"),
                                   {"Content-Type": "application/json"})
        assert status == 201
        acknowledged.append(f"c{i}")
    token = srv.token
    stop_server(srv, signal.SIGKILL)
    srv = start_server(data)
    try:
        assert srv.token == token  # the credential is reused
        status, _, body = srv.request("GET", "/api/v1/namespaces/default/configmaps")
        names = {i["metadata"]["name"] for i in json.loads(body)["items"]}
        assert set(acknowledged) <= names
        status, _, _ = srv.request("POST", "/api/v1/namespaces/default/configmaps", _cm("c0"),
                                   {"Content-Type": "application/json"})
        assert status == 409
    finally:
        stop_server(srv)


def test_graceful_shutdown_closes_watches_and_exits_zero(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d")
    ctx = ssl.create_default_context(cafile=str(srv.ca_file))
    req = urllib.request.Request(srv.url + "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0")
    req.add_header("Authorization", f"Bearer {srv.token}")
    lines: list[bytes] = []
    ended = threading.Event()

    def read_watch() -> None:
        with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
            for line in resp:
                lines.append(line)
        ended.set()

    t = threading.Thread(target=read_watch, daemon=True)
    t.start()
    status, _, _ = srv.request("POST", "/api/v1/namespaces/default/configmaps", _cm("w1"),
                               {"Content-Type": "application/json"})
    assert status == 201
    deadline = time.monotonic() + 10
    while not any(b'"w1"' in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(json.loads(line)["type"] == "ADDED" and json.loads(line)["object"]["metadata"]["name"] == "w1"
               for line in lines)
    code = stop_server(srv, signal.SIGTERM)
    assert code == 0
    assert ended.wait(10), "the watch stream was not ended by the shutdown"


def test_readyz_fails_during_shutdown_delay(tmp_path: Path) -> None:
    """The real signal path, over HTTPS. The delay is far longer than the test needs, and the test waits
    for the server's own log line rather than a guessed time; the delay's length and what follows it
    are tests/http/test_shutdown_delay.py's, on trio's clock."""
    srv = start_server(tmp_path / "d", "--shutdown-delay-duration", "600s")
    try:
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60  # only a server that never logs it waits this long
        while "shutting down: readyz fails now; draining in 600.0s" not in srv.log.read_text():
            assert srv.proc.poll() is None and time.monotonic() < deadline, srv.log.read_text()
            time.sleep(0.05)
        status, _, body = srv.request("GET", "/readyz")
        assert status == 503 and b"[-]shutdown failed" in body
        status, _, _ = srv.request("GET", "/livez")
        assert status == 200
        assert srv.proc.poll() is None  # still serving: the delay has not run out
    finally:
        stop_server(srv, signal.SIGKILL)


def test_http2_and_http11(server: Server) -> None:
    for http2 in (True, False):
        with httpx.Client(http2=http2, verify=ssl.create_default_context(cafile=str(server.ca_file)),
                          headers={"Authorization": f"Bearer {server.token}"}) as c:
            r = c.get(server.url + "/api/v1/namespaces/default")
            assert r.status_code == 200
            assert r.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
            assert r.json()["metadata"]["name"] == "default"


def test_anonymous_auth_false_refuses_requests_without_credentials(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d", "--anonymous-auth", "false")
    try:
        status, _, body = srv.request("GET", "/api/v1/namespaces", token="")
        assert status == 401 and json.loads(body)["reason"] == "Unauthorized"
        status, _, _ = srv.request("GET", "/api/v1/namespaces")
        assert status == 200
    finally:
        stop_server(srv)


def test_token_auth_file_and_always_deny(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-token,alice,1001,"dev,ops"\n')
    srv = start_server(tmp_path / "d", "--token-auth-file", str(tokens), "--authorization-mode", "AlwaysDeny")
    try:
        status, _, body = srv.request("GET", "/api/v1/namespaces", token="alice-token")
        assert status == 403
        assert 'User "alice" cannot list resource "namespaces"' in json.loads(body)["message"]
        status, _, _ = srv.request("GET", "/api/v1/namespaces")  # the admin is in system:masters
        assert status == 200
    finally:
        stop_server(srv)


def test_x509_client_certificate_authenticates(tmp_path: Path) -> None:
    """The admin client certificate alone (no token) is a system:masters credential."""
    srv = start_server(tmp_path / "d", "--anonymous-auth", "false", "--authorization-mode", "AlwaysDeny")
    try:
        pki = srv.data_dir / "pki"
        ctx = ssl.create_default_context(cafile=str(srv.ca_file))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        with httpx.Client(verify=ctx) as c:
            assert c.get(srv.url + "/api/v1/namespaces/default").status_code == 200
        with httpx.Client(verify=ssl.create_default_context(cafile=str(srv.ca_file))) as c:
            assert c.get(srv.url + "/api/v1/namespaces/default").status_code == 401
        cfg = yaml.safe_load(srv.kubeconfig.read_text())
        del cfg["users"][0]["user"]["token"]
        only_cert = tmp_path / "cert.kubeconfig"
        only_cert.write_text(yaml.safe_dump(cfg))
        binary = kubectl_binary("1.33")
        out = subprocess.run([binary, "--kubeconfig", str(only_cert), "get", "ns", "default", "-o", "name"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "namespace/default"
    finally:
        stop_server(srv)
