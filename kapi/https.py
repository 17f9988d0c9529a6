"""HTTPS serving on hypercorn's trio worker, with the TLS peer certificate made available.

hypercorn puts no client certificate in the ASGI scope. ``serve_https`` runs
hypercorn's own connection handler (``TCPServer``) behind a subclass that records
each connection's verified peer certificate under the client address, which
the ASGI scope does carry, and forgets it when the connection closes.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Awaitable, Callable

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.utils import parse_socket_addr, repr_socket_addr, wrap_app

log = logging.getLogger("kapi")


@dataclass
class PeerCertificates:
    """Verified client certificates (DER) of the open connections, by client (host, port)."""

    by_client: dict[tuple[str, int], bytes] = field(default_factory=dict)

    def get(self, client: Any) -> bytes | None:
        if not client:
            return None
        return self.by_client.get((client[0], client[1]))


class _RecordingTCPServer(TCPServer):
    """hypercorn's TCPServer that remembers the connection's peer certificate.

    It also ends the connection's tasks once the connection is closed: when a
    keep-alive connection is closed during shutdown while the client's next
    request has already arrived, hypercorn's read loop otherwise waits forever
    for a request it will never serve, holding shutdown for the whole grace period.
    """

    peers: PeerCertificates
    _scope: trio.CancelScope

    async def run(self) -> None:
        self._scope = trio.CancelScope()
        with self._scope:
            await self._run()

    async def _close(self) -> None:
        try:
            await super()._close()
        finally:
            self._scope.cancel()  # nothing can be read or written on a closed connection

    async def _run(self) -> None:
        key = None
        try:
            if isinstance(self.stream, trio.SSLStream):
                try:
                    with trio.fail_after(self.config.ssl_handshake_timeout):
                        await self.stream.do_handshake()
                except (trio.BrokenResourceError, trio.TooSlowError):
                    await trio.aclose_forcefully(self.stream)
                    return
                cert = self.stream.getpeercert(binary_form=True)
                if cert:
                    sock = self.stream.transport_stream.socket
                    addr = parse_socket_addr(sock.family, sock.getpeername())
                    if addr is not None:
                        key = (addr[0], addr[1])
                        self.peers.by_client[key] = cert
            await super().run()
        finally:
            if key is not None:
                self.peers.by_client.pop(key, None)


async def serve_https(app: Any, config: HypercornConfig, ca_file: str, peers: PeerCertificates, *,
                      shutdown_trigger: Callable[[], Awaitable[None]],
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` over TLS until ``shutdown_trigger`` returns, then drain within the graceful timeout."""
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    ssl_context = config.create_ssl_context()
    assert ssl_context is not None
    # Ask for a client certificate; verify it against kapi's CA when one is sent.
    ssl_context.verify_mode = ssl.CERT_OPTIONAL
    ssl_context.load_verify_locations(ca_file)
    sockets = config.create_sockets()
    server_class = type("TCPServer", (_RecordingTCPServer,), {"peers": peers})
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
                trio.serve_listeners, partial(server_class, wrapped, config, context, {}), listeners,
                handler_nursery=server_nursery))
            await shutdown_trigger()
            accept_nursery.cancel_scope.cancel()
        # Stop accepting; tell keep-alive connections to close; give in-flight requests the graceful timeout.
        await context.terminated.set()
        server_nursery.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
    if server_nursery.cancel_scope.cancelled_caught:
        log.warning("connections were still open when the %.0f s shutdown timeout ran out; they were closed",
                    config.graceful_timeout)
