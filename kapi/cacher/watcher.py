"""One client's watch on a cache: its filter, its bounded channel of events and bookmarks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import trio

from kapi.object.selectors import FieldSelector, LabelSelector
from kapi.cacher.store import CacheEvent, Entry

BOOKMARK_PERIOD_S = 60.0  # a watcher's next bookmark is due at min(now + this, deadline - 2 s)


@dataclass(frozen=True, slots=True)
class Filter:
    """What a LIST or WATCH selects: a key range (namespace), a label and a field selector."""

    key_prefix: str
    label: LabelSelector | None = None
    field: FieldSelector | None = None

    @property
    def everything(self) -> bool:
        return self.label is None and self.field is None

    def matches(self, entry: Entry) -> bool:
        if not entry.key.startswith(self.key_prefix):
            return False
        if self.label is not None and not self.label.matches(entry.labels):
            return False
        return self.field is None or self.field.matches(entry.fields)

    def index_hint(self, indexed: Sequence[str]) -> tuple[str, str] | None:
        """(field, value) of an exact field requirement on an indexed field, if there is one."""
        if self.field is None:
            return None
        for name in indexed:
            value = self.field.exact_value(name)
            if value is not None:
                return name, value
        return None


class WatchCounts:
    """Watchers by (key prefix, exact name): how many a write of one object would be offered to.

    kube's watch tracker (APF's mutating estimate): selectors other than the name are not looked
    at, as the event must be judged against them anyway. Changed only as watches come and go.
    """

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}

    @staticmethod
    def key(filt: Filter) -> tuple[str, str]:
        name = filt.field.exact_value("metadata.name") if filt.field is not None else None
        return filt.key_prefix, name or ""

    def add(self, key: tuple[str, str]) -> None:
        self._counts[key] = self._counts.get(key, 0) + 1

    def remove(self, key: tuple[str, str]) -> None:
        left = self._counts.get(key, 0) - 1
        if left > 0:
            self._counts[key] = left
        else:
            self._counts.pop(key, None)

    def count(self, prefixes: Sequence[str], name: str) -> int:
        """Watchers of everything under one of ``prefixes``, and of the object ``name`` there (if given)."""
        counts = self._counts
        total = 0
        for prefix in prefixes:
            total += counts.get((prefix, ""), 0)
            if name:
                total += counts.get((prefix, name), 0)
        return total


@dataclass(frozen=True, slots=True)
class Bookmark:
    """A bookmark at ``revision`` for one watcher; its bytes are made by whoever writes the watch."""

    revision: int
    initial_events_end: bool = False


# What a watcher's channel carries: an event with the type this watcher sees it as and whether
# as its previous state (see ``transition``), or a bookmark.
WatchItem = tuple[CacheEvent, str, bool] | Bookmark


def transition(filt: Filter, ev: CacheEvent) -> tuple[str, bool] | None:
    """What a watcher with ``filt`` sees of ``ev`` (SEMANTICS §2.5): (type, use previous state) or None."""
    cur = ev.entry is not None and ev.type != "DELETED" and filt.matches(ev.entry)
    prev = ev.prev is not None and filt.matches(ev.prev)
    if ev.type == "DELETED":
        return ("DELETED", False) if prev or (ev.entry is not None and filt.matches(ev.entry)) else None
    if cur and not prev:
        return ("ADDED", False)
    if cur and prev:
        return ("MODIFIED", False)
    if prev:
        return ("DELETED", True)
    return None


@dataclass(eq=False)
class Watcher:
    """A registered watch. The cacher sends it events and bookmarks; its writer encodes and sends them."""

    filter: Filter
    min_revision: int  # events at or below this are not for this watcher
    capacity: int
    allow_bookmarks: bool
    deadline: float  # trio clock
    trigger: tuple[str, str] | None = None  # (field, value) it was registered under
    send: trio.MemorySendChannel[WatchItem] = field(init=False)
    receive: trio.MemoryReceiveChannel[WatchItem] = field(init=False)
    next_bookmark: float = field(init=False)
    closed: bool = False

    def __post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[WatchItem](self.capacity)
        self.next_bookmark = self._next_bookmark_after(trio.current_time())

    def _next_bookmark_after(self, now: float) -> float:
        return min(now + BOOKMARK_PERIOD_S, self.deadline - 2.0)

    def offer(self, item: WatchItem) -> bool:
        """Queue without waiting; False when the channel is full."""
        try:
            self.send.send_nowait(item)
            return True
        except trio.WouldBlock:
            return False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.closed = True
            return True

    def bookmark_due(self, now: float) -> bool:
        return self.allow_bookmarks and not self.closed and now >= self.next_bookmark

    def bookmark_sent(self, now: float) -> None:
        self.next_bookmark = self._next_bookmark_after(now) if now < self.deadline - 2.0 else math.inf

    def close(self) -> None:
        self.closed = True
        self.send.close()


@dataclass
class TimeBudget:
    """The shared time a dispatch may spend waiting for blocked watchers (kube's timeBudget).

    It refills at 50 ms per second up to 100 ms; a dispatch takes all of it and
    returns what it did not use.
    """

    refresh_per_s: float = 0.05
    max_budget_s: float = 0.1
    clock: Callable[[], float] = trio.current_time
    budget: float = 0.1
    last: float = 0.0

    def take(self) -> float:
        now = self.clock()
        self.budget = min(self.max_budget_s, self.budget + (now - self.last) * self.refresh_per_s)
        self.last = now
        taken, self.budget = self.budget, 0.0
        return taken

    def give_back(self, unused: float) -> None:
        self.budget = min(self.max_budget_s, self.budget + max(0.0, unused))


