"""scheduling.k8s.io/v1 defaults (kube's ``pkg/apis/scheduling/v1/defaults.go``)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, defaulter


@defaulter
def default_priority_class(obj: Obj, old: Obj | None) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
