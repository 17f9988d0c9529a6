"""A raw HTTPS/1.1 client for the fuzz suite: the request goes out byte for byte as built.

``http.client`` and ``httpx`` refuse what the fuzzer wants to send (a NUL in a header, two
``Authorization`` headers in a chosen order, a path that is not valid percent-encoding), so
the request line and headers are written to a TLS socket by hand and only the response is
parsed, by ``http.client.HTTPResponse``.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import httpx
import yaml

Header = tuple[bytes | str, bytes | str]

#: How long a request may go unanswered before it counts as a hang (generous: a loaded
#: 2-core machine, both twins' test runs side by side).
HANG_SECONDS = 15.0
#: Bodies are read up to this size; a bigger one is cut (the fuzzer never asks for it).
MAX_BODY = 64 << 20


def _b(v: bytes | str) -> bytes:
    return v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape")


@dataclass
class Request:
    """One request as sent: enough to replay it by hand."""

    method: str
    path: bytes | str
    headers: Sequence[Header] = ()
    body: bytes | None = None
    auth: str = "admin"  # admin | anonymous | bad | raw (Authorization already in headers)
    http2: bool = False  # sent with httpx over HTTP/2 (one connection reused) instead of the raw HTTP/1.1
    stream: bool = False  # may be a watch: of a 2xx answer only the start is read
    watch: bool = True  # with stream: it is a watch for sure (kube's reading), so it must send events

    def describe(self, limit: int = 400) -> dict[str, Any]:
        """A JSON-able reproduction (bodies cut at ``limit`` bytes, their length kept)."""
        def show(v: bytes | str, n: int = limit) -> str:
            s = _b(v)
            text = s[:n].decode("utf-8", "backslashreplace")
            return text + (f"...(+{len(s) - n} bytes)" if len(s) > n else "")
        out: dict[str, Any] = {"method": self.method, "path": show(self.path, 300), "auth": self.auth}
        if self.headers:
            out["headers"] = [[show(k, 80), show(v, 120)] for k, v in self.headers]
        if self.body is not None:
            out["body"] = show(self.body)
            out["body_len"] = len(self.body)
        return out


@dataclass
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    seconds: float
    streamed: bool = False  # a 2xx watch whose body was not read

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class NoAnswer:
    """The connection ended (or timed out) without a complete response."""

    hang: bool  # True: no answer within HANG_SECONDS; False: the server closed the connection
    error: str
    seconds: float = 0.0


@dataclass
class Endpoint:
    host: str
    port: int
    ca_file: str
    ctx: ssl.SSLContext = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.ctx = ssl.create_default_context(cafile=self.ca_file)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self._h2: httpx.Client | None = None

    def h2(self) -> httpx.Client:
        """An HTTP/2 client for this server (its connection reused across requests)."""
        if self._h2 is None:
            self._h2 = httpx.Client(http2=True, verify=ssl.create_default_context(cafile=self.ca_file),
                                    base_url=f"https://{self.host}:{self.port}")
        return self._h2

    def close(self) -> None:
        if self._h2 is not None:
            self._h2.close()
            self._h2 = None

    @classmethod
    def from_url(cls, url: str, ca_file: str) -> "Endpoint":
        hostport = url.split("://", 1)[1].rstrip("/")
        host, port = hostport.rsplit(":", 1)
        return cls(host, int(port), ca_file)

    def connect(self, timeout: float = HANG_SECONDS) -> ssl.SSLSocket:
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else Nagle adds ~40 ms a request
        try:
            return self.ctx.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def build(req: Request, host: str, token: str) -> bytes:
    """The request's bytes: request line, Host, credentials, the given headers, Content-Length."""
    lines = [_b(req.method) + b" " + _b(req.path) + b" HTTP/1.1", b"Host: " + _b(host)]
    if req.auth == "admin":
        lines.append(b"Authorization: Bearer " + token.encode())
    elif req.auth == "bad":
        lines.append(b"Authorization: Bearer not-a-valid-token")
    names = {_b(k).lower() for k, _ in req.headers}
    lines += [_b(k) + b": " + _b(v) for k, v in req.headers]
    if req.body is not None and b"content-length" not in names and b"transfer-encoding" not in names:
        lines.append(b"Content-Length: " + str(len(req.body)).encode())
    if b"connection" not in names:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (req.body or b"")


def send(ep: Endpoint, req: Request, token: str, timeout: float = HANG_SECONDS) -> Response | NoAnswer | None:
    """Send one request on a fresh connection and read the whole answer (or its start, for a watch);
    None when the HTTP/2 client refuses to send it (a header h2 cannot carry)."""
    if req.http2:
        return send_h2(ep, req, token, timeout)
    start = time.monotonic()
    raw = build(req, f"{ep.host}:{ep.port}", token)
    try:
        conn = ep.connect(timeout)
    except (OSError, ssl.SSLError) as err:
        return NoAnswer(False, f"connect: {err!r}", time.monotonic() - start)
    try:
        try:
            conn.sendall(raw)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # answered (413/431) before the whole request went out: read the answer anyway
        resp = http.client.HTTPResponse(conn, method=req.method)
        try:
            resp.begin()
            headers = resp.getheaders()
            if req.stream and 200 <= resp.status < 300:
                return Response(resp.status, resp.reason, headers, _first_events(conn, resp),
                                time.monotonic() - start, True)
            if resp.status == 101:
                return Response(resp.status, resp.reason, headers, b"", time.monotonic() - start, True)
            body = resp.read(MAX_BODY)
        except TimeoutError as err:
            return NoAnswer(True, f"timeout: {err!r}", time.monotonic() - start)
        except (http.client.HTTPException, OSError, ssl.SSLError) as err:
            return NoAnswer(False, f"{type(err).__name__}: {err}", time.monotonic() - start)
        finally:
            resp.close()
        return Response(resp.status, resp.reason, headers, body, time.monotonic() - start)
    finally:
        conn.close()


def send_h2(ep: Endpoint, req: Request, token: str, timeout: float) -> Response | NoAnswer | None:
    headers = [(_b(k), _b(v)) for k, v in req.headers]
    if req.auth == "admin":
        headers.append((b"authorization", b"Bearer " + token.encode()))
    elif req.auth == "bad":
        headers.append((b"authorization", b"Bearer not-a-valid-token"))
    start = time.monotonic()
    try:
        request = ep.h2().build_request(req.method, _b(req.path).decode("latin-1"), headers=headers,
                                        content=req.body, timeout=httpx.Timeout(timeout))
    except (httpx.InvalidURL, ValueError, TypeError, UnicodeError):
        return None
    try:
        r = ep.h2().send(request, stream=True)
        try:
            # a 2xx that may be a watch is left unread over HTTP/2 (its events are checked over HTTP/1.1)
            body = b"" if req.stream and 200 <= r.status_code < 300 else r.read()
        finally:
            r.close()
        return Response(r.status_code, r.reason_phrase, list(r.headers.items()), body, time.monotonic() - start,
                        req.stream)
    except httpx.TimeoutException as err:
        return NoAnswer(True, f"timeout: {err!r}", time.monotonic() - start)
    except httpx.LocalProtocolError:
        return None
    except (httpx.HTTPError, OSError) as err:
        return NoAnswer(False, f"{type(err).__name__}: {err}", time.monotonic() - start)


#: How long the start of a watch stream is read: its first events (the initial state) come at once.
STREAM_PEEK_SECONDS = 0.1
CUT = b"\x00cut\x00"


def _first_events(conn: ssl.SSLSocket, resp: http.client.HTTPResponse) -> bytes:
    """What a watch stream sends within STREAM_PEEK_SECONDS; ends with CUT and the error when the server
    broke the stream off (closed it without its last chunk)."""
    conn.settimeout(STREAM_PEEK_SECONDS)
    got = b""
    deadline = time.monotonic() + STREAM_PEEK_SECONDS
    try:
        while time.monotonic() < deadline and len(got) < (1 << 20):
            chunk = resp.read1(65536)
            if not chunk:
                break  # the stream ended properly
            got += chunk
            conn.settimeout(0.02)  # the rest of a burst, not more waiting
    except TimeoutError:
        pass
    except (http.client.HTTPException, OSError, ssl.SSLError) as err:
        return got + CUT + repr(err).encode()
    return got


def stream_problem(req: Request, resp: Response) -> str | None:
    """Why the start of a JSON watch stream is wrong: cut off, not event lines (when ``req`` is a watch
    for sure), or an ERROR event with a 5xx Status (None when it looks right)."""
    body = resp.body
    if CUT in body:
        return "watch stream cut off: " + body.split(CUT, 1)[1].decode("utf-8", "replace")[:200]
    ctype = (resp.header("content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        return None
    for line in body.split(b"\n")[:-1]:  # the last piece may be an event cut by the peek
        try:
            ev = json.loads(line)
        except ValueError:
            return f"watch stream line is not JSON: {line[:120]!r}" if req.watch else None
        if not isinstance(ev, dict) or ev.get("type") not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"):
            return f"watch stream line is not an event: {line[:120]!r}" if req.watch else None
        obj = ev.get("object")
        if ev["type"] == "ERROR" and isinstance(obj, dict) and isinstance(obj.get("code"), int) and obj["code"] >= 500:
            return f"watch ERROR event with code {obj['code']}: {str(obj.get('message'))[:200]}"
    return None


def status_body_problem(req: Request, resp: Response) -> str | None:
    """Why an error answer is not a metav1.Status for its code (None when it is one)."""
    if resp.status < 400 or req.method.upper() == "HEAD":
        return None
    ctype = (resp.header("content-type") or "").split(";")[0].strip().lower()
    body = resp.body
    path = _b(req.path)
    if resp.status == 404 and ctype == "text/plain" and not (path.startswith(b"/api/") or path.startswith(b"/apis/")
                                                             or path in (b"/api", b"/apis")):
        return None  # kube's last resort for a path outside the API: net/http's NotFound
    try:
        if ctype == "application/vnd.kubernetes.protobuf":
            if not body.startswith(b"k8s\x00") or b"Status" not in body[:64]:
                return f"protobuf error body is not a Status: {body[:80]!r}"
            return None
        if ctype == "application/yaml":
            doc = yaml.safe_load(body)
        elif ctype == "application/json":
            doc = json.loads(body)
        else:
            return f"error body has content type {ctype!r}: {body[:120]!r}"
    except Exception as err:  # noqa: BLE001 - any parse failure is the finding
        return f"error body does not parse as {ctype}: {err}; {body[:120]!r}"
    if not isinstance(doc, dict) or doc.get("kind") != "Status" or doc.get("apiVersion") != "v1":
        return f"error body is not a Status: {body[:160]!r}"
    if doc.get("code") != resp.status:
        return f"Status code {doc.get('code')!r} differs from HTTP {resp.status}"
    return None
