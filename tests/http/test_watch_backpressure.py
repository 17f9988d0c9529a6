"""Issue 33: a watch whose client stops reading is a slow consumer over HTTP/2 as over HTTP/1.1.

Real watches over TLS against the real app, served in process by ``serve_https``: an HTTP/2
client that stops giving its stream flow-control credit (the stream's window runs out while the
connection keeps reading, as a Go client whose consumer stalls), and an HTTP/1.1 client that stops
reading its socket. While many events are written, the bytes the server holds for the stalled
watch stay bounded (its own statistics), the watch cache closes it as too slow, the client then
reads what was sent before the end, and a watch resumed from its last resourceVersion gets the rest.
"""

from __future__ import annotations

import socket
import ssl
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator

import h2.config
import h2.connection
import h2.events
import orjson
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.protocol.h2 import BUFFER_HIGH_WATER

from kapi.apis import BUILTIN
from kapi.api.app import Health
from kapi.config import Config
from kapi.encoding import codec
from kapi.metrics import Metrics
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.https import Connections, serve_https
from kapi.server.pki import ensure_pki
from kapi.server.serve import build_app
from kapi.controllers.namespace import NamespaceController
from kapi.storage.memory import MemoryStorage

TOKEN = "test-admin-token"
WAIT_S = 60
EVENTS = 1500  # updates written while a watch is stalled: ~1.5 MB of events, far beyond any bound below
VALUE_BYTES = 1000
PATH = "/api/v1/namespaces/default/configmaps"


class Served:
    def __init__(self, registry: Registry, port: int, ca: Path, connections: Connections) -> None:
        self.registry, self.port, self.ca, self.connections = registry, port, ca, connections
        self.revision = 0  # of the one ConfigMap the tests update

    def context(self, alpn: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        ctx.set_alpn_protocols([alpn])
        return ctx

    async def update(self, i: int) -> int:
        """Write the ConfigMap's version ``i`` straight to storage (the watch cache sees it as any write)."""
        storage = self.registry.storage
        obj = {"kind": "ConfigMap", "apiVersion": "v1",
               "metadata": {"name": "cm", "namespace": "default", "uid": "u-cm"},
               "data": {"i": str(i), "pad": "x" * VALUE_BYTES}}
        res = self.registry.table.get("", "v1", "configmaps")
        assert res is not None
        key = self.registry.key(res, "default", "cm")
        if self.revision:
            self.revision = await storage.update(key, codec.encode_value(obj), self.revision)
        else:
            self.revision = await storage.create(key, codec.encode_value(obj))
        return self.revision

    def terminated(self) -> float:
        value = self.registry.metrics.registry.get_sample_value(
            "apiserver_terminated_watchers_total", {"group": "", "resource": "configmaps"})
        return value or 0.0

    async def synced(self) -> None:
        res = self.registry.table.get("", "v1", "configmaps")
        assert res is not None
        cacher = self.registry.cacher_of(res)
        assert cacher is not None
        await cacher.wait_for_rv(await self.registry.storage.current_revision())


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Served]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    cacher = registry.make_cacher(res, capacity=2 * EVENTS + 100)  # the resumed watch finds every event
    await nursery.start(cacher.run)
    registry.serve_cache(res.cache_key, cacher)
    pki = ensure_pki(tmp_path, "127.0.0.1")
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.certfile, config.keyfile = str(pki.serving_cert), str(pki.serving_key)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.graceful_timeout = 1
    connections = Connections()
    binds = await nursery.start(partial(serve_https, app, config, str(pki.ca_cert), app.peer_certificates,
                                        shutdown_trigger=trio.sleep_forever, connections=connections))
    s = Served(registry, int(binds[0].rsplit(":", 1)[1]), pki.ca_cert, connections)
    await s.update(0)
    await s.synced()
    yield s
    nursery.cancel_scope.cancel()


def _events(data: bytes) -> list[dict[str, Any]]:
    """The whole lines' events (a line still arriving is left out)."""
    return [orjson.loads(line) for line in data[:data.rfind(b"\n") + 1].split(b"\n") if line]


def _versions(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["object"]["data"]["i"]) for e in events if e["type"] != "BOOKMARK"]


class H2Client:
    """A raw HTTP/2 client over TLS whose streams can be stalled: their data is not given credit back."""

    def __init__(self, stream: trio.SSLStream[trio.SocketStream]) -> None:
        self.stream = stream
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.data: dict[int, bytearray] = {}
        self.ended: dict[int, trio.Event] = {}
        self.stalled: dict[int, int] = {}  # stream -> bytes received and not acknowledged
        self.status: dict[int, int] = {}
        self.received = trio.Event()  # set on each DATA frame (replaced once waited on)
        self._sending = trio.Lock()

    async def start(self, nursery: trio.Nursery) -> None:
        self.conn.initiate_connection()
        # The connection's window far beyond anything sent here: only a stream's own window runs out.
        self.conn.increment_flow_control_window(2**30)
        await self._flush()
        nursery.start_soon(self._read)

    async def _flush(self) -> None:
        async with self._sending:
            out = self.conn.data_to_send()
            if out:
                await self.stream.send_all(out)

    async def _read(self) -> None:
        while True:
            try:
                raw = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not raw:
                return
            for event in self.conn.receive_data(raw):
                if isinstance(event, h2.events.ResponseReceived):
                    self.status[event.stream_id] = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self.data.setdefault(event.stream_id, bytearray()).extend(event.data)
                    if event.stream_id in self.stalled:
                        self.stalled[event.stream_id] += event.flow_controlled_length
                    else:
                        self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    self.received.set()
                elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                    self.ended.setdefault(event.stream_id, trio.Event()).set()
            await self._flush()

    async def watch(self, query: str, *, stalled: bool = False) -> int:
        sid = self.conn.get_next_available_stream_id()
        if stalled:
            self.stalled[sid] = 0
        self.ended.setdefault(sid, trio.Event())
        self.conn.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"kapi"),
                                     (b":path", f"{PATH}?{query}".encode()),
                                     (b"authorization", f"Bearer {TOKEN}".encode())], end_stream=True)
        await self._flush()
        return sid

    async def resume(self, sid: int) -> None:
        """Give the stalled stream its credit back, and from now on as data comes."""
        pending = self.stalled.pop(sid)
        if pending:
            self.conn.acknowledge_received_data(pending, sid)
            await self._flush()

    def events(self, sid: int) -> list[dict[str, Any]]:
        return _events(bytes(self.data.get(sid, b"")))


async def _write_while_stalled(served: Served, first: int, count: int) -> int:
    """Write ``count`` updates, sampling the server's buffered bytes; the most it held for its streams."""
    most = 0
    for i in range(first, first + count):
        await served.update(i)
        if i % 25 == 0:
            await served.synced()
            most = max(most, served.connections.statistics().largest_stream_buffer_bytes)
    await served.synced()
    return max(most, served.connections.statistics().largest_stream_buffer_bytes)


async def _resumed_rest(client: H2Client, rv: str, last: int) -> list[int]:
    """A watch from ``rv`` until it has delivered version ``last``: the versions it got."""
    sid = await client.watch(f"watch=true&resourceVersion={rv}")
    with trio.fail_after(WAIT_S):
        while True:
            got = _versions(client.events(sid))
            if got and got[-1] >= last:
                return got
            client.received = trio.Event()
            await client.received.wait()


async def test_a_stalled_http2_watch_is_bounded_and_closed_as_slow(served: Served, nursery: trio.Nursery) -> None:
    tls = await trio.open_ssl_over_tcp_stream("127.0.0.1", served.port, ssl_context=served.context("h2"),
                                              https_compatible=True)
    client = H2Client(tls)
    await client.start(nursery)
    rv = str(served.revision)
    reading = await client.watch(f"watch=true&resourceVersion={rv}")
    stalled = await client.watch(f"watch=true&resourceVersion={rv}", stalled=True)
    with trio.fail_after(WAIT_S):
        while served.connections.statistics().h2_streams < 2:
            await trio.sleep(0.01)
    most = await _write_while_stalled(served, 1, EVENTS)

    # A stream's buffer holds at most its high-water mark and one frame (hypercorn's own held it all: ~1.5 MB).
    assert most <= BUFFER_HIGH_WATER + 16384, most
    assert served.terminated() == 1  # the stalled one, not the one reading
    # The reading watch has every event, in order.
    with trio.fail_after(WAIT_S):
        while _versions(client.events(reading))[-1:] != [EVENTS]:
            client.received = trio.Event()
            await client.received.wait()
    assert _versions(client.events(reading)) == list(range(1, EVENTS + 1))

    # The stalled client reads again: what was sent before its watch was closed, then the end.
    await client.resume(stalled)
    with trio.fail_after(WAIT_S):
        await client.ended[stalled].wait()
    assert client.status[stalled] == 200
    got = client.events(stalled)
    seen = _versions(got)
    assert 0 < len(seen) < EVENTS and seen == list(range(1, len(seen) + 1))
    rest = await _resumed_rest(client, got[-1]["object"]["metadata"]["resourceVersion"], EVENTS)
    assert seen + rest == list(range(1, EVENTS + 1))
    assert served.connections.statistics().buffered_bytes == 0
    await tls.aclose()


async def test_a_stalled_http1_watch_is_closed_as_slow(served: Served, nursery: trio.Nursery) -> None:
    raw = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    await raw.connect(("127.0.0.1", served.port))
    tls = trio.SSLStream(trio.SocketStream(raw), served.context("http/1.1"), server_hostname="127.0.0.1",
                         https_compatible=True)
    await tls.send_all(f"GET {PATH}?watch=true&resourceVersion={served.revision} HTTP/1.1\r\nHost: kapi\r\n"
                       f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
    most = await _write_while_stalled(served, 1, EVENTS)
    assert most == 0  # HTTP/1.1 holds nothing in kapi: a write waits on the socket
    assert served.terminated() == 1
    # The client reads again: the chunks sent before the watch was closed, then the end of the body.
    body = b""
    with trio.fail_after(WAIT_S):
        while not body.endswith(b"\r\n0\r\n\r\n"):
            data = await tls.receive_some(65536)
            assert data, body[-200:]
            body += data
    head, _, chunked = body.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    payload = b""
    while True:
        size_line, _, chunked = chunked.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        payload, chunked = payload + chunked[:size], chunked[size + 2:]
    got = _events(payload)
    seen = _versions(got)
    assert 0 < len(seen) < EVENTS and seen == list(range(1, len(seen) + 1))
    await tls.aclose()
    # A watch resumed from its last resourceVersion (here over HTTP/2) gets the rest.
    h2tls = await trio.open_ssl_over_tcp_stream("127.0.0.1", served.port, ssl_context=served.context("h2"),
                                                https_compatible=True)
    client = H2Client(h2tls)
    await client.start(nursery)
    rest = await _resumed_rest(client, got[-1]["object"]["metadata"]["resourceVersion"], EVENTS)
    assert seen + rest == list(range(1, EVENTS + 1))
    await h2tls.aclose()


async def test_many_http2_watches_on_one_connection_get_every_event(served: Served, nursery: trio.Nursery) -> None:
    """The frames of many streams written together (one write per round): each watch's bytes whole, in order."""
    tls = await trio.open_ssl_over_tcp_stream("127.0.0.1", served.port, ssl_context=served.context("h2"),
                                              https_compatible=True)
    client = H2Client(tls)
    await client.start(nursery)
    rv = str(served.revision)
    sids = [await client.watch(f"watch=true&resourceVersion={rv}") for _ in range(40)]
    with trio.fail_after(WAIT_S):
        while served.connections.statistics().h2_streams < len(sids):
            await trio.sleep(0.01)
    count, batch = 300, 25  # a batch at a time: fewer than a watcher's channel holds, none is too slow
    for first in range(1, count + 1, batch):
        for i in range(first, first + batch):
            await served.update(i)
        with trio.fail_after(WAIT_S):
            while any(_versions(client.events(sid))[-1:] != [first + batch - 1] for sid in sids):
                client.received = trio.Event()
                await client.received.wait()
    for sid in sids:
        assert _versions(client.events(sid)) == list(range(1, count + 1))
    assert served.terminated() == 0
    await tls.aclose()
