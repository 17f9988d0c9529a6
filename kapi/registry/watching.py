"""WATCH: storage watch events with selector transitions, and the watch lines the API sends.

A resource with a watch cache is watched through it (the cacher hands out events and bookmarks,
encoded here by ``kapi.encoding.watchlines``, once per event for every watcher; queued ones go out
in one write); one without is watched on storage and its decoded objects encoded here.

A storage-backed watch lasts only while storage is its resource's route (``StorageRoutes``): it
ends, as a watch of a stopped cache does, when the resource leaves the table or when a watch
cache starts serving it; the client resumes from its last resourceVersion (404 or the cache).
A watch opened while its resource's cache is loading waits for it (``Registry.cacher_for_watch``).
"""

from __future__ import annotations

from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterator

import trio

from kapi import errors
from kapi.cacher.cache import Cacher, WatchStart
from kapi.cacher.watcher import Filter, WatchCounts, WatchItem
from kapi.encoding import codec
from kapi.encoding.watchlines import WatchLines, error_event, object_event
from kapi.object import meta
from kapi.object.listopts import ListOptions
from kapi.object.schema import Schema
from kapi.registry.resources import Resource
from kapi.storage.base import Event, KeyValue
from kapi.storage.routed import backend_of

if TYPE_CHECKING:
    from kapi.registry.store import Registry, Selection

Obj = dict[str, Any]
DECODE_CHUNK = 500  # a storage watch's initial objects are decoded this many at a time


@dataclass(eq=False)
class _Held:
    res: Resource
    events: trio.MemoryReceiveChannel[Event]
    route: Callable[[], Cacher | None]  # the cache its watcher would use now, if any


class StorageRoutes:
    """The open storage-backed watches by the resource each serves, ended when that resource's route changes.

    Ending one closes its channel of storage events: its reader sees ``trio.ClosedResourceError`` and
    ends the watch cleanly (as a timeout does), and the client resumes from its last resourceVersion
    on the resource's route now: a 404 when it left the table, its watch cache when that started
    serving it (kube has no storage-backed watch of a cached resource; nor does kapi, past this).
    """

    def __init__(self) -> None:
        self._held: set[_Held] = set()

    def __len__(self) -> int:
        return len(self._held)

    @contextmanager
    def held(self, res: Resource, events: trio.MemoryReceiveChannel[Event], route: Callable[[], Cacher | None],
             served: bool) -> Iterator[None]:
        """Hold ``events`` (a storage watch of ``res``) while storage is its route; ended at once when it is
        not now (``res`` not ``served`` any more, or ``route()`` gives a cache)."""
        entry = _Held(res, events, route)
        self._held.add(entry)
        try:
            if not served or route() is not None:
                events.close()
            yield
        finally:
            self._held.discard(entry)

    def end(self, which: Callable[[Resource, Callable[[], Cacher | None]], bool]) -> int:
        """End the held watches ``which(resource, route)`` picks; how many. Never blocks or raises."""
        ended = 0
        for entry in list(self._held):
            if which(entry.res, entry.route):
                self._held.discard(entry)
                entry.events.close()
                ended += 1
        return ended


def watch(reg: Registry, res: Resource, namespace: str, opts: ListOptions,
          initial_filter: Callable[[bytes], bool] | None = None,
          metadata_only: bool = False, initialized: Callable[[], None] | None = None
          ) -> AsyncIterator[tuple[str, Obj]]:
    """Watch events from storage with selector transitions (SEMANTICS §2.1, §2.5).

    rv unset or "0": ADDED for every current object, then changes; rv=N: changes after N.
    ``initial_filter``: the current objects whose stored bytes it refuses are left out of
    the initial ADDED events without being decoded (later changes all come).
    ``metadata_only``: each object is ``{"metadata": ...}`` alone (no managedFields), decoded
    at a fraction of the cost, for controllers that read only metadata (no selectors then).
    ``initialized``: called once the initial events have been taken (at once when there are none).

    The options are checked here, before the first event is asked for: a bad selector or
    resourceVersion is a 400 before the response starts, not a stream cut after its 200.
    """
    sel = reg.selection(res, opts)
    if metadata_only and not sel.everything:
        raise ValueError("a metadata-only watch takes no selectors")
    from_rev = None
    if opts.resource_version not in ("", "0"):
        from_rev = meta.parse_resource_version(opts.resource_version)
    # sendInitialEvents=false: from storage's current revision, without the current objects (kube's etcd3 watch)
    initial = opts.send_initial_events is not False
    return _watch_events(reg, res, reg.prefix(res, namespace), sel, from_rev, initial, initial_filter,
                        reg.decode_metadata if metadata_only else reg.decode, initialized)


async def _watch_events(reg: Registry, res: Resource, prefix: str, sel: Selection, from_rev: int | None,
                        initial: bool, initial_filter: Callable[[bytes], bool] | None,
                        decode: Callable[[Resource, KeyValue], Obj],
                        initialized: Callable[[], None] | None) -> AsyncIterator[tuple[str, Obj]]:
    if from_rev is None and not initial:
        from_rev = await backend_of(reg.storage, prefix).current_revision()
    if from_rev is None:
        page = await reg.storage.list(prefix)
        from_rev = page.revision
        items = page.items if initial_filter is None else [kv for kv in page.items if initial_filter(kv.value)]
        large = len(page.items) > DECODE_CHUNK
        del page  # the stored bytes of the whole list: only ``items`` is needed now
        for first in range(0, len(items), DECODE_CHUNK):
            # Decoded a chunk at a time: a controller watching everything never holds it all at once.
            with codec.paused_gc():
                chunk = [obj for obj in (reg.decoded_match(res, sel, kv, decode)
                                         for kv in items[first:first + DECODE_CHUNK]) if obj is not None]
            for obj in chunk:
                yield "ADDED", obj
            chunk = []
        items = []
        if large:
            # The stored bytes of the whole list are garbage now: give their pages back.
            codec.release_free_memory()
    if initialized is not None:
        initialized()  # resumed after the last initial event: the consumer has taken them all
    # Counted as a watcher of what it watches while it watches (APF's mutating estimate reads it).
    counted = WatchCounts.key(Filter(prefix, sel.label, sel.field))
    try:
        async with reg.storage.watch(prefix, from_rev) as events:
            reg.storage_watches.add(counted)
            try:
                with reg.storage_route(res, events):
                    while True:
                        try:
                            ev = await events.receive()
                        except (trio.EndOfChannel, trio.ClosedResourceError):
                            break  # storage ended it, or its route changed (StorageRoutes)
                        if ev.type == "PROGRESS":
                            continue
                        # A corrupt value is seen as absent: an object that turns corrupt goes (DELETED
                        # with its last good state), one that turns good again comes back (ADDED).
                        new = reg.decoded_match(res, sel, KeyValue(ev.key, ev.value, ev.revision,
                                                                     ev.create_revision), decode) \
                            if ev.value is not None else None
                        old = reg.decoded_match(res, sel, KeyValue(ev.key, ev.prev_value, ev.revision,
                                                                     ev.create_revision), decode) \
                            if ev.prev_value is not None else None
                        if new is not None and (ev.type == "ADDED" or old is None):
                            yield "ADDED", new
                        elif new is not None:
                            yield "MODIFIED", new
                        elif old is not None:
                            yield "DELETED", old
            finally:
                reg.storage_watches.remove(counted)
    except errors.RevisionCompacted as exc:
        gone = errors.Gone(f"too old resource version: {from_rev} ({exc.revision})")  # as the cache says it
        yield "ERROR", gone.to_status()


async def watch_lines(reg: Registry, res: Resource, namespace: str, opts: ListOptions, deadline: float,
                      proto: bool = False, initialized: Callable[[], None] | None = None) -> AsyncIterator[bytes]:
    """Open a watch for the API: an iterator of newline-delimited JSON events, ready to send.

    Refusals that happen before the stream starts (429 while the cache initialises) raise;
    those kube-apiserver reports inside the stream (410, 504) become one ERROR event.
    ``initialized`` (APF frees a watch's seats then) is called once, when the writer comes back
    for more after the initial events, the window catch-up and the end bookmark: they have been
    handed off. A watch with none of them calls it when its stream starts. Never per event.
    """
    sel = reg.selection(res, opts)
    if opts.resource_version not in ("", "0"):
        meta.parse_resource_version(opts.resource_version)  # a 400 now, not a broken stream later
    cacher = await reg.cacher_for_watch(res)
    if cacher is None:
        events = watch(reg, res, namespace, opts, initialized=initialized)
        if res.strategy.converts_async:
            events = _converted_events(reg, res, events)
        return _storage_watch_lines(events, reg.schema if proto else None)
    filt = Filter(reg.prefix(res, namespace), sel.label, sel.field)
    try:
        start = await cacher.open_watch(opts, filt, deadline)
    except (errors.Gone, errors.ServerTimeout) as err:
        if initialized is not None:
            initialized()  # no initial events: the stream is this one line
        return _one_line(error_event(err.to_status(), reg.schema if proto else None))
    return _CachedWatchLines(cacher, start, WatchLines(res.kind, res.group_version, reg.schema), proto,
                             initialized)


WATCH_BATCH_BYTES = 256 * 1024  # initial events go out in writes of about this size


async def _one_line(line: bytes) -> AsyncIterator[bytes]:
    yield line


async def _converted_events(reg: Registry, res: Resource, events: AsyncIterator[tuple[str, Obj]]
                            ) -> AsyncIterator[tuple[str, Obj]]:
    """A storage watch's events with each object converted (a conversion webhook); a failed
    conversion ends the watch with an ERROR event (kube's watch ends on a conversion error too)."""
    async with aclosing(events):  # type: ignore[type-var]
        async for kind, obj in events:
            if kind not in ("ERROR", "BOOKMARK"):
                try:
                    obj = (await reg.served(res, [obj]))[0]
                except errors.StatusError as err:
                    yield "ERROR", err.to_status()
                    return
            yield kind, obj


async def _storage_watch_lines(events: AsyncIterator[tuple[str, Obj]],
                               proto_schema: Schema | None) -> AsyncIterator[bytes]:
    """A storage-backed watch's events, as JSON lines or (with a schema) protobuf frames."""
    async with aclosing(events):  # type: ignore[type-var]
        async for kind, obj in events:
            yield object_event(kind, obj, proto_schema)
            if kind == "ERROR":
                return


class _CachedWatchLines:
    """A cached watch's lines; closing it unregisters the watcher even if it was never read."""

    def __init__(self, cacher: Cacher, start: WatchStart, lines: WatchLines, proto: bool,
                 initialized: Callable[[], None] | None = None) -> None:
        self._cacher = cacher
        self._watcher = start.watcher
        self._lines = _cached_watch_lines(cacher, start, lines, proto, initialized)

    def __aiter__(self) -> _CachedWatchLines:
        return self

    async def __anext__(self) -> bytes:
        return await self._lines.__anext__()

    async def aclose(self) -> None:
        try:
            await self._lines.aclose()
        finally:
            self._cacher.unregister(self._watcher)


async def _cached_watch_lines(cacher: Cacher, start: WatchStart, enc: WatchLines, proto: bool,
                              initialized: Callable[[], None] | None) -> AsyncIterator[bytes]:
    """Initial events, the window catch-up, the end bookmark, then live events; queued ones go in one write."""
    w = start.watcher
    try:
        batch: list[bytes] = []
        size = 0
        for entry in start.initial:
            line = enc.item_event("ADDED", entry, proto)
            batch.append(line)
            size += len(line)
            if size >= WATCH_BATCH_BYTES:
                yield b"".join(batch)
                batch, size = [], 0
        batch.append(enc.queued(start.catch_up, proto))
        if start.end_bookmark is not None:
            batch.append(enc.queued((start.end_bookmark,), proto))
        if any(batch):
            yield b"".join(batch)
        if initialized is not None:
            initialized()  # resumed after the last initial write: the writer has taken them all
        async for item in w.receive:
            items: list[WatchItem] = [item]
            while True:
                try:
                    items.append(w.receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            yield enc.queued(items, proto)
    finally:
        cacher.unregister(w)
