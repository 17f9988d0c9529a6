"""Informers: a reflector filling an indexed store, and handlers told of every change.

Each handler registration has its own unbounded queue and task (client-go's
processorListener): a slow handler delays only itself. Notifications follow the
store: an add for an object the store did not have, an update (old, new) for
one it had, a delete (with the last state the store held) for one it loses. A
relist compares the new list with the store, so objects deleted while the watch
was down are reported deleted; updates are delivered for every object still
there, as client-go does. Handlers may be plain functions or coroutines.

    async with trio.open_nursery() as nursery:
        factory = SharedInformerFactory(client)
        pods = factory.informer(PODS)
        pods.add_handler(on_add=print)
        factory.start(nursery)
        await factory.wait_for_sync()
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from kapi.client.api import Client, Resource
from kapi.client.backoff import Backoff
from kapi.client.objects import key as object_key
from kapi.client.reflector import Reflector
from kapi.client.store import IndexFunc, Store

Obj = dict[str, Any]
Handler = Callable[..., Awaitable[None] | None]

_SYNCED = "synced"  # the marker a listener sees after its initial adds


@dataclass(eq=False)
class Registration:
    """One consumer's handlers; ``await reg.wait_for_sync()`` returns once its initial adds were handled."""

    on_add: Handler | None = None
    on_update: Handler | None = None
    on_delete: Handler | None = None
    resync_s: float = 0.0
    _send: trio.MemorySendChannel[tuple[str, Any]] = field(init=False, repr=False)
    _receive: trio.MemoryReceiveChannel[tuple[str, Any]] = field(init=False, repr=False)
    _synced: trio.Event = field(default_factory=trio.Event, repr=False)

    def __post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel(math.inf)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    def _notify(self, what: str, payload: Any) -> None:
        self._send.send_nowait((what, payload))

    async def _run(self) -> None:
        async for what, payload in self._receive:
            if what == _SYNCED:
                self._synced.set()
                continue
            handler = {"add": self.on_add, "update": self.on_update, "delete": self.on_delete}[what]
            if handler is None:
                continue
            result = handler(*payload) if what == "update" else handler(payload)
            if inspect.isawaitable(result):
                await result


class Informer:
    """A store of one resource (optionally one namespace, selected by labels/fields) kept current."""

    def __init__(self, client: Client, res: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None, resync_s: float = 0.0,
                 watch_list: bool = True, page_size: int = 500, initial_list_rv: str = "0",
                 backoff: Backoff | None = None) -> None:
        self.res = res
        self.store = Store(indexers)
        self.resync_s = resync_s
        self.reflector = Reflector(client, res, self, namespace=namespace, label_selector=label_selector,
                                   field_selector=field_selector, watch_list=watch_list, page_size=page_size,
                                   initial_list_rv=initial_list_rv, backoff=backoff)
        self._registrations: list[Registration] = []
        self._nursery: trio.Nursery | None = None
        self._resyncing = False
        self._synced = trio.Event()

    # ------------------------------------------------------------------ consumers

    def add_handler(self, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None, *, resync_s: float | None = None) -> Registration:
        """Register handlers; if the informer has synced already, they get an add per object held."""
        reg = Registration(on_add, on_update, on_delete, self.resync_s if resync_s is None else resync_s)
        self._registrations.append(reg)
        if self._synced.is_set():
            for obj in self.store.list():
                reg._notify("add", obj)
            reg._notify(_SYNCED, None)
        if self._nursery is not None:
            self._nursery.start_soon(reg._run)
            self._start_resync()
        return reg

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Until the store holds a full list (the handlers may still be working through it)."""
        await self._synced.wait()

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen (None before the first sync or after a 410)."""
        return self.reflector.resource_version

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Run until cancelled: the reflector, the handlers' tasks and resync."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for reg in self._registrations:
                    nursery.start_soon(reg._run)
                self._start_resync()
                await self.reflector.run()
            finally:
                self._nursery = None
                self._resyncing = False

    def _start_resync(self) -> None:
        """Run the resync loop once some registration asks for resyncs."""
        if self._nursery is not None and not self._resyncing and any(r.resync_s > 0 for r in self._registrations):
            self._resyncing = True
            self._nursery.start_soon(self._resync_loop)

    async def _resync_loop(self) -> None:
        """Every registration with a resync period gets update(obj, obj) for every object that often."""
        due: dict[int, float] = {}
        while True:
            now = trio.current_time()
            periods = [r.resync_s for r in self._registrations if r.resync_s > 0]
            for reg in self._registrations:
                if reg.resync_s <= 0 or not self._synced.is_set():
                    continue
                when = due.setdefault(id(reg), now + reg.resync_s)
                if now >= when:
                    for obj in self.store.list():
                        reg._notify("update", (obj, obj))
                    due[id(reg)] = now + reg.resync_s
            await trio.sleep(min(periods) / 4)

    # ------------------------------------------------------------------ the reflector's sink

    def replace(self, objs: Iterable[Obj], resource_version: str) -> None:
        added, updated, deleted = self.store.replace(objs)
        for reg in self._registrations:
            for obj in deleted:
                reg._notify("delete", obj)
            for obj in added:
                reg._notify("add", obj)
            for pair in updated:
                reg._notify("update", pair)
            if not self._synced.is_set():
                reg._notify(_SYNCED, None)
        self._synced.set()

    def apply(self, event_type: str, obj: Obj) -> None:
        if event_type == "DELETED":
            old = self.store.delete(object_key(obj))
            if old is not None:  # a delete for an object never seen is not reported
                self._tell("delete", obj)
            return
        old = self.store.upsert(obj)
        if old is None:
            self._tell("add", obj)
        else:
            self._tell("update", (old, obj))

    def _tell(self, what: str, payload: Any) -> None:
        for reg in self._registrations:
            reg._notify(what, payload)


class SharedInformerFactory:
    """One informer per (resource, namespace, selectors), shared by every consumer that asks for it."""

    def __init__(self, client: Client, *, namespace: str | None = None, resync_s: float = 0.0,
                 watch_list: bool = True, page_size: int = 500) -> None:
        self.client = client
        self.namespace = namespace
        self.resync_s = resync_s
        self.watch_list = watch_list
        self.page_size = page_size
        self._informers: dict[tuple[Any, ...], Informer] = {}
        self._started: set[int] = set()
        self._nursery: trio.Nursery | None = None

    def informer(self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, indexers: Mapping[str, IndexFunc] | None = None) -> Informer:
        """The shared informer for these arguments (made on first use; started at once if the factory runs)."""
        ns = namespace if namespace is not None else self.namespace
        k = (res, ns, label_selector, field_selector)
        inf = self._informers.get(k)
        if inf is None:
            inf = Informer(self.client, res, namespace=ns, label_selector=label_selector,
                           field_selector=field_selector, resync_s=self.resync_s, watch_list=self.watch_list,
                           page_size=self.page_size)
            self._informers[k] = inf
        if indexers:
            missing = {n: f for n, f in indexers.items() if not inf.store.has_index(n)}
            inf.store.add_indexers(missing)
        if self._nursery is not None:
            self._start(inf)
        return inf

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self, nursery: trio.Nursery) -> None:
        """Run every informer asked for so far (and every later one) in ``nursery``."""
        self._nursery = nursery
        for inf in self._informers.values():
            self._start(inf)

    def _start(self, inf: Informer) -> None:
        if id(inf) not in self._started:
            self._started.add(id(inf))
            assert self._nursery is not None
            self._nursery.start_soon(inf.run)

    async def wait_for_sync(self) -> None:
        """Until every informer asked for so far has synced."""
        for inf in list(self._informers.values()):
            await inf.wait_for_sync()
