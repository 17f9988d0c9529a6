"""The watch cache of one resource: reflector, state, event window, LIST and WATCH by rv.

Fed by one storage watch, and wraps that storage with its own protocol: writes, GETs and
range reads pass through; ``get_list`` is served as kube-apiserver 1.34+ serves LISTs
(SEMANTICS §1.2): consistent reads from cache after a freshness check, rv=0 from the
current state with any limit ignored, Exact and continue pages from a snapshot rewound
through the event window, and from the wrapped storage (counted by reason) when only
storage can answer. WATCH replays from the window and fans live events out to watchers.
What storage compacted the cache forgets too (KEP-4988): no snapshot at or below storage's
compacted revision (storage answers such a LIST: 410 Expired), no watch from below it (410).
The cacher hands out entries and events; what they look like on the wire is not its business.
"""

from __future__ import annotations

import gc
import logging
import math
import random
from contextlib import contextmanager
from functools import partial
from dataclasses import dataclass
from typing import AsyncContextManager, Iterator, Protocol, Sequence, TypeVar

import trio

from kapi import errors
from kapi._fast import EventRing
from kapi.object.listopts import ListOptions, decode_continue, encode_continue
from kapi.metrics import Metrics
from kapi.storage.base import Event, KeyValue, ListResult, Predicate, Storage
from kapi.cacher import consistency
from kapi.cacher.store import CacheEvent, CacheStore, Entry, Snapshot
from kapi.cacher.watcher import Bookmark, Filter, TimeBudget, Watcher, WatchCounts, WatchItem, transition

T = TypeVar("T")
log = logging.getLogger("kapi.cacher")

RELIST_PAGE = 10_000
FRESHNESS_WAIT_S = 3.0  # consistent reads and "not older than" waits
PROGRESS_INTERVAL_S = 0.1
BOOKMARK_TICK_S = 1.0
MIN_WATCH_CHANNEL = 100
RESTART_BACKOFF_S = (0.1, 30.0)  # a failed list or watch is retried after this, doubling to the cap


class Entries(Protocol):
    """How the cache gets its entries: whoever serves the resource makes them from stored values."""

    def make(self, value: bytes, revision: int) -> Entry:
        """The entry of a stored value; raises on a value that cannot be served."""

    def gone_at(self, entry: Entry, revision: int) -> Entry:
        """The last state of an object that went at ``revision``, carrying that resourceVersion."""


@dataclass(eq=False)
class WatchStart:
    """What a new watch sends before its live events."""

    watcher: Watcher
    initial: Sequence[Entry]  # ADDED for each, in key order
    catch_up: Sequence[WatchItem]  # window events after the start rv, as this watcher sees them
    end_bookmark: Bookmark | None  # the initial-events-end bookmark, if asked for


# How get_list answers a LIST (``Cacher._list_route``)
_DELEGATED = "delegated"  # storage answers: the cache cannot serve consistent reads over it
_UNREADY = "unready"  # 429 while the cache (re)initializes
_UNREADY_STORAGE = "unready-storage"  # a plain paged LIST: storage answers meanwhile
_CONSISTENT = "consistent"  # the current state once the cache has caught up with storage
_CURRENT = "current"  # the current state (after waiting for ``rv``)
_AT = "at"  # the state at ``rv``: current, or a snapshot rewound through the window


@dataclass(frozen=True, slots=True)
class _Route:
    kind: str
    rv: int = 0
    start: str = ""  # a continued LIST's next key, after the list's prefix
    paged: bool = True  # False: the limit is ignored (rv=0)


@dataclass
class CacheConfig:
    capacity: int = 100
    indexed_fields: tuple[str, ...] = ()
    check_period_s: float = consistency.CHECK_PERIOD_S  # DetectCacheInconsistency; 0: never


class Cacher:
    """Watch cache for one resource (one storage prefix), wrapping its storage with the storage protocol."""

    def __init__(self, storage: Storage, prefix: str, entries: Entries, *, group: str, resource: str, kind: str,
                 metrics: Metrics, config: CacheConfig | None = None) -> None:
        self.storage = storage
        self.prefix = prefix
        self.entries = entries
        self.group = group
        self.resource = resource
        self.kind = kind
        self.metrics = metrics
        config = config or CacheConfig()
        self.store = CacheStore(config.indexed_fields)
        self.ring = EventRing(config.capacity, min_capacity=config.capacity, max_capacity=max(102_400,
                                                                                             config.capacity))
        self.check_period_s = config.check_period_s
        self.rv = 0
        self.ready = False
        self._following: trio.CancelScope | None = None  # the storage watch after a list (see rebuild)
        self._rv_changed = trio.Event()
        self._waiting = 0  # readers waiting for the cache to catch up (see _progress_loop)
        self._someone_waits = trio.Event()
        self._watchers: set[Watcher] = set()
        self._triggered: dict[tuple[str, str], set[Watcher]] = {}
        self._watch_counts = WatchCounts()  # untriggered watchers (see watch_count)
        self._budget = TimeBudget()
        self._down_since = trio.current_time()
        self._labels = {"group": group, "resource": resource}
        self._reported: set[tuple[str, int]] = set()  # values make_entry refused, logged once each

    # ----------------------------------------------------------- reflector

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """List, then watch; relist when the watch breaks or history was compacted."""
        started = False
        backoff = RESTART_BACKOFF_S[0]
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._bookmark_loop)
                nursery.start_soon(self._progress_loop)
                if self.check_period_s > 0:
                    nursery.start_soon(consistency.check_periodically, self, self.check_period_s)
                while True:
                    try:
                        revision = await self._relist()
                        if not started:
                            started = True
                            task_status.started()
                        backoff = RESTART_BACKOFF_S[0]
                        with trio.CancelScope() as self._following:
                            async with self.storage.watch(self.prefix, revision) as events:
                                async for ev in events:
                                    await self._process(ev)
                        if self._following.cancelled_caught:
                            self._become_unready()
                            continue  # rebuild(): a fresh list at once
                    except (errors.RevisionCompacted, errors.StorageUnavailable) as exc:
                        log.info("watch cache %s: %s; relisting", self.resource, exc)
                    except Exception:
                        # A bug or a value nobody foresaw: the cache must not take the server down.
                        # As kube's reflector does, start again from a fresh list (with backoff).
                        log.exception("watch cache %s failed; relisting in %.1fs", self.resource, backoff)
                    self._become_unready()
                    await trio.sleep(backoff)
                    backoff = min(backoff * 2, RESTART_BACKOFF_S[1])
        finally:
            self._become_unready()  # stopped (a removed resource, shutdown): its watches end


    async def _relist(self) -> int:
        entries: list[Entry] = []
        start: str | None = None
        revision: int | None = None
        while True:
            page = await self.storage.list(self.prefix, revision=revision, start=start, limit=RELIST_PAGE)
            revision = page.revision
            with _paused_gc():
                for kv in page.items:
                    entry = self._entry(kv.key, kv.value, kv.revision)
                    if entry is not None:
                        entries.append(entry)
            if not page.more or not page.items:
                break
            start = page.items[-1].key + "\x00"
        self.store.replace_all(entries)
        self.ring.reset(revision)
        self._set_rv(revision)
        self.ready = True
        self.metrics.watch_cache_initializations.labels(**self._labels).inc()
        self.metrics.capacity.labels(**self._labels).set(self.ring.capacity)
        return revision

    def rebuild(self) -> None:
        """Load a fresh list at once (a consistency check found the cache differing from storage).

        As any re-initialisation it ends every watcher: clients resume from their last rv, or list again.
        """
        if self._following is not None:
            self._following.cancel()

    def _become_unready(self) -> None:
        """Re-initialisation ends every watcher (they resume from their last rv)."""
        self.ready = False
        self._down_since = trio.current_time()
        for w in list(self._watchers):
            self._drop(w)

    def _set_rv(self, rv: int) -> None:
        if rv > self.rv or not self.ready:
            self.rv = rv
            self.metrics.resource_version.labels(**self._labels).set(rv)
            self._rv_changed.set()
            self._rv_changed = trio.Event()

    def serves(self, kv: KeyValue) -> bool:
        """Whether the cache would hold this stored value (not one it refuses as corrupt)."""
        return self._entry(kv.key, kv.value, kv.revision) is not None

    def _entry(self, key: str, value: bytes, revision: int) -> Entry | None:
        """The cache entry of a stored value; None for one that cannot be served (logged once).

        Such a value (not msgpack, not an object, metadata Go's decoder would refuse, not
        JSON-compatible) is left out of the cache: LISTs and WATCHes do not show it, exactly as
        a LIST from storage leaves it out, and a GET (from storage) answers 500 naming the key.
        Serving it with its fields emptied would hand clients a made-up object, and serving it
        as stored would fail every Go client's decode of the whole list it is in.
        """
        try:
            return self.entries.make(value, revision)
        except Exception as exc:
            if (key, revision) not in self._reported:
                if len(self._reported) >= 10_000:
                    self._reported.clear()
                self._reported.add((key, revision))
                log.error("watch cache %s: corrupt object left out: key %s revision %d: %s: %s", self.resource,
                          key, revision, type(exc).__name__, exc)
            return None

    async def _process(self, ev: Event) -> None:
        if ev.type == "PROGRESS":
            self._set_rv(ev.revision)
            return
        entry: Entry | None
        if ev.type == "DELETED":
            prev = self.store.delete(ev.key)
            entry = self._entry(ev.key, ev.prev_value, ev.revision) if ev.prev_value is not None else None
            if entry is None and prev is not None:
                entry = self.entries.gone_at(prev, ev.revision)
            kind = "DELETED"
        else:
            entry = self._entry(ev.key, ev.value, ev.revision) if ev.value is not None else None
            if entry is None:
                # Turned corrupt: it leaves the cache, and watchers see it go with its last good state.
                prev = self.store.delete(ev.key)
                entry, kind = (self.entries.gone_at(prev, ev.revision) if prev is not None else None), "DELETED"
            else:
                prev = self.store.put(entry)
                kind = "MODIFIED" if prev is not None else "ADDED"
        if entry is None:
            self._set_rv(ev.revision)  # nothing any watcher could see changed
            return
        cev = CacheEvent(kind, ev.key, ev.revision, entry, prev)
        capacity = self.ring.capacity
        self.ring.append(cev)
        if self.ring.capacity != capacity:
            self.metrics.capacity.labels(**self._labels).set(self.ring.capacity)
        self.metrics.events_received.labels(**self._labels).inc()
        self._set_rv(ev.revision)
        await self._dispatch(cev)

    # -------------------------------------------------------- freshness

    def _not_ready(self) -> errors.TooManyRequests:
        down = trio.current_time() - self._down_since
        retry = int(min(30.0, max(1.0, math.exp(0.06 * down))))
        return errors.TooManyRequests("storage is (re)initializing", retry_after_s=retry)

    async def wait_for_rv(self, rv: int, timeout_s: float = FRESHNESS_WAIT_S) -> None:
        """Wait until the cache has seen ``rv``; 504 ResourceVersionTooLarge after ``timeout_s``.

        Meanwhile storage is asked for progress (``_progress_loop``): a revision written under
        another prefix reaches this cache only as a PROGRESS event.
        """
        if self.rv >= rv:
            return
        start = trio.current_time()
        self._waiting += 1
        self._someone_waits.set()
        try:
            with trio.move_on_after(timeout_s):
                while self.rv < rv:
                    await self._rv_changed.wait()
        finally:
            self._waiting -= 1
        self.metrics.read_wait.labels(**self._labels).observe(trio.current_time() - start)
        if self.rv < rv:
            raise errors.too_large_resource_version(rv, self.rv, retry_after_s=1)

    async def _progress_loop(self) -> None:
        """kube's conditionalProgressRequester: while anyone waits in ``wait_for_rv``, ask storage for
        progress at once and then every 100 ms, one request for every waiter of this cache."""
        while True:
            await self._someone_waits.wait()
            while self._waiting:
                self.storage.request_progress()
                await trio.sleep(PROGRESS_INTERVAL_S)
            self._someone_waits = trio.Event()

    async def wait_fresh(self) -> bool:
        """Consistent read: wait until the cache holds storage's current revision (KEP-2340); False after 3 s."""
        target = await self.storage.current_revision()  # etcd: a quorum read
        try:
            await self.wait_for_rv(target)
        except errors.ServerTimeout:
            return False
        return True

    def _consistent_reads(self) -> bool:
        """Whether storage's progress answers let the cache serve consistent reads (kube's
        ConsistentReadSupported: etcd's RequestProgress from 3.4.31 / 3.5.13 on)."""
        return self.storage.consistent_reads_from_cache

    # -------------------------------------------------------------- LIST

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[Entry]) -> ListResult[Entry]:
        """Serve a LIST by SEMANTICS §1.2 (1.34+): from the cache, or from storage where it must."""
        filt = Filter(prefix, pred.label, pred.field)
        route = self._list_route(opts, filt.everything)
        if route.kind == _DELEGATED:
            return await self._list_storage("consistent-read-unsupported", prefix, opts, pred)
        if route.kind == _UNREADY_STORAGE:
            return await self._list_storage("not-ready", prefix, opts, pred)
        if route.kind == _UNREADY:
            raise self._not_ready()
        start = filt.key_prefix + route.start
        limit = opts.limit if route.paged else 0
        if route.kind == _CONSISTENT:
            return await self._list_consistent(filt, start, limit, prefix, opts, pred)
        await self.wait_for_rv(route.rv)  # a page one from storage may be ahead of the cache
        if route.kind == _AT:
            listed = self._list_at(route.rv, filt, start, limit)
            return listed if listed is not None else \
                await self._list_storage("snapshot-not-retained", prefix, opts, pred)
        return self._list_current(filt, start, limit)

    async def _list_consistent(self, filt: Filter, start: str, limit: int, prefix: str, opts: ListOptions,
                               pred: Predicate[Entry]) -> ListResult[Entry]:
        """A consistent read, from the cache once it caught up, else from storage; counted as kube's
        delegator counts it (``fallback``: storage answered after the wait timed out)."""
        success, fallback = "false", "false"
        try:
            if await self.wait_fresh():
                result = self._list_current(filt, start, limit)
            else:
                fallback = "true"
                result = await self._list_storage("consistent-read-timeout", prefix, opts, pred)
            success = "true"
            return result
        finally:
            self.metrics.consistent_read.labels(**self._labels, success=success, fallback=fallback).inc()

    def _list_route(self, opts: ListOptions, everything: bool) -> _Route:
        """How ``get_list`` answers ``opts``, decided without waiting; BadRequest for a bad continue token.

        As kube's delegator: a consistent read, or an exact one at a revision the cache has not
        seen, goes to storage when the cache cannot serve consistent reads; else a cache that is
        not ready hands a plain paged LIST to storage and refuses the others (429).
        """
        route = self._asked_route(opts)
        if (route.kind == _CONSISTENT or route.kind == _AT and route.rv > self.rv) and not self._consistent_reads():
            return _Route(_DELEGATED)
        if not self.ready:
            return _Route(_UNREADY_STORAGE if opts.limit > 0 and everything else _UNREADY)
        return route

    def _asked_route(self, opts: ListOptions) -> _Route:
        """What ``opts`` ask the cache for (SEMANTICS §1.2)."""
        rv_text = opts.resource_version
        if opts.continue_token:
            token = decode_continue(opts.continue_token)
            if token.revision == -1:
                return _Route(_CONSISTENT, start=token.start)
            return _Route(_AT, token.revision, token.start)
        if rv_text == "":
            return _Route(_CONSISTENT)
        if rv_text == "0":
            return _Route(_CURRENT, paged=False)
        rv = int(rv_text)
        match = opts.resource_version_match
        if match == "Exact" or (not match and opts.limit > 0):
            return _Route(_AT, rv)
        return _Route(_CURRENT, rv)

    def lists_from_cache(self, opts: ListOptions, everything: bool) -> bool:
        """Whether ``get_list`` would answer ``opts`` from the cache (its state or a snapshot), judged now.

        The same route ``get_list`` takes (what APF's LIST estimate asks): only a consistent read that
        times out, or a snapshot the window loses while the LIST waits, would still go to storage.
        ``everything``: the LIST has no label or field selector.
        """
        try:
            route = self._list_route(opts, everything)
        except (errors.StatusError, ValueError):
            return False  # refused before anything is read
        return route.kind in (_CONSISTENT, _CURRENT) or route.kind == _AT and self._retains(route.rv)

    def _retains(self, rv: int) -> bool:
        """The state at ``rv`` can be had from the cache: it is now or later, or the window reaches back to it.

        Never once storage has compacted ``rv`` (KEP-4988): the cache forgets what storage forgot, and
        the LIST goes to storage, which answers 410 Expired as kube-apiserver's delegator lets etcd do.
        """
        return rv > self.storage.compacted_revision() and (rv >= self.rv or self.ring.covers(rv))

    async def _list_storage(self, reason: str, prefix: str, opts: ListOptions,
                            pred: Predicate[Entry]) -> ListResult[Entry]:
        """The LIST the cache cannot answer as asked, from the storage it wraps (counted by ``reason``)."""
        self.metrics.storage_list_total.labels(group=self.group, resource=self.resource, reason=reason).inc()
        return await self.storage.get_list(prefix, opts, pred)

    def _list_current(self, filt: Filter, start: str, limit: int) -> ListResult[Entry]:
        return self._collect(self.store, self.rv, filt, start, limit, "cache")

    def _list_at(self, rv: int, filt: Filter, start: str, limit: int) -> ListResult[Entry] | None:
        """The LIST at ``rv``; None when the window no longer reaches back to it."""
        if not self._retains(rv):
            return None
        if rv >= self.rv:
            return self._collect(self.store, self.rv if rv > self.rv else rv, filt, start, limit, "cache")
        snapshot = Snapshot.rewind(self.store, self.ring.events_after(rv))
        return self._collect(snapshot, rv, filt, start, limit, "snapshot")

    def _collect(self, view: CacheStore | Snapshot, rv: int, filt: Filter, start: str, limit: int,
                 source: str) -> ListResult[Entry]:
        high = _prefix_end(filt.key_prefix)
        hint = filt.index_hint(self.store.indexed_fields) if isinstance(view, CacheStore) else None
        keys: Iterator[str]
        labelled = None
        if hint is None and isinstance(view, CacheStore) and filt.label is not None and not filt.label.empty:
            # A paged LIST of a loose selector fills its page sooner by walking the range.
            labelled = view.label_keys(filt.label, start, high, at_most=4 * limit if limit else None)
        if hint is not None:
            indexed = view.indexed_keys(*hint)  # type: ignore[union-attr]
            keys = iter([k for k in indexed or () if start <= k and (high is None or k < high)])
        elif labelled is not None:
            keys = iter(labelled)
        else:
            keys = view.keys_from(start, high)
        items: list[Entry] = []
        scanned = 0
        last_key = ""
        more = False
        # Keys from the label table already match the label selector (and lie in the range):
        # only a field selector, if any, is left to check.
        everything = filt.everything
        check = filt
        if labelled is not None:
            check = Filter(filt.key_prefix, None, filt.field)
        unchecked = check.everything
        if labelled is not None and unchecked and not limit:
            # Every labelled key is an answer: take the entries in one pass (a LIST by label
            # of 5,000 pods spent ~2 ms in the loop below).
            assert isinstance(view, CacheStore)
            items = view.entries_of(labelled)
            keys = iter(())
        for key in keys:
            entry = view.get(key)
            if entry is None:
                continue
            if limit and len(items) == limit:
                more = True
                break
            scanned += 1
            last_key = key
            if unchecked or check.matches(entry):
                items.append(entry)
        if labelled is not None:
            # Answer as the walk over the range would have: it stops at the first entry
            # after a full page (matching or not) and counts every entry it read.
            assert isinstance(view, CacheStore)
            if not more and limit and len(items) == limit:
                more = view.count_range(last_key + "\x00", high) > 0
            scanned = view.count_range(start, last_key + "\x00" if more else high)
        index = hint[0] if hint else ""
        token = ""
        remaining: int | None = None
        if more:
            token = encode_continue(rv, last_key + "\x00", filt.key_prefix)
            if everything:
                remaining = sum(1 for _ in view.keys_from(last_key + "\x00", high)) \
                    if isinstance(view, Snapshot) else view.count_range(last_key + "\x00", high)
        result = ListResult(items, rv, more=more, remaining=remaining, continue_token=token, source=source,
                            scanned=scanned, index=index)
        labels = dict(self._labels, index=index, source=source)
        self.metrics.cache_list_total.labels(**labels).inc()
        self.metrics.cache_list_fetched.labels(**labels).inc(scanned)
        self.metrics.cache_list_returned.labels(**self._labels, source=source).inc(len(items))
        return result

    def entry(self, key: str) -> Entry | None:
        """The cached entry at ``key`` (the current state; see ``wait_for_rv``)."""
        return self.store.get(key)

    def object_stats(self) -> tuple[int, int]:
        """(objects, their average served size in bytes) now: kube's storage Stats, from the cache's own sums."""
        count = len(self.store)
        return count, (self.store.total_bytes // count if count else 0)

    def watch_count(self, prefixes: Sequence[str], name: str) -> int:
        """How many watchers a write of object ``name`` under ``prefixes`` would be offered to (kube's tracker).

        Counted: the watchers of everything under a prefix, and those of that one object. A watcher
        registered under an indexed field's value is offered only the events of objects with that
        value, which a request does not tell before it is decoded: as kube's tracker, it is not counted.
        """
        return self._watch_counts.count(prefixes, name)

    # ------------------------------------- the storage protocol, passed through

    async def create(self, key: str, value: bytes) -> int:
        return await self.storage.create(key, value)

    async def get(self, key: str) -> KeyValue:
        return await self.storage.get(key)

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        return await self.storage.update(key, value, expected_revision)

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        return await self.storage.delete(key, expected_revision)

    async def list(self, prefix: str, *, revision: int | None = None, start: str | None = None,
                   limit: int | None = None) -> ListResult[KeyValue]:
        return await self.storage.list(prefix, revision=revision, start=start, limit=limit)

    async def count(self, prefix: str) -> int:
        return await self.storage.count(prefix)

    def watch(self, prefix: str, from_revision: int) -> AsyncContextManager[trio.MemoryReceiveChannel[Event]]:
        return self.storage.watch(prefix, from_revision)

    def request_progress(self) -> None:
        self.storage.request_progress()

    @property
    def consistent_reads_from_cache(self) -> bool:
        return self._consistent_reads()

    async def current_revision(self) -> int:
        return await self.storage.current_revision()

    def compacted_revision(self) -> int:
        return self.storage.compacted_revision()

    async def compact(self, revision: int) -> None:
        await self.storage.compact(revision)

    # ------------------------------------------------------------- WATCH

    async def open_watch(self, opts: ListOptions, filt: Filter, deadline: float) -> WatchStart:
        """Register a watcher as SEMANTICS §2.1 says; the returned start is sent before live events."""
        if not self.ready:
            raise self._not_ready()
        rv_text = opts.resource_version
        sie = opts.send_initial_events
        register = partial(self._register, filt, deadline, opts)
        if sie:
            if rv_text == "":
                if not await self.wait_fresh():
                    raise errors.too_large_resource_version(await self.storage.current_revision(), self.rv,
                                                            retry_after_s=1)
            elif rv_text != "0":
                await self.wait_for_rv(int(rv_text))
            return register(initial=True, start_rv=self.rv, end_bookmark=opts.allow_watch_bookmarks)
        if rv_text in ("", "0") and sie is None:
            return register(initial=True, start_rv=self.rv)
        if rv_text == "":
            return register(initial=False, start_rv=await self.storage.current_revision())
        if rv_text == "0":
            return register(initial=False, start_rv=self.rv)
        start_rv = int(rv_text)
        compacted = self.storage.compacted_revision()
        if start_rv < compacted:  # events after the compacted revision itself are still known
            raise errors.Gone(f"too old resource version: {start_rv} ({compacted})")
        return register(initial=False, start_rv=start_rv)

    def _register(self, filt: Filter, deadline: float, opts: ListOptions, *, initial: bool, start_rv: int,
                  end_bookmark: bool = False) -> WatchStart:
        """Synchronous: the initial state, the window catch-up and live dispatch join without a gap."""
        if initial:
            entries = [e for e in (self.store.get(k) for k in self.store.keys_from(
                filt.key_prefix, _prefix_end(filt.key_prefix))) if e is not None and filt.matches(e)]
            catch_up: Sequence[WatchItem] = ()
            start_rv = self.rv
        else:
            entries = []
            if start_rv <= self.rv:
                window = self.ring.events_after(start_rv)  # 410 Gone when too old
                catch_up = [(ev, *seen) for ev in window if (seen := transition(filt, ev)) is not None]
            else:
                catch_up = ()
        hint = filt.index_hint(self.store.indexed_fields)
        # kube-apiserver's suggestedWatchChannelSize (about a second of history, capped by whether the
        # resource has an index and this watcher is triggered by it), with a floor of 100 rather than
        # 10: a Python writer drains a burst more slowly than Go's, and a channel of 10 closes healthy
        # watchers during bursts of large objects.
        upper = 100 if hint is not None else (1000 if self.store.indexed_fields else 100)
        capacity = min(max(math.ceil(self.ring.capacity / 75.0), MIN_WATCH_CHANNEL), upper)
        # Live events are those after the cache's rv now (or after a future rv asked for).
        watcher = Watcher(filt, max(start_rv, self.rv), capacity, opts.allow_watch_bookmarks, deadline, hint)
        self._watchers.add(watcher)
        if hint is not None:
            self._triggered.setdefault(hint, set()).add(watcher)
        else:
            self._watch_counts.add(WatchCounts.key(filt))
        self.metrics.registered_watchers.labels(group=self.group, version="", kind=self.kind).inc()
        return WatchStart(watcher, entries, catch_up, Bookmark(start_rv, initial_events_end=True)
                          if end_bookmark else None)

    def unregister(self, watcher: Watcher) -> None:
        if watcher in self._watchers:
            self._watchers.discard(watcher)
            if watcher.trigger is None:
                self._watch_counts.remove(WatchCounts.key(watcher.filter))
            else:
                group = self._triggered.get(watcher.trigger)
                if group is not None:
                    group.discard(watcher)
                    if not group:
                        del self._triggered[watcher.trigger]
            self.metrics.registered_watchers.labels(group=self.group, version="", kind=self.kind).dec()
        watcher.close()

    def _drop(self, watcher: Watcher) -> None:
        self.unregister(watcher)

    def _interested(self, ev: CacheEvent) -> Iterator[Watcher]:
        """Watchers that may care: untriggered ones, and those whose trigger value the event touches."""
        triggered = self._triggered
        for w in self._watchers:
            if w.trigger is None:
                yield w
        if triggered:
            seen: set[tuple[str, str]] = set()
            for e in (ev.entry, ev.prev):
                if e is None:
                    continue
                for fname in self.store.indexed_fields:
                    value = e.fields.get(fname)
                    if value is None or (fname, value) in seen:
                        continue
                    seen.add((fname, value))
                    yield from triggered.get((fname, value), ())

    async def _dispatch(self, ev: CacheEvent) -> None:
        """Hand the event to each interested watcher without waiting; slow ones share a time budget."""
        blocked: list[tuple[Watcher, WatchItem]] = []
        for w in list(self._interested(ev)):
            if w.closed or ev.revision <= w.min_revision:
                continue
            seen = transition(w.filter, ev)
            if seen is None:
                continue
            item = (ev, *seen)
            if not w.offer(item):
                blocked.append((w, item))
        if not blocked:
            return
        budget = self._budget.take()
        start = trio.current_time()
        for w, item in blocked:
            remaining = budget - (trio.current_time() - start)
            sent = False
            if remaining > 0:
                with trio.move_on_after(remaining):
                    try:
                        await w.send.send(item)
                        sent = True
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        sent = True
            if not sent:
                # Too slow: the client sees the stream end and resumes from its last rv.
                self.metrics.terminated_watchers.labels(**self._labels).inc()
                self._drop(w)
        self._budget.give_back(budget - (trio.current_time() - start))

    async def _bookmark_loop(self) -> None:
        """About once a second (jittered), send each due watcher a bookmark at the cache's rv."""
        while True:
            await trio.sleep(BOOKMARK_TICK_S * random.uniform(0.75, 1.25))
            if not self.ready:
                continue
            now = trio.current_time()
            for w in list(self._watchers):
                if w.bookmark_due(now) and self.rv >= w.min_revision:
                    w.offer(Bookmark(self.rv))  # dropped when full, as kube does
                    w.bookmark_sent(now)


@contextmanager
def _paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector around a relist's bulk decode (no await inside)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _prefix_end(prefix: str) -> str | None:
    """The first key after every key that starts with ``prefix``."""
    if not prefix:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)

