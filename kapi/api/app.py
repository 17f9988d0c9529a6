"""The ASGI entry: the only reader of the ASGI scope. Builds the chain around the router."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import InitVar, dataclass, field
from functools import partial
from typing import Any, Awaitable, Callable, Protocol

import orjson
import trio

from kapi import errors
from kapi.chain import filters
from kapi.chain.audit import Audit
from kapi.chain.authn import Authenticator, PeerCertificates
from kapi.chain.authz import Authorizer
from kapi.chain.context import RequestContext, RequestInfo, new_request_info, parse_query
from kapi.chain.flowcontrol import debug as apf_debug
from kapi.metrics import Metrics
from kapi.api import negotiate
from kapi.api.discovery import Discovery
from kapi.api.openapi import Document, OpenAPIDocuments
from kapi.api.openapi_pb import CONTENT_TYPE as PROTOBUF_CONTENT_TYPE
from kapi.api.handlers import Handlers
from kapi.api.responses import Response, status_response, text_response, warning_headers

log = logging.getLogger("kapi.api")

OPENID_CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
ISSUER_DISCOVERY_MAX_AGE_S = 3600


class IssuerDiscovery(Protocol):
    """The service-account issuer's documents (kapi.chain.authn.serviceaccount.ServiceAccountTokens)."""

    def jwks(self) -> bytes: ...

    def openid_configuration(self, external_address: str) -> bytes | None: ...

Scope = dict[str, Any]
_BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class Health:
    """Health checks shared with the server: readiness flips to failing first on shutdown.

    ``checks`` are in every report; ``ready_checks`` (awaited: the server's ``etcd`` check reads
    storage) only in /readyz. kube's /livez has an ``etcd`` check too; kapi's does not: a datastore
    that does not answer makes the server unready (taken out of load balancing), not dead (restarted
    by a liveness probe, which cannot bring etcd back), so /livez stays ok while etcd is down.
    """

    ready: bool = False
    shutting_down: bool = False
    checks: dict[str, Callable[[], bool]] = field(default_factory=dict)
    ready_checks: dict[str, Callable[[], Awaitable[bool]]] = field(default_factory=dict)

    async def report(self, kind: str, only: str, verbose: bool, exclude: list[str]) -> Response:
        results: list[tuple[str, bool]] = [("ping", True), ("log", True)]
        results += [(name, check()) for name, check in self.checks.items()]
        if kind == "readyz":
            results += [(name, await check()) for name, check in self.ready_checks.items()
                        if name not in exclude and (not only or name == only)]
            results.append(("informer-sync", self.ready))
            results.append(("shutdown", not self.shutting_down))
        if only:
            found = [r for r in results if r[0] == only]
            if not found:
                return text_response("404 page not found\n", 404)
            ok = found[0][1]
            return text_response("ok" if ok else "internal server error: check failed", 200 if ok else 500)
        results = [r for r in results if r[0] not in exclude]
        ok = all(passed for _, passed in results)
        if verbose or not ok:
            lines = [f"[+]{n} ok" if passed else f"[-]{n} failed: reason withheld" for n, passed in results]
            lines.append(f"{kind} check passed" if ok else f"{kind} check failed")
            return text_response("\n".join(lines) + "\n", 200 if ok else 503 if kind == "readyz" else 500)
        return text_response("ok")


@dataclass
class App:
    """The ASGI application kapi serves."""

    handlers: Handlers
    discovery: Discovery
    openapi: OpenAPIDocuments
    authn: InitVar[Authenticator]  # the chain's settings (InitVar: kept by ``chain`` only)
    authz: InitVar[Authorizer]
    health: Health
    version_info: dict[str, str]
    metrics: Metrics = field(default_factory=Metrics)
    max_body_bytes: int = 3 * 1024 * 1024
    request_timeout_s: InitVar[float] = 60.0  # --request-timeout: the deadline of a non-long-running request
    server_address: str = ""
    closing: trio.Event = field(default_factory=trio.Event)  # set on shutdown: long requests end
    peer_certificates: PeerCertificates = field(default_factory=PeerCertificates)
    # The service-account issuer's discovery documents (/.well-known/openid-configuration, /openid/v1/jwks).
    issuer_discovery: IssuerDiscovery | None = None
    max_requests_inflight: InitVar[int] = 0  # 0: no limit
    max_mutating_requests_inflight: InitVar[int] = 0
    audit: InitVar[Audit | None] = None  # --audit-policy-file's policy and its backends (None: no audit)
    # API Priority and Fairness (None: the max-in-flight limits above instead); the caller runs its controller.
    flowcontrol: InitVar[filters.FlowControl | None] = None
    chain: filters.Chain = field(init=False)  # the filters' settings and in-flight counts
    _serve: filters.Handler = field(init=False)  # the router wrapped in filters.CHAIN

    def __post_init__(self, authn: Authenticator, authz: Authorizer, request_timeout_s: float,
                      max_requests_inflight: int, max_mutating_requests_inflight: int,
                      audit: Audit | None, flowcontrol: filters.FlowControl | None) -> None:
        self.chain = filters.Chain(authn, authz, self.metrics, request_timeout_s, max_requests_inflight,
                                   max_mutating_requests_inflight, audit=audit, flowcontrol=flowcontrol)
        self._serve = filters.build(self.chain, self._route)

    # ---------------------------------------------------------------- ASGI

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] not in ("http", "websocket"):
            return
        started = time.perf_counter()
        ctx = body = None
        try:
            ctx, body = self._context(scope, receive)
            resp = await self._serve(ctx)
        except errors.StatusError as err:
            resp = status_response(err, proto=ctx is not None and _prefers_protobuf(ctx))
        except Exception:
            log.exception("internal error serving %s %s", scope.get("method"), scope.get("path"))
            resp = status_response(errors.InternalError("an error on the server has prevented the request "
                                                        "from succeeding"))
        if ctx is not None:
            if ctx.response_headers:  # the filters' (APF's PF headers), on answers and refusals alike
                resp.headers += ctx.response_headers
            # Warnings gathered on the way (a deprecated version, fieldValidation, admission), on answers
            # and refusals alike: kube writes each into the headers as it comes.
            resp.headers += warning_headers(ctx.warnings)
            self._observe(ctx, resp.status, time.perf_counter() - started)
        # Every answer names its audit ID (kube's WithAuditInit), audited or not.
        resp.headers.append(("Audit-ID", ctx.audit_id if ctx is not None else str(uuid.uuid4())))
        if ctx is not None:
            ctx.response_code = resp.status
        if scope["type"] == "websocket":
            try:
                await _refuse_upgrade(resp, ctx, send)
            finally:
                for done in ctx.on_done if ctx is not None else ():
                    done()
            return
        discard = None
        if ctx is not None and body is not None and not body.ended:  # refused before a handler read it
            discard = partial(body.discard, ctx.deadline if ctx.deadline is not None
                              else trio.current_time() + self.chain.request_timeout_s)
        try:
            await _send(resp, scope, receive, send, self.closing, discard)
        finally:
            for done in ctx.on_done if ctx is not None else ():
                done()

    def _observe(self, ctx: RequestContext, code: int, seconds: float) -> None:
        """apiserver_request_total and apiserver_request_duration_seconds (watches: count only)."""
        info = ctx.info if ctx.has_info else new_request_info(ctx.method, ctx.path, ctx.query)
        scope = "" if not info.is_resource else ("resource" if info.name else
                                                  "namespace" if info.namespace else "cluster")
        labels = {"verb": _metric_verb(info), "dry_run": ctx.query.get("dryRun", ""), "group": info.group,
                  "version": info.version, "resource": info.resource, "subresource": info.subresource,
                  "scope": scope, "component": "apiserver"}
        self.metrics.request_total.labels(**labels, code=str(code)).inc()
        if info.verb != "watch":
            self.metrics.request_duration.labels(**labels).observe(seconds)

    def _context(self, scope: Scope, receive: Any) -> tuple[RequestContext, _Body | None]:
        # The first value of a repeated header wins, as Go's Header.Get reads it: a proxy in front
        # that checks the first Authorization must not see another user than kapi does.
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
        method = "GET" if scope["type"] == "websocket" else scope["method"]
        ctx = RequestContext(method, scope.get("path", "/"), parse_query(scope.get("query_string", b"")), headers,
                             client_cert=self.peer_certificates.get(scope.get("client")),
                             raw_headers=scope.get("headers", ()),
                             client=scope.get("client"), raw_path=scope.get("raw_path") or b"",
                             query_string=scope.get("query_string", b""),
                             # kube's WithAuditInit: the client's Audit-ID is kept as sent, else a new UUID.
                             audit_id=headers.get("audit-id") or str(uuid.uuid4()), received_ns=time.time_ns())
        if method not in _BODY_METHODS:
            if scope["type"] == "http":
                ctx.until_disconnect = partial(_until_disconnect, receive)
            return ctx, None
        # Read only when a handler asks, after authorization, and within the request's deadline.
        body = _Body(receive, self.max_body_bytes)
        ctx.body_reader = body.read
        ctx.until_disconnect = body.until_disconnect
        return ctx, body

    # -------------------------------------------------------------- router

    async def _route(self, ctx: RequestContext) -> Response:
        info = ctx.info
        if info.is_resource:
            return await self.handlers.handle(ctx)
        path = ctx.path.rstrip("/") or "/"
        if ctx.method not in ("GET", "HEAD"):
            if info.parts and info.parts[0] in ("api", "apis"):
                raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
            raise errors.NotFound("the server could not find the requested resource")
        for kind in ("healthz", "livez", "readyz"):
            if path == f"/{kind}" or path.startswith(f"/{kind}/"):
                only = path[len(kind) + 2:]
                exclude = [ctx.query["exclude"]] if "exclude" in ctx.query else []
                return await self.health.report(kind, only, "verbose" in ctx.query, exclude)
        if path in (OPENID_CONFIG_PATH, JWKS_PATH) and self.issuer_discovery is not None:
            return self._issuer_discovery(path)
        if path == "/metrics":
            return Response(200, self.metrics.exposition(), "text/plain; version=0.0.4; charset=utf-8")
        if path == "/version":
            return Response(200, orjson.dumps(self.version_info, option=orjson.OPT_INDENT_2))
        if path == "/api":
            return self._discovery(ctx, core=True)
        if path == "/apis":
            return self._discovery(ctx, core=False)
        if path.startswith("/openapi/"):
            return self._openapi(ctx, path)
        if path.startswith(apf_debug.PATH_PREFIX) and self.chain.flowcontrol is not None:
            dumps = self.chain.flowcontrol.controller.dump(bool(ctx.query.get("includeRequestDetails")))
            text = apf_debug.render(path.removeprefix(apf_debug.PATH_PREFIX), dumps, ctx.query)
            if text is not None:
                return text_response(text)
        body = None
        if info.api_prefix == "api" and info.version:
            body = self.discovery.resource_list("", info.version)
        elif info.api_prefix == "apis" and info.group and info.version:
            body = self.discovery.resource_list(info.group, info.version)
        elif info.api_prefix == "apis" and info.group:
            body = self.discovery.api_group(info.group)
        if body is None:
            raise errors.NotFound("the server could not find the requested resource")
        return Response(200, body)

    def _issuer_discovery(self, path: str) -> Response:
        """kube's OpenID metadata server: the issuer's configuration (only for an https issuer) and its keys."""
        assert self.issuer_discovery is not None
        headers = [("Cache-Control", f"public, max-age={ISSUER_DISCOVERY_MAX_AGE_S}")]
        if path == JWKS_PATH:
            return Response(200, self.issuer_discovery.jwks(), "application/jwk-set+json", headers)
        config = self.issuer_discovery.openid_configuration(self.server_address)
        if config is None:
            raise errors.NotFound("the server could not find the requested resource")
        return Response(200, config, "application/json", headers)

    def _discovery(self, ctx: RequestContext, *, core: bool) -> Response:
        out = negotiate.choose_output(ctx.header("accept"), allow_as=("APIGroupDiscoveryList",))
        if out.as_kind == "APIGroupDiscoveryList":
            body, etag = self.discovery.aggregated(core, out.as_version)
            ctype = f"application/json;g=apidiscovery.k8s.io;v={out.as_version};as=APIGroupDiscoveryList"
            headers = [("ETag", etag), ("Vary", "Accept")]
            if ctx.header("if-none-match") == etag:
                return Response(304, b"", ctype, headers)
            return Response(200, body, ctype, headers)
        body = self.discovery.api_versions(self.server_address) if core else self.discovery.api_group_list()
        return Response(200, body, headers=[("Vary", "Accept")])

    def _openapi(self, ctx: RequestContext, path: str) -> Response:
        if path == "/openapi/v2":
            doc = self._openapi_v2(ctx.header("accept"))
        elif path == "/openapi/v3":
            doc = self.openapi.v3_discovery()
        else:
            doc = self.openapi.v3(path.removeprefix("/openapi/v3/"))
        if doc is None:
            raise errors.NotFound("the server could not find the requested resource")
        headers = [("ETag", doc.etag), ("Vary", "Accept")]
        if ctx.query.get("hash") == doc.hash:
            headers.append(("Cache-Control", "public, immutable"))
        if ctx.header("if-none-match") == doc.etag:
            return Response(304, b"", doc.content_type, headers)
        return Response(200, doc.body, doc.content_type, headers)


    def _openapi_v2(self, accept: str) -> Document:
        """JSON or gnostic protobuf, whichever the client prefers (q-values honoured)."""
        if not accept.strip():
            return self.openapi.v2()
        for m in negotiate.parse_media_types(accept):
            if m.type == PROTOBUF_CONTENT_TYPE.lower():
                return self.openapi.v2_protobuf()
            if m.type in ("application/json", "*/*", "application/*"):
                return self.openapi.v2()
        raise errors.NotAcceptable("only the following media types are accepted: application/json, "
                                   + PROTOBUF_CONTENT_TYPE)


def _prefers_protobuf(ctx: RequestContext) -> bool:
    """Errors are answered in protobuf to a client whose first choice is protobuf (client-go's)."""
    types = negotiate.parse_media_types(ctx.header("accept"))
    return bool(types) and types[0].type == negotiate.PROTOBUF and ctx.has_info and ctx.info.is_resource


def _metric_verb(info: RequestInfo) -> str:
    """kube-apiserver's verb label: LIST, WATCH, GET, POST, PUT, PATCH, DELETE, DELETECOLLECTION."""
    if not info.is_resource:
        return str(info.verb).upper()
    return {"list": "LIST", "watch": "WATCH", "get": "GET", "create": "POST", "update": "PUT",
            "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION"}.get(info.verb,
                                                                                             info.verb.upper())


async def _until_disconnect(receive: Any) -> None:
    """Return when the client has gone away (a request without a body: its one empty message is dropped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


@dataclass
class _Body:
    """A request body as ASGI delivers it: read whole when a handler asks, or discarded after the answer.

    A request waiting in an APF queue receives it ahead (``until_disconnect``): what came is kept
    for ``read``, so the connection is not stalled by a body nobody receives while it waits.
    """

    receive: Any
    limit: int  # --max-body-bytes: a larger body is 413
    ended: bool = False  # its last message (or the client's disconnect) has been received
    disconnected: bool = False
    _chunks: list[bytes] = field(default_factory=list)  # received so far, not yet read
    _size: int = 0

    async def _receive_one(self) -> None:
        message = await self.receive()
        if message["type"] == "http.disconnect":
            self.ended = self.disconnected = True
            return
        chunk = message.get("body", b"")
        self._size += len(chunk)
        # Known before any refusal: a body whose last message came needs no discarding after the answer.
        self.ended = not message.get("more_body", False)
        if self._size > self.limit:
            self._chunks.clear()  # refused whole (413): nothing more is kept
        elif chunk:
            self._chunks.append(chunk)

    async def read(self) -> bytes:
        while True:
            if self.disconnected:
                raise errors.BadRequest("client disconnected")
            if self._size > self.limit:
                raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {self.limit}")
            if self.ended:
                return b"".join(self._chunks)
            await self._receive_one()

    async def until_disconnect(self) -> None:
        """Receive the rest of the body (kept for ``read``), then return when the client goes away."""
        while not self.disconnected:
            await self._receive_one()

    async def discard(self, deadline: float) -> None:
        """Receive and drop what is left of the body, until it ends or ``deadline`` passes; nothing is kept."""
        with trio.move_on_at(deadline):
            while not self.ended:
                message = await self.receive()
                self.disconnected = message["type"] == "http.disconnect"
                self.ended = self.disconnected or not message.get("more_body", False)


# Control characters but the tab, which no header value may carry (h11 refuses them): each becomes a space,
# as Go's header writer turns CR and LF into spaces.
_CONTROLS_TO_SPACE = {c: " " for c in (*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f)}


def _encode_headers(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Header values as Go writes them: UTF-8 bytes (a Warning may quote any field name), no control characters."""
    return [(k.lower().encode("latin-1"), v.translate(_CONTROLS_TO_SPACE).encode("utf-8", "replace"))
            for k, v in headers]


async def _send(resp: Response, scope: Scope, receive: Any, send: Any, closing: trio.Event,
                discard_body: Callable[[], Awaitable[None]] | None = None) -> None:
    """Write ``resp``; ``discard_body``: the request's body was not read (the request was refused first).

    Such an answer is written whole, then its end waits for the rest of the body to be received
    and dropped (up to the request's deadline): hypercorn queues a body for the application in a
    bounded queue, and ending a response whose request is still arriving either stalls the
    connection on that queue (HTTP/1.1) or closes the HTTP/2 stream the data is still sent on,
    which hypercorn does not survive. The client has the whole answer before the body is received.
    """
    if discard_body is not None and resp.stream is not None:
        await discard_body()
        discard_body = None
    headers = [(b"content-type", resp.content_type.encode())]
    if resp.stream is None:
        headers.append((b"content-length", str(len(resp.body)).encode()))
    elif resp.length is not None:
        headers.append((b"content-length", str(resp.length).encode()))
    headers += _encode_headers(resp.headers)
    try:
        await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    except BaseException:
        aclose = getattr(resp.stream, "aclose", None)
        if aclose is not None:
            with trio.CancelScope(shield=True):
                await aclose()
        raise
    if resp.stream is None:
        body = resp.body if scope.get("method") != "HEAD" else b""
        if discard_body is not None:
            await send({"type": "http.response.body", "body": body, "more_body": True})
            await discard_body()
            body = b""
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return
    await _send_stream(resp, receive, send, closing)


async def _send_stream(resp: Response, receive: Any, send: Any, closing: trio.Event) -> None:
    """Stream chunks until done, the client goes away, or the server starts shutting down.

    A stream of known length (a LIST body) is finite and promised whole by its
    Content-Length: shutting down waits for it as for any in-flight request.
    """
    assert resp.stream is not None
    stream = resp.stream
    disconnected = False
    async with trio.open_nursery() as nursery:
        if resp.deadline is not None:
            nursery.cancel_scope.deadline = resp.deadline  # ends a watch cleanly at its timeoutSeconds

        async def watch_disconnect() -> None:
            nonlocal disconnected
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected = True
                    nursery.cancel_scope.cancel()
                    return

        async def watch_closing() -> None:
            await closing.wait()
            nursery.cancel_scope.cancel()

        async def pump() -> None:
            try:
                async for chunk in stream:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    with trio.CancelScope(shield=True):
                        await aclose()
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch_disconnect)
        if resp.length is None:
            nursery.start_soon(watch_closing)
        nursery.start_soon(pump)
    if not disconnected:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _refuse_upgrade(resp: Response, ctx: RequestContext | None, send: Any) -> None:
    """Answer a WebSocket upgrade request over plain HTTP (ASGI's websocket.http.response).

    kapi upgrades nothing (no exec, attach, port-forward, nor watch over WebSocket): the
    request gets what the same GET gets, as kube-apiserver answers handlers that do not
    upgrade (404 for a missing pod or an unserved subresource). A watch, whose answer
    would be a stream, is refused with 400 instead.
    """
    if resp.stream is not None:
        aclose = getattr(resp.stream, "aclose", None)
        if aclose is not None:
            with trio.CancelScope(shield=True):
                await aclose()
        resp = status_response(errors.BadRequest("watch over WebSocket is not supported by this server; "
                                                 "watch over plain HTTP instead"),
                               proto=ctx is not None and _prefers_protobuf(ctx))
        if ctx is not None:
            resp.headers.append(("Audit-ID", ctx.audit_id))
    headers = [(b"content-type", resp.content_type.encode()), (b"content-length", str(len(resp.body)).encode())]
    headers += _encode_headers(resp.headers)
    await send({"type": "websocket.http.response.start", "status": resp.status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": resp.body, "more_body": False})


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
