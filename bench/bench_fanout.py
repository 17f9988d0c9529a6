"""The watch fan-out against the machine's limit: kapi and a bare TLS broadcaster, same clients, same run.

Run ``python bench/bench_fanout.py`` from the repository root (``--quick``: a few
watchers, short phases, under a minute). One ``kapi serve`` (sqlite) holds a few
objects in one namespace; every watcher watches that namespace, so each update is
one delivery per watcher. A writer PATCHes the objects at a steady rate with its
wall-clock time in an annotation, which the watchers read back to measure the delay.

The bare broadcaster (``python bench/bench_fanout.py bare ...``, started as its own
process) is the machine's limit: trio and TLS with kapi's own serving certificate,
no framework. It answers the same watch requests over HTTP/1.1 (chunked) and HTTP/2
(hand-made frames, streams multiplexed on a connection, flow-control windows kept)
with kapi's response headers, and sends a watch event captured from kapi (the same
bytes, the time in its annotation replaced) to every open stream at the offered rate,
coalesced per connection: one TLS write per connection per tick.

The same client processes and code hold the watches for both: one TLS connection per
watch over HTTP/1.1, or N watches multiplexed per HTTP/2 connection (a lean client
that parses frames and sends window updates, as client-go's transport does). Cases:
HTTP/1.1 and HTTP/2, realistic pods (about 7 kB events) and Leases (about 1 kB);
for each, a step at ``--update-rate`` and a search for the highest rate that keeps
p99 ≤ 100 ms with every event delivered. Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS,
    Server,
    _wait,
    machine_busy_seconds,
    process_cpu_seconds,
    process_rss_bytes,
    start_kapi,
    stop,
    write_json,
)
from _workload import MARKER, MARKER_KEY, Layout, Target, _gather, _join, _spawn, pod_body, pod_template  # noqa: E402

NAMESPACE = "ns-0"  # Layout(namespaces=1) puts every pod here
OBJECTS = 10  # objects the writer cycles through
P99_GOAL_MS = 100.0
GOALS = {"ratio": 0.7, "p99_ms": P99_GOAL_MS}  # issue 33, goal 1: kapi ÷ bare at least, p99 at most
KINDS = {
    "pods": "/api/v1/namespaces/{ns}/pods",
    "leases": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
}
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
BARE_BACKLOG_BYTES = 256 << 10  # a bare connection's unsent bytes past which the broadcast waits for it
BARE_TICK_BYTES = 64 << 10  # at most this much of events per tick
STAMP_WIDTH = 17  # f"{time.time():.6f}": 10 digits, a dot, 6 digits


# ---------------------------------------------------------------- HTTP/2 frames (client and bare server)

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_ENABLE_PUSH, SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE = 2, 3, 4, 5
CLIENT_STREAM_WINDOW = 4 << 20  # client-go's transport: 4 MB per stream, 1 GB per connection
CLIENT_CONN_WINDOW = 1 << 30


def frame(ftype: int, flags: int, sid: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((ftype, flags)) + sid.to_bytes(4, "big") + payload


def settings(*pairs: tuple[int, int]) -> bytes:
    return frame(SETTINGS, 0, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in pairs))


def window_update(sid: int, inc: int) -> bytes:
    return frame(WINDOW_UPDATE, 0, sid, inc.to_bytes(4, "big"))


def parse_frames(buf: bytearray) -> tuple[list[tuple[int, int, int, bytes]], bytearray]:
    """The complete frames at the head of ``buf`` as (type, flags, stream, payload), and what is left."""
    frames = []
    pos, end = 0, len(buf)
    while end - pos >= 9:
        length = int.from_bytes(buf[pos:pos + 3], "big")
        if end - pos < 9 + length:
            break
        ftype, flags = buf[pos + 3], buf[pos + 4]
        sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
        payload = bytes(buf[pos + 9:pos + 9 + length])
        if flags & PADDED and ftype in (DATA, HEADERS):
            payload = payload[1:len(payload) - payload[0]]
        if ftype == HEADERS and flags & PRIORITY_FLAG:
            payload = payload[5:]
        frames.append((ftype, flags, sid, payload))
        pos += 9 + length
    return frames, buf[pos:] if pos else buf


# ---------------------------------------------------------------- the watching clients


@dataclass(slots=True)
class Seen:
    """What one client process saw since its last report: each marked event's write time and delay."""

    index: int
    connected: int = 0
    failed: int = 0
    ended: int = 0  # streams the server ended (a slow watcher closed, a reset)
    deliveries: int = 0
    written: array = field(default_factory=lambda: array("d"))
    delays_ms: array = field(default_factory=lambda: array("d"))
    cpu_s: float = 0.0
    first_error: str = ""


class _Scanner:
    """Finds the markers in a stream's bytes (no chunk or JSON parsing), as ``_workload``'s watchers do."""

    __slots__ = ("buf", "seen", "counter")

    def __init__(self, seen: Seen, counter: Any) -> None:
        self.buf = b""
        self.seen = seen
        self.counter = counter

    def feed(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        now = time.time()
        seen = self.seen
        start = 0
        while True:
            at = buf.find(MARKER, start)
            if at < 0:
                break
            end = buf.find(b'"', at + len(MARKER))
            if end < 0:
                break
            written = float(buf[at + len(MARKER):end])
            seen.written.append(written)
            seen.delays_ms.append((now - written) * 1000)
            seen.deliveries += 1
            start = end
        self.buf = buf[max(start, len(buf) - len(MARKER) - 32):]
        self.counter[seen.index] = seen.deliveries


async def _h1_watch(target: Target, path: str, ctx: ssl.SSLContext, opening: Any, seen: Seen, counter: Any,
                    opened: Any) -> None:
    import trio

    host, port = target.host_port()
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
        head, _, rest = head.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            await stream.aclose()
            raise RuntimeError(head.decode(errors="replace")[:300])
    except (OSError, trio.BrokenResourceError, RuntimeError) as err:
        seen.failed += 1
        seen.first_error = seen.first_error or repr(err)
        opened()
        return
    seen.connected += 1
    opened()
    scanner = _Scanner(seen, counter)
    scanner.feed(rest)
    async with stream:
        while True:
            try:
                data = await stream.receive_some(1 << 16)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                seen.ended += 1
                return
            scanner.feed(data)


async def _h2_connection(target: Target, paths: list[str], ctx: ssl.SSLContext, opening: Any, seen: Seen,
                         counter: Any, opened: Any) -> None:
    """``paths`` as streams of one HTTP/2 connection; window updates sent as the data is consumed."""
    import hpack
    import trio

    host, port = target.host_port()
    encoder, decoder = hpack.Encoder(), hpack.Decoder()
    pending = set(range(1, 2 * len(paths), 2))
    scanners: dict[int, _Scanner] = {}
    try:
        async with opening:
            stream = await trio.open_ssl_over_tcp_stream(host, port, ssl_context=ctx)
            await stream.do_handshake()
        if stream.selected_alpn_protocol() != "h2":
            raise RuntimeError(f"ALPN chose {stream.selected_alpn_protocol()!r}, not h2")
    except (OSError, trio.BrokenResourceError, RuntimeError) as err:
        seen.failed += len(paths)
        seen.first_error = seen.first_error or repr(err)
        for _ in paths:
            opened()
        return
    out = [H2_PREFACE, settings((SETTINGS_ENABLE_PUSH, 0), (SETTINGS_INITIAL_WINDOW_SIZE, CLIENT_STREAM_WINDOW)),
           window_update(0, CLIENT_CONN_WINDOW - 65535)]
    for k, path in enumerate(paths):
        block = encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", f"{host}:{port}"),
                                (":path", path), ("authorization", f"Bearer {target.token}"),
                                ("accept", "application/json")])
        out.append(frame(HEADERS, END_HEADERS | END_STREAM, 2 * k + 1, block))
    consumed: dict[int, int] = {}
    conn_consumed = 0
    block_sid, block = 0, b""
    buf = bytearray()
    async with stream:
        try:
            await stream.send_all(b"".join(out))
            while True:
                data = await stream.receive_some(1 << 17)
                if not data:
                    break
                buf += data
                frames, buf = parse_frames(buf)
                reply: list[bytes] = []
                for ftype, flags, sid, payload in frames:
                    if ftype == DATA:
                        scanner = scanners.get(sid)
                        if scanner is not None:
                            scanner.feed(payload)
                        size = len(payload)  # what flow control counts (less any padding, which kapi sends none of)
                        conn_consumed += size
                        consumed[sid] = consumed.get(sid, 0) + size
                        if flags & END_STREAM:
                            scanners.pop(sid, None)
                            seen.ended += 1
                        elif consumed[sid] >= CLIENT_STREAM_WINDOW // 4:
                            reply.append(window_update(sid, consumed.pop(sid)))
                    elif ftype in (HEADERS, CONTINUATION):
                        block_sid, block = sid, block + payload
                        if not flags & END_HEADERS:
                            continue
                        headers = dict(decoder.decode(block))
                        block = b""
                        if block_sid in pending:
                            pending.discard(block_sid)
                            if headers.get(":status") == "200" and not flags & END_STREAM:
                                seen.connected += 1
                                scanners[block_sid] = _Scanner(seen, counter)
                            else:
                                seen.failed += 1
                                seen.first_error = seen.first_error or f"stream answered {headers}"
                            opened()
                    elif ftype == RST_STREAM:
                        if scanners.pop(sid, None) is not None:
                            seen.ended += 1
                        elif sid in pending:
                            pending.discard(sid)
                            seen.failed += 1
                            opened()
                    elif ftype == SETTINGS and not flags & ACK:
                        reply.append(frame(SETTINGS, ACK, 0))
                    elif ftype == PING and not flags & ACK:
                        reply.append(frame(PING, ACK, 0, payload))
                    elif ftype == GOAWAY:
                        raise RuntimeError("GOAWAY")
                if conn_consumed >= CLIENT_CONN_WINDOW // 4:
                    reply.append(window_update(0, conn_consumed))
                    conn_consumed = 0
                if reply:
                    await stream.send_all(b"".join(reply))
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, RuntimeError) as err:
            seen.first_error = seen.first_error or repr(err)
        seen.ended += len(scanners)
        for _ in pending:
            seen.failed += 1
            opened()


async def _watch_part(target: Target, mode: str, groups: list[list[str]], index: int, counter: Any, ctl: Any,
                      out: Any) -> Seen:
    """Hold the watches of ``groups`` (one path per connection over HTTP/1.1, N per HTTP/2 connection);
    report to ``out`` whenever ``ctl`` says ``report``, until it says ``stop``."""
    import trio

    seen = Seen(index)
    total = sum(len(g) for g in groups)
    ctx = ssl.create_default_context(cafile=target.ca_file)
    ctx.set_alpn_protocols(["h2"] if mode == "h2" else ["http/1.1"])
    opening = trio.CapacityLimiter(32)  # do not overrun the server's listen backlog
    all_open = trio.Event()

    def opened() -> None:
        if seen.connected + seen.failed >= total:
            all_open.set()

    cpu0 = time.process_time()
    async with trio.open_nursery() as nursery:
        for group in groups:
            if mode == "h2":
                nursery.start_soon(_h2_connection, target, group, ctx, opening, seen, counter, opened)
            else:
                nursery.start_soon(_h1_watch, target, group[0], ctx, opening, seen, counter, opened)
        await all_open.wait()
        out.put(("ready", index, seen.connected, seen.failed, seen.first_error))
        while True:
            command = await trio.to_thread.run_sync(ctl.get)
            cpu = time.process_time()
            report = Seen(index, seen.connected, seen.failed, seen.ended, seen.deliveries, seen.written,
                          seen.delays_ms, cpu - cpu0, seen.first_error)
            cpu0 = cpu
            seen.written, seen.delays_ms = array("d"), array("d")
            out.put(report)
            if command == "stop":
                nursery.cancel_scope.cancel()
    return seen


def _watch_main(target: Target, mode: str, groups: list[list[str]], index: int, counter: Any, ctl: Any,
                out: Any, go: Any) -> None:
    """Entry point of a watching process."""
    import resource

    import trio

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, len(groups) + 256)), hard))
    try:
        trio.run(_watch_part, target, mode, groups, index, counter, ctl, out)
    except BaseException as err:  # the parent must hear of it instead of waiting forever
        out.put(RuntimeError(repr(err)))
        raise


class Watchers:
    """Watch streams held by client processes; each ``report()`` hands back what they saw since the last."""

    def __init__(self, target: Target, mode: str, path: str, watches: int, connections: int, processes: int):
        import multiprocessing

        per = max(1, watches // connections) if mode == "h2" else 1
        groups = [[path] * per for _ in range(watches // per)]
        self.processes = [groups[k::processes] for k in range(processes) if groups[k::processes]]
        ctx = multiprocessing.get_context("spawn")
        self.counter = ctx.RawArray("q", len(self.processes))
        self.ctls = [ctx.Queue() for _ in self.processes]
        jobs = [(target, mode, g, k, self.counter, self.ctls[k]) for k, g in enumerate(self.processes)]
        self.procs, self.out, self.go = _spawn(_watch_main, jobs)
        self.connections = len(groups)
        self.ended0 = 0  # streams ended before the current phase
        started = time.perf_counter()
        try:
            ready = _gather(self.procs, self.out, 600)
        except BaseException:
            self.close()
            raise
        self.open_s = time.perf_counter() - started
        self.connected = sum(r[2] for r in ready)
        failed = sum(r[3] for r in ready)
        if failed:
            self.close()
            raise RuntimeError(f"{failed} watches failed to open; first: {next(r[4] for r in ready if r[3])}")

    def delivered(self) -> int:
        return sum(self.counter)

    def report(self, command: str = "report") -> list[Seen]:
        for ctl in self.ctls:
            ctl.put(command)
        return _gather(self.procs, self.out, 120)

    def close(self) -> list[Seen]:
        try:
            return self.report("stop")
        except RuntimeError:
            return []
        finally:
            _join(self.procs)


# ---------------------------------------------------------------- the bare broadcaster


class _Conn:
    """One client connection of the bare broadcaster.

    TLS runs over memory buffers so that a tick's bytes are encrypted and handed to the socket
    right away, in the broadcast loop, without a task switch per connection; only what the socket
    does not take at once waits, for this connection alone, in its flusher task.
    """

    def __init__(self, sock: Any, ctx: ssl.SSLContext) -> None:
        import socket as stdlib_socket

        import trio

        self.sock = sock  # the trio socket: reads, and sends that have to wait
        self.now = stdlib_socket.socket(fileno=os.dup(sock.fileno()))  # the same socket, for sends that don't
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.backlog: list[bytes] = []
        self.backlog_bytes = 0
        self.flushing = False
        self.dead = False
        self.wake = trio.Event()
        self.flushed = trio.Event()
        # HTTP/2: per watching stream its send window and backlog; the connection's window and frame size.
        self.streams: dict[int, list[Any]] = {}
        self.window = 65535
        self.initial = 65535
        self.max_frame = 16384

    async def handshake(self) -> str:
        """The TLS handshake; the protocol ALPN chose."""
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._emit(self.outgoing.read())
                data = await self.sock.recv(65536)
                if not data:
                    raise ConnectionError("closed during the handshake")
                self.incoming.write(data)
        self._emit(self.outgoing.read())
        return self.tls.selected_alpn_protocol() or "http/1.1"

    async def read(self) -> bytes:
        """Decrypted bytes from the client, b"" at its end."""
        while True:
            try:
                data = self.tls.read(65536)
            except ssl.SSLWantReadError:
                raw = await self.sock.recv(65536)
                if not raw:
                    return b""
                self.incoming.write(raw)
                continue
            except ssl.SSLZeroReturnError:
                return b""
            if self.outgoing.pending:
                self._emit(self.outgoing.read())
            return data

    def send(self, plain: bytes) -> None:
        """Encrypt and send without waiting (one TLS write); the rest goes to the flusher."""
        if self.dead:
            return
        self.tls.write(plain)
        self._emit(self.outgoing.read())

    def _emit(self, data: bytes) -> None:
        if not data or self.dead:
            return
        if self.flushing:
            self.backlog.append(data)
            self.backlog_bytes += len(data)
            return
        try:
            sent = self.now.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.dead = True
            return
        if sent < len(data):
            self.backlog.append(data[sent:])
            self.backlog_bytes += len(data) - sent
            self.flushing = True
            self.wake.set()

    async def flush_loop(self) -> None:
        import trio

        while True:
            await self.wake.wait()
            self.wake = trio.Event()
            while self.backlog:
                data = memoryview(b"".join(self.backlog))
                self.backlog.clear()
                size = len(data)
                while data:
                    data = data[await self.sock.send(data):]
                self.backlog_bytes -= size  # counted until the kernel took it
            self.flushing = False
            self.flushed.set()
            self.flushed = trio.Event()

    async def drain(self) -> None:
        """Until what was sent so far has left."""
        if self.flushing:
            await self.flushed.wait()

    def close(self) -> None:
        self.dead = True
        self.now.close()
        self.sock.close()

    def h2_send(self, payload: bytes) -> None:
        """DATA frames of ``payload`` to every watching stream as far as the windows allow, in one TLS write."""
        out: list[bytes] = []
        size = len(payload)
        for sid, st in self.streams.items():
            if payload:
                if not st[1] and st[0] >= size and self.window >= size and size <= self.max_frame:
                    out.append(size.to_bytes(3, "big") + b"\x00\x00" + sid.to_bytes(4, "big"))
                    out.append(payload)
                    st[0] -= size
                    self.window -= size
                    continue
                st[1].append(payload)
            while st[1] and st[0] > 0 and self.window > 0:
                head = st[1][0]
                take = min(len(head), st[0], self.window, self.max_frame)
                out.append(frame(DATA, 0, sid, head[:take]))
                st[0] -= take
                self.window -= take
                if take == len(head):
                    st[1].pop(0)
                else:
                    st[1][0] = head[take:]
        if out:
            self.send(b"".join(out))


class Bare:
    """The broadcaster's state: connections, the event template, the broadcast in progress."""

    def __init__(self, event: bytes, head: list[tuple[str, str]]) -> None:
        at = event.index(MARKER) + len(MARKER)
        self.prefix, self.suffix = event[:at], event[at + STAMP_WIDTH:]
        self.head = head
        self.h1_conns: set[_Conn] = set()
        self.h2_conns: set[_Conn] = set()
        self.events = 0
        self.stalls = 0
        self.busy = False

    def h1_head(self) -> bytes:
        lines = [f"{k}: {v}" for k, v in self.head]
        return ("HTTP/1.1 200 OK\r\n" + "\r\n".join(lines) + "\r\nTransfer-Encoding: chunked\r\n\r\n").encode()

    async def broadcast(self, rate: float, seconds: float) -> None:
        """``rate`` events/s for ``seconds``; the events due at each tick go out together."""
        import trio

        self.busy = True
        try:
            period = 1.0 / rate
            count = max(1, int(rate * seconds))
            t0, wall0 = trio.current_time(), time.time()
            k = 0
            per_tick = max(1, BARE_TICK_BYTES // len(self.prefix + self.suffix))
            while k < count:
                await trio.sleep_until(t0 + k * period)
                # After a stall, what is due goes out a tick's worth at a time: one huge write to
                # every connection would hold a copy of it per connection.
                due = min(count, int((trio.current_time() - t0) / period) + 1, k + per_tick)
                # Each event carries its slot's wall-clock time: a tick that runs late shows as delay.
                lines = [self.prefix + b"%.6f" % (wall0 + j * period) + self.suffix for j in range(k, due)]
                k = due
                self.events += len(lines)
                if self.h1_conns:
                    chunked = b"".join(b"%x\r\n%s\r\n" % (len(line), line) for line in lines)
                    for conn in self.h1_conns:
                        conn.send(chunked)
                if self.h2_conns:
                    payload = b"".join(lines)
                    for conn in self.h2_conns:
                        conn.h2_send(payload)
                # A connection that cannot keep up holds the broadcast back rather than buffering without
                # bound: its events go out late (their delay shows it), the memory stays bounded.
                for conn in [c for c in (*self.h1_conns, *self.h2_conns) if c.backlog_bytes > BARE_BACKLOG_BYTES]:
                    self.stalls += 1
                    with trio.move_on_after(5):  # a connection that died meanwhile never drains
                        await conn.drain()
        finally:
            self.busy = False

    async def serve_conn(self, stream: Any, ctx: ssl.SSLContext, nursery: Any) -> None:
        import trio

        conn = _Conn(stream.socket, ctx)
        try:
            async with trio.open_nursery() as inner:
                inner.start_soon(conn.flush_loop)
                if await conn.handshake() == "h2":
                    await self._serve_h2(conn, nursery)
                else:
                    await self._serve_h1(conn, nursery)
                inner.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError, ssl.SSLError):
            pass  # the client went away
        finally:
            self.h1_conns.discard(conn)
            self.h2_conns.discard(conn)
            conn.close()

    async def _serve_h1(self, conn: _Conn, nursery: Any) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = await conn.read()
            if not data:
                return
            head += data
        path = head.split(b" ", 2)[1].decode()
        if "watch=" not in path:
            status, body = self.control(path, nursery)
            conn.send(b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n%s" % (status, len(body), body))
            await conn.drain()
            return
        conn.send(self.h1_head())
        self.h1_conns.add(conn)
        while await conn.read():
            pass

    async def _serve_h2(self, conn: _Conn, nursery: Any) -> None:
        import hpack

        encoder, decoder = hpack.Encoder(), hpack.Decoder()
        buf = bytearray()
        while len(buf) < len(H2_PREFACE):
            data = await conn.read()
            if not data:
                return
            buf += data
        if not buf.startswith(H2_PREFACE):
            return
        buf = buf[len(H2_PREFACE):]
        conn.send(settings((SETTINGS_MAX_CONCURRENT_STREAMS, 1000)))
        headers_out = [(":status", "200"), *((k.lower(), v) for k, v in self.head)]
        block = b""
        self.h2_conns.add(conn)
        while True:
            frames, buf = parse_frames(buf)
            for ftype, flags, sid, payload in frames:
                if ftype in (HEADERS, CONTINUATION):
                    block += payload
                    if not flags & END_HEADERS:
                        continue
                    request = dict(decoder.decode(block))
                    block = b""
                    path = request.get(":path", "/")
                    if "watch=" in path:
                        conn.send(frame(HEADERS, END_HEADERS, sid, encoder.encode(headers_out)))
                        conn.streams[sid] = [conn.initial, []]
                    else:
                        status, body = self.control(path, nursery)
                        conn.send(frame(HEADERS, END_HEADERS, sid, encoder.encode(
                            [(":status", str(status)), ("content-type", "application/json")]))
                            + frame(DATA, END_STREAM, sid, body))
                elif ftype == WINDOW_UPDATE:
                    inc = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                    if sid == 0:
                        conn.window += inc
                    elif sid in conn.streams:
                        conn.streams[sid][0] += inc
                    if any(st[1] for st in conn.streams.values()):
                        conn.h2_send(b"")  # a backlog may now go out
                elif ftype == SETTINGS and not flags & ACK:
                    for at in range(0, len(payload) - 5, 6):
                        key = int.from_bytes(payload[at:at + 2], "big")
                        value = int.from_bytes(payload[at + 2:at + 6], "big")
                        if key == SETTINGS_INITIAL_WINDOW_SIZE:
                            for st in conn.streams.values():
                                st[0] += value - conn.initial
                            conn.initial = value
                        elif key == SETTINGS_MAX_FRAME_SIZE:
                            conn.max_frame = value
                    conn.send(frame(SETTINGS, ACK, 0))
                elif ftype == PING and not flags & ACK:
                    conn.send(frame(PING, ACK, 0, payload))
                elif ftype == RST_STREAM:
                    conn.streams.pop(sid, None)
                elif ftype == GOAWAY:
                    return
            data = await conn.read()
            if not data:
                return
            buf += data

    def control(self, path: str, nursery: Any) -> tuple[int, bytes]:
        """``/readyz``; ``/bench/broadcast?rate=R&seconds=T`` starts a broadcast; ``/bench/stats``."""
        import urllib.parse

        parsed = urllib.parse.urlsplit(path)
        if parsed.path == "/readyz":
            return 200, b"ok"
        if parsed.path == "/bench/broadcast":
            if self.busy:
                return 409, b'{"error":"a broadcast is running"}'
            query = dict(urllib.parse.parse_qsl(parsed.query))
            nursery.start_soon(self.broadcast, float(query["rate"]), float(query["seconds"]))
            return 200, b"{}"
        if parsed.path == "/bench/stats":
            return 200, json.dumps({"events": self.events, "busy": self.busy, "stalls": self.stalls, "h1": len(self.h1_conns),
                                    "h2": len(self.h2_conns),
                                    "h2_streams": sum(len(c.streams) for c in self.h2_conns)}).encode()
        return 404, b"{}"


async def _serve_bare(certfile: str, keyfile: str, url_file: str, event_file: str, head_file: str) -> None:
    import trio

    head = [tuple(pair) for pair in json.loads(Path(head_file).read_text())]
    bare = Bare(Path(event_file).read_bytes(), head)  # type: ignore[arg-type]
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certfile, keyfile)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1", backlog=4096)
    port = listeners[0].socket.getsockname()[1]

    async def accept(nursery: Any) -> None:
        listener = listeners[0]
        while True:
            raw = await listener.accept()
            nursery.start_soon(bare.serve_conn, raw, ctx, nursery)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(accept, nursery)
        tmp = Path(url_file + ".tmp")
        tmp.write_text(f"https://127.0.0.1:{port}")
        tmp.rename(url_file)
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                nursery.cancel_scope.cancel()
                return


def start_bare_broadcaster(kapi: Server, work_dir: Path, event: bytes, head: list[tuple[str, str]]) -> Server:
    """The broadcaster in its own process, with kapi's serving certificate."""
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "event.json").write_bytes(event)
    (work_dir / "head.json").write_text(json.dumps(head))
    url_file = work_dir / "url"
    url_file.unlink(missing_ok=True)
    log = work_dir / "bare.log"
    pki = kapi.ca_file.parent
    cmd = [sys.executable, str(Path(__file__).resolve()), "bare", "--certfile", str(pki / "apiserver.crt"),
           "--keyfile", str(pki / "apiserver.key"), "--url-file", str(url_file),
           "--event-file", str(work_dir / "event.json"), "--head-file", str(work_dir / "head.json")]
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + 60
    _wait(proc, log, deadline, url_file.exists)
    server = Server(proc, url_file.read_text().strip(), kapi.ca_file, "unused", log, 0.0)
    _wait(proc, log, deadline, lambda: _get(server, "/readyz")[0] == 200)
    server.ready_s = time.monotonic() - started
    return server


def _get(server: Server, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(server.url + path, context=server.ssl_context(), timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except OSError:
        return 0, b""


# ---------------------------------------------------------------- kapi: objects, capture, writer


def lease_body(i: int) -> bytes:
    """A Lease of about the size of a node's, with some labels to bring its event to about 1 kB."""
    labels = {f"bench.kapi.io/label-{k}": f"value-{k:02d}-{i:04d}" for k in range(6)}
    return json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": f"lease-{i:04d}", "namespace": NAMESPACE, "labels": labels},
                       "spec": {"holderIdentity": f"node-{i:04d}.example.internal", "leaseDurationSeconds": 40,
                                "renewTime": "2026-01-01T00:00:00.000000Z"}}).encode()


def make_objects(server: Server) -> dict[str, list[str]]:
    """The namespace, OBJECTS pods and OBJECTS Leases; their names by kind."""
    status, body = server.request("POST", "/api/v1/namespaces",
                                  json.dumps({"metadata": {"name": NAMESPACE}}).encode())
    if status not in (201, 409):
        raise RuntimeError(f"namespace: {status} {body[:300]!r}")
    layout, template = Layout(OBJECTS, namespaces=1), pod_template()
    names: dict[str, list[str]] = {"pods": [], "leases": []}
    for i in range(OBJECTS):
        for kind, payload, name in (("pods", pod_body(template, layout, i), layout.name(i)),
                                    ("leases", lease_body(i), f"lease-{i:04d}")):
            status, body = server.request("POST", KINDS[kind].format(ns=NAMESPACE), payload)
            if status != 201:
                raise RuntimeError(f"create {kind}: {status} {body[:300]!r}")
            names[kind].append(name)
    return names


def _patch_body() -> bytes:
    return json.dumps({"metadata": {"annotations": {MARKER_KEY: f"{time.time():.6f}"}}}).encode()


def capture(server: Server, kind: str, name: str) -> tuple[bytes, list[tuple[str, str]]]:
    """One real watch event line of a patched object (with the marker), and kapi's watch response headers."""
    import socket

    target = Target.of(server)
    host, port = target.host_port()
    ctx = server.ssl_context()
    ctx.set_alpn_protocols(["http/1.1"])
    base = KINDS[kind].format(ns=NAMESPACE)
    status, body = server.request("GET", f"{base}/{name}")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    path = f"{base}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3D{name}"
    with socket.create_connection((host, port), timeout=30) as raw, ctx.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {target.token}\r\n"
                    f"Accept: application/json\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            more = tls.recv(65536)
            if not more:
                raise RuntimeError(f"the capture watch closed before its head: {data[:300]!r}")
            data += more
        _patch(server, base, name)
        while MARKER not in data or b"\n" not in data[data.index(MARKER):]:
            more = tls.recv(65536)
            if not more:
                raise RuntimeError("the capture watch closed")
            data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    headers = []
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.decode().partition(":")
        if key.lower() not in ("transfer-encoding", "connection", "content-length"):
            headers.append((key, value.strip()))
    body_bytes = rest[rest.index(b"\r\n") + 2:]  # past the chunk size line
    at = body_bytes.index(MARKER)
    start = body_bytes.rfind(b"\n", 0, at) + 1
    line = body_bytes[start:body_bytes.index(b"\n", at) + 1]
    json.loads(line)  # a whole event
    return line, headers


def _patch(server: Server, base: str, name: str) -> tuple[int, bytes]:
    req = urllib.request.Request(server.url + f"{base}/{name}", data=_patch_body(), method="PATCH")
    req.add_header("Authorization", f"Bearer {server.token}")
    req.add_header("Content-Type", "application/merge-patch+json")
    with urllib.request.urlopen(req, context=server.ssl_context(), timeout=60) as resp:
        if resp.status != 200:
            raise RuntimeError(f"PATCH: {resp.status}")
        return resp.status, resp.read()


@dataclass(slots=True)
class Written:
    offered: int = 0
    sent: int = 0
    dropped: int = 0  # slots no writer connection was free for until the phase ended
    errors: int = 0
    seconds: float = 0.0
    first_error: str = ""


async def _write(target: Target, paths: list[str], rate: float, seconds: float, connections: int) -> Written:
    """PATCH ``paths`` in turn at ``rate``/s for ``seconds``, each with the time in an annotation."""
    import httpx
    import trio

    ctx = ssl.create_default_context(cafile=target.ca_file)
    headers = {"Authorization": f"Bearer {target.token}", "Content-Type": "application/merge-patch+json",
               "Accept": "application/json"}
    done = Written()
    period = 1.0 / rate
    count = max(1, int(rate * seconds))
    clients = [httpx.AsyncClient(base_url=target.url, verify=ctx, headers=headers, timeout=60,
                                 limits=httpx.Limits(max_connections=1)) for _ in range(connections)]
    for client in clients:  # open the connections outside the phase
        await client.get("/readyz")
    pool_send, pool_recv = trio.open_memory_channel[httpx.AsyncClient](len(clients))
    for client in clients:
        pool_send.send_nowait(client)
    t0 = trio.current_time()
    end = t0 + count * period

    async def one(path: str) -> None:
        client = None
        with trio.move_on_at(end):
            client = await pool_recv.receive()
        if client is None:
            done.dropped += 1
            return
        try:
            resp = await client.patch(path, content=_patch_body())
            if resp.status_code == 200:
                done.sent += 1
            else:
                done.errors += 1
                done.first_error = done.first_error or f"{resp.status_code} {resp.text[:300]}"
        except httpx.HTTPError as err:
            done.errors += 1
            done.first_error = done.first_error or repr(err)
        finally:
            pool_send.send_nowait(client)

    async with trio.open_nursery() as nursery:
        for k in range(count):
            await trio.sleep_until(t0 + k * period)
            done.offered += 1
            nursery.start_soon(one, paths[k % len(paths)])
    done.seconds = trio.current_time() - t0
    for client in clients:
        await client.aclose()
    return done


# ---------------------------------------------------------------- one phase, one case


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


class RssWatch:
    """The server's RSS, sampled by the caller: first and highest."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.first = self.peak = process_rss_bytes(pid)

    def sample(self) -> None:
        try:
            self.peak = max(self.peak, process_rss_bytes(self.pid))
        except (OSError, RuntimeError):
            pass


def phase(server: Server, bare: bool, watchers: Watchers, write_paths: list[str], rate: float,
          args: argparse.Namespace) -> dict[str, Any]:
    """``rate`` updates/s for ``args.phase_seconds``, then until every event arrived (at most
    ``args.drain_seconds``): deliveries/s, delays, server CPU per delivery, RSS."""
    import threading

    import trio

    pid = server.proc.pid
    rss = RssWatch(pid)
    watchers.report()  # forget what came before
    delivered0 = watchers.delivered()
    cpu0, busy0 = process_cpu_seconds(pid), machine_busy_seconds()
    wall0, t0 = time.time(), time.perf_counter()
    stop_sampling = threading.Event()

    def sampler() -> None:
        while not stop_sampling.wait(0.1):
            rss.sample()

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    writer_cpu0 = time.process_time()
    try:
        if bare:
            status, body = _get(server, f"/bench/broadcast?rate={rate}&seconds={args.phase_seconds}")
            if status != 200:
                raise RuntimeError(f"broadcast: {status} {body!r}")
            time.sleep(args.phase_seconds)
            while json.loads(_get(server, "/bench/stats")[1])["busy"]:
                time.sleep(0.05)
            updates = max(1, int(rate * args.phase_seconds))
            written = Written(offered=updates, sent=updates, seconds=args.phase_seconds)
        else:
            written = trio.run(_write, Target.of(server), write_paths, rate, args.phase_seconds,
                               args.writer_connections)
            if written.errors:
                raise RuntimeError(f"{written.errors} updates failed; first: {written.first_error}")
        writer_cpu = time.process_time() - writer_cpu0
        expected = written.sent * watchers.connected
        deadline = time.perf_counter() + args.drain_seconds
        while watchers.delivered() - delivered0 < expected and time.perf_counter() < deadline:
            time.sleep(0.05)
        drained = watchers.delivered() - delivered0 >= expected
        wall = time.perf_counter() - t0
        cpu = process_cpu_seconds(pid) - cpu0
        busy = machine_busy_seconds() - busy0
    finally:
        stop_sampling.set()
        thread.join()
    rss.sample()
    seen = watchers.report()
    written_at = [w for s in seen for w in s.written]
    delays = [d for s in seen for d in s.delays_ms]
    mine = [(w, d) for w, d in zip(written_at, delays) if w >= wall0 - 0.001]
    delivered = len(mine)
    last = max((w + d / 1000 for w, d in mine), default=wall0)
    span = max(last - wall0, 1e-3)
    ds = sorted(d for _, d in mine)
    client_cpu = sum(s.cpu_s for s in seen)
    result = {
        "rate": rate, "offered": written.offered, "updates": written.sent, "dropped_writes": written.dropped,
        "updates_per_s": round(written.sent / args.phase_seconds, 1),
        "expected_deliveries": expected, "delivered": delivered, "all_delivered": delivered >= expected,
        "drained": drained, "ended_streams": sum(s.ended for s in seen) - watchers.ended0,
        "deliveries_per_s": round(delivered / span, 1),
        "p50_ms": round(pct(ds, 0.50), 2), "p99_ms": round(pct(ds, 0.99), 2), "max_ms": round(ds[-1], 2) if ds else 0.0,
        "seconds": round(wall, 2),
        "server_cpu_pct": round(100 * cpu / wall, 1),
        "server_cpu_us_per_delivery": round(1e6 * cpu / delivered, 2) if delivered else None,
        "client_cpu_pct": round(100 * client_cpu / wall, 1),
        "writer_cpu_pct": round(100 * writer_cpu / wall, 1),
        "other_cpu_pct": round(max(0.0, 100 * (busy - cpu - client_cpu - writer_cpu) / wall), 1),
        "rss_start": rss.first, "rss_peak": rss.peak, "rss_growth": rss.peak - rss.first,
    }
    watchers.ended0 = sum(s.ended for s in seen)
    result["ok"] = bool(result["all_delivered"] and result["p99_ms"] <= P99_GOAL_MS
                        and written.sent >= 0.95 * written.offered)
    return result


def settle(server: Server, longest_s: float = 15.0) -> None:
    """Until the server uses less than a fifth of a core over half a second (or ``longest_s``)."""
    deadline = time.monotonic() + longest_s
    while time.monotonic() < deadline:
        cpu0 = process_cpu_seconds(server.proc.pid)
        time.sleep(0.5)
        if process_cpu_seconds(server.proc.pid) - cpu0 < 0.1:
            return


def run_case(server: Server, bare: bool, mode: str, kind: str, names: list[str], args: argparse.Namespace,
             log: Any) -> dict[str, Any]:
    """One server, protocol and kind: the phase at ``--update-rate``, then the search."""
    base = KINDS[kind].format(ns=NAMESPACE)
    write_paths = [f"{base}/{n}" for n in names]
    target = Target(server.url, str(server.ca_file), server.token)
    connections = args.h2_connections if mode == "h2" else args.watchers
    rss0 = process_rss_bytes(server.proc.pid)

    def open_watchers() -> Watchers:
        rv = "1"  # the broadcaster ignores it; kapi's watches start from its current resourceVersion
        if not bare:
            status, body = server.request("GET", base + "?limit=1")
            rv = json.loads(body)["metadata"]["resourceVersion"]
        path = f"{base}?watch=1&resourceVersion={rv}&timeoutSeconds=3600&allowWatchBookmarks=false"
        w = Watchers(target, mode, path, args.watchers, connections, args.watch_clients)
        time.sleep(0.5)  # let the server settle after the connection storm
        return w

    watchers = open_watchers()
    out: dict[str, Any] = {"watchers": watchers.connected, "connections": watchers.connections,
                           "connect_s": round(watchers.open_s, 2), "phases": []}
    started = time.monotonic()
    try:
        def step(rate: float) -> dict[str, Any]:
            nonlocal watchers
            r = phase(server, bare, watchers, write_paths, rate, args)
            out["phases"].append(r)
            log(f"    {rate:7.1f}/s: {r['deliveries_per_s']:9.0f} deliveries/s, p50 {r['p50_ms']:.1f} ms, "
                f"p99 {r['p99_ms']:.1f} ms, {r['delivered']}/{r['expected_deliveries']} delivered, "
                f"{r['updates_per_s']:.0f} updates/s accepted, rss +{r['rss_growth'] / 1e6:.0f} MB, "
                f"server {r['server_cpu_pct']:.0f} % clients {r['client_cpu_pct']:.0f} %")
            if not r["drained"] or r["ended_streams"]:
                # A backlog left in the server would spill into the next phase: start over with fresh watches,
                # once the server has dropped the old ones (its CPU calms down).
                watchers.close()
                settle(server)
                watchers = open_watchers()
                r["watches_reopened_after"] = True
            return r

        first = step(args.update_rate)
        out["at_rate"] = first
        good, bad = (args.update_rate, None) if first["ok"] else (None, args.update_rate)
        for _ in range(args.search_steps):
            if time.monotonic() - started > args.search_budget_s:
                break
            if bad is None:
                rate = good * 2
            elif good is None:
                rate = bad / 2
            elif bad / good <= 1.25:
                break
            else:
                rate = (good + bad) / 2
            rate = round(rate, 1)
            if rate < args.min_rate or rate > args.max_rate:
                break
            if step(rate)["ok"]:
                good = rate
            else:
                bad = rate
        best = [p for p in out["phases"] if p["ok"] and p["rate"] == good]
        out["best"] = best[-1] if best else None
        out["best_rate"] = good
        out["first_failing_rate"] = bad
    finally:
        watchers.close()
    out["rss_growth"] = max(p["rss_peak"] for p in out["phases"]) - rss0
    return out


# ---------------------------------------------------------------- the run


def run(args: argparse.Namespace, root: Path, log: Any) -> dict[str, Any]:
    kapi = start_kapi(root / "data")
    bare_servers: dict[str, Server] = {}
    try:
        names = make_objects(kapi)
        events: dict[str, bytes] = {}
        head: list[tuple[str, str]] = []
        for kind in KINDS:
            events[kind], head = capture(kapi, kind, names[kind][0])
        log(f"events: pod {len(events['pods'])} bytes, lease {len(events['leases'])} bytes")
        for kind in KINDS:
            bare_servers[kind] = start_bare_broadcaster(kapi, root / f"bare-{kind}", events[kind], head)
        cases: dict[str, Any] = {}
        for mode in args.modes:
            for kind in args.kinds:
                name = f"{mode}-{kind}"
                case: dict[str, Any] = {"mode": mode, "kind": kind, "event_bytes": len(events[kind])}
                for side in ("kapi", "bare"):
                    # kapi may still be busy with the last case's streams (HTTP/2 ones outlive their
                    # connection); it shares the cores with whichever server is measured next.
                    settle(kapi)
                    log(f"{name}: {side} ...")
                    server = kapi if side == "kapi" else bare_servers[kind]
                    case[side] = run_case(server, side == "bare", mode, kind, names[kind], args, log)
                k, b = case["kapi"], case["bare"]
                case["ratio_at_rate"] = (round(k["at_rate"]["deliveries_per_s"] / b["at_rate"]["deliveries_per_s"], 3)
                                         if b["at_rate"]["deliveries_per_s"] else None)
                kb, bb = k["best_rate"], b["best_rate"]
                case["ratio_best_rate"] = round(kb / bb, 3) if kb and bb else None
                cases[name] = case
        return {"event_bytes": {k: len(v) for k, v in events.items()}, "kapi_headers": head, "cases": cases,
                "kapi_rss_end": process_rss_bytes(kapi.proc.pid)}
    finally:
        stop(kapi)
        for bare in bare_servers.values():
            stop(bare)


def table(r: dict[str, Any]) -> list[str]:
    """The Markdown table of one run."""
    cfg = r["config"]
    rows = [
        "| case | server | updates/s offered → accepted | deliveries/s | p50 ms | p99 ms | delivered | "
        "server µs/delivery | CPU %: server, clients, rest of machine | server RSS growth |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, case in r["cases"].items():
        label = (f"{'HTTP/2' if case['mode'] == 'h2' else 'HTTP/1.1'} {case['kind']} "
                 f"({case['event_bytes'] / 1e3:.1f} kB)")
        for side in ("kapi", "bare"):
            c = case[side]
            for p in ([c["at_rate"]] + ([c["best"]] if c["best"] and c["best"] is not c["at_rate"]
                                        and c["best"]["rate"] != c["at_rate"]["rate"] else [])):
                us = p["server_cpu_us_per_delivery"]
                rows.append(
                    f"| {label} | {side} | {p['rate']:g} → {p['updates_per_s']:g} | {p['deliveries_per_s']:,.0f} | "
                    f"{p['p50_ms']:.1f} | {p['p99_ms']:.1f} | {p['delivered']}/{p['expected_deliveries']} | "
                    f"{us if us is not None else '-'} | {p['server_cpu_pct']:.0f}, "
                    f"{p['client_cpu_pct'] + p['writer_cpu_pct']:.0f}, {p['other_cpu_pct']:.0f} | "
                    f"{p['rss_growth'] / 1e6:+.0f} MB |")
    rows += ["", f"| case ({cfg['watchers']} watches) | kapi ÷ bare, deliveries/s at {cfg['update_rate']:g} updates/s | "
                 f"highest rate with p99 ≤ {P99_GOAL_MS:g} ms: kapi | bare | kapi ÷ bare | kapi RSS growth |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, case in r["cases"].items():
        k, b = case["kapi"], case["bare"]

        def best(c: dict[str, Any]) -> str:
            if c["best_rate"] is None:
                return f"< {c['phases'][-1]['rate']:g}/s"
            more = "" if c["first_failing_rate"] is not None else " (or more)"
            return f"{c['best_rate']:g}/s{more}"

        label = f"{'HTTP/2, ' + str(k['connections']) + ' conns' if case['mode'] == 'h2' else 'HTTP/1.1'}, {case['kind']}"
        if k["best_rate"] is None or b["best_rate"] is None:
            ratio = "-"  # no rate held on one side: no ratio of rates
        else:
            ratio = f"{case['ratio_best_rate']}"
        rows.append(f"| {label} | {case['ratio_at_rate']} | {best(k)} | {best(b)} | {ratio} | "
                    f"{k['rss_growth'] / 1e6:+.0f} MB |")
    return rows


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["table"]:  # print the tables of a results file again
        print("\n".join(table(json.loads(Path(argv[1]).read_text()))))
        return 0
    if argv[:1] == ["bare"]:
        parser = argparse.ArgumentParser(description="the bare TLS watch broadcaster")
        for flag in ("--certfile", "--keyfile", "--url-file", "--event-file", "--head-file"):
            parser.add_argument(flag, required=True)
        a = parser.parse_args(argv[1:])
        import trio

        trio.run(_serve_bare, a.certfile, a.keyfile, a.url_file, a.event_file, a.head_file)
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=None, help="watches per case (default 1000, 20 quick)")
    parser.add_argument("--h2-connections", type=int, default=None,
                        help="HTTP/2 connections the watches are multiplexed over (default 50, 4 quick)")
    parser.add_argument("--watch-clients", type=int, default=None, help="client processes (default 4, 2 quick)")
    parser.add_argument("--update-rate", type=float, default=100.0, help="updates/s of the first phase")
    parser.add_argument("--phase-seconds", type=float, default=None, help="updates per phase (default 5 s, 1 quick)")
    parser.add_argument("--drain-seconds", type=float, default=None,
                        help="longest wait for the last events after a phase (default 10 s, 3 quick)")
    parser.add_argument("--search-steps", type=int, default=None, help="phases of the search (default 4, 1 quick)")
    parser.add_argument("--search-budget-s", type=float, default=90.0, help="no new search phase after this")
    parser.add_argument("--min-rate", type=float, default=3.0)
    parser.add_argument("--max-rate", type=float, default=3200.0)
    parser.add_argument("--writer-connections", type=int, default=16, help="the writer's connections to kapi")
    parser.add_argument("--modes", default="h1,h2", help="h1, h2 or both")
    parser.add_argument("--kinds", default="pods,leases", help="pods, leases or both")
    parser.add_argument("--quick", action="store_true", help="a few watchers, short phases (under a minute)")
    parser.add_argument("--dir", default=None, help="where the temporary data directory goes")
    parser.add_argument("--output", type=Path, default=RESULTS / "fanout.json", help="JSON results file")
    args = parser.parse_args(argv)
    q = args.quick
    args.watchers = args.watchers or (20 if q else 1000)
    args.h2_connections = args.h2_connections or (4 if q else 50)
    args.watch_clients = args.watch_clients or (2 if q else 4)
    args.phase_seconds = args.phase_seconds or (1.0 if q else 5.0)
    args.drain_seconds = args.drain_seconds or (3.0 if q else 10.0)
    args.search_steps = args.search_steps if args.search_steps is not None else (1 if q else 4)
    args.modes = [m for m in args.modes.split(",") if m]
    args.kinds = [k for k in args.kinds.split(",") if k]
    if not set(args.modes) <= {"h1", "h2"} or not set(args.kinds) <= set(KINDS):
        parser.error("--modes: h1,h2; --kinds: pods,leases")
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.watchers * 2 + 1024)), hard))

    def log(msg: str) -> None:
        print(msg, flush=True)

    started, commit = time.monotonic(), _commit()
    started_at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="kapi-bench-fanout-", dir=args.dir) as tmp:
        result = run(args, Path(tmp), log)
    result = {"config": {"watchers": args.watchers, "h2_connections": args.h2_connections,
                         "watch_clients": args.watch_clients, "update_rate": args.update_rate,
                         "phase_seconds": args.phase_seconds, "drain_seconds": args.drain_seconds,
                         "search_steps": args.search_steps, "writer_connections": args.writer_connections,
                         "quick": q, "cpus": os.cpu_count(), "python": platform.python_version(),
                         "commit": commit, "started": started_at},
              **result, "goals": GOALS, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print("\n".join(table(result)))
    print(f"\nJSON: {args.output}")
    return 0


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parents[1],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


if __name__ == "__main__":
    sys.exit(main())
