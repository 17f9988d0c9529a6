"""storage.k8s.io/v1 defaults (kube's ``pkg/apis/storage/v1/defaults.go``)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _obj, defaulter


@defaulter
def default_storage_class(obj: Obj, old: Obj | None) -> None:
    if obj.get("reclaimPolicy") is None:
        obj["reclaimPolicy"] = "Delete"
    if obj.get("volumeBindingMode") is None:
        obj["volumeBindingMode"] = "Immediate"


@defaulter
def default_csi_driver(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       # the SELinuxMountReadWriteOncePod gate is on in 1.33
                       ("seLinuxMount", False)):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
