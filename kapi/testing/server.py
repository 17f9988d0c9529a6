"""``Server``: a ``kapi serve`` process for one test, one test class or one session.

It drives kapi only through the CLI contract (docs/DESIGN.md) and HTTP: ``kapi serve --data-dir DIR
--secure-port 0`` writes ``DIR/admin.kubeconfig`` once it is ready to serve, and ``/readyz`` then
answers ``ok``. Everything here is synchronous (a subprocess and plain HTTPS requests), so it works
from unittest, from a script, and under asyncio, trio or no event loop at all.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import kubernetes.client

    from kapi.client import Client

__all__ = ["Server", "ServerError"]

LOG_TAIL_LINES = 40  # how much of the server's log an error shows


class ServerError(RuntimeError):
    """The server could not be started (it exited, or was not ready in time), or it is not running."""


class _Running:
    """What one start of the server made: the process, its folder, what its kubeconfig says."""

    def __init__(self, proc: subprocess.Popen[bytes], tmp: Path, data_dir: Path, log: Path) -> None:
        self.proc = proc
        self.tmp = tmp
        self.data_dir = data_dir
        self.log = log
        self.url = ""
        self.token = ""
        self.ssl_context: ssl.SSLContext | None = None
        self.users = 0


def _stop(proc: subprocess.Popen[bytes], tmp: Path, timeout_s: float) -> None:
    """SIGTERM, SIGKILL if the process has not exited within ``timeout_s``; then remove ``tmp``.

    A module function, not a method: ``weakref.finalize`` calls it at garbage collection or at exit
    for a server nobody stopped, and it must not keep the ``Server`` alive.
    """
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"


class Server:
    """A ``kapi serve`` on a free port of 127.0.0.1, ready when ``start()`` returns.

    ::

        with Server("--authorization-mode=RBAC") as server:
            subprocess.run(["kubectl", "--kubeconfig", server.kubeconfig, "get", "pods"])

    Args:
        flags: ``kapi serve`` flags, as on its command line (``"--audit-log-path=/tmp/a.log"``).
        data_dir: where the server keeps its state, certificates and ``admin.kubeconfig``; default a
            fresh folder in a temporary directory, removed by ``stop()``. A given one is kept.
        storage: ``--storage-backend``: ``memory`` (the default: nothing to clean up, the fastest),
            ``sqlite`` (under ``data_dir``: survives a restart) or ``etcd3``, the etcd cluster that
            ``flags`` name with kube-apiserver's etcd flags, passed through as they are:
            ``--etcd-servers`` (required), ``--etcd-prefix``, ``--etcd-cafile``, ``--etcd-certfile``,
            ``--etcd-keyfile``, ``--etcd-servers-overrides``, ``--etcd-compaction-interval``. What the
            server wrote stays in etcd after ``stop()``: a restart on the same flags finds it, and
            servers sharing one etcd keep apart with a ``--etcd-prefix`` each::

                with EtcdCluster() as etcd, Server("--etcd-servers", etcd.servers, "--etcd-prefix",
                                                   "/test-a", storage="etcd3") as server:
                    ...

            A ``--storage-backend`` among ``flags`` wins.
        start_timeout_s: how long ``start()`` waits for the server to be ready.
        stop_timeout_s: how long ``stop()`` waits after SIGTERM before it sends SIGKILL.
        env: environment variables for the server process, over this process's.

    ``start()`` after ``stop()`` starts it again (on another port; with a fresh temporary data
    directory unless ``data_dir`` was given). A server nobody stopped is stopped when it is
    garbage-collected, or at the latest when the interpreter exits.
    """

    def __init__(self, *flags: str, data_dir: str | os.PathLike[str] | None = None, storage: str = "memory",
                 start_timeout_s: float = 60.0, stop_timeout_s: float = 15.0,
                 env: Mapping[str, str] | None = None) -> None:
        self.flags: tuple[str, ...] = tuple(str(f) for f in flags)
        self.storage = storage
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.env: dict[str, str] = dict(env or {})
        self._data_dir = None if data_dir is None else Path(data_dir)
        self._run: _Running | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        where = self._run.url if self._run is not None else "not running"
        return f"<kapi.testing.Server {where}>"

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        """Started, and the process has not exited since."""
        return self._run is not None and self._run.proc.poll() is None

    def command(self, data_dir: str | os.PathLike[str]) -> list[str]:
        """The command line ``start()`` runs: this interpreter's ``kapi serve``, a free port, the flags."""
        return [sys.executable, "-m", "kapi", "serve", "--data-dir", str(data_dir), "--secure-port", "0",
                "--bind-address", "127.0.0.1", "--storage-backend", self.storage, *self.flags]

    def start(self) -> Server:
        """Start the server and return once it serves: its kubeconfig is written and ``/readyz`` is ok.

        Raises:
            ServerError: it is running already; or it exited, or was not ready within
                ``start_timeout_s`` (it is stopped then); the message ends with its log's last lines.
        """
        if self._run is not None:
            raise ServerError(f"{self!r} is started already (stop() it first)")
        tmp = Path(tempfile.mkdtemp(prefix="kapi-testing-"))
        data_dir = self._data_dir if self._data_dir is not None else tmp / "data"
        log = tmp / "server.log"
        try:
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            (data_dir / "admin.kubeconfig").unlink(missing_ok=True)  # a last run's: wait for this run's
            with open(log, "wb") as out:
                proc = subprocess.Popen(self.command(data_dir), stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, env={**os.environ, **self.env})
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._run = _Running(proc, tmp, data_dir, log)
        self._finalizer = weakref.finalize(self, _stop, proc, tmp, self.stop_timeout_s)
        try:
            self._wait_ready(self._run)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, run: _Running) -> None:
        kubeconfig = run.data_dir / "admin.kubeconfig"
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            code = run.proc.poll()
            if code is not None:
                raise ServerError(f"kapi serve exited with code {code} before it was ready "
                                  f"({' '.join(self.command(run.data_dir))}); its log ends:\n{_tail(run.log)}")
            if kubeconfig.exists():
                if not run.url:
                    self._read_kubeconfig(run, kubeconfig)
                try:
                    status, body = self._http(run, "GET", "/readyz", None, {}, timeout_s=5.0)
                except OSError:  # refused, reset, timed out: not serving yet
                    status, body = 0, b""
                if status == 200 and body.strip() == b"ok":
                    return
            if time.monotonic() > deadline:
                raise ServerError(f"kapi serve was not ready within {self.start_timeout_s:g} s; "
                                  f"its log ends:\n{_tail(run.log)}")
            time.sleep(0.02)

    @staticmethod
    def _read_kubeconfig(run: _Running, path: Path) -> None:
        import yaml

        doc = yaml.safe_load(path.read_text())  # written whole (a rename): never half a file
        cluster = doc["clusters"][0]["cluster"]
        run.url = str(cluster["server"])
        run.token = str(doc["users"][0]["user"].get("token") or "")
        run.ssl_context = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``stop_timeout_s``; remove its temporary folder.

        Does nothing if it is not running.
        """
        finalizer, self._finalizer, self._run = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    # ------------------------------------------------------------------ what a test uses

    def _running(self) -> _Running:
        if self._run is None:
            raise ServerError(f"{self!r}: start() it first")
        return self._run

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (group ``system:masters``: RBAC allows it everything)."""
        return self._running().data_dir / "admin.kubeconfig"

    @property
    def url(self) -> str:
        """The server's URL, ``https://127.0.0.1:<port>``."""
        return self._running().url

    @property
    def data_dir(self) -> Path:
        """The server's data directory (its certificates under ``pki/``)."""
        return self._running().data_dir

    @property
    def pid(self) -> int:
        """The server process's id."""
        return self._running().proc.pid

    @property
    def log(self) -> Path:
        """The server's log (standard output and error); removed by ``stop()`` with the temporary folder."""
        return self._running().log

    def user(self, name: str, groups: Sequence[str] = (), *, namespace: str = "default") -> Path:
        """A kubeconfig for user ``name`` in ``groups``, as ``kapi kubeconfig`` mints it: a client
        certificate from the server's CA. What the user may do is up to RBAC.

        Returns:
            its path, in the server's temporary folder (removed by ``stop()``).

        Raises:
            ServerError: ``kapi kubeconfig`` failed (its message says why).
        """
        run = self._running()
        run.users += 1
        out = run.tmp / "users" / f"{run.users}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.kubeconfig"
        out.parent.mkdir(mode=0o700, exist_ok=True)
        cmd = [sys.executable, "-m", "kapi", "kubeconfig", "--user", name, "--data-dir", str(run.data_dir),
               "--server", run.url, "--namespace", namespace, "--out", str(out)]
        for group in groups:
            cmd += ["--group", group]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              env={**os.environ, **self.env})
        if proc.returncode != 0:
            raise ServerError(f"kapi kubeconfig --user {name} failed ({proc.returncode}): {proc.stderr.strip()}")
        return out

    def client(self, kubeconfig: str | os.PathLike[str] | None = None, **options: Any) -> Client:
        """A ``kapi.client.Client`` (async: trio or asyncio) as admin, or as the user of ``kubeconfig``
        (from ``user()``); ``options`` go to ``Client`` (``http2=``, ``protobuf=``, ``timeout_s=``).
        Close it: ``async with server.client() as client: ...``."""
        from kapi.client import Client, load_kubeconfig

        return Client(load_kubeconfig(kubeconfig if kubeconfig is not None else self.kubeconfig), **options)

    def kubernetes_configuration(self, kubeconfig: str | os.PathLike[str] | None = None,
                                 ) -> kubernetes.client.Configuration:
        """A ``kubernetes.client.Configuration`` for the ``kubernetes`` package (installed separately),
        as admin or as the user of ``kubeconfig`` (from ``user()``)::

            api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(server.kubernetes_configuration()))
        """
        import kubernetes.client
        import kubernetes.config

        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(kubeconfig if kubeconfig is not None else self.kubeconfig),
                                           client_configuration=configuration)
        return configuration

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json") -> tuple[int, Any]:
        """One request as admin, synchronous: ``body`` sent as JSON (bytes as they are).

        Returns:
            the status code and the decoded JSON body (None when empty; the text when not JSON).
        """
        run = self._running()
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        status, raw = self._http(run, method, path, data, headers, timeout_s=60.0)
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    @staticmethod
    def _http(run: _Running, method: str, path: str, data: bytes | None, headers: dict[str, str], *,
              timeout_s: float) -> tuple[int, bytes]:
        req = urllib.request.Request(run.url + path, data=data, method=method, headers=headers)
        if run.token:
            req.add_header("Authorization", f"Bearer {run.token}")
        try:
            with urllib.request.urlopen(req, context=run.ssl_context, timeout=timeout_s) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, err.read()
