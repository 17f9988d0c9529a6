"""The watch cache at scale: one ``kapi serve`` (sqlite) holding N realistic pods.

Run ``python bench/bench_cache.py`` from the repository root (100,000 pods;
``--quick`` for 5,000). The pods come from the realistic pod fixture, spread
over 4,000 nodes and 100 namespaces, each with its own name, labels and node;
every 20th carries ``tier=gold`` (a 5 % label selector). One run measures:
loading through the API; LIST of everything at resourceVersion=0 against a bare
hypercorn app sending a body of the same size; indexed against unindexed field
selectors; a 5 % label selector; consistent against rv=0 LIST; the server's RSS
per object; a watch fan-out; the CPU cost per update with 4,000 node-scoped
watchers against 100; and the restart to /readyz. Prints a Markdown table and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import queue
import socket
import ssl
import statistics
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    BARE_LIST_PATH,
    REPO,
    RESULTS,
    Server,
    process_rss_bytes,
    start_bare,
    start_kapi,
    stop,
    write_json,
)

POD_FIXTURE = REPO / "tests" / "fixtures" / "pod.json"
MARKER_KEY = "bench/written-at"  # the writer's wall-clock time, read back by watchers
MARKER = f'"{MARKER_KEY}":"'.encode()
GOALS = {
    "list_ratio": 0.70,  # kapi ÷ bare bytes/s, LIST of everything at rv=0 (at least)
    "indexed_ms": 2.0,  # median response time, indexed field selector (at most)
    "unindexed_over_indexed": 100.0,  # (at least)
    "consistent_over_rv0": 1.2,  # (at most)
    "rss_over_json": 1.3,  # RSS per object ÷ JSON size (at most)
    "node_watchers_cpu_ratio": 1.5,  # CPU per update, many node watchers ÷ few (at most)
}


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
    """GETs over one kept-alive HTTP/1.1 TLS connection, each body read into one reused buffer.

    The least a client can do per byte (no parsing, no copies into Python objects),
    so that a large LIST measures the server rather than the client reading it.
    Bodies are framed by Content-Length or chunked transfer.
    """

    def __init__(self, target: Target, accept: str = "application/json") -> None:
        host, port = target.host_port()
        ctx = ssl.create_default_context(cafile=target.ca_file)
        ctx.set_alpn_protocols(["http/1.1"])
        self._sock = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
        self._head = (f"Host: {host}:{port}\r\nAuthorization: Bearer {target.token}\r\n"
                      f"Accept: {accept}\r\n\r\n").encode()
        self._buf = bytearray(4 << 20)
        self._start = self._end = 0  # unread bytes are _buf[_start:_end]

    def close(self) -> None:
        self._sock.close()

    def _fill(self) -> None:
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
        self._sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\n" + self._head)
        status = int(self._line().split(b" ", 2)[1])
        length, chunked = 0, False
        while line := self._line():
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if not chunked:
            self._skip(length)
            return status, length
        total = 0
        while size := int(self._line().split(b";")[0], 16):
            self._skip(size + 2)
            total += size
        while self._line():  # trailers, then the blank line
            pass
        return status, total


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


def list_count(server: Server, path: str) -> int:
    """How many items a LIST returns."""
    status, body = server.request("GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    return len(json.loads(body)["items"])


def cache_list_metrics(server: Server) -> dict[str, float]:
    """The apiserver_cache_list_* counters for pods, by their labels."""
    status, body = server.request("GET", "/metrics")
    if status != 200:
        return {}
    found: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line.startswith("apiserver_cache_list_") and 'resource="pods"' in line:
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


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


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fan_out(server: Server, layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """``args.watchers`` namespace watchers; the writer patches pods in every namespace at a steady rate."""
    target = Target.of(server)
    rv = current_rv(server)
    paths = [watch_path(f"/api/v1/namespaces/ns-{w % layout.namespaces}/pods", rv) for w in range(args.watchers)]
    t0 = time.perf_counter()
    watching = Watching.open(target, paths, args.watch_clients)
    open_s = time.perf_counter() - t0
    count = int(args.update_rate * args.watch_seconds)
    pods = [(layout.namespace(i), layout.name(i)) for i in range(min(layout.pods, count))]
    per_ns = [len(range(k, args.watchers, layout.namespaces)) for k in range(layout.namespaces)]
    expected = sum(per_ns[int(pods[k % len(pods)][0][3:])] for k in range(count))
    cpu0 = server.cpu_seconds()
    written = write_updates(target, pods, args.update_rate, count)
    time.sleep(1.0)  # let the last events arrive
    cpu = server.cpu_seconds() - cpu0
    parts = watching.close()
    delays = [d for p in parts for d in p.delays_ms]
    deliveries = sum(p.deliveries for p in parts)
    return {"watchers": watching.connected, "connect_s": round(open_s, 2), "updates": written.sent,
            "update_rate": args.update_rate, "late_writes": written.late, "expected_deliveries": expected,
            "deliveries": deliveries, "deliveries_per_s": round(deliveries / written.seconds, 1),
            "p50_delay_ms": round(pct(delays, 0.50), 2), "p99_delay_ms": round(pct(delays, 0.99), 2),
            "max_delay_ms": round(max(delays, default=0.0), 2),
            "server_cpu_pct": round(100 * cpu / (written.seconds + 1.0), 1),
            "client_cpu_pct": round(100 * sum(p.cpu_s for p in parts) / (written.seconds + 1.0 + open_s), 1)}


def node_watchers(server: Server, layout: Layout, watchers: int, args: argparse.Namespace) -> dict[str, Any]:
    """``watchers`` node-scoped watchers (node-0 ..); server CPU per update of pods on the first nodes."""
    target = Target.of(server)
    rv = current_rv(server)
    paths = [watch_path("/api/v1/pods", rv, fieldSelector=f"spec.nodeName=node-{j}") for j in range(watchers)]
    t0 = time.perf_counter()
    watching = Watching.open(target, paths, args.watch_clients)
    open_s = time.perf_counter() - t0
    # The same pods in both cases (those on the nodes the fewer watchers cover): each update has one
    # interested watcher either way, so any difference is the cost of the watchers that do not care.
    pods = [(layout.namespace(i), layout.name(i)) for i in layout.on_first_nodes(args.few_node_watchers)]
    time.sleep(1.0)  # let the server settle after the connection storm
    cpu0 = server.cpu_seconds()
    written = write_updates(target, pods, args.update_rate, args.node_updates)
    time.sleep(0.5)
    cpu = server.cpu_seconds() - cpu0
    parts = watching.close()
    delays = [d for p in parts for d in p.delays_ms]
    return {"watchers": watching.connected, "connect_s": round(open_s, 2), "updates": written.sent,
            "late_writes": written.late, "deliveries": sum(p.deliveries for p in parts),
            "server_cpu_s": round(cpu, 3), "cpu_ms_per_update": round(1000 * cpu / written.sent, 3),
            "p99_delay_ms": round(pct(delays, 0.99), 2)}


# ---------------------------------------------------------------- the run


def measure_lists(server: Server, root: Path, layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """Everything about LIST: bandwidth against bare, selectors, consistent against rv=0."""
    target = Target.of(server)
    n = layout.pods
    everything = "/api/v1/pods?resourceVersion=0"
    first = raw_get(target, everything, keep=True)
    if first.status != 200:
        raise RuntimeError(f"LIST everything: {first.status} {first.body[:300]!r}")
    import orjson  # a tenth of the time of json for a body of hundreds of megabytes

    listed = len(orjson.loads(first.body)["items"])
    if listed != n:
        raise RuntimeError(f"LIST everything returned {listed} pods, not {n}")
    list_bytes = len(first.body)
    del first
    rss_after = process_rss_bytes(server.proc.pid)

    # Interleaved, so that drift on the machine touches both kinds alike.
    rv0: list[Fetched] = []
    consistent: list[Fetched] = []
    for _ in range(args.list_repeat):
        rv0.append(raw_get(target, everything))
        consistent.append(raw_get(target, "/api/v1/pods"))
    if any(f.status != 200 for f in rv0 + consistent):
        raise RuntimeError("a LIST of everything failed")
    pki = server.ca_file.parent
    bare = start_bare(pki / "apiserver.crt", pki / "apiserver.key", server.ca_file, root / "bare",
                      list_bytes=list_bytes)
    try:
        bare_fetches = [raw_get(Target.of(bare), BARE_LIST_PATH) for _ in range(args.list_repeat)]
    finally:
        stop(bare)
    kapi_bps = max(f.body_bytes / f.seconds for f in rv0)  # best of: other work only ever slows a run
    bare_bps = max(f.body_bytes / f.seconds for f in bare_fetches)

    indexed_paths = [f"/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-{k % layout.nodes}"
                     for k in range(args.selector_repeat)]
    indexed_items = list_count(server, indexed_paths[1])
    indexed = timed_gets(target, indexed_paths)
    unindexed_path = "/api/v1/pods?resourceVersion=0&fieldSelector=spec.restartPolicy%3DNever"
    unindexed_items = list_count(server, unindexed_path)
    unindexed = timed_gets(target, [unindexed_path] * max(3, args.selector_repeat // 20))
    label_path = "/api/v1/pods?resourceVersion=0&labelSelector=tier%3Dgold"
    label_items = list_count(server, label_path)
    label = [raw_get(target, label_path) for _ in range(args.list_repeat)]
    label_s = statistics.median(f.seconds for f in label)
    rv0_s = statistics.median(f.seconds for f in rv0)
    consistent_s = statistics.median(f.seconds for f in consistent)
    return {
        "list_bytes": list_bytes, "json_bytes_per_pod": round(list_bytes / n, 1), "rss_after_list": rss_after,
        "everything": {"items": listed, "bytes": list_bytes, "rv0_seconds": [round(f.seconds, 3) for f in rv0],
                       "kapi_mb_per_s": round(kapi_bps / 1e6, 1), "bare_mb_per_s": round(bare_bps / 1e6, 1),
                       "bare_seconds": [round(f.seconds, 3) for f in bare_fetches],
                       "ratio": round(kapi_bps / bare_bps, 3)},
        "indexed": {"selector": "spec.nodeName=node-K", "items": indexed_items, "requests": len(indexed),
                    "median_ms": round(statistics.median(indexed), 3), "p10_ms": round(pct(indexed, 0.1), 3),
                    "p90_ms": round(pct(indexed, 0.9), 3)},
        "unindexed": {"selector": "spec.restartPolicy=Never", "items": unindexed_items, "requests": len(unindexed),
                      "median_ms": round(statistics.median(unindexed), 3)},
        "unindexed_over_indexed": round(statistics.median(unindexed) / statistics.median(indexed), 1),
        "label": {"selector": "tier=gold", "items": label_items, "median_s": round(label_s, 4),
                  "s_per_100k_objects": round(label_s * 100_000 / n, 4)},
        "consistent": {"consistent_s": round(consistent_s, 3), "rv0_s": round(rv0_s, 3),
                       "ratio": round(consistent_s / rv0_s, 3)},
        "metrics": cache_list_metrics(server),
    }


def restart(data_dir: Path, *flags: str) -> tuple[float, int]:
    """Restart over the loaded data directory; (seconds to ready, RSS once ready)."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite", *flags, timeout_s=1800)
    try:
        time.sleep(0.5)  # what the server does just after ready (bootstrap checks) settles
        return server.ready_s, process_rss_bytes(server.proc.pid)
    finally:
        stop(server)


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    layout = Layout(args.pods, args.nodes, args.namespaces)
    data_dir = root / "kapi"
    result: dict[str, Any] = {}
    server = start_kapi(data_dir, "--storage-backend", "sqlite", timeout_s=600)
    try:
        for k in range(layout.namespaces):
            status, body = server.request("POST", "/api/v1/namespaces", json.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{k}"}}).encode())
            if status != 201:
                raise RuntimeError(f"creating ns-{k}: {status} {body[:300]!r}")
        rss_before = process_rss_bytes(server.proc.pid)
        print(f"loading {layout.pods} pods ...", flush=True)
        result["load"] = load_pods(server, layout, args.clients, args.concurrency)
        print(f"  {result['load']['creates_per_s']:.0f} creates/s in {result['load']['seconds']:.0f} s", flush=True)
        lists = measure_lists(server, root, layout, args)
        result["list"] = lists
        print(f"  LIST everything: kapi {lists['everything']['kapi_mb_per_s']} MB/s, bare "
              f"{lists['everything']['bare_mb_per_s']} MB/s; indexed {lists['indexed']['median_ms']} ms, "
              f"unindexed {lists['unindexed']['median_ms']} ms", flush=True)
        json_total = lists["list_bytes"]
        result["memory"] = {"rss_before": rss_before, "rss_after": lists.pop("rss_after_list"),
                            "json_bytes": json_total}
        result["memory"]["rss_per_object"] = round((result["memory"]["rss_after"] - rss_before) / layout.pods, 1)
        result["memory"]["ratio"] = round((result["memory"]["rss_after"] - rss_before) / json_total, 3)
        print(f"watch fan-out: {args.watchers} watchers ...", flush=True)
        result["fan_out"] = fan_out(server, layout, args)
        print(f"  {result['fan_out']['deliveries_per_s']} deliveries/s, p99 {result['fan_out']['p99_delay_ms']} ms",
              flush=True)
        nodes: dict[str, Any] = {}
        # No watchers at all: the cost of the update itself, which both cases share.
        for count in (0, args.few_node_watchers, args.node_watchers):
            print(f"node watchers: {count} ...", flush=True)
            nodes[str(count)] = node_watchers(server, layout, count, args)
            print(f"  {nodes[str(count)]['cpu_ms_per_update']} ms CPU per update", flush=True)
        base = nodes["0"]["cpu_ms_per_update"]
        few, many = nodes[str(args.few_node_watchers)], nodes[str(args.node_watchers)]
        nodes["ratio"] = round(many["cpu_ms_per_update"] / few["cpu_ms_per_update"], 3)
        # What the watchers add over the bare update, many against few.
        nodes["watch_ms_per_update"] = {"few": round(few["cpu_ms_per_update"] - base, 3),
                                        "many": round(many["cpu_ms_per_update"] - base, 3)}
        result["node_watchers"] = nodes
    finally:
        stop(server)
    print("restarting ...", flush=True)
    ready_s, rss_ready = restart(data_dir)
    _, rss_uncached = restart(data_dir, "--watch-cache-sizes", "pods#0")
    result["startup"] = {"pods": layout.pods, "ready_s": round(ready_s, 2), "rss_ready": rss_ready,
                         "rss_ready_without_pod_cache": rss_uncached}
    # The cache's share: a restart with the pod cache, against one without (nothing else differs).
    result["memory"]["cache_bytes"] = rss_ready - rss_uncached
    result["memory"]["cache_ratio"] = round((rss_ready - rss_uncached) / result["memory"]["json_bytes"], 3)
    result["db_bytes"] = sum(p.stat().st_size for p in data_dir.glob("kapi.db*"))
    return result


def table(r: dict[str, Any], n: int) -> list[str]:
    """The Markdown table of one run."""
    lst, mem, fo, nw = r["list"], r["memory"], r["fan_out"], r["node_watchers"]
    few, many = (nw[k] for k in nw if k not in ("0", "ratio", "watch_ms_per_update"))
    extra = nw["watch_ms_per_update"]
    mark = {True: "yes", False: "**no**"}
    ev = lst["everything"]
    rows = [
        "| measure | figure | goal | met |",
        "|---|---:|---:|---|",
        f"| load {n} pods through the API | {r['load']['creates_per_s']:.0f} creates/s "
        f"({r['load']['seconds']:.0f} s) | | |",
        f"| LIST all, rv=0: kapi {ev['kapi_mb_per_s']} MB/s ÷ bare {ev['bare_mb_per_s']} MB/s "
        f"({ev['bytes'] / 1e6:.0f} MB) | {ev['ratio']:.2f} | ≥ {GOALS['list_ratio']} | "
        f"{mark[ev['ratio'] >= GOALS['list_ratio']]} |",
        f"| LIST spec.nodeName=node-K (indexed, {lst['indexed']['items']} pods), median | "
        f"{lst['indexed']['median_ms']:.2f} ms | ≤ {GOALS['indexed_ms']} ms | "
        f"{mark[lst['indexed']['median_ms'] <= GOALS['indexed_ms']]} |",
        f"| LIST spec.restartPolicy=Never (unindexed, {lst['unindexed']['items']} pods) ÷ indexed | "
        f"{lst['unindexed_over_indexed']:.0f}× ({lst['unindexed']['median_ms']:.0f} ms) | "
        f"≥ {GOALS['unindexed_over_indexed']:.0f}× | "
        f"{mark[lst['unindexed_over_indexed'] >= GOALS['unindexed_over_indexed']]} |",
        f"| LIST tier=gold ({lst['label']['items']} pods), per 100k objects | "
        f"{lst['label']['s_per_100k_objects'] * 1000:.0f} ms | | |",
        f"| consistent LIST all ÷ rv=0 ({lst['consistent']['consistent_s']:.2f} s ÷ "
        f"{lst['consistent']['rv0_s']:.2f} s) | {lst['consistent']['ratio']:.2f} | ≤ {GOALS['consistent_over_rv0']} | "
        f"{mark[lst['consistent']['ratio'] <= GOALS['consistent_over_rv0']]} |",
        f"| RSS per object ÷ JSON size ({mem['rss_per_object'] / 1e3:.1f} kB ÷ "
        f"{lst['json_bytes_per_pod'] / 1e3:.1f} kB) | {mem['ratio']:.2f} | ≤ {GOALS['rss_over_json']} | "
        f"{mark[mem['ratio'] <= GOALS['rss_over_json']]} |",
        f"| of which the pod cache (restart with ÷ without it) | {mem['cache_ratio']:.2f} | | |",
        f"| watch fan-out: {fo['watchers']} watchers, {fo['update_rate']:.0f} updates/s | "
        f"{fo['deliveries_per_s']:.0f} deliveries/s, p99 {fo['p99_delay_ms']:.1f} ms "
        f"({fo['deliveries']}/{fo['expected_deliveries']} delivered) | | |",
        f"| CPU per update, {many['watchers']} ÷ {few['watchers']} node watchers "
        f"({many['cpu_ms_per_update']:.2f} ÷ {few['cpu_ms_per_update']:.2f} ms) | {nw['ratio']:.2f} | "
        f"≤ {GOALS['node_watchers_cpu_ratio']} | {mark[nw['ratio'] <= GOALS['node_watchers_cpu_ratio']]} |",
        f"| of which the watchers, over {nw['0']['cpu_ms_per_update']:.2f} ms with none: "
        f"{many['watchers']} ÷ {few['watchers']} | {extra['many']:.2f} ÷ {extra['few']:.2f} ms | | |",
        f"| restart with {n} pods to /readyz ok | {r['startup']['ready_s']:.2f} s | | |",
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=None, help="pods to hold (default 100000, 5000 with --quick)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--clients", type=int, default=2, help="client processes while loading")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent creates while loading, in all")
    parser.add_argument("--list-repeat", type=int, default=3, help="LISTs of everything per kind")
    parser.add_argument("--selector-repeat", type=int, default=200, help="indexed LISTs timed")
    parser.add_argument("--watchers", type=int, default=1000, help="namespace watchers in the fan-out")
    parser.add_argument("--node-watchers", type=int, default=4000)
    parser.add_argument("--few-node-watchers", type=int, default=100)
    parser.add_argument("--watch-clients", type=int, default=4, help="client processes holding the watches")
    parser.add_argument("--update-rate", type=float, default=100.0, help="updates/s while watching")
    parser.add_argument("--watch-seconds", type=float, default=None, help="fan-out duration (default 10, 3 quick)")
    parser.add_argument("--node-updates", type=int, default=None, help="updates per node-watcher case "
                        "(default 1000, 300 quick)")
    parser.add_argument("--quick", action="store_true", help="5,000 pods and shorter watch phases")
    parser.add_argument("--dir", default=None, help="where the temporary data directory goes")
    parser.add_argument("--output", type=Path, default=RESULTS / "cache.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.pods = args.pods if args.pods is not None else (5000 if args.quick else 100_000)
    args.watch_seconds = args.watch_seconds if args.watch_seconds is not None else (3.0 if args.quick else 10.0)
    args.node_updates = args.node_updates if args.node_updates is not None else (300 if args.quick else 1000)
    if args.pods < args.few_node_watchers or args.few_node_watchers > args.node_watchers:
        parser.error("need --pods ≥ --few-node-watchers ≤ --node-watchers")
    # Thousands of watch connections: the server inherits this process's descriptor limit.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.node_watchers * 2 + 1024)), hard))

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-cache-", dir=args.dir) as tmp:
        result = run(args, Path(tmp))
    result = {"config": {"pods": args.pods, "nodes": args.nodes, "namespaces": args.namespaces,
                         "quick": args.quick, "cpus": os.cpu_count(), "python": platform.python_version(),
                         "watch_client": "HTTP/1.1, one TLS connection per watch"},
              **result, "goals": GOALS, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print("\n".join(table(result, args.pods)))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
