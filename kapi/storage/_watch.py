"""Watch fan-out shared by the backends: history replay, then live events, no gap."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable, Protocol, Sequence

import trio

from kapi.errors import RevisionCompacted, StorageError, StorageUnavailable
from kapi.storage.base import Event

logger = logging.getLogger(__name__)

# Events read from history per round trip while a subscriber catches up.
REPLAY_CHUNK = 500


class ReadHistory(Protocol):
    """Reads committed events under a prefix with ``after < revision <= upto``."""

    def __call__(self, prefix: str, after: int, upto: int, limit: int) -> Awaitable[list[Event]]:
        """At most ``limit`` events in revision order; ``RevisionCompacted`` if ``after`` is gone."""
        ...


@dataclass(eq=False)
class _Subscriber:
    """One open watch: its filter, its channel and the pump that replays history into it."""

    prefix: str
    after: int  # events at or below this revision were replayed or are not wanted
    send: trio.MemorySendChannel[Event]
    scope: trio.CancelScope
    sent: int = 0  # events put in its channel so far
    marker_at: int = 0  # ``sent`` just after its latest PROGRESS marker (0: none yet)

    def put(self, event: Event) -> None:
        self.send.send_nowait(event)
        self.sent += 1

    def marker_unread(self) -> bool:
        """Whether the reader has not yet taken the last PROGRESS marker out of the channel."""
        return self.marker_at > self.sent - self.send.statistics().current_buffer_used


class WatchHub:
    """Delivers committed events to bounded subscriber channels.

    A new subscriber first gets history from ``read_history`` (with
    backpressure: the replay waits for the reader), then switches to live
    events in the same trio step in which it is found caught up with
    ``current()``, so nothing is lost or repeated. Live delivery never waits:
    a subscriber whose channel is full is closed and must watch again.
    """

    def __init__(
        self,
        *,
        buffer: int,
        read_history: ReadHistory,
        current: Callable[[], int],
        compacted: Callable[[], int],
    ) -> None:
        if buffer < 1:
            raise ValueError("watch buffer must hold at least one event")
        self._buffer = buffer
        self._read_history = read_history
        self._current = current
        self._compacted = compacted
        self._nursery: trio.Nursery | None = None
        self._subscribers: set[_Subscriber] = set()
        self._live: set[_Subscriber] = set()

    def start(self, nursery: trio.Nursery) -> None:
        """Accept watches; replay pumps run in ``nursery`` (the backend's own)."""
        self._nursery = nursery

    def stop(self) -> None:
        """Close every subscriber channel and refuse new watches."""
        self._nursery = None
        for sub in list(self._subscribers):
            self._drop(sub)

    @property
    def subscribers(self) -> int:
        """How many watches are open."""
        return len(self._subscribers)

    def dispatch(self, events: Sequence[Event]) -> None:
        """Hand freshly committed events (in revision order) to live subscribers."""
        if not events:
            return
        for sub in list(self._live):
            for event in events:
                if event.revision <= sub.after or not event.key.startswith(sub.prefix):
                    continue
                try:
                    sub.put(event)
                except trio.WouldBlock:
                    # Too slow: closing beats blocking the writer or buffering without bound.
                    self._drop(sub)
                    break
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._drop(sub)
                    break

    def request_progress(self) -> None:
        """Send every live subscriber a PROGRESS event at the current revision.

        Events are dispatched in the same trio step as their commit, so every event up
        to that revision is already in the channel ahead of the marker. A subscriber
        still replaying history gets none (it is not caught up yet); a full one is skipped.

        A subscriber that has not yet read the last marker it was sent gets no other: each
        marker costs its reader a trio step, and consistent LISTs ask for progress on every
        watch at their own rate, so under a flood of LISTs a watch cache would fall behind
        its own events (issue 13: a kubelet's watch events came 0.6 s late). A reader that
        needs a later revision asks again once it has read the pending one (the cacher's
        wait_for_rv does).
        """
        revision = self._current()
        marker = Event("PROGRESS", "", None, None, revision)
        for sub in list(self._live):
            if sub.marker_unread():
                continue
            try:
                sub.put(marker)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                continue
            sub.marker_at = sub.sent

    @asynccontextmanager
    async def watch(self, prefix: str, from_revision: int) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """Open a subscriber for events under ``prefix`` after ``from_revision``."""
        await trio.lowlevel.checkpoint()
        if self._nursery is None:
            raise StorageUnavailable("storage is not running")
        compacted = self._compacted()
        if from_revision < compacted:
            raise RevisionCompacted(
                f"revision {from_revision} has been compacted (compacted revision {compacted})",
                revision=compacted,
            )
        send, receive = trio.open_memory_channel[Event](self._buffer)
        sub = _Subscriber(prefix, from_revision, send, trio.CancelScope())
        self._subscribers.add(sub)
        if from_revision >= self._current():
            self._live.add(sub)
        else:
            self._nursery.start_soon(self._pump, sub)
        try:
            async with receive:
                yield receive
        finally:
            self._drop(sub)

    async def _pump(self, sub: _Subscriber) -> None:
        """Replay history into ``sub`` until it has caught up, then make it live."""
        try:
            with sub.scope:
                while True:
                    upto = self._current()
                    if sub.after >= upto:
                        # No await between this check and joining the live set: no gap.
                        if sub in self._subscribers:
                            self._live.add(sub)
                        return
                    events = await self._read_history(sub.prefix, sub.after, upto, REPLAY_CHUNK)
                    for event in events:
                        await sub.send.send(event)
                        sub.sent += 1
                    sub.after = events[-1].revision if len(events) >= REPLAY_CHUNK else upto
        except (trio.BrokenResourceError, trio.ClosedResourceError, StorageError):
            # Closed or compacted underneath the replay: the subscriber re-watches and learns why.
            self._drop(sub)
        except Exception:
            logger.exception("watch replay failed for prefix %r", sub.prefix)
            self._drop(sub)

    def _drop(self, sub: _Subscriber) -> None:
        """Forget ``sub`` and close its channel (the reader sees end of stream)."""
        sub.scope.cancel()
        self._live.discard(sub)
        self._subscribers.discard(sub)
        sub.send.close()
