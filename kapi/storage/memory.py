"""In-memory reference backend: a sorted dict of the latest state plus an event log."""

from __future__ import annotations

import bisect
import builtins
from typing import TYPE_CHECKING, AsyncContextManager, Iterable, TypeVar

import trio
from sortedcontainers import SortedDict  # type: ignore[import-untyped]

from kapi.errors import KeyExists, KeyNotFound, RevisionCompacted, RevisionConflict, StorageUnavailable
from kapi.storage import _paging
from kapi.storage._keys import prefix_end, range_start
from kapi.storage._watch import WatchHub
from kapi.storage.base import Event, KeyValue, ListResult, Predicate

if TYPE_CHECKING:
    from kapi.object.listopts import ListOptions

T = TypeVar("T")


def _revision_of(event: Event) -> int:
    return event.revision


class MemoryStorage:
    """The ``Storage`` protocol over Python containers; history lives until ``compact``.

    The log holds every event above the compacted revision; a historical read
    rewinds the latest state by the events that came after it.
    """

    def __init__(self, *, watch_buffer: int = 1000) -> None:
        self._current: SortedDict[str, KeyValue] = SortedDict()
        self._log: list[Event] = []
        self._revision = 0
        self._compacted = 0
        self._running = False
        self._hub = WatchHub(
            buffer=watch_buffer,
            read_history=self._read_history,
            current=lambda: self._revision,
            compacted=self.compacted_revision,
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; watch replays run in this task's nursery."""
        if self._running:
            raise RuntimeError("MemoryStorage.run() is already running")
        async with trio.open_nursery() as nursery:
            self._hub.start(nursery)
            self._running = True
            try:
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._running = False
                self._hub.stop()

    # ------------------------------------------------------------ writes

    async def create(self, key: str, value: bytes) -> int:
        """Create ``key``; return the new revision."""
        await self._ready()
        existing = self._current.get(key)
        if existing is not None:
            raise KeyExists(f"key {key!r} already exists", key=key, revision=existing.revision)
        revision = self._revision + 1
        self._current[key] = KeyValue(key, value, revision, revision)
        self._commit(Event("ADDED", key, value, None, revision, revision, 0))
        return revision

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        """Replace ``key`` at ``expected_revision``; return the new revision."""
        await self._ready()
        old = self._expect(key, expected_revision)
        revision = self._revision + 1
        self._current[key] = KeyValue(key, value, revision, old.create_revision)
        self._commit(Event("MODIFIED", key, value, old.value, revision, old.create_revision, old.revision))
        return revision

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        """Delete ``key`` (at ``expected_revision`` when given)."""
        await self._ready()
        old = self._expect(key, expected_revision)
        revision = self._revision + 1
        del self._current[key]
        self._commit(Event("DELETED", key, None, old.value, revision, old.create_revision, old.revision))
        return revision, old

    async def compact(self, revision: int) -> None:
        """Drop events at and below ``revision`` (clamped to the current revision)."""
        await self._ready()
        revision = min(revision, self._revision)
        if revision <= self._compacted:
            return
        del self._log[: bisect.bisect_right(self._log, revision, key=_revision_of)]
        self._compacted = revision

    # ------------------------------------------------------------- reads

    async def get(self, key: str) -> KeyValue:
        """The latest value of ``key``."""
        await self._ready()
        found: KeyValue | None = self._current.get(key)
        if found is None:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        return found

    async def list(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        start: str | None = None,
        limit: int | None = None,
    ) -> ListResult[KeyValue]:
        """Keys under ``prefix`` from ``start`` on, at the latest or a historical revision."""
        await self._ready()
        low, high = range_start(prefix, start), prefix_end(prefix)
        if revision is not None and revision <= self._compacted and self._compacted > 0:
            raise RevisionCompacted(
                f"revision {revision} has been compacted (compacted revision {self._compacted})",
                revision=self._compacted,
            )
        if revision is None or revision >= self._revision:
            return self._page_of_current(low, high, limit)
        return _page(self._state_at(revision, prefix, low, high), revision, limit)

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
        """A LIST by the API's rules over this backend's range reads."""
        return await _paging.get_list(self, prefix, opts, pred)

    async def count(self, prefix: str) -> int:
        """How many keys live under ``prefix`` now."""
        await self._ready()
        first, last = self._span(prefix, prefix_end(prefix))
        return last - first

    def watch(self, prefix: str, from_revision: int) -> AsyncContextManager[trio.MemoryReceiveChannel[Event]]:
        """Events under ``prefix`` after ``from_revision``: history, then live."""
        return self._hub.watch(prefix, from_revision)

    def request_progress(self) -> None:
        """Every live watch gets a PROGRESS event at the current revision."""
        self._hub.request_progress()

    @property
    def consistent_reads_from_cache(self) -> bool:
        """Always: a PROGRESS marker is ordered with this backend's events."""
        return True

    async def current_revision(self) -> int:
        """The latest committed revision."""
        await trio.lowlevel.checkpoint()
        return self._revision

    def compacted_revision(self) -> int:
        """The highest revision compacted away."""
        return self._compacted

    # ----------------------------------------------------------- helpers

    async def _ready(self) -> None:
        # Checkpoint first, so a cancelled caller never half-starts a write.
        await trio.lowlevel.checkpoint()
        if not self._running:
            raise StorageUnavailable("storage is not running")

    def _expect(self, key: str, expected_revision: int | None) -> KeyValue:
        """The current value of ``key``, checked against the caller's expected revision."""
        old: KeyValue | None = self._current.get(key)
        if old is None:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        if expected_revision is not None and old.revision != expected_revision:
            raise RevisionConflict(
                f"key {key!r} is at revision {old.revision}, not {expected_revision}",
                key=key,
                revision=old.revision,
                current=old,
            )
        return old

    def _commit(self, event: Event) -> None:
        self._revision = event.revision
        self._log.append(event)
        self._hub.dispatch((event,))

    def _span(self, low: str, high: str | None) -> tuple[int, int]:
        """Index range of the current keys in ``[low, high)``."""
        first = self._current.bisect_left(low)
        last = len(self._current) if high is None else self._current.bisect_left(high)
        return first, max(first, last)

    def _page_of_current(self, low: str, high: str | None, limit: int | None) -> ListResult[KeyValue]:
        first, last = self._span(low, high)
        end = last if not limit or limit <= 0 else min(last, first + limit)
        keys = self._current.keys()[first:end]
        items = [self._current[k] for k in keys]
        return ListResult(items, self._revision, more=end < last, remaining=last - end)

    def _state_at(self, revision: int, prefix: str, low: str, high: str | None) -> builtins.list[KeyValue]:
        """The values in ``[low, high)`` as they were at ``revision``, in key order."""
        # The first event after ``revision`` on a key tells what the key held at ``revision``.
        before: dict[str, KeyValue | None] = {}
        for event in self._log[bisect.bisect_right(self._log, revision, key=_revision_of) :]:
            if event.key in before or event.key < low or not event.key.startswith(prefix):
                continue
            if event.type == "ADDED":
                before[event.key] = None
            else:
                assert event.prev_value is not None
                before[event.key] = KeyValue(event.key, event.prev_value, event.prev_revision, event.create_revision)
        first, last = self._span(low, high)
        state = {k: self._current[k] for k in self._current.keys()[first:last] if k not in before}
        state.update((k, kv) for k, kv in before.items() if kv is not None)
        return [state[k] for k in sorted(state)]

    async def _read_history(self, prefix: str, after: int, upto: int, limit: int) -> builtins.list[Event]:
        await trio.lowlevel.checkpoint()
        if after < self._compacted:
            raise RevisionCompacted(f"revision {after} has been compacted", revision=self._compacted)
        out: list[Event] = []
        for index in range(bisect.bisect_right(self._log, after, key=_revision_of), len(self._log)):
            event = self._log[index]
            if event.revision > upto or len(out) >= limit:
                break
            if event.key.startswith(prefix):
                out.append(event)
        return out


def _page(state: Iterable[KeyValue], revision: int, limit: int | None) -> ListResult[KeyValue]:
    """A ``ListResult`` of the first ``limit`` items of ``state``."""
    items = list(state)
    if not limit or limit <= 0 or len(items) <= limit:
        return ListResult(items, revision)
    return ListResult(items[:limit], revision, more=True, remaining=len(items) - limit)
