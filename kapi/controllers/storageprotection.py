"""kube's pvc-protection and pv-protection controllers (pkg/controller/volume/pvcprotection and
pvprotection): they keep the finalizers StorageObjectInUseProtection puts on claims and volumes, and take
them off once the object is being deleted and nothing uses it.

- a PersistentVolumeClaim or PersistentVolume not being deleted and without its finalizer
  (``kubernetes.io/pvc-protection``, ``kubernetes.io/pv-protection``) gets it (objects stored before the
  plugin was on, or a finalizer taken off by hand);
- a claim with a deletionTimestamp loses it when no pod scheduled to a node (``spec.nodeName`` set)
  uses it: through a ``persistentVolumeClaim`` volume (whatever the pod's phase: its kubelet may still
  have it mounted), or an ``ephemeral`` volume whose claim is ``<pod>-<volume>`` and controlled by the
  pod, unless the pod is shut down (deleted with a zero grace period). The pods are listed live, as
  kube asks the API server before it removes the finalizer; a claim still in use is looked at again
  when one of its pods changes or goes;
- a volume with a deletionTimestamp loses it when it is not Bound (``status.phase``); looked at again
  on each change of the volume.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from kapi import errors
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.informer import Informer, Item
from kapi.registry.store import Registry, WriteOptions

__all__ = ["PV_PROTECTION", "PVC_PROTECTION", "StorageProtectionController", "pod_is_shut_down", "pod_uses_claim"]

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


def _lacks(md: Obj, finalizer: str) -> bool:
    """kube's NeedToAddFinalizer: not being deleted, and without the finalizer."""
    return not md.get("deletionTimestamp") and finalizer not in _l(md.get("finalizers"))


def _needs_work(item: Item, finalizer: str) -> bool:
    try:
        md = item.metadata()
    except Exception:  # undecodable (the informer logs it)
        return False
    return _lacks(md, finalizer) or _releasable(md, finalizer)


def pod_is_shut_down(pod: Obj) -> bool:
    """kube's podIsShutDown: deleted with a zero grace period (the kubelet is done with it, or it was forced)."""
    md = _d(pod.get("metadata"))
    return bool(md.get("deletionTimestamp")) and md.get("deletionGracePeriodSeconds") == 0


def _controlled_by(obj: Obj, owner: Obj) -> bool:
    uid = _d(owner.get("metadata")).get("uid")
    return any(_d(r).get("controller") is True and _d(r).get("uid") == uid
               for r in _l(_d(obj.get("metadata")).get("ownerReferences")))


def pod_uses_claim(pod: Obj, pvc: Obj) -> bool:
    """kube's podUsesPVC: a scheduled pod of the claim's namespace with a volume of it."""
    spec = _d(pod.get("spec"))
    if not spec.get("nodeName"):
        return False
    claim = _d(pvc.get("metadata")).get("name")
    name = str(_d(pod.get("metadata")).get("name") or "")
    for vol in (_d(v) for v in _l(spec.get("volumes"))):
        if _d(vol.get("persistentVolumeClaim")).get("claimName") == claim:
            return True
        if isinstance(vol.get("ephemeral"), dict) and not pod_is_shut_down(pod) and \
                f"{name}-{vol.get('name', '')}" == claim and _controlled_by(pvc, pod):
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

    def __init__(self, registry: Registry, pvcs: Informer, pvs: Informer, pods: Informer,
                 writes: Writes | None = None) -> None:
        self.registry = registry
        writes = writes or Writes(registry)
        # kube runs the two as two controllers, each with its service account
        self._writers = {"persistentvolumeclaims": writes.controller("pvc-protection-controller"),
                         "persistentvolumes": writes.controller("pv-protection-controller")}
        self.pvcs, self.pvs, self.pods = pvcs, pvs, pods
        self._queue = WorkQueue()
        pvcs.add_handler(on_add=self._claim, on_update=lambda _old, new: self._claim(new))
        pvs.add_handler(on_add=self._volume, on_update=lambda _old, new: self._volume(new))
        pods.add_handler(on_update=lambda _old, new: self._pod(new), on_delete=self._pod)

    def _claim(self, item: Item) -> None:
        if _needs_work(item, PVC_PROTECTION):
            self._queue.add(f"pvc/{item.namespace}/{item.name}")

    def _volume(self, item: Item) -> None:
        if _needs_work(item, PV_PROTECTION):
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
            except Exception:  # one odd stored object must not stop the protection of the others
                log.exception("storage protection of %s failed", key)

    async def sync_claim(self, namespace: str, name: str) -> bool:
        """Release one claim if it may go; whether the finalizer was removed."""
        res = self.pvcs.res
        try:
            pvc = await self.registry.get(res, namespace, name)
        except errors.NotFound:
            return False
        md = _d(pvc.get("metadata"))
        if _lacks(md, PVC_PROTECTION):
            return await self._add(res, namespace, name, PVC_PROTECTION)
        if not _releasable(md, PVC_PROTECTION):
            return False
        pods = self.registry.table.get("", "v1", "pods")
        if pods is not None:
            page = await self.registry.list(pods, namespace, ListOptions())
            if any(pod_uses_claim(p, pvc) for p in listitems.objects(page.items)):
                return False
        return await self._drop(res, namespace, name, PVC_PROTECTION)

    async def sync_volume(self, name: str) -> bool:
        res = self.pvs.res
        try:
            pv = await self.registry.get(res, "", name)
        except errors.NotFound:
            return False
        md = _d(pv.get("metadata"))
        if _lacks(md, PV_PROTECTION):
            return await self._add(res, "", name, PV_PROTECTION)
        if not _releasable(md, PV_PROTECTION) or _d(pv.get("status")).get("phase") == "Bound":
            return False
        return await self._drop(res, "", name, PV_PROTECTION)

    async def _drop(self, res: Any, namespace: str, name: str, finalizer: str) -> bool:
        def drop(obj: Obj) -> Obj:
            md = obj.setdefault("metadata", {})
            md["finalizers"] = [f for f in _l(md.get("finalizers")) if f != finalizer]
            if not md["finalizers"]:
                del md["finalizers"]
            return obj
        return await self._write(res, namespace, name, drop)

    async def _add(self, res: Any, namespace: str, name: str, finalizer: str) -> bool:
        def add(obj: Obj) -> Obj:
            md = obj.setdefault("metadata", {})
            if not md.get("deletionTimestamp") and finalizer not in _l(md.get("finalizers")):
                md["finalizers"] = [*_l(md.get("finalizers")), finalizer]
            return obj
        return await self._write(res, namespace, name, add)

    async def _write(self, res: Any, namespace: str, name: str, change: Any) -> bool:
        try:
            await self._writers[res.resource].guaranteed_update(res, namespace, name, change,
                                                                WriteOptions(field_manager=_MANAGER))
        except errors.NotFound:
            return False
        return True
