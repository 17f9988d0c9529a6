"""The ResourceQuota controller (kube's pkg/controller/resourcequota): each quota's ``status`` kept current.

A quota's ``status.hard`` is its ``spec.hard``, and ``status.used`` what the namespace's objects use
of each of those resources, measured by the evaluators quota admission uses
(``kapi.admission.quota``), in the quota's scopes. A quota is synced when it is created or its
spec changes, when an object it may count goes (or a pod ends: a terminal phase, a service's
type, a claim's size: its usage changes), and every ``resync_s`` (kube's
--resource-quota-sync-period, 5 minutes), which also gives back what admission charged for writes
that then failed. The status is written only when it changes, with the quota's resourceVersion
(a conflict with admission's own charge is synced again).

The objects are read from the shared informers: pods, services, claims and the legacy counted
resources from the start, any other ``count/<resource>.<group>`` a quota names from the first sync
of that quota on (an informer started for it). A quota counting a resource not served yet (a CRD
to come) is synced again every 30 s until it is.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from kapi import errors
from kapi.admission.plugin import Objects
from kapi.admission.quota.evaluators import LEGACY_COUNT_NAMES, Evaluator, Evaluators, scope_selectors
from kapi.admission.quota.resources import ResourceList, equals, mask, parse_list, render
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.registry.informer import Informer, Informers, Item, Registration
from kapi.registry.store import Registry, WriteOptions

log = logging.getLogger("kapi.controllers")
Obj = dict[str, Any]
RESYNC_S = 300.0
DISCOVERY_S = 30.0  # quotas counting a resource not served yet look again this often (kube's discovery resync)
RETRY_S = 1.0
_MONITORED = (("", "pods"), ("", "services"), ("", "persistentvolumeclaims"), *LEGACY_COUNT_NAMES)


class ResourceQuotaController:
    """Keeps quotas' status (see the module docstring)."""

    def __init__(self, registry: Registry, informers: Informers, *, resync_s: float = RESYNC_S,
                 writes: Writes | None = None) -> None:
        self.registry = registry
        self.writer = (writes or Writes(registry)).controller("resourcequota-controller")
        self.informers = informers
        self.resync_s = resync_s
        res = registry.table.get("", "v1", "resourcequotas")
        assert res is not None
        self.res = res
        self.quotas = informers.informer("", "resourcequotas")
        self.objects = Objects(registry, informers)
        self.evaluators = Evaluators()
        self._queue = WorkQueue()
        self._monitors: dict[tuple[str, str], tuple[Informer, Registration]] = {}
        # Quotas (namespace/name) counting a resource that is not served (yet): a CRD's to come
        self._unserved: set[str] = set()
        for group, resource in _MONITORED:
            self.objects.watch(group, resource)  # asked for before the informers start: synced with them

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        reg = self.quotas.add_handler(on_add=self._quota_added, on_update=self._quota_updated)
        try:
            for group, resource in _MONITORED:
                self._monitor(group, resource)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._resync)
                nursery.start_soon(self._discover)
                task_status.started()
                while True:
                    key = await self._queue.get()
                    namespace, _, name = key.partition("/")
                    try:
                        await self.sync(namespace, name)
                    except errors.KapiError as exc:
                        log.info("resource quota controller: %s: %s; retrying", key, exc)
                        nursery.start_soon(self._requeue, key)
                    except Exception:
                        log.exception("resource quota controller: sync of %s failed", key)
        finally:  # a restarted controller registers afresh
            self.quotas.remove_handler(reg)
            for informer, r in self._monitors.values():
                informer.remove_handler(r)
            self._monitors.clear()

    async def _requeue(self, key: str) -> None:
        await trio.sleep(RETRY_S)
        self._queue.add(key)

    async def _resync(self) -> None:
        while True:
            await trio.sleep(self.resync_s)
            for item in self.quotas.items():
                self._queue.add(f"{item.namespace}/{item.name}")

    async def _discover(self) -> None:
        """Quotas counting a resource that was not served are synced again once it may be."""
        while True:
            await trio.sleep(DISCOVERY_S)
            waiting, self._unserved = self._unserved, set()
            for key in waiting:
                self._queue.add(key)

    # ------------------------------------------------------------ events

    def _quota_added(self, item: Item) -> None:
        self._queue.add(f"{item.namespace}/{item.name}")

    def _quota_updated(self, old: Item, new: Item) -> None:
        quota = new.object()
        spec_hard = parse_list((quota.get("spec") or {}).get("hard"))
        status = quota.get("status") or {}
        if (old.object().get("spec") != quota.get("spec") or "used" not in status
                or not equals(spec_hard, parse_list(status.get("hard")))):
            self._queue.add(f"{new.namespace}/{new.name}")

    def _monitor(self, group: str, resource: str) -> None:
        """Follow a counted resource: its objects going (and changing usage) sync the namespace's quotas."""
        if (group, resource) in self._monitors:
            return
        informer = self.objects.watch(group, resource)
        evaluator = self.evaluators.get(group, resource)
        if informer is None or evaluator is None:
            return

        def gone(item: Item) -> None:
            self._replenish(item.namespace, group, resource)

        def changed(old: Item, new: Item) -> None:
            if not any(True for _ in self.quotas.items(new.namespace)):
                return  # nothing counts here: not worth decoding
            if type(evaluator) is Evaluator:
                return  # an object count: an update changes nothing
            if not equals(evaluator.usage(old.object()), evaluator.usage(new.object())):
                self._replenish(new.namespace, group, resource)

        self._monitors[(group, resource)] = (informer, informer.add_handler(on_update=changed, on_delete=gone))

    def _replenish(self, namespace: str, group: str, resource: str) -> None:
        """Sync the namespace's quotas that count something of this resource (kube's replenishQuota)."""
        evaluator = self.evaluators.get(group, resource)
        if evaluator is None:
            return
        for item in self.quotas.items(namespace):
            hard = ((item.object().get("status") or {}).get("hard")) or {}
            if evaluator.matching_resources(hard):
                self._queue.add(f"{item.namespace}/{item.name}")

    # ------------------------------------------------------------ sync

    async def sync(self, namespace: str, name: str) -> None:
        """kube's syncResourceQuota: status.hard from spec.hard, status.used recalculated."""
        quota = self.quotas.get(namespace, name)
        if quota is None:
            try:
                quota = await self.registry.get(self.res, namespace, name)
            except errors.NotFound:
                return
        status = quota.get("status") or {}
        hard = parse_list((quota.get("spec") or {}).get("hard"))
        dirty = (not equals(hard, parse_list(status.get("hard"))) or status.get("hard") is None
                 or status.get("used") is None)
        used = parse_list(status.get("used"))
        computed, unserved = await self.calculate_usage(namespace, quota, hard)
        used.update(computed)
        key = f"{namespace}/{name}"
        if unserved:
            self._unserved.add(key)
        else:
            self._unserved.discard(key)
        used = mask(used, hard)
        dirty = dirty or not equals(used, parse_list(status.get("used")))
        if not dirty:
            return
        new = {**quota, "status": {"hard": render(hard), "used": render(used)}}
        try:
            await self.writer.update(self.res, namespace, name, new, WriteOptions(), subresource="status")
        except errors.NotFound:
            return

    async def calculate_usage(self, namespace: str, quota: Obj, hard: ResourceList) -> tuple[ResourceList, bool]:
        """kube's CalculateUsage: each evaluator measuring some of the hard resources, over the
        namespace's objects in the quota's scopes; and whether some resource counted is not served."""
        selectors = scope_selectors(quota)
        found = self.evaluators.for_names(hard)
        matched = {n for ev in found.values() for n in ev.matching_resources(hard)}
        usage: ResourceList = {}
        unserved = False
        for (group, resource), evaluator in found.items():
            wanted = evaluator.matching_resources(matched)
            if not wanted:
                continue
            if self.objects.resource(group, resource) is None:
                unserved = True
                continue  # not served (yet): nothing to count
            self._monitor(group, resource)
            objects = await self.objects.list(group, resource, namespace)
            stats = evaluator.usage_stats(objects, selectors, wanted)
            for key, value in stats.items():
                usage[key] = usage[key] + value if key in usage else value
        return mask(usage, matched), unserved


__all__ = ["RESYNC_S", "ResourceQuotaController"]
