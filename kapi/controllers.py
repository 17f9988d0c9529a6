"""Built-in controllers: the namespace lifecycle (default ServiceAccount, emptying on delete).

They run in-process on the registry, the way kube-controller-manager's
namespace and serviceaccount controllers run against the API.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import Any

import trio

from . import errors
from .listopts import ListOptions
from .registry.resources import Resource
from .registry.store import DeleteOptions, Registry, WriteOptions

log = logging.getLogger("kapi.controllers")
Obj = dict[str, Any]
FINALIZER = "kubernetes"


class NamespaceController:
    """Gives each namespace a ``default`` ServiceAccount and empties deleted namespaces."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        table = registry.table
        ns = table.get("", "v1", "namespaces")
        sa = table.get("", "v1", "serviceaccounts")
        assert ns is not None and sa is not None
        self.namespaces: Resource = ns
        self.serviceaccounts: Resource = sa
        self._finalizing: set[str] = set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            started = False
            while True:
                try:
                    async with aclosing(self.registry.watch(self.namespaces, "", ListOptions())) as events:
                        async for kind, ns in events:
                            if kind == "ERROR":
                                break
                            if kind in ("ADDED", "MODIFIED"):
                                await self._sync(ns)
                            if not started:
                                started = True
                                task_status.started()
                except errors.KapiError:
                    log.exception("namespace controller: watch failed; restarting")
                if not started:
                    started = True
                    task_status.started()
                await trio.sleep(0.5)

    async def _sync(self, ns: Obj) -> None:
        md = ns["metadata"]
        name = md["name"]
        if md.get("deletionTimestamp"):
            if name not in self._finalizing:
                self._finalizing.add(name)
                self._nursery.start_soon(self._finalize, name)
            return
        await self.ensure_default_serviceaccount(name)

    async def ensure_default_serviceaccount(self, namespace: str) -> None:
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        try:
            await self.registry.create(self.serviceaccounts, namespace, sa, WriteOptions())
        except (errors.AlreadyExists, errors.Forbidden, errors.NotFound):
            pass

    async def _finalize(self, name: str) -> None:
        """Delete everything in the namespace, then drop the ``kubernetes`` finalizer."""
        try:
            delay = 0.05
            while await self._delete_contents(name):
                await trio.sleep(delay)
                delay = min(delay * 2, 2.0)

            def drop_finalizer(ns: Obj) -> Obj:
                spec = ns.setdefault("spec", {})
                spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER]
                return ns

            try:
                await self.registry.guaranteed_update(self.namespaces, "", name, drop_finalizer, WriteOptions(),
                                                      subresource="finalize")
            except errors.NotFound:
                pass
        finally:
            self._finalizing.discard(name)

    async def _delete_contents(self, namespace: str) -> int:
        """One pass over every namespaced resource; returns how many objects remain."""
        remaining = 0
        seen_storage: set[str] = set()
        for res in self.registry.resources():
            if not res.namespaced or res.storage_of[1]:
                continue
            prefix = self.registry.prefix(res, namespace)
            if prefix in seen_storage:
                continue
            seen_storage.add(prefix)
            page = await self.registry.delete_collection(res, namespace, ListOptions(),
                                                         DeleteOptions(grace_period_s=0))
            remaining += sum(1 for obj in page.items if obj["metadata"].get("finalizers"))
        return remaining
