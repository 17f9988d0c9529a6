"""An in-process informer: the current objects of one resource, decoded on demand, with change handlers.

What the controllers (and next RBAC, APF, admission and CRDs) read instead of a storage watch. It
rides the resource's watch cache when it has one: a watcher of the cacher like any other, its
initial entries then its events, resumed from the last revision seen when the cacher closes the
watcher (a slow informer, a relist) and re-listed (a diff against what it holds) when that revision
is gone. A resource without a cache is listed and watched on storage. Either way the informer
holds what the source hands out (cache entries, or stored values) and decodes an object only when
a consumer asks for it; handlers run in the informer's task, one notification at a time, in order.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import orjson
import trio

from kapi import errors
from kapi.cacher.cache import Cacher
from kapi.cacher.store import CacheEvent, Entry
from kapi.cacher.watcher import Bookmark, Filter
from kapi.encoding import codec
from kapi.object.listopts import ListOptions
from kapi.registry.resources import Resource
from kapi.registry.store import Registry
from kapi.storage.base import KeyValue

log = logging.getLogger("kapi.registry.informer")
Obj = dict[str, Any]
Raw = Entry | KeyValue  # what the informer holds per object: a cache entry, or a stored value
RETRY_S = (0.05, 5.0)  # a source that is not ready or failed is tried again after this, doubling to the cap


class Item:
    """One object as the informer holds it: its identity at once, its decoded form on demand."""

    __slots__ = ("_informer", "raw", "key")

    def __init__(self, informer: Informer, raw: Raw) -> None:
        self._informer = informer
        self.raw = raw
        self.key = raw.key

    @property
    def namespace(self) -> str:
        return self._informer._names(self.raw)[0]

    @property
    def name(self) -> str:
        return self._informer._names(self.raw)[1]

    @property
    def resource_version(self) -> int:
        return _revision(self.raw)

    def object(self) -> Obj:
        """The object, decoded now (a fresh dict each call). Raises ``codec.CorruptObject`` (logged once)."""
        return self._informer._decode(self.raw)

    def metadata(self) -> Obj:
        """Its ``metadata`` alone (cheaper than ``object()`` for a stored value)."""
        return self._informer._decode_metadata(self.raw)

    def may_have(self, *names: str) -> bool:
        """False when the object certainly holds no key of these names, anywhere; True: decode to know.

        A check on the encoded bytes, so that a consumer interested in few objects (the garbage
        collector: those with owner references) need not decode the others.
        """
        if isinstance(self.raw, Entry):  # list-item JSON: a key is a quoted string before a colon
            data = self.raw.data
            return any(needle in data for needle in _json_keys(names))
        value = self.raw.value
        return any(needle in value for needle in _msgpack_keys(names))  # key strings stored verbatim


AddHandler = Callable[[Item], None]
UpdateHandler = Callable[[Item, Item], None]
DeleteHandler = Callable[[Item], None]


@dataclass(eq=False)
class Registration:
    """One consumer's handlers; ``Informer.remove_handler`` takes it back."""

    on_add: AddHandler | None = None
    on_update: UpdateHandler | None = None
    on_delete: DeleteHandler | None = None


@dataclass(frozen=True, slots=True)
class InformerStatistics:
    objects: int
    decoded: int  # objects decoded so far (handlers' and readers' asks)
    handler_errors: int
    synced: bool
    source: str  # "cache", "storage", or "" before the first start


class Informer:
    """The current objects of ``res`` in all namespaces, kept from its watch cache or storage."""

    def __init__(self, registry: Registry, res: Resource) -> None:
        self.registry = registry
        self.res = res
        self.prefix = registry.prefix(res, "")
        self._type = {"kind": res.kind, "apiVersion": res.group_version}
        self._state: dict[str, Raw] = {}
        self._registrations: list[Registration] = []
        self._on_add: tuple[AddHandler, ...] = ()
        self._on_update: tuple[UpdateHandler, ...] = ()
        self._on_delete: tuple[DeleteHandler, ...] = ()
        self._synced = trio.Event()
        self._scope: trio.CancelScope | None = None
        self._stopped = False
        self._source = ""
        self._cacher: Cacher | None = None  # the cache followed, while it is
        self._revision = 0  # of the last change of the cache's that reached the handlers
        self._decoded = 0
        self._handler_errors = 0

    # ------------------------------------------------------------ consumers

    def add_handler(self, on_add: AddHandler | None = None, on_update: UpdateHandler | None = None,
                    on_delete: DeleteHandler | None = None) -> Registration:
        """Register handlers; once synced, a late one is given an add for each object held, here and now."""
        reg = Registration(on_add, on_update, on_delete)
        self._registrations.append(reg)
        self._handlers()
        if self._synced.is_set() and on_add is not None:
            for raw in list(self._state.values()):
                self._call(on_add, Item(self, raw))
        return reg

    def remove_handler(self, reg: Registration) -> None:
        if reg in self._registrations:
            self._registrations.remove(reg)
            self._handlers()

    def _handlers(self) -> None:
        """The handlers by kind, as tuples: a notification loops over a snapshot, whatever a handler registers."""
        self._on_add = tuple(r.on_add for r in self._registrations if r.on_add is not None)
        self._on_update = tuple(r.on_update for r in self._registrations if r.on_update is not None)
        self._on_delete = tuple(r.on_delete for r in self._registrations if r.on_delete is not None)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Until the source is ready and its initial objects have gone to the handlers."""
        await self._synced.wait()

    def get(self, namespace: str, name: str) -> Obj | None:
        """The object, decoded; None when absent (or unreadable: it is logged once)."""
        raw = self._state.get(self.registry.key(self.res, namespace, name))
        if raw is None:
            return None
        try:
            return self._decode(raw)
        except codec.CorruptObject:
            return None

    def item(self, namespace: str, name: str) -> Item | None:
        raw = self._state.get(self.registry.key(self.res, namespace, name))
        return Item(self, raw) if raw is not None else None

    def items(self, namespace: str = "") -> Iterator[Item]:
        """The objects held (of one namespace, or all), in key order, not decoded."""
        prefix = self.registry.prefix(self.res, namespace) if namespace else self.prefix
        for key in sorted(k for k in self._state if k.startswith(prefix)):
            yield Item(self, self._state[key])

    def list(self, namespace: str = "") -> list[Obj]:
        """The objects (of one namespace, or all), decoded, in key order; unreadable ones left out."""
        out = []
        for item in self.items(namespace):
            try:
                out.append(item.object())
            except codec.CorruptObject:
                continue
        return out

    def caught_up_with(self, revision: int) -> bool:
        """Whether every change the followed watch cache holds up to ``revision`` has reached the handlers
        (true of an informer on storage, whose changes are not known before they arrive)."""
        cacher = self._cacher
        return cacher is None or self._revision >= min(revision, cacher.ring.newest_revision)

    def statistics(self) -> InformerStatistics:
        return InformerStatistics(len(self._state), self._decoded, self._handler_errors, self.has_synced,
                                  self._source)

    # -------------------------------------------------------------- running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the objects current until ``stop()`` or cancellation; ``started()`` at once."""
        with trio.CancelScope() as self._scope:
            task_status.started()
            if self._stopped:
                return
            retry = RETRY_S[0]
            while True:
                cacher = self.registry.cachers.get(self.res.cache_key)
                try:
                    if cacher is not None:
                        self._source = "cache"
                        await self._follow_cache(cacher)  # returns when the cacher is no longer the resource's
                        continue
                    self._source = "storage"
                    await self._follow_storage()
                except (errors.RevisionCompacted, errors.StorageUnavailable) as exc:
                    log.info("informer %s: %s; listing again", self.res.qualified, exc)
                except Exception:
                    # A bug or a value nobody foresaw must not end the informer: list again, with backoff.
                    log.exception("informer %s failed; listing again in %.2fs", self.res.qualified, retry)
                await trio.sleep(retry)
                retry = min(retry * 2, RETRY_S[1])

    def stop(self) -> None:
        """End ``run`` (its watcher is unregistered); the objects held stay readable."""
        self._stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def _follow_cache(self, cacher: Cacher) -> None:
        """Watch the cacher, resuming from the last revision seen, until it stops being the resource's."""
        rv: int | None = None  # None: take its current state (and diff it against what is held)
        retry = RETRY_S[0]
        filt = Filter(self.prefix, None, None)
        while self._serves(cacher):
            opts = ListOptions(resource_version="0" if rv is None else str(rv))
            try:
                start = await cacher.open_watch(opts, filt, math.inf)
            except errors.TooManyRequests:  # not ready (starting or relisting)
                await trio.sleep(retry)
                retry = min(retry * 2, RETRY_S[1])
                continue
            except errors.Gone:  # the revision left the cache's window: take the current state
                rv = None
                continue
            retry = RETRY_S[0]
            watcher = start.watcher
            self._cacher = cacher
            try:
                if rv is None:
                    self._replace(start.initial)
                    rv = watcher.min_revision
                for item in start.catch_up:
                    rv = self._revision = self._apply_cached(item, rv)
                self._revision = rv
                async for item in watcher.receive:
                    rv = self._revision = self._apply_cached(item, rv)
            finally:
                self._cacher = None
                cacher.unregister(watcher)
            # The cacher closed the watcher: too slow, or it relists (resume from ``rv``), or it stopped.

    def _serves(self, cacher: Cacher) -> bool:
        """Whether ``cacher`` is still the resource's (a removed resource's cache stops, ending its watchers)."""
        return self.registry.cachers.get(self.res.cache_key) is cacher

    def _apply_cached(self, item: Any, rv: int) -> int:
        if isinstance(item, Bookmark):
            return max(rv, item.revision)
        ev: CacheEvent = item[0]
        if ev.type == "DELETED":
            self._gone(ev.key, ev.entry)
        elif ev.entry is not None:
            self._put(ev.entry)
        return max(rv, ev.revision)

    async def _follow_storage(self) -> None:
        """List and watch storage (a resource without a watch cache)."""
        storage = self.registry.storage
        page = await storage.list(self.prefix)
        self._replace(page.items)
        revision = page.revision
        del page
        watched = (self.prefix, "")  # a watcher of the whole resource (APF's mutating estimate counts it)
        # Held while storage is the resource's route: its watch cache starting to serve ends it, and the
        # informer follows the cache from then on (its state diffed against what it holds: no event lost
        # or told twice); so does the resource leaving the table.
        route = functools.partial(self.registry.cachers.get, self.res.cache_key)
        async with storage.watch(self.prefix, revision) as events:
            self.registry.storage_watches.add(watched)
            try:
                with self.registry.storage_route(self.res, events, route):
                    while True:
                        try:
                            ev = await events.receive()
                        except (trio.EndOfChannel, trio.ClosedResourceError):
                            return  # storage ended it, or the route changed
                        if ev.type == "PROGRESS":
                            continue
                        if ev.value is None:
                            last = KeyValue(ev.key, ev.prev_value, ev.revision, ev.create_revision) \
                                if ev.prev_value is not None else None
                            self._gone(ev.key, last)
                        else:
                            self._put(KeyValue(ev.key, ev.value, ev.revision, ev.create_revision))
            finally:
                self.registry.storage_watches.remove(watched)

    # ------------------------------------------------------- state, handlers

    def _replace(self, raws: Iterable[Raw]) -> None:
        """A full state from the source: tell the handlers what changed against what is held."""
        new = {raw.key: raw for raw in raws}
        old, self._state = self._state, new
        if not old:  # the first list: every object is new
            if self._on_add:
                for raw in new.values():
                    self._notify_add(raw)
            self._synced.set()
            return
        for key, raw in new.items():
            was = old.get(key)
            if was is None:
                self._notify_add(raw)
            elif _revision(was) != _revision(raw):
                self._notify_update(was, raw)
        for key, was in old.items():
            if key not in new:
                self._notify_delete(was)
        self._synced.set()

    def _put(self, raw: Raw) -> None:
        was = self._state.get(raw.key)
        self._state[raw.key] = raw
        if was is None:
            self._notify_add(raw)
        else:
            self._notify_update(was, raw)

    def _gone(self, key: str, last: Raw | None) -> None:
        """The object at ``key`` went; ``last``: its last state at the deletion's revision, if known."""
        was = self._state.pop(key, None)
        if was is not None:
            self._notify_delete(last if last is not None else was)

    def _notify_add(self, raw: Raw) -> None:
        for handler in self._on_add:
            self._call(handler, Item(self, raw))

    def _notify_update(self, old: Raw, new: Raw) -> None:
        for handler in self._on_update:
            self._call(handler, Item(self, old), Item(self, new))

    def _notify_delete(self, raw: Raw) -> None:
        for handler in self._on_delete:
            self._call(handler, Item(self, raw))

    def _call(self, handler: Callable[..., None], *items: Item) -> None:
        try:
            handler(*items)
        except codec.CorruptObject:
            self._handler_errors += 1  # the object cannot be read: logged once where it was decoded
        except Exception:
            # One consumer's failure on one object must not stop the informer or the other consumers.
            self._handler_errors += 1
            log.exception("informer %s: handler failed on %s", self.res.qualified, items[-1].key)

    # --------------------------------------------------------------- decoding

    def _decode(self, raw: Raw) -> Obj:
        self._decoded += 1
        if isinstance(raw, Entry):
            obj: Obj = {**self._type, **orjson.loads(raw.data)}
            return obj
        try:
            return self.registry.decode(self.res, raw)
        except codec.CorruptObject as exc:
            self.registry.skip_corrupt(exc)
            raise

    def _decode_metadata(self, raw: Raw) -> Obj:
        self._decoded += 1
        if isinstance(raw, Entry):
            md: Obj = orjson.loads(raw.data)["metadata"]
            return md
        try:
            return dict(self.registry.decode_metadata(self.res, raw)["metadata"])
        except codec.CorruptObject as exc:
            self.registry.skip_corrupt(exc)
            raise

    def _names(self, raw: Raw) -> tuple[str, str]:
        if isinstance(raw, Entry):
            return raw.namespace, raw.name
        rest = raw.key[len(self.prefix):]
        if self.res.namespaced:
            namespace, _, name = rest.partition("/")
            return namespace, name
        return "", rest


@functools.cache
def _json_keys(names: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(b'"%s":' % n.encode() for n in names)


@functools.cache
def _msgpack_keys(names: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(n.encode() for n in names)


def _revision(raw: Raw) -> int:
    return raw.rv if isinstance(raw, Entry) else raw.revision


class Informers:
    """One shared informer per resource for everything in a server that reads state in process
    (RBAC, the Node authorizer, service-account tokens, controllers): ask with ``informer()``
    before ``run``, which starts them all and returns (``started()``) once every one has synced."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._informers: dict[tuple[str, str], Informer] = {}
        self._nursery: trio.Nursery | None = None

    def informer(self, group: str, resource: str) -> Informer:
        """The shared informer of ``group``/``resource`` (its preferred version); one asked for after
        ``run`` started is started at once (it has synced when ``wait_for_sync`` returns)."""
        key = (group, resource)
        inf = self._informers.get(key)
        if inf is None:
            res = next((r for r in self.registry.table.resources if r.group == group and r.resource == resource),
                       None)  # the first version served is the preferred one
            if res is None:
                raise KeyError(f"no resource {resource}.{group} is served")
            inf = self._informers[key] = Informer(self.registry, res)
            if self._nursery is not None:
                self._nursery.start_soon(inf.run)
        return inf

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for inf in list(self._informers.values()):
                await nursery.start(inf.run)
            self._nursery = nursery
            for inf in list(self._informers.values()):
                await inf.wait_for_sync()
            task_status.started()

    async def wait_caught_up(self, revision: int) -> None:
        """Until every informer following a watch cache has handed its changes up to ``revision`` to its
        handlers (the caches are expected to hold it: ``Cacher.wait_for_rv``). Bound it with a cancel scope."""
        while not all(inf.caught_up_with(revision) for inf in list(self._informers.values())):
            await trio.sleep(0.001)
