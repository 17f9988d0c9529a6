"""rbac.authorization.k8s.io/v1: role bindings and cluster role bindings."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _dicts, _unset, defaulter


_RBAC_GROUP = "rbac.authorization.k8s.io"


def _default_binding(obj: Obj) -> None:
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and _unset(ref, "apiGroup"):
        ref["apiGroup"] = _RBAC_GROUP
    for subject in _dicts(obj.get("subjects")):
        if _unset(subject, "apiGroup"):
            subject["apiGroup"] = _RBAC_GROUP if subject.get("kind") in ("User", "Group") else ""
        if subject.get("apiGroup") == "":
            del subject["apiGroup"]


@defaulter
def default_role_binding(obj: Obj, old: Obj | None) -> None:
    _default_binding(obj)


@defaulter
def default_cluster_role_binding(obj: Obj, old: Obj | None) -> None:
    _default_binding(obj)
