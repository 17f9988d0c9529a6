"""kube's pvc-protection and pv-protection controllers (pkg/controller/volume/pvcprotection and
pvprotection): they take off the finalizers StorageObjectInUseProtection puts on every claim and
volume once the object is being deleted and nothing uses it.

- a PersistentVolumeClaim with a deletionTimestamp loses ``kubernetes.io/pvc-protection`` when no pod
  scheduled to a node (``spec.nodeName`` set) and not finished (phase Succeeded or Failed) uses it:
  through a ``persistentVolumeClaim`` volume, or an ``ephemeral`` volume whose claim is
  ``<pod>-<volume>``; the pods are listed live, as kube asks the API server before it removes the
  finalizer; a claim still in use is looked at again when one of its pods changes or goes;
- a PersistentVolume with a deletionTimestamp loses ``kubernetes.io/pv-protection`` when it is not
  Bound (``status.phase``); looked at again on each change of the volume.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from kapi import errors
from kapi.controllers.base import WorkQueue
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.informer import Informer, Item
from kapi.registry.store import Registry, WriteOptions

__all__ = ["PV_PROTECTION", "PVC_PROTECTION", "StorageProtectionController", "pod_uses_claim"]

log = logging.getLogger("kapi.controllers.storageprotection")
Obj = dict[str, Any]
PVC_PROTECTION: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION: Final = "kubernetes.io/pv-protection"
_MANAGER: Final = "kube-controller-manager"


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _releasable(md: Obj, finalizer: str) -> bool:
    return bool(md.get("deletionTimestamp")) and finalizer in _l(md.get("finalizers"))


def pod_uses_claim(pod: Obj, claim: str) -> bool:
    """kube's podUsesPVC for a pod of the claim's namespace: scheduled, not finished, with a volume of it."""
    spec = _d(pod.get("spec"))
    if not spec.get("nodeName") or _d(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
        return False
    name = str(_d(pod.get("metadata")).get("name") or "")
    for vol in (_d(v) for v in _l(spec.get("volumes"))):
        if _d(vol.get("persistentVolumeClaim")).get("claimName") == claim:
            return True
        if isinstance(vol.get("ephemeral"), dict) and f"{name}-{vol.get('name', '')}" == claim:
            return True
    return False


def _claims_of(pod: Obj) -> list[str]:
    name = str(_d(pod.get("metadata")).get("name") or "")
    out = []
    for vol in (_d(v) for v in _l(_d(pod.get("spec")).get("volumes"))):
        claim = _d(vol.get("persistentVolumeClaim")).get("claimName")
        if claim:
            out.append(str(claim))
        elif isinstance(vol.get("ephemeral"), dict):
            out.append(f"{name}-{vol.get('name', '')}")
    return out


class StorageProtectionController:
    """Removes the pvc-protection and pv-protection finalizers of deleted claims and volumes not in use."""

    def __init__(self, registry: Registry, pvcs: Informer, pvs: Informer, pods: Informer) -> None:
        self.registry = registry
        self.pvcs, self.pvs, self.pods = pvcs, pvs, pods
        self._queue = WorkQueue()
        pvcs.add_handler(on_add=self._claim, on_update=lambda _old, new: self._claim(new))
        pvs.add_handler(on_add=self._volume, on_update=lambda _old, new: self._volume(new))
        pods.add_handler(on_update=lambda _old, new: self._pod(new), on_delete=self._pod)

    def _claim(self, item: Item) -> None:
        if item.may_have("deletionTimestamp") and _releasable(item.metadata(), PVC_PROTECTION):
            self._queue.add(f"pvc/{item.namespace}/{item.name}")

    def _volume(self, item: Item) -> None:
        if item.may_have("deletionTimestamp") and _releasable(item.metadata(), PV_PROTECTION):
            self._queue.add(f"pv//{item.name}")

    def _pod(self, item: Item) -> None:
        try:
            pod = item.object()
        except Exception:  # undecodable (the informer logs it)
            return
        for claim in _claims_of(pod):
            held = self.pvcs.get(item.namespace, claim)
            if held is not None and _releasable(_d(held.get("metadata")), PVC_PROTECTION):
                self._queue.add(f"pvc/{item.namespace}/{claim}")

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        for inf in (self.pvcs, self.pvs, self.pods):
            await inf.wait_for_sync()
        for item in list(self.pvcs.items()):
            self._claim(item)
        for item in list(self.pvs.items()):
            self._volume(item)
        task_status.started()
        while True:
            key = await self._queue.get()
            kind, namespace, name = key.split("/", 2)
            try:
                if kind == "pvc":
                    await self.sync_claim(namespace, name)
                else:
                    await self.sync_volume(name)
            except errors.StatusError as err:
                log.warning("storage protection of %s: %s", key, err.message)
                await trio.sleep(0.5)
                self._queue.add(key)

    async def sync_claim(self, namespace: str, name: str) -> bool:
        """Release one claim if it may go; whether the finalizer was removed."""
        res = self.pvcs.res
        try:
            pvc = await self.registry.get(res, namespace, name)
        except errors.NotFound:
            return False
        if not _releasable(_d(pvc.get("metadata")), PVC_PROTECTION):
            return False
        pods = self.registry.table.get("", "v1", "pods")
        if pods is not None:
            page = await self.registry.list(pods, namespace, ListOptions())
            if any(pod_uses_claim(p, name) for p in listitems.objects(page.items)):
                return False
        return await self._drop(res, namespace, name, PVC_PROTECTION)

    async def sync_volume(self, name: str) -> bool:
        res = self.pvs.res
        try:
            pv = await self.registry.get(res, "", name)
        except errors.NotFound:
            return False
        if not _releasable(_d(pv.get("metadata")), PV_PROTECTION) or _d(pv.get("status")).get("phase") == "Bound":
            return False
        return await self._drop(res, "", name, PV_PROTECTION)

    async def _drop(self, res: Any, namespace: str, name: str, finalizer: str) -> bool:
        def drop(obj: Obj) -> Obj:
            md = obj.setdefault("metadata", {})
            md["finalizers"] = [f for f in _l(md.get("finalizers")) if f != finalizer]
            if not md["finalizers"]:
                del md["finalizers"]
            return obj
        try:
            await self.registry.guaranteed_update(res, namespace, name, drop, WriteOptions(field_manager=_MANAGER))
        except errors.NotFound:
            return False
        return True
