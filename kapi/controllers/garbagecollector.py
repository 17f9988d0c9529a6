"""The garbage collector: owner references, the ``orphan`` and ``foregroundDeletion`` finalizers,
and background deletion of dependents whose owners are gone (kube-controller-manager's collector, in-process).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import trio

from kapi import errors
from kapi.controllers.writes import Writes
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informer, Item
from kapi.registry.resources import Resource
from kapi.registry.store import Registry, WriteOptions

log = logging.getLogger("kapi.controllers")
Obj = dict[str, Any]

DependentKey = tuple[str, str, str, str]  # (group, resource, namespace, name)
Work = tuple[str, DependentKey]
# A failed item is tried again after a delay that doubles up to the last (kube's workqueue rate limiter).
RETRY_S = (0.05, 30.0)


class GarbageCollector:
    """Owner references: the ``orphan`` and ``foregroundDeletion`` finalizers, and background deletion.

    An index from owner uid to dependents is kept up to date from an informer of every
    resource, reading metadata alone (as kube's collector uses metadata-only informers); an
    object that appears is decoded only if it may have owner references or be being deleted.
    When an owner goes, dependents left without a live owner are deleted;
    an owner with ``orphan`` has the references to it removed from its dependents;
    an owner with ``foregroundDeletion`` waits until its dependents are gone.
    Its writes are kube's collector's (``generic-garbage-collector``): admitted and audited as its
    requests; a refused one is tried again with backoff.
    """

    def __init__(self, registry: Registry, writes: Writes | None = None) -> None:
        self.registry = registry
        self.writer = (writes or Writes(registry)).controller("generic-garbage-collector")
        self.dependents: dict[str, set[DependentKey]] = {}
        self.owners: dict[DependentKey, tuple[dict[str, Any], ...]] = {}
        self._by_key: dict[tuple[str, str], Resource] = {}
        self._informers: dict[tuple[str, str], Informer] = {}
        self._changed = trio.Event()
        self._work: set[Work] = set()
        self._retry_s: dict[Work, float] = {}  # the next delay of an item that failed
        self._waiting_foreground: set[DependentKey] = set()  # owners waiting for their dependents

    def _resources(self) -> dict[tuple[str, str], Resource]:
        out = {}
        for res in self.registry.resources():
            if res.storage_of[1] or res.virtual:
                continue  # a view of another resource's objects, or nothing stored
            out[(res.group, res.resource)] = res
        return out

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow every resource of the table, as it changes; ``started()`` once the owner index is built."""
        table_changed = trio.Event()

        def on_change(_change: str, _res: Resource) -> None:
            table_changed.set()

        unsubscribe = self.registry.table.subscribe(on_change)
        try:
            async with trio.open_nursery() as nursery:
                await self._follow_table(nursery)
                for informer in list(self._informers.values()):
                    await informer.wait_for_sync()
                nursery.start_soon(self._worker, nursery)
                task_status.started()
                while True:
                    await table_changed.wait()
                    table_changed = trio.Event()
                    await self._follow_table(nursery)
        finally:
            unsubscribe()

    async def _follow_table(self, nursery: trio.Nursery) -> None:
        """An informer per stored resource of the table: started for one added, stopped for one removed."""
        wanted = self._resources()
        for key, informer in list(self._informers.items()):
            if wanted.get(key) is not informer.res:
                informer.stop()
                del self._informers[key]
        self._by_key = dict(wanted)
        for key, res in wanted.items():
            if key not in self._informers:
                informer = Informer(self.registry, res)
                informer.add_handler(partial(self._added, res), partial(self._updated, res),
                                     partial(self._deleted, res))
                await nursery.start(informer.run)
                self._informers[key] = informer

    def _added(self, res: Resource, item: Item) -> None:
        # Only dependents (with owner references) and objects being deleted matter when they
        # appear; an owner is looked up when it goes. The others need not be decoded at all.
        if item.may_have("ownerReferences", "deletionTimestamp"):
            self._observe(res, "ADDED", {"metadata": item.metadata()})

    def _updated(self, res: Resource, old: Item, new: Item) -> None:
        self._observe(res, "MODIFIED", {"metadata": new.metadata()})

    def _deleted(self, res: Resource, item: Item) -> None:
        self._observe(res, "DELETED", {"metadata": item.metadata()})

    def _observe(self, res: Resource, kind: str, obj: Obj) -> None:
        md = obj.get("metadata", {})
        key = (res.group, res.resource, md.get("namespace", ""), md.get("name", ""))
        for ref in self.owners.pop(key, ()):
            deps = self.dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[ref.get("uid", "")]
        uid = md.get("uid", "")
        if kind == "DELETED":
            for dep in list(self.dependents.get(uid, ())):
                self._work.add(("orphaned?", dep))
            self._work.add(("owner-gone", key))
        else:
            refs = tuple(r for r in md.get("ownerReferences") or () if isinstance(r, dict) and r.get("uid"))
            if refs:
                self.owners[key] = refs
                for ref in refs:
                    self.dependents.setdefault(ref["uid"], set()).add(key)
            finalizers = md.get("finalizers") or ()
            if md.get("deletionTimestamp") and ("orphan" in finalizers or "foregroundDeletion" in finalizers):
                self._work.add(("finalize", key))
        self._changed.set()

    async def _worker(self, nursery: trio.Nursery) -> None:
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            work, self._work = self._work, set()
            for item in sorted(work):
                what, key = item
                try:
                    await self._process(what, key)
                except errors.StatusError as err:  # refused (admission, a webhook down): again later
                    delay = self._failed(nursery, item)
                    log.info("garbage collector: %s %s: %s; retrying in %.2fs", what, key, err.message, delay)
                except Exception:  # one object that cannot be processed must not stop the others
                    delay = self._failed(nursery, item)
                    log.exception("garbage collector: %s %s failed; retrying in %.2fs", what, key, delay)
                else:
                    self._retry_s.pop(item, None)
            await trio.sleep(0)

    def _failed(self, nursery: trio.Nursery, item: Work) -> float:
        """Queue ``item`` again after its backoff; returns the delay."""
        delay = self._retry_s.get(item, RETRY_S[0])
        self._retry_s[item] = min(delay * 2, RETRY_S[1])
        nursery.start_soon(self._requeue, item, delay)
        return delay

    async def _requeue(self, item: Work, delay: float) -> None:
        await trio.sleep(delay)
        self._work.add(item)
        self._changed.set()

    async def _process(self, what: str, key: DependentKey) -> None:
        if what == "orphaned?":
            await self._delete_if_orphaned(key)
        elif what == "finalize":
            await self._finalize(key)
        elif what == "owner-gone":
            # An object went: the foreground owners waiting on it may be able to finish.
            for owner in sorted(self._waiting_foreground):
                await self._finalize(owner)

    async def _get(self, key: DependentKey) -> Obj | None:
        res = self._by_key.get((key[0], key[1]))
        if res is None:
            return None
        try:
            return await self.registry.get(res, key[2], key[3])
        except errors.NotFound:
            return None

    async def _owner_alive(self, namespace: str, ref: dict[str, Any]) -> bool:
        group = ref.get("apiVersion", "").rpartition("/")[0] if "/" in ref.get("apiVersion", "") else ""
        res = self.registry.table.by_kind(group, ref.get("kind", ""))
        if res is None:
            return True  # an owner kapi does not serve: never collect on its account
        try:
            owner = await self.registry.get(res, namespace if res.namespaced else "", ref.get("name", ""))
        except errors.NotFound:
            return False
        return bool(owner["metadata"].get("uid") == ref.get("uid"))

    async def _delete_if_orphaned(self, key: DependentKey) -> None:
        obj = await self._get(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = [r for r in obj["metadata"].get("ownerReferences") or () if isinstance(r, dict)]
        for ref in refs:
            if await self._owner_alive(key[2], ref):
                return
        res = self._by_key[(key[0], key[1])]
        uid = obj["metadata"].get("uid", "")
        try:
            await self.writer.delete(res, key[2], key[3], DeleteOptions(precondition_uid=uid,
                                                                        propagation_policy="Background"))
        except (errors.NotFound, errors.Conflict):
            pass

    async def _finalize(self, key: DependentKey) -> None:
        owner = await self._get(key)
        if owner is None:
            self._waiting_foreground.discard(key)
            return
        md = owner["metadata"]
        finalizers = md.get("finalizers") or []
        uid = md.get("uid", "")
        res = self._by_key[(key[0], key[1])]
        deps = sorted(self.dependents.get(uid, ()))
        if "orphan" in finalizers:
            for dep in deps:
                await self._drop_owner_reference(dep, uid)
            await self._remove_finalizer(res, key, "orphan")
            return
        if "foregroundDeletion" in finalizers:
            if deps:
                self._waiting_foreground.add(key)
                for dep in deps:
                    dres = self._by_key.get((dep[0], dep[1]))
                    if dres is None:
                        continue
                    try:
                        await self.writer.delete(dres, dep[2], dep[3], DeleteOptions(propagation_policy="Foreground"))
                    except (errors.NotFound, errors.Conflict):
                        pass
                return
            self._waiting_foreground.discard(key)
            await self._remove_finalizer(res, key, "foregroundDeletion")

    async def _drop_owner_reference(self, dep: DependentKey, owner_uid: str) -> None:
        res = self._by_key.get((dep[0], dep[1]))
        if res is None:
            return

        def drop(obj: Obj) -> Obj:
            refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") != owner_uid]
            if refs:
                obj["metadata"]["ownerReferences"] = refs
            else:
                obj["metadata"].pop("ownerReferences", None)
            return obj

        try:
            await self.writer.guaranteed_update(res, dep[2], dep[3], drop, WriteOptions())
        except errors.NotFound:
            pass

    async def _remove_finalizer(self, res: Resource, key: DependentKey, finalizer: str) -> None:
        def drop(obj: Obj) -> Obj:
            obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
            if not obj["metadata"]["finalizers"]:
                del obj["metadata"]["finalizers"]
            return obj

        try:
            await self.writer.guaranteed_update(res, key[2], key[3], drop, WriteOptions())
        except errors.NotFound:
            pass
