"""The server's body writer (``kapi.api.app.BODY_WRITER``): offered for a streamed answer, bytes as ASGI's.

kapi's connection handler offers an ASGI app a writer for the rest of a response's body once its
headers are out (watches send their events through it, without hypercorn's per-message path).
What the client receives must be what the same ``http.response.body`` messages give: HTTP/1.1
chunks, HTTP/2 DATA frames; no writer where there is no body to write (HEAD, a Content-Length
answer over HTTP/1.1, whose framing is h11's).
"""

from __future__ import annotations

import ssl
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator

import h2.config
import h2.connection
import h2.events
import pytest
import trio
from hypercorn.config import Config as HypercornConfig

from kapi.api.app import BODY_WRITER
from kapi.chain.authn import PeerCertificates
from kapi.server.https import serve_https
from kapi.server.pki import ensure_pki

PIECES = [b"a" * 10, b"", b"b" * 70000, b"\r\n0\r\n\r\n", b"c"]  # the empty one is skipped, as ASGI skips it


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Streams PIECES through the writer when offered (``/length``: with a Content-Length); says whether it was."""
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"text/plain")]
    if scope["path"] == "/length":
        headers.append((b"content-length", b"%d" % sum(map(len, PIECES))))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    write = (scope.get("extensions") or {}).get(BODY_WRITER)
    for piece in PIECES:
        if write is not None and piece:
            await write(piece)
        elif write is None:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
    # The end of the body, and whether the writer was offered, in a trailer-like last piece.
    await send({"type": "http.response.body", "body": b"|writer" if write else b"|asgi", "more_body": False})


@pytest.fixture
async def port_ca(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[int, Path]]:
    pki = ensure_pki(tmp_path, "127.0.0.1")
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.certfile, config.keyfile = str(pki.serving_cert), str(pki.serving_key)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.graceful_timeout = 1
    binds = await nursery.start(partial(serve_https, _app, config, str(pki.ca_cert), PeerCertificates(),
                                        shutdown_trigger=trio.sleep_forever))
    yield int(binds[0].rsplit(":", 1)[1]), pki.ca_cert
    nursery.cancel_scope.cancel()


async def _tls(port_ca: tuple[int, Path], alpn: str) -> trio.SSLStream[trio.SocketStream]:
    ctx = ssl.create_default_context(cafile=str(port_ca[1]))
    ctx.set_alpn_protocols([alpn])
    return await trio.open_ssl_over_tcp_stream("127.0.0.1", port_ca[0], ssl_context=ctx, https_compatible=True)


def _dechunk(chunked: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, chunked = chunked.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert chunked == b"\r\n"
            return out
        assert chunked[size:size + 2] == b"\r\n"
        out, chunked = out + chunked[:size], chunked[size + 2:]


async def _http1(port_ca: tuple[int, Path], method: str, path: str) -> tuple[bytes, bytes]:
    """One request on a fresh connection (closed after it); the head and the raw body."""
    tls = await _tls(port_ca, "http/1.1")
    await tls.send_all(f"{method} {path} HTTP/1.1\r\nHost: kapi\r\nConnection: close\r\n\r\n".encode())
    got = b""
    with trio.fail_after(20):
        while True:
            try:
                data = await tls.receive_some(65536)
            except trio.BrokenResourceError:
                break
            if not data:
                break
            got += data
    head, _, body = got.partition(b"\r\n\r\n")
    return head, body


async def test_http1_chunked_answer_gets_the_writer_and_the_same_bytes(port_ca: tuple[int, Path]) -> None:
    head, body = await _http1(port_ca, "GET", "/stream")
    assert b"transfer-encoding: chunked" in head.lower()
    assert _dechunk(body) == b"".join(PIECES) + b"|writer"


async def test_http1_content_length_and_head_get_no_writer(port_ca: tuple[int, Path]) -> None:
    head, body = await _http1(port_ca, "GET", "/length")
    assert b"content-length" in head.lower()
    assert body.startswith(b"".join(PIECES))  # what the Content-Length promised (the rest is cut by h11)
    head, body = await _http1(port_ca, "HEAD", "/stream")
    assert head.startswith(b"HTTP/1.1 200") and body == b""


async def test_http2_answer_gets_the_writer_and_the_same_bytes(port_ca: tuple[int, Path]) -> None:
    tls = await _tls(port_ca, "h2")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    conn.initiate_connection()
    bodies: dict[int, bytearray] = {}
    ended: set[int] = set()
    sids = []
    for method in ("GET", "HEAD"):
        sid = conn.get_next_available_stream_id()
        sids.append(sid)
        conn.send_headers(sid, [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", b"kapi"),
                                (b":path", b"/stream")], end_stream=True)
    await tls.send_all(conn.data_to_send())
    with trio.fail_after(20):
        while len(ended) < 2:
            raw = await tls.receive_some(65536)
            assert raw
            for event in conn.receive_data(raw):
                if isinstance(event, h2.events.DataReceived):
                    bodies.setdefault(event.stream_id, bytearray()).extend(event.data)
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
            out = conn.data_to_send()
            if out:
                await tls.send_all(out)
    assert bytes(bodies[sids[0]]) == b"".join(PIECES) + b"|writer"
    assert not bodies.get(sids[1])  # HEAD: no body, and no writer offered to write one
    await tls.aclose()
