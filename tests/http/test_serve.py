"""A real ``kapi serve`` (issue 10): shutdown within --shutdown-timeout, reason phrases, closing watches."""

from __future__ import annotations

import resource
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from tests.e2e.conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e

WAIT_S = 60  # far beyond the 2 s shutdown timeout: only a server that ignores it reaches this


def _tls(server: Server, *, rcvbuf: int = 0) -> ssl.SSLSocket:
    host, _, port = server.url.removeprefix("https://").rpartition(":")
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: a small window
    raw.settimeout(30)
    raw.connect((host.strip("[]"), int(port)))
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(raw, server_hostname=host.strip("[]"))


def _request(server: Server, method: str, path: str, body: bytes = b"") -> bytes:
    head = (f"{method} {path} HTTP/1.1\r\nHost: kapi\r\nAuthorization: Bearer {server.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head + body


def read_response(conn: ssl.SSLSocket) -> tuple[bytes, bytes]:
    """One response with a Content-Length: its status line and its body."""
    got = b""
    while b"\r\n\r\n" not in got:
        data = conn.recv(65536)
        assert data, got
        got += data
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        data = conn.recv(65536)
        assert data, body
        body += data
    return head.split(b"\r\n")[0], body


def test_shutdown_honours_its_timeout_with_a_slow_list_reader(tmp_path: Path) -> None:
    """Issue 10: shutdown overran --shutdown-timeout while a client read a large LIST body slowly.

    Here the client stops reading altogether: hypercorn shields its socket writes from
    cancellation, so only closing the socket at the deadline lets the server exit.
    """
    server = start_server(tmp_path, "--storage-backend", "memory", "--shutdown-timeout", "2s")
    slow = None
    try:
        value = "x" * 800_000
        for i in range(20):  # a 16 MB LIST body: more than the socket buffers hold
            status, _, body = server.request("POST", "/api/v1/namespaces/default/configmaps", orjson.dumps(
                {"metadata": {"name": f"big-{i}"}, "data": {"v": value}}),
                headers={"Content-Type": "application/json"})
            assert status == 201, body[:200]
        slow = _tls(server, rcvbuf=4096)
        slow.sendall(_request(server, "GET", "/api/v1/namespaces/default/configmaps"))
        assert slow.recv(100).startswith(b"HTTP/1.1 200 OK")
        time.sleep(1)  # the server is now blocked writing the body; the client reads no more
        server.proc.send_signal(signal.SIGTERM)
        try:
            code = server.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail("kapi serve did not exit within its shutdown timeout while a client read slowly")
        assert code == 0, server.log.read_text()[-2000:]
        assert "shutdown timeout ran out" in server.log.read_text()
    finally:
        if slow is not None:
            slow.close()
        stop_server(server, signal.SIGKILL)


def test_real_server_status_lines_watches_and_bodies(tmp_path: Path) -> None:
    """Issue 10: reason phrases, JSON bodies ending in a newline, and watches that close without
    "Cancel scope stack corrupted" in the server's log, on a real ``kapi serve``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))  # inherited by the server
    try:
        server = start_server(tmp_path, "--storage-backend", "memory")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        conn = _tls(server)
        body = orjson.dumps({"metadata": {"name": "dup"}})
        for want in (b"HTTP/1.1 201 Created", b"HTTP/1.1 409 Conflict"):
            conn.sendall(_request(server, "POST", "/api/v1/namespaces/default/configmaps", body))
            line, reply = read_response(conn)
            assert line == want and reply.endswith(b"}\n"), (line, reply[-80:])
        conn.sendall(_request(server, "GET", "/api/v1/namespaces/default/configmaps"))
        line, reply = read_response(conn)
        assert line == b"HTTP/1.1 200 OK" and reply.endswith(b"]}\n")
        conn.close()
        # A WebSocket upgrade (kubectl exec's) answered 500 with an empty body.
        conn = _tls(server)
        conn.sendall(f"GET /api/v1/namespaces/default/pods/missing/exec?command=sh HTTP/1.1\r\nHost: kapi\r\n"
                     f"Authorization: Bearer {server.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                     f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     f"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n".encode())
        line, reply = read_response(conn)
        assert line == b"HTTP/1.1 404 Not Found"
        status = orjson.loads(reply)
        assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)
        conn.close()
        for _ in range(30):  # watches closed by their client while events are on the way
            watch = _tls(server)
            watch.sendall(_request(server, "GET", "/api/v1/namespaces/default/configmaps?watch=true"))
            assert watch.recv(65536).startswith(b"HTTP/1.1 200 OK")
            watch.close()
        for _ in range(5):  # and by timeoutSeconds
            watch = _tls(server)
            watch.sendall(_request(server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1"))
            got = b""
            while not got.endswith(b"0\r\n\r\n"):  # the chunked stream's last chunk
                data = watch.recv(65536)
                assert data, got[-200:]
                got += data
            watch.close()
        assert server.request("GET", "/readyz")[0] == 200
        # Every connection is a file: the soft open-file limit is raised to the hard one, as Go does.
        limits = Path(f"/proc/{server.proc.pid}/limits").read_text()
        served = next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3:5]
        if hard != resource.RLIM_INFINITY:  # (an infinite hard limit cannot be the soft one on Linux)
            assert served == [str(hard), str(hard)]
    finally:
        assert stop_server(server) == 0
    log = server.log.read_text()
    assert "Cancel scope stack corrupted" not in log and "Traceback" not in log, log[-3000:]
