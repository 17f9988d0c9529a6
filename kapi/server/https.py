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
  from cancellation);
- a bounded buffer per HTTP/2 stream: a response writer (a watch) whose stream cannot take
  more bytes (its flow-control window is exhausted) waits, as it does on HTTP/1.1 when the
  socket is full, so a watch's slow client is the watch cache's slow consumer on either protocol.

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
import h11._writers
import h2.events
import h2.exceptions
import orjson
import priority
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import Closed, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.events import Body as StreamBody, Response as StreamResponse
from hypercorn.protocol.http_stream import HTTPStream
from hypercorn.protocol.h2 import BUFFER_HIGH_WATER, BUFFER_LOW_WATER, BufferCompleteError, H2Protocol, StreamBuffer
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.ws_stream import Handshake
from hypercorn.trio.task_group import TaskGroup
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from hypercorn.trio.worker_context import TrioSingleTask, WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import parse_socket_addr, repr_socket_addr, suppress_body, wrap_app

from kapi import errors
from kapi.api.app import BODY_WRITER
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


_FLUSH_BYTES = 64 * 1024  # an HTTP/2 connection's DATA frames are written at the latest once this much is made


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
    """hypercorn's HTTP/1.1 protocol with reason phrases and Status bodies on its own error answers,
    and a direct body writer for chunked responses."""

    write_raw: Callable[[bytes], Awaitable[None]] | None = None  # the connection's (``_Connection.write_raw``)

    async def stream_send(self, event: Any) -> None:
        await super().stream_send(event)
        if isinstance(event, StreamResponse) and event.status_code >= 200 and isinstance(self.stream, HTTPStream) \
                and isinstance(getattr(self.connection, "_writer", None), h11._writers.ChunkedWriter):
            self.stream.scope["extensions"][BODY_WRITER] = partial(self._write_chunk, self.stream)

    async def _write_chunk(self, stream: HTTPStream, data: bytes) -> None:
        """One chunk of the response in progress, framed as h11 frames it, handed to the socket at once.

        h11 keeps no count of a chunked body's bytes, so its end still goes through it. Nothing is
        written once the response's stream is over (the client went away: the writer is cancelled soon).
        """
        if stream is not self.stream or stream.closed or self.connection.our_state is not h11.SEND_BODY:
            return
        framed = b"%x\r\n%b\r\n" % (len(data), data)
        if self.write_raw is not None:
            await self.write_raw(framed)
        else:
            await self.send(RawData(data=framed))

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


class _BoundedStreamBuffer(StreamBuffer):
    """One HTTP/2 stream's response bytes not yet sent: its writer waits while it holds the high-water mark.

    hypercorn's own buffer lets its writer go on whenever the sending task takes less than the
    low-water mark from it, and a stream whose flow-control window is exhausted takes nothing:
    every write went through, and the events of a watch whose client had stopped reading piled
    up here without bound (issue 33: 944 MB in 12 s, and no watcher closed as too slow). Here the
    writer waits until what is left drops below the low-water mark, however much was taken.
    It holds at most the high-water mark and one write.
    """

    async def push(self, data: bytes) -> None:
        if self._complete:
            raise BufferCompleteError()
        self.buffer.extend(data)
        await self._is_empty.clear()
        while len(self.buffer) >= BUFFER_HIGH_WATER and not self._complete:  # ``close()`` completes it
            await self._paused.clear()
            await self._paused.wait()

    async def pop(self, max_length: int) -> bytes:
        length = min(len(self.buffer), max_length)
        data = bytes(self.buffer[:length])
        del self.buffer[:length]
        if len(self.buffer) < BUFFER_LOW_WATER:
            await self._paused.set()
        if not self.buffer:
            await self._is_empty.set()
        return data


class _H2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol with bounded stream buffers, surviving request data that arrives after its
    stream's answer ended."""

    async def stream_send(self, event: Any) -> None:
        if isinstance(event, StreamResponse) and type(self.stream_buffers.get(event.stream_id)) is StreamBuffer:
            # The response's first event, before any of its body: nothing has been pushed to or waits on
            # the buffer hypercorn made, and from here on the body goes through a bounded one.
            self.stream_buffers[event.stream_id] = _BoundedStreamBuffer(self.context.event_class)
        await super().stream_send(event)
        if isinstance(event, StreamResponse) and event.status_code >= 200:
            stream = self.streams.get(event.stream_id)
            if isinstance(stream, HTTPStream) and not suppress_body(stream.scope["method"], event.status_code):
                stream.scope["extensions"][BODY_WRITER] = partial(self._write_body, stream)

    async def _write_body(self, stream: HTTPStream, data: bytes) -> None:
        """The next piece of ``stream``'s response body into its bounded buffer (waits while it is full)."""
        # A frame's worth at a time: the buffer holds at most its high-water mark and one frame.
        step = self.connection.max_outbound_frame_size
        for at in range(0, len(data), step):
            if stream.closed or self.streams.get(stream.stream_id) is not stream:
                return
            await super().stream_send(StreamBody(stream_id=stream.stream_id, data=data[at:at + step]))

    _unflushed = 0  # bytes of DATA frames made since the last write to the socket

    async def send_task(self) -> None:
        # hypercorn's sending task, writing once per round over the streams that have data rather than
        # once per DATA frame: a connection carrying many watches gets one TLS write for what queued
        # on all of them (at most FLUSH_BYTES at a time), in the same frame order.
        while not self.closed:
            try:
                stream_id = next(self.priority)
            except priority.DeadlockError:
                await self._flush()
                await self.has_data.wait()
                await self.has_data.clear()
            else:
                await self._send_data(stream_id)
                if self._unflushed >= _FLUSH_BYTES:
                    await self._flush()

    async def _send_data(self, stream_id: int) -> None:
        # hypercorn's, without a write per frame (``send_task`` writes).
        buffer = self.stream_buffers.get(stream_id)
        try:
            if buffer is None:
                raise KeyError(stream_id)
            chunk_size = max(0, min(self.connection.local_flow_control_window(stream_id),
                                    self.connection.max_outbound_frame_size))
            data = await buffer.pop(chunk_size)
            if data:
                self.connection.send_data(stream_id, data)
                self._unflushed += len(data)
            else:
                self.priority.block(stream_id)
            if buffer.complete:
                self.connection.end_stream(stream_id)
                await self._flush()
                del self.stream_buffers[stream_id]
                self.priority.remove_stream(stream_id)
        except (h2.exceptions.StreamClosedError, KeyError, h2.exceptions.ProtocolError):
            # The stream or the connection closed while its data waited: drop it.
            if buffer is not None:
                await buffer.close()
            self.stream_buffers.pop(stream_id, None)
            try:
                self.priority.remove_stream(stream_id)
            except priority.MissingStreamError:
                pass

    async def _flush(self) -> None:
        self._unflushed = 0
        await super()._flush()

    def buffered_bytes(self) -> tuple[int, int]:
        """Response bytes waiting in this connection's stream buffers: in all, and in the fullest one."""
        sizes = [len(b.buffer) for b in self.stream_buffers.values()]
        return sum(sizes), max(sizes, default=0)

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


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """The open connections of a server, and the response bytes they hold that the kernel has not taken."""

    connections: int
    h2_connections: int
    h2_streams: int  # HTTP/2 streams with a response buffer (an answer not yet complete)
    buffered_bytes: int  # in HTTP/2 stream buffers, in all (HTTP/1.1 holds none: its writes wait on the socket)
    largest_stream_buffer_bytes: int


class Connections:
    """The open connections of one ``serve_https``: closed at its shutdown deadline, counted by ``statistics()``."""

    def __init__(self) -> None:
        self.live: set[_Connection] = set()

    def __len__(self) -> int:
        return len(self.live)

    def statistics(self) -> ConnectionStatistics:
        h2 = streams = total = largest = 0
        for connection in self.live:
            protocol = getattr(getattr(connection, "protocol", None), "protocol", None)
            if isinstance(protocol, _H2Protocol):
                h2 += 1
                streams += len(protocol.stream_buffers)
                held, fullest = protocol.buffered_bytes()
                total += held
                largest = max(largest, fullest)
        return ConnectionStatistics(len(self.live), h2, streams, total, largest)

    def abort_all(self) -> None:
        for connection in list(self.live):
            connection.abort()


class _Connection(TCPServer):
    """One TLS connection: hypercorn's handler with kapi's deadlines and the peer certificate recorded.

    It also ends the connection's tasks once the connection is closed: when a
    keep-alive connection is closed during shutdown while the client's next
    request has already arrived, hypercorn's read loop otherwise waits forever
    for a request it will never serve, holding shutdown for the whole grace period.
    """

    peers: PeerCertificates
    limits: ConnectionLimits
    connections: Connections
    _scope: trio.CancelScope
    _idle: bool
    _awaiting_headers: bool
    _header_timer: TrioSingleTask

    async def run(self) -> None:
        self._scope = trio.CancelScope()
        self._idle, self._awaiting_headers, self._header_timer = True, False, TrioSingleTask()
        self.connections.live.add(self)
        try:
            with self._scope:
                await self._serve()
        finally:
            self.connections.live.discard(self)

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
                if isinstance(self.protocol.protocol, _H11Protocol):
                    self.protocol.protocol.write_raw = self.write_raw
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

    async def write_raw(self, data: bytes) -> None:
        """hypercorn's write of ``RawData`` (under the send lock, shielded; a broken socket closes the
        protocol), without the scheduling point of taking a free lock: its send is one already."""
        lock = self.send_lock
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            try:
                with trio.CancelScope(shield=True):
                    await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                await self.protocol.handle(Closed())
        finally:
            lock.release()

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
                      limits: ConnectionLimits = ConnectionLimits(), connections: Connections | None = None,
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` over TLS until ``shutdown_trigger`` returns, then drain within the graceful timeout.

    When the graceful timeout runs out, the connections still open are closed, whatever they
    are doing: the timeout is a hard deadline. ``connections``: where the open ones are kept
    (a caller reads their statistics there).
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
    if connections is None:
        connections = Connections()
    connection_class = type("TCPServer", (_Connection,), {"peers": peers, "limits": limits,
                                                          "connections": connections})
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
            guard.start_soon(_abort_at, deadline, connections)
        guard.cancel_scope.cancel()
    if server_nursery.cancel_scope.cancelled_caught:
        log.warning("connections were still open when the %.0f s shutdown timeout ran out; they were closed",
                    config.graceful_timeout)


async def _abort_at(deadline: float, connections: Connections) -> None:
    """At the deadline, close every connection's socket: cancellation alone cannot end a shielded send."""
    await trio.sleep_until(deadline)
    connections.abort_all()
