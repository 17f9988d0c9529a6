"""kapi's TLS connection handler on real sockets (issue 10): deadlines, status lines, protocol errors.

Each test runs ``serve_https`` in process, on a free port, with deadlines short enough to
wait for; the connection is driven byte by byte from a trio client.
"""

from __future__ import annotations

import ssl
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator

import orjson
import pytest
import trio
from hypercorn.config import Config as HypercornConfig

from kapi.chain.authn import PeerCertificates
from kapi.server.https import ConnectionLimits, serve_https
from kapi.server.pki import ensure_pki

WAIT_S = 20  # far beyond every deadline below: only a connection nobody closes reaches it


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app answering ``/status/<code>`` with that code, anything else 200."""
    if scope["type"] != "http":
        return
    code = int(scope["path"].rsplit("/", 1)[1]) if scope["path"].startswith("/status/") else 200
    body = b'{"ok":true}\n'
    await send({"type": "http.response.start", "status": code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


class Served:
    def __init__(self, port: int, ca: Path) -> None:
        self.port, self.ca = port, ca

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    async def tls(self) -> trio.SSLStream[trio.SocketStream]:
        stream = await trio.open_ssl_over_tcp_stream("127.0.0.1", self.port, ssl_context=self.client_context(),
                                                     https_compatible=True)
        await stream.do_handshake()
        return stream


async def _serve(nursery: trio.Nursery, tmp_path: Path, limits: ConnectionLimits, *, graceful_s: float = 1,
                 shutdown: trio.Event | None = None) -> Served:
    pki = ensure_pki(tmp_path, "127.0.0.1")
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.certfile, config.keyfile = str(pki.serving_cert), str(pki.serving_key)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.graceful_timeout = graceful_s
    trigger = shutdown.wait if shutdown is not None else trio.sleep_forever
    binds = await nursery.start(partial(serve_https, _app, config, str(pki.ca_cert), PeerCertificates(),
                                        shutdown_trigger=trigger, limits=limits))
    return Served(int(binds[0].rsplit(":", 1)[1]), pki.ca_cert)


async def _closed_by_server(stream: Any) -> bytes:
    """Read until the server closes the connection; what it sent before."""
    got = b""
    with trio.fail_after(WAIT_S):
        while True:
            try:
                data = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                return got
            if not data:
                return got
            got += data


@pytest.fixture
async def fast_headers(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Served]:
    """Request heads due within 0.5 s; idle connections kept far longer than any test waits."""
    yield await _serve(nursery, tmp_path, ConnectionLimits(read_header_timeout_s=0.5, idle_timeout_s=600))
    nursery.cancel_scope.cancel()


@pytest.fixture
async def fast_idle(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Served]:
    yield await _serve(nursery, tmp_path, ConnectionLimits(read_header_timeout_s=600, idle_timeout_s=0.5))
    nursery.cancel_scope.cancel()


async def test_slow_loris_is_cut_off_at_the_header_deadline(fast_headers: Served) -> None:
    """Issue 10: a client sending its headers a byte at a time kept its connection indefinitely."""
    stream = await fast_headers.tls()
    head = b"GET /x HTTP/1.1\r\nHost: kapi\r\nX-Slow: " + b"a" * 10_000
    closed = False
    with trio.fail_after(WAIT_S):
        for i in range(len(head)):
            try:
                await stream.send_all(head[i:i + 1])
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                closed = True
                break
            await trio.sleep(0.01)
    if not closed:
        assert await _closed_by_server(stream) == b""
    await trio.aclose_forcefully(stream)


async def test_slow_second_request_on_a_keep_alive_connection_is_cut_off(fast_headers: Served) -> None:
    """Issue 10: the header deadline also runs from the first byte of a later keep-alive request."""
    stream = await fast_headers.tls()
    await stream.send_all(b"GET /a HTTP/1.1\r\nHost: kapi\r\n\r\n")
    with trio.fail_after(WAIT_S):
        got = b""
        while b'{"ok":true}\n' not in got:
            got += await stream.receive_some(65536)
    assert got.startswith(b"HTTP/1.1 200 OK\r\n")
    await trio.sleep(1)  # idle for longer than the header deadline: allowed, the idle timeout is long
    await stream.send_all(b"GET /b HTTP/1.1\r\n")  # ... and the rest never comes
    assert await _closed_by_server(stream) == b""


async def test_a_connection_that_sends_nothing_is_closed(fast_headers: Served) -> None:
    """Issue 10: idle TLS connections (no request) and bare TCP connections (no handshake) stayed open."""
    stream = await fast_headers.tls()
    assert await _closed_by_server(stream) == b""
    tcp = await trio.open_tcp_stream("127.0.0.1", fast_headers.port)
    assert await _closed_by_server(tcp) == b""
    await trio.aclose_forcefully(stream)
    await trio.aclose_forcefully(tcp)


async def test_idle_keep_alive_connection_is_closed(fast_idle: Served) -> None:
    """Issue 10: an idle keep-alive connection is closed at the idle timeout."""
    stream = await fast_idle.tls()
    await stream.send_all(b"GET /a HTTP/1.1\r\nHost: kapi\r\n\r\n")
    got = await _closed_by_server(stream)
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.endswith(b'{"ok":true}\n')


@pytest.mark.parametrize(("code", "line"), [(409, b"HTTP/1.1 409 Conflict\r\n"),
                                            (422, b"HTTP/1.1 422 Unprocessable Entity\r\n"),
                                            (429, b"HTTP/1.1 429 Too Many Requests\r\n"),
                                            (201, b"HTTP/1.1 201 Created\r\n"),
                                            (299, b"HTTP/1.1 299 status code 299\r\n")])
async def test_status_line_has_a_reason_phrase(fast_idle: Served, code: int, line: bytes) -> None:
    """Issue 10: the status line read ``HTTP/1.1 409 `` and clients printed ``Error from server ():``."""
    stream = await fast_idle.tls()
    await stream.send_all(b"GET /status/%d HTTP/1.1\r\nHost: kapi\r\nConnection: close\r\n\r\n" % code)
    got = await _closed_by_server(stream)
    assert got.startswith(line), got[:60]


async def _protocol_error(served: Served, request: bytes) -> tuple[bytes, dict[str, Any]]:
    stream = await served.tls()
    await stream.send_all(request)
    got = await _closed_by_server(stream)
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower()
    assert b"content-length: %d" % len(body) in head.lower()
    return head.split(b"\r\n")[0], orjson.loads(body)


async def test_protocol_errors_answer_a_status(nursery: trio.Nursery, tmp_path: Path) -> None:
    """Issue 10: 431 (headers too large) and 400 (a NUL in a header) came back without a body."""
    served = await _serve(nursery, tmp_path, ConnectionLimits(max_header_bytes=2048))
    line, status = await _protocol_error(served, b"GET / HTTP/1.1\r\nHost: kapi\r\nX-Big: " + b"a" * 8000
                                         + b"\r\n\r\n")
    assert line == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert (status["kind"], status["status"], status["code"]) == ("Status", "Failure", 431)
    assert "2048" in status["message"]
    line, status = await _protocol_error(served, b"GET / HTTP/1.1\r\nHost: kapi\r\nX-Nul: a\x00b\r\n\r\n")
    assert line == b"HTTP/1.1 400 Bad Request"
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "BadRequest", 400)
    # A Transfer-Encoding h11 does not implement: 501, and the Status says 501 too (a fuzz finding).
    line, status = await _protocol_error(served, b"POST / HTTP/1.1\r\nHost: kapi\r\nTransfer-Encoding: gzip\r\n\r\n")
    assert line == b"HTTP/1.1 501 Not Implemented"
    assert (status["kind"], status["status"], status["code"]) == ("Status", "Failure", 501)
    # Headers under the limit are served.
    stream = await served.tls()
    await stream.send_all(b"GET / HTTP/1.1\r\nHost: kapi\r\nConnection: close\r\nX-Ok: " + b"a" * 1500
                          + b"\r\n\r\n")
    assert (await _closed_by_server(stream)).startswith(b"HTTP/1.1 200 OK")
    nursery.cancel_scope.cancel()


async def test_shutdown_is_not_held_by_a_header_deadline(tmp_path: Path) -> None:
    """Issue 10: a keep-alive connection whose next request has begun closes at shutdown at once;
    its header deadline (here far away) must not keep the server waiting for it."""
    shutdown = trio.Event()
    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            served = await _serve(nursery, tmp_path, ConnectionLimits(read_header_timeout_s=600, idle_timeout_s=600),
                                  graceful_s=600, shutdown=shutdown)
            stream = await served.tls()
            await stream.send_all(b"GET /a HTTP/1.1\r\nHost: kapi\r\n\r\n")
            got = b""
            while b'{"ok":true}\n' not in got:
                got += await stream.receive_some(65536)
            await stream.send_all(b"GET /b HTTP/1.1\r\n")
            await trio.sleep(0.2)
            shutdown.set()  # serve_https returns once its connections are closed: the nursery ends
    await trio.aclose_forcefully(stream)


async def test_malformed_websocket_handshake_is_served_as_the_get_it_is(fast_idle: Served) -> None:
    """Issue 10: an upgrade request without Sec-WebSocket-Key got hypercorn's empty 400; kapi upgrades
    nothing, so it answers what the GET gets."""
    stream = await fast_idle.tls()
    await stream.send_all(b"GET /status/404 HTTP/1.1\r\nHost: kapi\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                          b"\r\n")
    got = await _closed_by_server(stream)  # at the idle timeout, after the answer
    assert got.startswith(b"HTTP/1.1 404 Not Found\r\n") and got.endswith(b'{"ok":true}\n'), got[:200]
