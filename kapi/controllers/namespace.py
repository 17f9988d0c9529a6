"""The namespace lifecycle controller: each namespace gets its ``default`` ServiceAccount and
``kube-root-ca.crt`` ConfigMap, and a deleted namespace is emptied before it goes.

It runs in-process on the registry, the way kube-controller-manager's namespace and
serviceaccount controllers run against the API: an informer of namespaces feeds a work queue. Its
writes are those controllers' requests, admitted and audited as their service accounts': the
``default`` ServiceAccount as ``service-account-controller``'s, ``kube-root-ca.crt`` as
``root-ca-cert-publisher``'s, the emptying and finalizing of a namespace as ``namespace-controller``'s.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from kapi import errors
from kapi.apis.core.namespaces import FINALIZER
from kapi.controllers.base import WorkQueue, name_of
from kapi.controllers.writes import Writer, Writes
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informer, Item
from kapi.registry.resources import Resource
from kapi.registry.store import Registry, WriteOptions

log = logging.getLogger("kapi.controllers")
Obj = dict[str, Any]


class NamespaceController:
    """Gives each namespace a ``default`` ServiceAccount and ``kube-root-ca.crt``; empties deleted ones."""

    def __init__(self, registry: Registry, root_ca_pem: str = "", writes: Writes | None = None) -> None:
        self.registry = registry
        writes = writes or Writes(registry)
        self.writer = writes.controller("namespace-controller")
        self._sa_writer = writes.controller("service-account-controller")
        self._ca_writer = writes.controller("root-ca-cert-publisher")
        self.root_ca_pem = root_ca_pem
        table = registry.table
        ns = table.get("", "v1", "namespaces")
        sa = table.get("", "v1", "serviceaccounts")
        cm = table.get("", "v1", "configmaps")
        assert ns is not None and sa is not None and cm is not None
        self.namespaces: Resource = ns
        self.serviceaccounts: Resource = sa
        self.configmaps: Resource = cm
        self._finalizing: set[str] = set()
        self._unreadable: set[tuple[str, str]] = set()  # (namespace, prefix) reported holding corrupt objects
        self._pending = WorkQueue()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sync each namespace the informer tells of, one at a time; ``started()`` once it has synced."""
        informer = Informer(self.registry, self.namespaces)
        informer.add_handler(on_add=self._queue, on_update=lambda old, new: self._queue(new))
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(informer.run)
            nursery.start_soon(self._work, informer)
            await informer.wait_for_sync()
            task_status.started()

    def _queue(self, item: Item) -> None:
        self._pending.add(item.name)

    async def _work(self, informer: Informer) -> None:
        while True:
            name = await self._pending.get()
            ns = informer.get("", name)  # its state now; None: gone meanwhile (or unreadable)
            if ns is None:
                continue
            try:
                await self._sync(ns)
            except Exception:
                # One namespace that cannot be synced must not stop the others.
                log.exception("namespace controller: sync of %s failed", name_of(ns))

    async def _sync(self, ns: Obj) -> None:
        md = ns["metadata"]
        name = md["name"]
        if md.get("deletionTimestamp"):
            if name not in self._finalizing:
                self._finalizing.add(name)
                self._nursery.start_soon(self._finalize, name)
            return
        await self.ensure_namespace_contents(name)

    async def ensure_namespace_contents(self, namespace: str) -> None:
        """The objects every namespace has: the ``default`` ServiceAccount and the root CA bundle."""
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        await self._ensure(self.serviceaccounts, namespace, sa, self._sa_writer)
        if self.root_ca_pem:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "annotations": {
                "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver "
                                             "when using internal endpoints such as the internal service IP or "
                                             "kubernetes.default.svc. No other usage is guaranteed across "
                                             "distributions of Kubernetes clusters."}},
                  "data": {"ca.crt": self.root_ca_pem}}
            await self._ensure(self.configmaps, namespace, cm, self._ca_writer)

    async def _ensure(self, res: Resource, namespace: str, obj: Obj, writer: Writer) -> None:
        try:
            await writer.ensure_exists(res, namespace, obj)  # read first, as kube's controllers ask their lister
        except (errors.Forbidden, errors.NotFound):
            pass
        except errors.StatusError as err:  # e.g. the namespace's stored object is corrupt: the rest go on
            log.error("namespace controller: cannot create %s %s/%s: %s", res.kind, namespace,
                      obj["metadata"]["name"], err.message)

    async def _finalize(self, name: str) -> None:
        """Delete everything in the namespace, then drop the ``kubernetes`` finalizer (retried on failure)."""
        retry = 0.5
        try:
            while True:
                try:
                    await self._finalize_once(name)
                    return
                except Exception:  # a failed pass is retried, as kube's controller requeues with backoff
                    log.exception("namespace controller: emptying %s failed; retrying in %.1fs", name, retry)
                await trio.sleep(retry)
                retry = min(retry * 2, 30.0)
        finally:
            self._finalizing.discard(name)

    async def _finalize_once(self, name: str) -> None:
        delay = 0.05
        while await self._delete_contents(name):
            await trio.sleep(delay)
            delay = min(delay * 2, 2.0)

        def drop_finalizer(ns: Obj) -> Obj:
            spec = ns.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER]
            return ns

        try:
            await self.writer.guaranteed_update(self.namespaces, "", name, drop_finalizer, WriteOptions(),
                                                subresource="finalize", verb="update")
        except errors.NotFound:
            pass

    async def _delete_contents(self, namespace: str) -> int:
        """One pass over every namespaced resource; returns how many objects remain."""
        remaining = 0
        seen_storage: set[str] = set()
        for res in self.registry.resources():
            if not res.namespaced or res.storage_of[1] or res.virtual:
                continue
            prefix = self.registry.prefix(res, namespace)
            if prefix in seen_storage:
                continue
            seen_storage.add(prefix)
            page = await self.writer.delete_collection(res, namespace, ListOptions(),
                                                       DeleteOptions(grace_period_s=0))
            held = sum(1 for obj in page.items if obj["metadata"].get("finalizers"))
            # A corrupt object is left out of the collection: as in kube, the namespace stays
            # Terminating until it is removed (DELETE ...?ignoreStoreReadErrorWithClusterBreakingPotential=true).
            stored = await self.registry.count(res, namespace)
            if stored > held and (namespace, prefix) not in self._unreadable:
                self._unreadable.add((namespace, prefix))
                log.error("namespace controller: namespace %s keeps %d object(s) under %s that cannot be read; "
                          "it stays Terminating until they are removed", namespace, stored - held, prefix)
            remaining += max(held, stored)
        return remaining
