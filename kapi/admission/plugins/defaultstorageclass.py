"""DefaultStorageClass (kube's plugin/pkg/admission/storage/storageclass/setdefault): a
PersistentVolumeClaim created without a class (no ``spec.storageClassName``, not even ``""``, and no
``volume.beta.kubernetes.io/storage-class`` annotation) gets the default StorageClass's name. A
class is a default when its ``storageclass.kubernetes.io/is-default-class`` (or the beta) annotation
is ``"true"``; with several, the newest is taken (then the first by name), as kube's
``GetDefaultClass`` does since 1.26; with none the claim is left as it is.
"""

from __future__ import annotations

from typing import Any, Final, Iterable

from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.object.meta import parse_time_or_none
from kapi.registry.admit import CREATE

Obj = dict[str, Any]

DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.beta.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"


def annotations(obj: object) -> dict[str, Any]:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    found = md.get("annotations") if isinstance(md, dict) else None
    return found if isinstance(found, dict) else {}


def newest(classes: Iterable[Obj]) -> Obj | None:
    """The newest of ``classes`` by creationTimestamp, the first by name among equals (kube's sort)."""
    def key(c: Obj) -> tuple[float, str]:
        md = c.get("metadata") or {}
        created = parse_time_or_none(str(md.get("creationTimestamp") or "")) or 0.0
        return (-created, str(md.get("name") or ""))
    ordered = sorted(classes, key=key)
    return ordered[0] if ordered else None


def is_default_storage_class(sc: Obj) -> bool:
    ann = annotations(sc)
    return ann.get(DEFAULT_CLASS_ANNOTATION) == "true" or ann.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true"


def claim_class(pvc: object) -> str:
    """kube's GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName, else ""."""
    ann = annotations(pvc)
    if BETA_CLASS_ANNOTATION in ann:
        return str(ann[BETA_CLASS_ANNOTATION])
    spec = pvc.get("spec") if isinstance(pvc, dict) else None
    name = spec.get("storageClassName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else ""


def claim_has_class(pvc: Obj) -> bool:
    """kube's PersistentVolumeClaimHasClass: the beta annotation or a storageClassName (even "")."""
    if BETA_CLASS_ANNOTATION in annotations(pvc):
        return True
    spec = pvc.get("spec")
    return isinstance(spec, dict) and spec.get("storageClassName") is not None


class DefaultStorageClass(Plugin):
    name = "DefaultStorageClass"
    operations = frozenset((CREATE,))
    resources = frozenset((("", "persistentvolumeclaims"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch("storage.k8s.io", "storageclasses")

    async def default_class(self) -> Obj | None:
        classes = await self.deps.objects.list("storage.k8s.io", "storageclasses")
        return newest(c for c in classes if is_default_storage_class(c))

    async def admit(self, a: Attributes) -> None:
        pvc = a.obj
        if a.subresource or not isinstance(pvc, dict) or claim_has_class(pvc):
            return
        default = await self.default_class()
        if default is None:
            return
        spec = pvc.get("spec")
        if not isinstance(spec, dict):
            spec = pvc["spec"] = {}
        spec["storageClassName"] = default["metadata"]["name"]


__all__ = ["DefaultStorageClass", "claim_class", "claim_has_class", "is_default_storage_class", "newest"]
