"""A TCP proxy the tests control: freeze traffic, drop every connection, follow a restarted server."""

from __future__ import annotations

import urllib.parse

import trio


def host_port(url: str) -> tuple[str, int]:
    """The (host, port) an ``https://`` URL points at."""
    u = urllib.parse.urlsplit(url)
    return u.hostname or "127.0.0.1", u.port or 443


class Proxy:
    """Forwards TCP connections from a local port to ``upstream``.

    ``freeze()`` stops moving bytes (both ways) until ``thaw()``; ``drop()`` closes
    every open connection; ``upstream`` may change while it runs. ``accepted``
    records when each connection arrived (trio time).
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self.accepted: list[float] = []
        self._flowing = trio.Event()
        self._flowing.set()
        self._connections: set[trio.CancelScope] = set()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._serve, listeners)

    def freeze(self) -> None:
        self._flowing = trio.Event()

    def thaw(self) -> None:
        self._flowing.set()

    def drop(self) -> None:
        for scope in list(self._connections):
            scope.cancel()

    async def _serve(self, client: trio.SocketStream) -> None:
        self.accepted.append(trio.current_time())
        with trio.CancelScope() as scope:
            self._connections.add(scope)
            try:
                async with client:
                    try:
                        server = await trio.open_tcp_stream(*self.upstream)
                    except OSError:
                        return  # the server is down: the client sees the connection close
                    async with server, trio.open_nursery() as nursery:
                        nursery.start_soon(self._pump, client, server, nursery.cancel_scope)
                        nursery.start_soon(self._pump, server, client, nursery.cancel_scope)
            finally:
                self._connections.discard(scope)

    async def _pump(self, source: trio.SocketStream, sink: trio.SocketStream, done: trio.CancelScope) -> None:
        try:
            while data := await source.receive_some(1 << 16):
                await self._flowing.wait()
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        done.cancel()
