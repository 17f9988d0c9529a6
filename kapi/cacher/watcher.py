"""One client's watch on a cache: its filter, its bounded channel of encoded events, bookmarks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import orjson
import trio

from kapi._fast import bookmark_line, watch_line
from kapi.encoding import protobuf
from kapi.object.schema import Schema
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


class Encoder:
    """Watch event bytes for one resource, each made once and shared by every watcher.

    JSON events are newline-delimited; protobuf events are length-prefixed WatchEvent
    frames around the enveloped object (``protobuf`` set on the call).
    """

    def __init__(self, kind: str, api_version: str, schema: Schema | None = None) -> None:
        self.kind = kind
        self.api_version = api_version
        self.schema = schema
        group, _, version = api_version.rpartition("/")
        self.gvk = (group, version, kind)
        self._kind, self._api_version = kind.encode(), api_version.encode()
        self._type_prefix = b'{"kind":"%s","apiVersion":"%s",' % (self._kind, self._api_version)

    def typed(self, data: bytes) -> bytes:
        """A list-item JSON object with its kind and apiVersion put back."""
        return self._type_prefix + data[1:]

    def message(self, entry: Entry) -> bytes:
        """The entry's protobuf message, made once per object version."""
        if entry.proto is None:
            assert self.schema is not None
            entry.proto = protobuf.encode(self.schema, self.gvk, orjson.loads(entry.data))
        return entry.proto

    def line(self, kind: str, data: bytes) -> bytes:
        return watch_line(kind.encode(), self._type_prefix, data)

    def entry_event(self, kind: str, entry: Entry, proto: bool) -> bytes:
        if not proto:
            return self.line(kind, entry.data)
        return protobuf.watch_frame(kind, protobuf.wrap(self.api_version, self.kind, self.message(entry)))

    def event_line(self, ev: CacheEvent, kind: str, use_prev: bool, proto: bool = False) -> bytes:
        """The bytes for ``ev`` as ``kind``; ``use_prev``: the previous state, at the event's rv."""
        cache_key = (kind, use_prev, proto)
        line = ev.encoded.get(cache_key)
        if line is None:
            if use_prev:
                assert ev.prev is not None
                obj = orjson.loads(ev.prev.data)
                obj.setdefault("metadata", {})["resourceVersion"] = str(ev.revision)
                entry = Entry(ev.prev.key, ev.prev.namespace, ev.prev.name, ev.revision, ev.prev.labels,
                              ev.prev.fields, orjson.dumps(obj))
            else:
                assert ev.entry is not None
                entry = ev.entry
            line = self.entry_event(kind, entry, proto)
            ev.encoded[cache_key] = line
        return line

    def bookmark(self, rv: int, initial_events_end: bool = False, proto: bool = False) -> bytes:
        if not proto:
            return bookmark_line(self._kind, self._api_version, rv, initial_events_end)
        md: dict[str, object] = {"resourceVersion": str(rv)}
        if initial_events_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.kind, "apiVersion": self.api_version, "metadata": md}
        assert self.schema is not None
        return protobuf.watch_frame("BOOKMARK", protobuf.encode_object(self.schema, obj))

    def error(self, status: dict[str, object], proto: bool = False) -> bytes:
        if proto:
            return protobuf.watch_frame("ERROR", protobuf.encode_status(status))
        return b'{"type":"ERROR","object":%s}\n' % orjson.dumps(status)


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
    """A registered watch. The cacher sends it lines; its HTTP writer reads them."""

    filter: Filter
    min_revision: int  # events at or below this are not for this watcher
    capacity: int
    allow_bookmarks: bool
    deadline: float  # trio clock
    trigger: tuple[str, str] | None = None  # (field, value) it was registered under
    protobuf: bool = False  # sends protobuf frames rather than JSON lines
    send: trio.MemorySendChannel[bytes] = field(init=False)
    receive: trio.MemoryReceiveChannel[bytes] = field(init=False)
    next_bookmark: float = field(init=False)
    closed: bool = False

    def __post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[bytes](self.capacity)
        self.next_bookmark = self._next_bookmark_after(trio.current_time())

    def _next_bookmark_after(self, now: float) -> float:
        return min(now + BOOKMARK_PERIOD_S, self.deadline - 2.0)

    def offer(self, line: bytes) -> bool:
        """Queue without waiting; False when the channel is full."""
        try:
            self.send.send_nowait(line)
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


