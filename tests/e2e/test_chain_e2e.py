"""The chain on a real socket (issue 11): an unauthenticated request is answered before its body is sent."""

from __future__ import annotations

import socket
import ssl

import pytest

from .conftest import Server

pytestmark = pytest.mark.e2e


def _tls(server: Server) -> ssl.SSLSocket:
    host, _, port = server.url.removeprefix("https://").rpartition(":")
    raw = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(raw, server_hostname=host.strip("[]"))


def _head(conn: ssl.SSLSocket) -> bytes:
    got = b""
    while b"\r\n\r\n" not in got:
        data = conn.recv(65536)
        assert data, got
        got += data
    return got.partition(b"\r\n\r\n")[0]


def test_an_unauthenticated_upload_is_refused_before_its_body_is_sent(server: Server) -> None:
    """Issue 11: the server read the body (up to --max-body-bytes) before authentication.

    Only the headers of a 2 MiB POST are sent: the 401 must come back without the body.
    """
    head = (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: kapi\r\n"
            b"Authorization: Bearer not-a-token\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (2 * 1024 * 1024))
    with _tls(server) as conn:
        conn.sendall(head)
        status_line = _head(conn).split(b"\r\n")[0]
    assert status_line.split(b" ")[1] == b"401", status_line
