"""The chain on a real socket (issue 11): an unauthenticated request is answered before its body is sent."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import httpx
import pytest

from tests.http.test_serve import read_response

from .conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e


def _tls(server: Server, alpn: str = "http/1.1") -> ssl.SSLSocket:
    host, _, port = server.url.removeprefix("https://").rpartition(":")
    raw = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    ctx.set_alpn_protocols([alpn])
    return ctx.wrap_socket(raw, server_hostname=host.strip("[]"))


def _head(conn: ssl.SSLSocket) -> bytes:
    got = b""
    while b"\r\n\r\n" not in got:
        data = conn.recv(65536)
        assert data, got
        got += data
    return got.partition(b"\r\n\r\n")[0]


def _configmap(name: str, size: int) -> bytes:
    return (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"k":"%s"}}'
            % (name.encode(), b"x" * size))


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


def test_the_connection_goes_on_once_the_unread_body_arrives(server: Server) -> None:
    """Issue 11: the whole 401 is written before the body is received; the body is then dropped and
    the keep-alive connection serves the next request."""
    body = _configmap("unread", 2 * 1024 * 1024)
    with _tls(server) as conn:
        conn.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: kapi\r\n"
                     b"Authorization: Bearer not-a-token\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        status_line, answer = read_response(conn)
        assert status_line.split(b" ")[1] == b"401" and b'"reason":"Unauthorized"' in answer
        conn.sendall(body)
        conn.sendall(f"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: kapi\r\n"
                     f"Authorization: Bearer {server.token}\r\n\r\n".encode())
        status_line, answer = read_response(conn)
        assert status_line.split(b" ")[1] == b"200" and b'"name":"default"' in answer


def test_refused_uploads_over_http2_leave_the_connection_and_the_server_serving(server: Server) -> None:
    """Issue 11: answering before the body is in must not end the HTTP/2 connection (nor the server):
    hypercorn closes a stream once its answer ends, and data still arriving on it was fatal.
    The same held before for a body over --max-body-bytes (413)."""
    url = server.url + "/api/v1/namespaces/default/configmaps"
    with httpx.Client(http2=True, verify=ssl.create_default_context(cafile=str(server.ca_file)),
                      timeout=30) as client:
        refused = client.post(url, content=_configmap("h2-unread", 1024 * 1024),
                              headers={"Authorization": "Bearer not-a-token", "Content-Type": "application/json"})
        assert (refused.status_code, refused.http_version) == (401, "HTTP/2")
        too_large = client.post(url, content=_configmap("h2-large", 4 * 1024 * 1024),
                                headers={"Authorization": f"Bearer {server.token}",
                                         "Content-Type": "application/json"})
        assert too_large.status_code == 413
        after = client.get(url, headers={"Authorization": f"Bearer {server.token}"})
        assert after.status_code == 200
    assert server.proc.poll() is None


def _h2_answer(conn: ssl.SSLSocket, h2conn: h2.connection.H2Connection, stream_id: int) -> bytes:
    """Read frames until the answer on ``stream_id`` has ended; its :status."""
    status = b""
    while True:
        data = conn.recv(65536)
        assert data, "the server closed the connection"
        for event in h2conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
                status = dict(event.headers)[b":status"]
            if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                conn.sendall(h2conn.data_to_send())
                return status
        conn.sendall(h2conn.data_to_send())


def test_http2_data_after_its_answer_does_not_end_the_server(tmp_path: Path) -> None:
    """Issue 11 (found moving the body read): a body slower than --request-timeout is answered 504,
    and the next DATA frame the client sent on that stream ended the whole server (a KeyError in
    hypercorn's HTTP/2 protocol, which forgets a stream once its answer is complete)."""
    server = start_server(tmp_path, "--storage-backend", "memory", "--request-timeout", "1s")
    try:
        with _tls(server, "h2") as conn:
            client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            client.initiate_connection()
            auth = ("authorization", f"Bearer {server.token}")
            client.send_headers(1, [(":method", "POST"), (":path", "/api/v1/namespaces/default/configmaps"),
                                    (":scheme", "https"), (":authority", "kapi"), auth,
                                    ("content-type", "application/json"), ("content-length", "1000")])
            client.send_data(1, b'{"metadata":')
            conn.sendall(client.data_to_send())
            assert _h2_answer(conn, client, 1) == b"504"
            client.send_data(1, b'{"name":"late"}')  # the client's half of the stream is still open
            client.send_headers(3, [(":method", "GET"), (":path", "/api/v1/namespaces/default"),
                                    (":scheme", "https"), (":authority", "kapi"), auth], end_stream=True)
            conn.sendall(client.data_to_send())
            assert _h2_answer(conn, client, 3) == b"200"
        assert server.request("GET", "/readyz")[0] == 200
    finally:
        stop_server(server)
