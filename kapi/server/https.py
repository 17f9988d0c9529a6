"""HTTPS serving on hypercorn's trio worker: connection deadlines, the TLS peer certificate, HTTP/1.1 details.

hypercorn runs the protocols; kapi's connection handler (a ``TCPServer`` subclass) adds
what kube-apiserver's Go server has and hypercorn's trio worker lacks:

- a deadline for the TLS handshake and the request headers (Go's ``ReadHeaderTimeout``):
  a client sending its headers a byte at a time is cut off, as is an idle keep-alive
  connection (``IdleTimeout``, hypercorn's keep-alive timeout);
- the verified client certificate, recorded under the client address the ASGI scope
  carries (hypercorn puts no certificate in the scope);
- a reason phrase on every HTTP/1.1 status line, and a ``metav1.Status`` body on the
  400 and 431 answers the protocol itself gives to a request it cannot parse;
- a hard shutdown deadline: when the graceful timeout runs out every connection's socket
  is closed, which also ends a send to a slow reader (hypercorn shields its socket writes
  from cancellation).

There is no cap on the number of connections, as kube-apiserver has none: the deadlines
bound how long an idle one lives, and the open-file limit is raised as Go raises it.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from typing import Any, Awaitable, Callable

import h11
import h2.events
import orjson
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import Closed, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.ws_stream import Handshake
from hypercorn.trio.task_group import TaskGroup
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from hypercorn.trio.worker_context import TrioSingleTask, WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import parse_socket_addr, repr_socket_addr, wrap_app

from kapi import errors
from kapi.chain.authn import PeerCertificates

log = logging.getLogger("kapi")

# kube-apiserver's secure serving (k8s.io/apiserver pkg/server/secure_serving.go) sets these on
# its http.Server, with no flag to change them:
READ_HEADER_TIMEOUT_S = 32.0  # ReadHeaderTimeout, "just shy of requestTimeoutUpperBound"; Go bounds the
#                               TLS handshake by it too
IDLE_TIMEOUT_S = 90.0  # IdleTimeout, "matches http.DefaultTransport keep-alive timeout"
MAX_HEADER_BYTES = 1 << 20  # MaxHeaderBytes
_GO_HEADER_SLACK = 4096  # Go reads this much more of a request head than MaxHeaderBytes before its 431


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionLimits:
    """How long a connection may take to send its request headers, and stay idle between requests."""

    read_header_timeout_s: float = READ_HEADER_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_header_bytes: int = MAX_HEADER_BYTES


def reason_phrase(code: int) -> bytes:
    """The status line's reason, as Go's ``http.StatusText`` (``status code N`` for a code it does not know)."""
    try:
        return HTTPStatus(code).phrase.encode()
    except ValueError:
        return b"status code %d" % code


def _protocol_error_body(code: int, max_header_bytes: int) -> bytes:
    if code == 431:
        err: errors.StatusError = errors.StatusError(
            f"request headers too large: the limit is {max_header_bytes} bytes", code=431, reason="")
    elif code == 400:
        err = errors.BadRequest("the request could not be parsed as HTTP/1.1")
    else:  # h11's other hints: 501 for a Transfer-Encoding it does not implement, as Go answers
        err = errors.StatusError(f"the request could not be served: {reason_phrase(code).decode()}",
                                 code=code, reason="")
    return orjson.dumps(err.to_status(), option=orjson.OPT_APPEND_NEWLINE)


class _H11Protocol(H11Protocol):
    """hypercorn's HTTP/1.1 protocol with reason phrases and Status bodies on its own error answers."""

    async def _send_h11_event(self, event: Any) -> None:
        # hypercorn builds responses without a reason: the status line read "HTTP/1.1 409 " and
        # clients printed "Error from server ():".
        if isinstance(event, (h11.Response, h11.InformationalResponse)) and not event.reason:
            event = type(event)(status_code=event.status_code, headers=list(event.headers),
                                reason=reason_phrase(event.status_code))
        await super()._send_h11_event(event)

    async def _create_stream(self, request: h11.Request) -> None:
        # h11 bounds only a head that arrives in pieces (max_incomplete_event_size); one that
        # arrives whole is bounded here, as Go bounds every request head by MaxHeaderBytes.
        size = len(request.method) + len(request.target) + 11 + sum(
            len(name) + len(value) + 4 for name, value in request.headers)
        if size > self.config.h11_max_incomplete_size:
            await self._send_error_response(431)
            await self.send(Closed())
            return
        upgrade = any(name == b"upgrade" and value.strip().lower() == b"websocket" for name, value in request.headers)
        if upgrade and not Handshake(list(request.headers), request.http_version.decode()).is_valid():
            # hypercorn would answer a malformed WebSocket handshake with an empty 400; kapi upgrades
            # nothing, so the request is served as the plain GET it also is (as Go serves it).
            request = h11.Request(method=request.method, target=request.target, http_version=request.http_version,
                                  headers=[(n, v) for n, v in request.headers if n != b"upgrade"])
        await super()._create_stream(request)

    async def _send_error_response(self, status_code: int) -> None:
        """The answer to a request h11 refused (431 headers too large, 400 unparsable): a Status, then close."""
        body = _protocol_error_body(status_code, self.config.h11_max_incomplete_size - _GO_HEADER_SLACK)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                   (b"connection", b"close"), *self.config.response_headers("h11")]
        await self._send_h11_event(h11.Response(status_code=status_code, headers=headers))
        await self._send_h11_event(h11.Data(data=body))
        await self._send_h11_event(h11.EndOfMessage())


class _H2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol, surviving request data that arrives after its stream's answer ended."""

    async def _handle_events(self, events: list[h2.events.Event]) -> None:
        # hypercorn forgets a stream once its response is complete, and the next DATA frame the
        # client still sends on it (a body slower than --request-timeout, answered 504) raised a
        # KeyError that ended the whole server. Such data is dropped, its flow-control credit given back.
        kept = []
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            else:
                kept.append(event)
        await super()._handle_events(kept)


class _ProtocolWrapper(ProtocolWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if type(self.protocol) is H11Protocol:
            self.protocol = _H11Protocol(self.app, self.config, self.context, self.task_group, self.state,
                                         self.ssl, self.client, self.server, self.send)
        elif type(self.protocol) is H2Protocol:
            self.protocol = _H2Protocol(self.app, self.config, self.context, self.task_group, self.state,
                                        self.ssl, self.client, self.server, self.send)
        if isinstance(self.protocol, H2Protocol):
            # h2 applies the header-list size it advertises only once the client acknowledges its
            # SETTINGS; until then the decoder keeps 64 KiB, and a larger first request ended the
            # whole connection (ENHANCE_YOUR_CALM). Accept what is advertised from the start.
            self.protocol.connection.decoder.max_header_list_size = self.config.h2_max_header_list_size


class _Connection(TCPServer):
    """One TLS connection: hypercorn's handler with kapi's deadlines and the peer certificate recorded.

    It also ends the connection's tasks once the connection is closed: when a
    keep-alive connection is closed during shutdown while the client's next
    request has already arrived, hypercorn's read loop otherwise waits forever
    for a request it will never serve, holding shutdown for the whole grace period.
    """

    peers: PeerCertificates
    limits: ConnectionLimits
    live: set[_Connection]
    _scope: trio.CancelScope
    _idle: bool
    _awaiting_headers: bool
    _header_timer: TrioSingleTask

    async def run(self) -> None:
        self._scope = trio.CancelScope()
        self._idle, self._awaiting_headers, self._header_timer = True, False, TrioSingleTask()
        self.live.add(self)
        try:
            with self._scope:
                await self._serve()
        finally:
            self.live.discard(self)

    def abort(self) -> None:
        """Close the socket at once; every task blocked on it (a shielded send included) wakes with an error."""
        self.stream.transport_stream.socket.close()

    async def _serve(self) -> None:
        accepted = trio.current_time()
        key = None
        try:
            handshaken = False
            with trio.move_on_at(accepted + self.limits.read_header_timeout_s):
                try:
                    await self.stream.do_handshake()
                    handshaken = True
                except trio.BrokenResourceError:
                    pass
            if not handshaken:
                await trio.aclose_forcefully(self.stream)
                return
            sock = self.stream.transport_stream.socket
            client = parse_socket_addr(sock.family, sock.getpeername())
            server = parse_socket_addr(sock.family, sock.getsockname())
            cert = self.stream.getpeercert(binary_form=True)
            if cert and client is not None:
                key = (client[0], client[1])
                self.peers.by_client[key] = cert
            alpn = self.stream.selected_alpn_protocol() or "http/1.1"
            async with TaskGroup() as task_group:
                self._task_group = task_group
                self.protocol = _ProtocolWrapper(self.app, self.config, self.context, task_group,
                                                 ConnectionState(self.state), True, client, server,
                                                 self.protocol_send, alpn)
                await self.protocol.initiate()
                await self.idle_task.restart(task_group, self._idle_timeout)
                if alpn != "h2":  # HTTP/2 has no request-header phase to bound (Go's neither)
                    # The first request's headers are due within the deadline of the accept,
                    # the handshake included.
                    await self._expect_headers(accepted + self.limits.read_header_timeout_s)
                await self._read_data()
                # Nothing more will be read: a header deadline still running would hold the
                # connection (and a shutdown) until it fired.
                await self._header_timer.stop()
        except OSError:
            pass
        finally:
            if key is not None:
                self.peers.by_client.pop(key, None)
            await self._close()

    async def _read_data(self) -> None:
        """hypercorn's read loop, which also starts the header deadline when a request begins."""
        while True:
            try:
                data = await self.stream.receive_some(MAX_RECV)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                break
            if data and self._idle and not self._awaiting_headers \
                    and not isinstance(self.protocol.protocol, H2Protocol):
                # The first bytes of the next keep-alive request: its headers are due from now.
                await self._expect_headers(trio.current_time() + self.limits.read_header_timeout_s)
            await self.protocol.handle(RawData(bytes(data)))
            if data == b"":
                break
        await self.protocol.handle(Closed())

    async def protocol_send(self, event: Any) -> None:
        if isinstance(event, Updated):
            self._idle = event.idle
            if not event.idle:  # a whole request head has been read
                self._awaiting_headers = False
                await self._header_timer.stop()
        await super().protocol_send(event)

    async def _expect_headers(self, deadline: float) -> None:
        self._awaiting_headers = True
        await self._header_timer.restart(self._task_group, partial(self._header_timeout, deadline))

    async def _header_timeout(self, deadline: float) -> None:
        await trio.sleep_until(deadline)
        # As Go's server: a connection that did not send its request head in time is closed
        # without an answer.
        self.abort()

    async def _close(self) -> None:
        try:
            await super()._close()
        finally:
            self._scope.cancel()  # nothing can be read or written on a closed connection


def apply_limits(config: HypercornConfig, limits: ConnectionLimits) -> None:
    """hypercorn's own settings for what it enforces itself: the idle timeout, the size of a request head."""
    config.keep_alive_timeout = limits.idle_timeout_s
    config.ssl_handshake_timeout = limits.read_header_timeout_s
    config.h11_max_incomplete_size = limits.max_header_bytes + _GO_HEADER_SLACK
    config.h2_max_header_list_size = limits.max_header_bytes + _GO_HEADER_SLACK  # Go's HTTP/2 takes it from there
    config.read_timeout = None  # a watch or a slow upload may read nothing for long: no blanket deadline


def raise_open_file_limit() -> None:
    """Lift the soft limit on open files to the hard one, as Go's runtime does when kube-apiserver starts.

    Every connection is a file descriptor: at a soft limit of 1024, a thousand idle clients
    would leave accept failing (and the database unable to open a file) for everyone else.
    """
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            log.debug("could not raise the open-file limit from %d to %d", soft, hard)


async def serve_https(app: Any, config: HypercornConfig, ca_file: str | tuple[str, ...], peers: PeerCertificates, *,
                      shutdown_trigger: Callable[[], Awaitable[None]],
                      limits: ConnectionLimits = ConnectionLimits(),
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` over TLS until ``shutdown_trigger`` returns, then drain within the graceful timeout.

    When the graceful timeout runs out, the connections still open are closed, whatever they
    are doing: the timeout is a hard deadline.
    """
    apply_limits(config, limits)
    raise_open_file_limit()
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    ssl_context = config.create_ssl_context()
    assert ssl_context is not None
    # Ask for a client certificate; verify it against kapi's CA (and the authenticating proxy's CA,
    # --requestheader-client-ca-file) when one is sent: the authenticators then tell which one issued it.
    ssl_context.verify_mode = ssl.CERT_OPTIONAL
    for one in (ca_file,) if isinstance(ca_file, str) else ca_file:
        ssl_context.load_verify_locations(one)
    sockets = config.create_sockets()
    live: set[_Connection] = set()
    connection_class = type("TCPServer", (_Connection,), {"peers": peers, "limits": limits, "live": live})
    async with trio.open_nursery() as guard:
        async with trio.open_nursery() as server_nursery:
            listeners = []
            binds = []
            for sock in sockets.secure_sockets:
                sock.listen(config.backlog)
                listeners.append(trio.SSLListener(trio.SocketListener(trio.socket.from_stdlib_socket(sock)),
                                                  ssl_context, https_compatible=True))
                binds.append(f"https://{repr_socket_addr(sock.family, sock.getsockname())}")
            task_status.started(binds)
            async with trio.open_nursery() as accept_nursery:
                accept_nursery.start_soon(partial(
                    trio.serve_listeners, partial(connection_class, wrapped, config, context, {}), listeners,
                    handler_nursery=server_nursery))
                await shutdown_trigger()
                accept_nursery.cancel_scope.cancel()
            # Stop accepting; tell keep-alive connections to close; give in-flight requests the
            # graceful timeout, then close what is left.
            await context.terminated.set()
            deadline = trio.current_time() + config.graceful_timeout
            server_nursery.cancel_scope.deadline = deadline
            guard.start_soon(_abort_at, deadline, live)
        guard.cancel_scope.cancel()
    if server_nursery.cancel_scope.cancelled_caught:
        log.warning("connections were still open when the %.0f s shutdown timeout ran out; they were closed",
                    config.graceful_timeout)


async def _abort_at(deadline: float, live: set[_Connection]) -> None:
    """At the deadline, close every connection's socket: cancellation alone cannot end a shielded send."""
    await trio.sleep_until(deadline)
    for connection in list(live):
        connection.abort()
