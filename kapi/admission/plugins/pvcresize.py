"""PersistentVolumeClaimResize (kube's plugin/pkg/admission/storage/persistentvolume/resize): a claim's
``spec.resources.requests.storage`` may grow only when the claim is Bound and its StorageClass (the same
before and after, and not "") has ``allowVolumeExpansion: true``. Shrinking or keeping the size is
left to validation."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.admission.plugins.defaultstorageclass import claim_class
from kapi.object.validation.quantity import parse_quantity
from kapi.registry.admit import UPDATE

Obj = dict[str, Any]


def _storage(pvc: object) -> Fraction:
    spec = pvc.get("spec") if isinstance(pvc, dict) else None
    res = spec.get("resources") if isinstance(spec, dict) else None
    req = res.get("requests") if isinstance(res, dict) else None
    value = req.get("storage") if isinstance(req, dict) else None
    return (parse_quantity(value) if value is not None else None) or Fraction(0)


class PersistentVolumeClaimResize(Plugin):
    name = "PersistentVolumeClaimResize"
    operations = frozenset((UPDATE,))
    resources = frozenset((("", "persistentvolumeclaims"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch("storage.k8s.io", "storageclasses")

    async def validate(self, a: Attributes) -> None:
        new, old = a.obj, a.old
        if a.subresource or not isinstance(new, dict) or not isinstance(old, dict):
            return
        if _storage(new) <= _storage(old):
            return
        if (old.get("status") or {}).get("phase") != "Bound":
            raise forbidden(a, "Only bound persistent volume claims can be expanded")
        if not await self._allow_resize(new, old):
            raise forbidden(a, "only dynamically provisioned pvc can be resized and the storageclass that "
                            "provisions the pvc must support resize")

    async def _allow_resize(self, new: Obj, old: Obj) -> bool:
        cls, old_cls = claim_class(new), claim_class(old)
        if not cls or not old_cls or cls != old_cls:
            return False
        sc = await self.deps.objects.get("storage.k8s.io", "storageclasses", "", cls)
        return sc is not None and sc.get("allowVolumeExpansion") is True


__all__ = ["PersistentVolumeClaimResize"]
