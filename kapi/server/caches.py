"""The watch caches of the served resources, started and stopped in the server's nursery as the table changes."""

from __future__ import annotations

from functools import partial

import trio

from kapi.config import Config
from kapi.registry.resources import Resource
from kapi.registry.store import Registry
from kapi.server.supervise import supervise

__all__ = ["WatchCaches", "cache_settings"]


def cache_settings(config: Config, res: Resource) -> tuple[int, tuple[str, ...]] | None:
    """The watch cache size and indexed fields the flags give ``res``, or None when it has no cache."""
    if not res.cacheable or res.storage_of[1]:
        return None
    names = (res.resource, res.qualified)
    size = next((config.watch_cache_sizes[n] for n in names if n in config.watch_cache_sizes),
                config.default_watch_cache_size)
    if size <= 0:
        return None  # kube-apiserver: a size of 0 disables the cache of that resource
    indexes = next((config.watch_cache_indexes[n] for n in names if n in config.watch_cache_indexes), ())
    return size, tuple(indexes)


class WatchCaches:
    """One watch cache per cacheable resource of the table, each a supervised task of the server's nursery.

    ``follow`` starts the caches of the resources served at start-up, then follows the table: a
    resource added while serving gets its cache (the registry uses it once its first list is
    loaded: LISTs go to storage until then, as kube-apiserver delegates them to etcd, and WATCHes
    wait for it), and a removed one's cache is stopped, which ends its watches. The registry ends
    the storage-backed watches of a removed resource, and those of a resource whose cache starts
    serving (``Registry.serve_cache``).
    """

    def __init__(self, config: Config, registry: Registry) -> None:
        self._config = config
        self._registry = registry
        self._running: dict[tuple[str, str], tuple[Resource, trio.CancelScope]] = {}
        self._changed = trio.Event()

    async def follow(self, nursery: trio.Nursery, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                     ) -> None:
        """Run the table's caches in ``nursery``; ``started()`` once those of start-up are ready."""
        unsubscribe = self._registry.table.subscribe(self._table_changed)
        try:
            await self._reconcile(nursery)
            task_status.started()
            while True:
                await self._changed.wait()
                self._changed = trio.Event()  # changes made while reconciling wake the next round
                await self._reconcile(nursery)
        finally:
            unsubscribe()

    def _table_changed(self, change: str, res: Resource) -> None:
        if change == "added" and cache_settings(self._config, res) is not None:
            self._registry.expect_cache(res.cache_key)  # now, so that a watch opened at once waits for it
        self._changed.set()

    def _wanted(self) -> dict[tuple[str, str], tuple[Resource, int, tuple[str, ...]]]:
        wanted: dict[tuple[str, str], tuple[Resource, int, tuple[str, ...]]] = {}
        for res in self._registry.table.resources:
            settings = cache_settings(self._config, res)
            if settings is not None:
                wanted.setdefault(res.cache_key, (res, *settings))  # one cache per storage prefix and converted version
        return wanted

    async def _reconcile(self, nursery: trio.Nursery) -> None:
        wanted = self._wanted()
        for key, (res, scope) in list(self._running.items()):
            if key not in wanted or wanted[key][0] is not res:
                self._stop(key)
        for key, (res, size, indexes) in wanted.items():
            if key not in self._running:
                await nursery.start(partial(self._run, res, size, indexes))
        # A cache expected for a resource gone again before its cache started: nothing to wait for.
        self._registry.settle_caches(*(self._registry.caches_coming() - set(wanted)))

    def _stop(self, key: tuple[str, str]) -> None:
        _, scope = self._running.pop(key)
        self._registry.cachers.pop(key, None)  # LIST and WATCH stop using it now
        scope.cancel()  # its run ends, and with it every watcher it serves

    async def _run(self, res: Resource, size: int, indexes: tuple[str, ...], *,
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        key = res.cache_key
        cacher = self._registry.make_cacher(res, capacity=size, indexed_fields=indexes)
        # Not used before its first list is loaded: LISTs go to storage meanwhile (no 429 from a cold
        # cache) and WATCHes wait for it.
        self._registry.cachers.pop(key, None)
        self._registry.expect_cache(key)
        with trio.CancelScope() as scope:
            self._running[key] = (res, scope)
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(partial(supervise, f"watch cache of {cacher.resource}", cacher.run,
                                                restart=True))
                    self._registry.serve_cache(key, cacher)
                    task_status.started()
            finally:
                if self._registry.cachers.get(key) is cacher:
                    del self._registry.cachers[key]
                if self._running.get(key, (None, None))[1] is scope:
                    del self._running[key]
