"""The reflector: keeps a sink in step with the server by LIST+WATCH, as client-go's does.

Sync first: a WatchList (``sendInitialEvents=true``: the current objects come as
ADDED events up to the ``k8s.io/initial-events-end`` bookmark, and the same
stream goes on as the live watch) or, when the server does not offer it (it
refuses the request), a LIST — paginated or in one piece — and then a WATCH from
the list's resourceVersion. Bookmarks keep the resourceVersion fresh, so a
dropped watch resumes where it stopped; 410 Gone (the server no longer keeps
that history) means a relist. Errors wait a jittered exponential backoff; 429
waits what ``Retry-After`` says.
"""

from __future__ import annotations

import gc
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import trio

from kapi.client.api import ApiError, Client, Resource, WatchEvent
from kapi.client.backoff import Backoff
from kapi.client.objects import key as object_key

Obj = dict[str, Any]
log = logging.getLogger("kapi.client")

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Statuses with which a server refuses a WatchList request it does not support
# (older servers reject resourceVersionMatch on a watch as Invalid).
_WATCH_LIST_REFUSED = {400, 403, 404, 405, 406, 415, 422}
_SHORT_WATCH_S = 1.0  # a watch that ends this fast with no event is a failure (client-go's "very short watch")


_bulk_loads = 0  # syncs in progress in this process
_collector_was_enabled = False


@contextmanager
def _bulk_load() -> Iterator[None]:
    """The cyclic garbage collector paused while any reflector decodes a full sync.

    A sync allocates hundreds of containers per object, all kept and none cyclic;
    the collector's passes over them made a 100,000-pod sync about five times
    slower. Paused from the first sync to start until the last one ends (and
    never left paused by an error or a cancellation).
    """
    global _bulk_loads, _collector_was_enabled
    if _bulk_loads == 0:
        _collector_was_enabled = gc.isenabled()
        gc.disable()
    _bulk_loads += 1
    try:
        yield
    finally:
        _bulk_loads -= 1
        if _bulk_loads == 0 and _collector_was_enabled:
            gc.enable()


class Sink(Protocol):
    """Where a reflector delivers what it learns."""

    def replace(self, objs: Iterable[Obj], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: Obj) -> None: ...


@dataclass(slots=True)
class ReflectorStats:
    """What a reflector has done, for metrics and tests."""

    lists: int = 0  # syncs by LIST (each may be several pages)
    pages: int = 0
    watch_lists: int = 0  # syncs by WatchList
    watches: int = 0  # watch streams opened (a WatchList's live part not counted again)
    events: int = 0
    gone: int = 0  # 410s that forced a relist
    errors: int = 0
    throttled: int = 0  # 429s
    fell_back: bool = False  # the server refused WatchList: LIST+WATCH from then on


class Reflector:
    """LIST/WATCH one resource into a sink, forever (``await reflector.run()`` until cancelled)."""

    def __init__(self, client: Client, res: Resource, sink: Sink, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 watch_list: bool = True, page_size: int = 500, initial_list_rv: str = "0",
                 backoff: Backoff | None = None, min_watch_timeout_s: float = 300.0,
                 rand: Callable[[], float] = random.random) -> None:
        self.client = client
        self.res = res
        self.sink = sink
        self.namespace = namespace
        self.selectors = {"label_selector": label_selector, "field_selector": field_selector}
        self.watch_list = watch_list
        self.page_size = page_size
        self.backoff = backoff or Backoff(rand=rand)
        self.min_watch_timeout_s = min_watch_timeout_s
        self._rand = rand
        self.resource_version: str | None = None  # None: a full sync is needed
        self._list_rv = initial_list_rv  # the rv the next LIST asks for (client-go's relistResourceVersion)
        self.stats = ReflectorStats()

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        while True:
            try:
                if self.resource_version is None and self.watch_list:
                    await self._sync_by_watch_list()
                    continue
                if self.resource_version is None:
                    await self._sync_by_list()
                await self._watch()
            except ApiError as exc:
                await self._after_api_error(exc)
            except (httpx.TransportError, httpx.DecodingError, trio.BrokenResourceError) as exc:
                self.stats.errors += 1
                await self._wait(f"{self.res.plural}: {type(exc).__name__}: {exc}")

    async def _after_api_error(self, exc: ApiError) -> None:
        if exc.gone:
            # The history is gone: relist at once, from the latest state (client-go: rv "").
            self.stats.gone += 1
            self.resource_version = None
            self._list_rv = ""
            return
        if exc.code == 429:
            self.stats.throttled += 1
            delay = exc.retry_after_s if exc.retry_after_s is not None else self.backoff.next_delay(trio.current_time())
            # A little jitter on top, so that clients told the same Retry-After do not return together.
            await trio.sleep(delay * (1 + 0.1 * self._rand()))
            return
        self.stats.errors += 1
        await self._wait(f"{self.res.plural}: {exc}")

    async def _wait(self, why: str) -> None:
        delay = self.backoff.next_delay(trio.current_time())
        log.info("%s; retrying in %.1f s", why, delay)
        await trio.sleep(delay)

    def _watch_timeout_s(self) -> int:
        """Each watch asks for a timeout in [min, 2·min): the server ends them at spread-out times."""
        return int(self.min_watch_timeout_s * (1 + self._rand()))

    # ------------------------------------------------------------------ sync

    async def _sync_by_watch_list(self) -> None:
        """One WatchList: the initial events into a fresh state, replaced at the end bookmark, then live."""
        options = dict(self.selectors, send_initial_events=True, allow_watch_bookmarks=True,
                       resource_version_match="NotOlderThan", timeout_seconds=self._watch_timeout_s())
        initial: dict[str, Obj] = {}
        synced = False
        try:
            async with self.client.watch(self.res, self.namespace, **options) as events:
                self.stats.watch_lists += 1
                with _bulk_load():
                    async for ev in events:
                        if ev.type == "BOOKMARK":
                            md = ev.object.get("metadata") or {}
                            if (md.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                                self.resource_version = str(md.get("resourceVersion", ""))
                                self.sink.replace(initial.values(), self.resource_version)
                                self.backoff.reset()
                                synced = True
                                break
                        elif ev.type == "DELETED":
                            initial.pop(object_key(ev.object), None)
                        else:
                            initial[object_key(ev.object)] = ev.object
                initial.clear()
                async for ev in events:  # the same stream, live
                    self._handle(ev)
        except ApiError as exc:
            if exc.code in _WATCH_LIST_REFUSED and not synced:
                log.info("%s: the server refused WatchList (%s); using LIST+WATCH", self.res.plural, exc)
                self.watch_list = False
                self.stats.fell_back = True
                return
            raise
        if not synced:
            self.stats.errors += 1
            await self._wait(f"{self.res.plural}: the WatchList ended before its initial events did")

    async def _sync_by_list(self) -> None:
        """A LIST (in pages of ``page_size``, or whole when it is 0) replacing the sink's state."""
        options: dict[str, Any] = dict(self.selectors, resource_version=self._list_rv)
        if self._list_rv not in ("", "0"):
            options["resource_version_match"] = "NotOlderThan"
        items: list[Obj] = []
        rv = ""
        with _bulk_load():
            if self.page_size:
                async for page in self.client.list_pages(self.res, self.namespace, limit=self.page_size,
                                                         **options):
                    self.stats.pages += 1
                    items.extend(page.get("items") or [])
                    rv = str((page.get("metadata") or {}).get("resourceVersion", ""))
            else:
                page = await self.client.list(self.res, self.namespace, **options)
                self.stats.pages += 1
                items = page.get("items") or []
                rv = str((page.get("metadata") or {}).get("resourceVersion", ""))
            self.stats.lists += 1
            self.resource_version = rv
            self._list_rv = rv
            self.sink.replace(items, rv)

    # ------------------------------------------------------------------ watch

    async def _watch(self) -> None:
        """One WATCH from the current resourceVersion until the server ends it."""
        assert self.resource_version is not None
        options = dict(self.selectors, resource_version=self.resource_version, allow_watch_bookmarks=True,
                       timeout_seconds=self._watch_timeout_s())
        started = trio.current_time()
        seen = 0
        async with self.client.watch(self.res, self.namespace, **options) as events:
            self.stats.watches += 1
            async for ev in events:
                seen += 1
                self._handle(ev)
        if seen == 0 and trio.current_time() - started < _SHORT_WATCH_S:
            self.stats.errors += 1
            await self._wait(f"{self.res.plural}: very short watch")
        elif seen:
            self.backoff.reset()

    def _handle(self, ev: WatchEvent) -> None:
        self.stats.events += 1
        rv = (ev.object.get("metadata") or {}).get("resourceVersion")
        if ev.type != "BOOKMARK":
            self.sink.apply(ev.type, ev.object)
        if rv:
            self.resource_version = str(rv)
            self._list_rv = self.resource_version
