"""StorageObjectInUseProtection (kube's plugin/pkg/admission/storage/storageobjectinuseprotection):
every PersistentVolume is created with the ``kubernetes.io/pv-protection`` finalizer and every
PersistentVolumeClaim with ``kubernetes.io/pvc-protection``, so that a claim a pod uses, or a volume
a claim is bound to, is not removed from under it; the protection controllers take them off once
nothing uses the object."""

from __future__ import annotations

from typing import Final

from kapi.admission.plugin import Attributes, Plugin
from kapi.registry.admit import CREATE

PV_PROTECTION: Final = "kubernetes.io/pv-protection"
PVC_PROTECTION: Final = "kubernetes.io/pvc-protection"
_FINALIZERS: Final = {"persistentvolumes": PV_PROTECTION, "persistentvolumeclaims": PVC_PROTECTION}


class StorageObjectInUseProtection(Plugin):
    name = "StorageObjectInUseProtection"
    operations = frozenset((CREATE,))
    resources = frozenset((("", "persistentvolumes"), ("", "persistentvolumeclaims")))

    async def admit(self, a: Attributes) -> None:
        obj = a.obj
        if a.subresource or not isinstance(obj, dict):
            return
        finalizer = _FINALIZERS[a.plural]
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        finalizers = md.get("finalizers")
        finalizers = finalizers if isinstance(finalizers, list) else []
        if finalizer not in finalizers:
            md["finalizers"] = [*finalizers, finalizer]


__all__ = ["PVC_PROTECTION", "PV_PROTECTION", "StorageObjectInUseProtection"]
