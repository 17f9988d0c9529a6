"""The pods and client processes the server benchmarks drive a ``kapi serve`` with.

``bench_cache.py``, ``bench_informer.py``, ``bench_protobuf_list.py`` and ``harness.py``
share them: the pod ``Layout`` (realistic pods from the fixture, spread over nodes and
namespaces) and ``load_pods``, creating them through the API from spawned client
processes; reads that cost the client the least per byte (``raw_get``, ``KeptAlive``);
``Watching``, watch streams held open by client processes that count marked events and
their delay; and ``write_updates``, a writer patching pods at a steady rate.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import socket
import ssl
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, Server  # noqa: E402

POD_FIXTURE = REPO / "tests" / "fixtures" / "pod.json"
MARKER_KEY = "bench/written-at"  # the writer's wall-clock time, read back by watchers
MARKER = f'"{MARKER_KEY}":"'.encode()


# ---------------------------------------------------------------- the pods


@dataclass(frozen=True, slots=True)
class Layout:
    """Where pod ``i`` lives: its namespace, node and labels."""

    pods: int
    nodes: int = 4000
    namespaces: int = 100
    gold_every: int = 20  # tier=gold on every 20th pod: a selector matching 5 %

    def name(self, i: int) -> str:
        return f"pod-{i:06d}"

    def node(self, i: int) -> str:
        return f"node-{i % self.nodes}"

    def namespace(self, i: int) -> str:
        # Shifted per round of nodes, so that one node's pods are spread over namespaces.
        return f"ns-{(i // self.nodes + i) % self.namespaces}"

    def tier(self, i: int) -> str:
        return "gold" if i % self.gold_every == 0 else "silver"

    def on_first_nodes(self, count: int) -> list[int]:
        """The pods on node-0 .. node-(count-1)."""
        return [i for i in range(self.pods) if i % self.nodes < count]


def pod_template() -> str:
    """The fixture pod as a create body, with placeholders for what differs per pod."""
    pod = json.loads(POD_FIXTURE.read_text())
    meta = pod["metadata"]
    for server_set in ("uid", "resourceVersion", "creationTimestamp", "generateName", "managedFields"):
        meta.pop(server_set, None)
    meta.update(name="@NAME@", namespace="@NS@")
    meta["labels"].update({"tier": "@TIER@", "app.kubernetes.io/instance": "@NAME@"})
    pod["spec"]["nodeName"] = "@NODE@"
    return json.dumps(pod, separators=(",", ":"))


def pod_body(template: str, layout: Layout, i: int) -> bytes:
    """The create body of pod ``i``."""
    return (template.replace("@NAME@", layout.name(i)).replace("@NS@", layout.namespace(i))
            .replace("@TIER@", layout.tier(i)).replace("@NODE@", layout.node(i)).encode())


# ---------------------------------------------------------------- client processes


@dataclass(frozen=True, slots=True)
class Target:
    """How a client process reaches the server."""

    url: str
    ca_file: str
    token: str

    @classmethod
    def of(cls, server: Server) -> Target:
        return cls(server.url, str(server.ca_file), server.token)

    def host_port(self) -> tuple[str, int]:
        parsed = urllib.parse.urlsplit(self.url)
        return parsed.hostname or "127.0.0.1", parsed.port or 443


def _spawn(target: Any, jobs: list[tuple[Any, ...]]) -> tuple[list[Any], Any, Any]:
    """Start one spawned process per job: ``target(*job, out, go)``; returns (processes, out, go)."""
    ctx = multiprocessing.get_context("spawn")
    out, go = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=target, args=(*job, out, go), daemon=True) for job in jobs]
    for p in procs:
        p.start()
    return procs, out, go


def _gather(procs: list[Any], out: Any, timeout_s: float) -> list[Any]:
    """One message from each process (raise if one failed, died or did not answer in time)."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < len(procs):
        try:
            msg = out.get(timeout=0.5)
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a client process died") from None
            if time.monotonic() > deadline:
                raise RuntimeError("the client processes did not answer in time") from None
            continue
        if isinstance(msg, BaseException):
            raise RuntimeError(f"a client process failed: {msg!r}")
        got.append(msg)
    return got


def _join(procs: list[Any]) -> None:
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()


@dataclass(slots=True)
class LoadPart:
    """What one loading process did."""

    created: int = 0
    errors: int = 0
    retries: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    first_error: str = ""


async def _load_part(target: Target, layout: Layout, indexes: range, concurrency: int) -> LoadPart:
    """Create the pods ``indexes`` over ``concurrency`` keep-alive connections."""
    import httpx
    import trio

    template = pod_template()
    part = LoadPart()
    ctx = ssl.create_default_context(cafile=target.ca_file)
    headers = {"Authorization": f"Bearer {target.token}", "Content-Type": "application/json",
               "Accept": "application/json"}
    todo = iter(indexes)
    cpu0, t0 = time.process_time(), time.perf_counter()

    async def worker() -> None:
        # One client per connection: a shared pool costs the client more per request.
        async with httpx.AsyncClient(base_url=target.url, verify=ctx, headers=headers, timeout=300,
                                     limits=httpx.Limits(max_connections=1)) as client:
            for i in todo:
                path = f"/api/v1/namespaces/{layout.namespace(i)}/pods"
                ok, detail = False, ""
                for attempt in range(3):
                    try:
                        resp = await client.post(path, content=pod_body(template, layout, i))
                    except httpx.TransportError as err:
                        # A kept-alive connection closed under a request (the server's idle
                        # timer fires after a long pause of its event loop): try again; the
                        # first try may have created the pod, hence 409 then counts too.
                        part.retries += 1
                        detail = repr(err)
                        continue
                    ok = resp.status_code == 201 or (attempt > 0 and resp.status_code == 409)
                    detail = f"{resp.status_code} {resp.text[:300]}"
                    break
                if ok:
                    part.created += 1
                else:
                    part.errors += 1
                    part.first_error = part.first_error or detail

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    part.seconds = time.perf_counter() - t0
    part.cpu_s = time.process_time() - cpu0
    return part


def _load_main(target: Target, layout: Layout, indexes: range, concurrency: int, out: Any, go: Any) -> None:
    """Entry point of a loading process."""
    import trio

    try:
        out.put(trio.run(_load_part, target, layout, indexes, concurrency))
    except BaseException as err:  # the parent must hear of it instead of waiting forever
        out.put(RuntimeError(repr(err)))
        raise


def load_pods(server: Server, layout: Layout, processes: int, concurrency: int) -> dict[str, Any]:
    """Create every pod through the API from ``processes`` clients; returns creates/s and CPU."""
    per = max(1, concurrency // processes)
    jobs = [(Target.of(server), layout, range(k, layout.pods, processes), per) for k in range(processes)]
    cpu0, t0 = server.cpu_seconds(), time.perf_counter()
    procs, out, _ = _spawn(_load_main, jobs)
    try:
        parts: list[LoadPart] = _gather(procs, out, 6 * 3600)
    finally:
        _join(procs)
    wall = time.perf_counter() - t0
    created, errors = sum(p.created for p in parts), sum(p.errors for p in parts)
    if errors:
        raise RuntimeError(f"{errors} creates failed; first: {next(p.first_error for p in parts if p.errors)}")
    seconds = max(p.seconds for p in parts)
    return {"pods": created, "seconds": round(seconds, 2), "creates_per_s": round(created / seconds, 1),
            "processes": processes, "concurrency": per * processes, "retries": sum(p.retries for p in parts),
            "server_cpu_pct": round(100 * (server.cpu_seconds() - cpu0) / wall, 1),
            "client_cpu_pct": round(100 * sum(p.cpu_s for p in parts) / seconds, 1)}


# ---------------------------------------------------------------- raw HTTPS reads


@dataclass(slots=True)
class Fetched:
    """One GET read to the end: status, body size (chunk framing included), seconds, the body if kept."""

    status: int
    body_bytes: int
    seconds: float
    body: bytes = b""


def raw_get(target: Target, path: str, *, keep: bool = False) -> Fetched:
    """GET over a fresh TLS connection with ``Connection: close``, read to EOF into one reused buffer.

    The least a client can do per byte, so that large bodies measure the server, not the client.
    """
    host, port = target.host_port()
    ctx = ssl.create_default_context(cafile=target.ca_file)
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {target.token}\r\n"
               f"Accept: application/json\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection((host, port)) as raw, ctx.wrap_socket(raw, server_hostname=host) as tls:
        started = time.perf_counter()
        tls.sendall(request)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        head = b""
        total = 0
        kept: list[bytes] = []
        while True:
            n = tls.recv_into(buf)
            if not n:
                break
            if not head:
                end = bytes(view[:n]).find(b"\r\n\r\n")
                head = bytes(view[:end + 4]) if end >= 0 else bytes(view[:n])
                if keep:
                    kept.append(bytes(view[len(head):n]))
                total += n - len(head)
                continue
            total += n
            if keep:
                kept.append(bytes(view[:n]))
        seconds = time.perf_counter() - started
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return Fetched(status, total, seconds, _unchunk(b"".join(kept)) if keep else b"")


class KeptAlive:
    """Requests over one kept-alive HTTP/1.1 TLS connection, each body read into one reused buffer.

    The least a client can do per byte (no parsing, no copies into Python objects),
    so that a large LIST measures the server rather than the client reading it.
    Bodies are framed by Content-Length or chunked transfer; a connection the server
    closed (``Connection: close``, or a reset) is opened again for the next request.
    """

    def __init__(self, target: Target, accept: str = "application/json") -> None:
        self._host, self._port = target.host_port()
        self._ctx = ssl.create_default_context(cafile=target.ca_file)
        self._ctx.set_alpn_protocols(["http/1.1"])
        self._head = (f"Host: {self._host}:{self._port}\r\nAuthorization: Bearer {target.token}\r\n"
                      f"Accept: {accept}\r\n").encode()
        self._buf = bytearray(4 << 20)
        self._start = self._end = 0  # unread bytes are _buf[_start:_end]
        self._sock: ssl.SSLSocket | None = None
        self._connect()

    def _connect(self) -> ssl.SSLSocket:
        if self._sock is None:
            raw = socket.create_connection((self._host, self._port), timeout=120)
            self._sock = self._ctx.wrap_socket(raw, server_hostname=self._host)
            self._start = self._end = 0
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _fill(self) -> None:
        assert self._sock is not None
        if self._start == self._end:
            self._start = self._end = 0
        elif self._end == len(self._buf):
            self._buf[:self._end - self._start] = self._buf[self._start:self._end]
            self._end -= self._start
            self._start = 0
        n = self._sock.recv_into(memoryview(self._buf)[self._end:])
        if not n:
            raise ConnectionError("the server closed the connection")
        self._end += n

    def _line(self) -> bytes:
        while (eol := self._buf.find(b"\r\n", self._start, self._end)) < 0:
            self._fill()
        line = bytes(self._buf[self._start:eol])
        self._start = eol + 2
        return line

    def _skip(self, size: int) -> None:
        while size > 0:
            if self._start == self._end:
                self._fill()
            take = min(size, self._end - self._start)
            self._start += take
            size -= take

    def get(self, path: str) -> tuple[int, int]:
        """GET ``path`` and read its body to the end: (status, body bytes)."""
        status, _, size = self.request("GET", path)
        return status, size

    def request(self, method: str, path: str, body: bytes = b"",
                ctype: str = "application/json") -> tuple[int, str | None, int]:
        """(status, Retry-After or None, body bytes); a connection found closed is opened again once."""
        head = f"{method} {path} HTTP/1.1\r\n".encode() + self._head
        if body:
            head += f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n".encode()
        for attempt in (0, 1):
            sock = self._connect()
            try:
                sock.sendall(head + b"\r\n" + body)
                return self._response()
            except (ConnectionError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _response(self) -> tuple[int, str | None, int]:
        status = int(self._line().split(b" ", 2)[1])
        length, chunked, retry_after, close = 0, False, None, False
        while line := self._line():
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"retry-after":
                retry_after = value.strip().decode()
            elif name == b"connection" and b"close" in value.lower():
                close = True
        total = length
        if chunked:
            total = 0
            while size := int(self._line().split(b";")[0], 16):
                self._skip(size + 2)
                total += size
            while self._line():  # trailers, then the blank line
                pass
        else:
            self._skip(length)
        if close:
            self.close()
        return status, retry_after, total


def kept_alive_gets(target: Target, paths: list[str], accept: str = "application/json",
                    expect: int = 200) -> list[float]:
    """Milliseconds per GET over one kept-alive connection read by ``KeptAlive``."""
    conn = KeptAlive(target, accept)
    times: list[float] = []
    try:
        conn.get(paths[0])  # opens the connection outside the measurement
        for path in paths:
            started = time.perf_counter()
            status, _ = conn.get(path)
            times.append((time.perf_counter() - started) * 1000)
            if status != expect:
                raise RuntimeError(f"GET {path}: {status}")
    finally:
        conn.close()
    return times


def _unchunk(data: bytes) -> bytes:
    """The body of a chunked transfer (or ``data`` itself when it is not chunked)."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        eol = data.find(b"\r\n", pos)
        try:
            size = int(data[pos:eol].split(b";")[0], 16)
        except ValueError:
            return data
        if size == 0:
            break
        out.append(data[eol + 2:eol + 2 + size])
        pos = eol + 2 + size + 2
    return b"".join(out)


def timed_gets(target: Target, paths: list[str], expect: int = 200) -> list[float]:
    """Milliseconds per GET, each over one kept-alive HTTP/1.1 connection (httpx)."""
    import httpx

    ctx = ssl.create_default_context(cafile=target.ca_file)
    times: list[float] = []
    with httpx.Client(base_url=target.url, verify=ctx, timeout=300,
                      headers={"Authorization": f"Bearer {target.token}", "Accept": "application/json"}) as client:
        client.get(paths[0])  # opens the connection outside the measurement
        for path in paths:
            started = time.perf_counter()
            resp = client.get(path)
            times.append((time.perf_counter() - started) * 1000)
            if resp.status_code != expect:
                raise RuntimeError(f"GET {path}: {resp.status_code} {resp.text[:300]}")
    return times


# ---------------------------------------------------------------- watchers


@dataclass(slots=True)
class WatchPart:
    """What one watching process saw."""

    connected: int = 0
    failed: int = 0
    deliveries: int = 0
    delays_ms: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    first_error: str = ""


async def _watch_part(target: Target, paths: list[str], out: Any, go: Any) -> WatchPart:
    """Hold one HTTP/1.1 watch stream per path; count the marked events and their delay until ``go``."""
    import trio

    part = WatchPart()
    host, port = target.host_port()
    ctx = ssl.create_default_context(cafile=target.ca_file)
    opening = trio.CapacityLimiter(32)  # do not overrun the server's listen backlog
    all_open = trio.Event()
    cpu0 = time.process_time()

    async def watch(path: str) -> None:
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {target.token}\r\n"
                   f"Accept: application/json\r\n\r\n").encode()
        try:
            async with opening:
                stream = await trio.open_ssl_over_tcp_stream(host, port, ssl_context=ctx)
                await stream.send_all(request)
                head = b""
                while b"\r\n\r\n" not in head:
                    data = await stream.receive_some(65536)
                    if not data:
                        raise RuntimeError("closed before the response head")
                    head += data
        except (OSError, trio.BrokenResourceError, RuntimeError) as err:
            part.failed += 1
            part.first_error = part.first_error or repr(err)
            return
        finally:
            if part.connected + part.failed == len(paths):
                all_open.set()
        head, _, rest = head.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            part.failed += 1
            part.first_error = part.first_error or head.decode(errors="replace")[:300]
            if part.connected + part.failed == len(paths):
                all_open.set()
            await stream.aclose()
            return
        part.connected += 1
        if part.connected + part.failed == len(paths):
            all_open.set()
        # Only the marker matters, so the stream is scanned as bytes: no chunk or JSON parsing.
        buf = rest
        async with stream:
            while True:
                now = time.time()
                start = 0
                while True:
                    at = buf.find(MARKER, start)
                    if at < 0:
                        break
                    end = buf.find(b'"', at + len(MARKER))
                    if end < 0:
                        break
                    part.deliveries += 1
                    part.delays_ms.append((now - float(buf[at + len(MARKER):end])) * 1000)
                    start = end
                buf = buf[max(start, len(buf) - len(MARKER) - 32):]
                try:
                    data = await stream.receive_some(1 << 16)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                if not data:
                    return
                buf += data

    async with trio.open_nursery() as nursery:
        for path in paths:
            nursery.start_soon(watch, path)
        await all_open.wait()
        out.put(("ready", part.connected, part.failed, part.first_error))
        await trio.to_thread.run_sync(go.wait)
        nursery.cancel_scope.cancel()
    part.cpu_s = time.process_time() - cpu0
    return part


def _watch_main(target: Target, paths: list[str], out: Any, go: Any) -> None:
    """Entry point of a watching process."""
    import resource

    import trio

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, len(paths) + 256)), hard))
    try:
        out.put(trio.run(_watch_part, target, paths, out, go))
    except BaseException as err:
        out.put(RuntimeError(repr(err)))
        raise


@dataclass(slots=True)
class Watching:
    """Watch streams held open by client processes."""

    procs: list[Any]
    out: Any
    go: Any
    connected: int

    @classmethod
    def open(cls, target: Target, paths: list[str], processes: int) -> Watching:
        """Start the processes and wait until every stream has its response head."""
        jobs = [(target, paths[k::processes]) for k in range(processes) if paths[k::processes]]
        procs, out, go = _spawn(_watch_main, jobs)
        try:
            ready = _gather(procs, out, 600)
        except BaseException:
            go.set()
            _join(procs)
            raise
        failed = sum(r[2] for r in ready)
        if failed:
            go.set()
            _join(procs)
            raise RuntimeError(f"{failed} watches failed to open; first: {next(r[3] for r in ready if r[2])}")
        return cls(procs, out, go, sum(r[1] for r in ready))

    def close(self) -> list[WatchPart]:
        """Stop every stream; what each process saw."""
        self.go.set()
        try:
            return _gather(self.procs, self.out, 120)
        finally:
            _join(self.procs)


@dataclass(slots=True)
class Written:
    """What the writer did."""

    sent: int = 0
    errors: int = 0
    late: int = 0  # writes that started more than a period after their slot
    seconds: float = 0.0
    first_error: str = ""


async def _write(target: Target, pods: list[tuple[str, str]], rate: float, count: int) -> Written:
    """PATCH ``count`` pods (cycling through ``pods``) at ``rate``/s, each with the time in an annotation."""
    import httpx
    import trio

    ctx = ssl.create_default_context(cafile=target.ca_file)
    headers = {"Authorization": f"Bearer {target.token}", "Content-Type": "application/merge-patch+json",
               "Accept": "application/json"}
    done = Written()
    period = 1.0 / rate
    async with trio.open_nursery() as nursery:
        pool_send, pool_recv = trio.open_memory_channel[httpx.AsyncClient](64)
        clients = [httpx.AsyncClient(base_url=target.url, verify=ctx, headers=headers, timeout=60,
                                     limits=httpx.Limits(max_connections=1)) for _ in range(8)]
        for client in clients:
            pool_send.send_nowait(client)

        async def one(ns: str, name: str) -> None:
            client = await pool_recv.receive()
            try:
                body = json.dumps({"metadata": {"annotations": {MARKER_KEY: f"{time.time():.6f}"}}})
                resp = await client.patch(f"/api/v1/namespaces/{ns}/pods/{name}", content=body)
                if resp.status_code == 200:
                    done.sent += 1
                else:
                    done.errors += 1
                    done.first_error = done.first_error or f"{resp.status_code} {resp.text[:300]}"
            finally:
                pool_send.send_nowait(client)

        t0 = trio.current_time()
        for k in range(count):
            slot = t0 + k * period
            await trio.sleep_until(slot)
            if trio.current_time() - slot > period:
                done.late += 1
            ns, name = pods[k % len(pods)]
            nursery.start_soon(one, ns, name)
    done.seconds = trio.current_time() - t0
    for client in clients:
        await client.aclose()
    return done


def write_updates(target: Target, pods: list[tuple[str, str]], rate: float, count: int) -> Written:
    import trio

    done = trio.run(_write, target, pods, rate, count)
    if done.errors:
        raise RuntimeError(f"{done.errors} updates failed; first: {done.first_error}")
    return done


def current_rv(server: Server) -> str:
    status, body = server.request("GET", "/api/v1/pods?limit=1")
    if status != 200:
        raise RuntimeError(f"LIST pods: {status} {body[:300]!r}")
    return str(json.loads(body)["metadata"]["resourceVersion"])


def watch_path(base: str, rv: str, **query: str) -> str:
    return base + "?" + urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "timeoutSeconds": "3600",
                                                **query})
