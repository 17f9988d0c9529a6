"""ExtendedResourceToleration (kube's plugin/pkg/admission/extendedresourcetoleration), off by default.

A pod requesting an extended resource (``example.com/gpu``: a name with a domain other than
kubernetes.io) in a container or init container tolerates the ``<resource>:NoSchedule`` taint
(``operator: Exists``) that nodes offering it carry, one toleration per resource, in name order.
"""

from __future__ import annotations

from typing import Any

from kapi.admission.plugin import Attributes, Plugin
from kapi.object.validation.names import is_qualified_name
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def is_extended_resource_name(name: str) -> bool:
    """kube's ``IsExtendedResourceName``: not native, not ``requests.``-prefixed, and a qualified name
    once so prefixed (as quota names it)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _matches(a: Obj, b: Obj) -> bool:
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "effect", "operator", "value"))


def add_or_update_toleration(spec: Obj, toleration: Obj) -> None:
    """kube's ``AddOrUpdateTolerationInPod``: one of the same key, operator, value and effect is replaced."""
    current = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    out: list[Obj] = []
    updated = False
    for t in current:
        if _matches(toleration, t):
            if t.get("tolerationSeconds") == toleration.get("tolerationSeconds"):
                return
            out.append(dict(toleration))
            updated = True
            continue
        out.append(t)
    if not updated:
        out.append(dict(toleration))
    spec["tolerations"] = out


class ExtendedResourceToleration(Plugin):
    name = "ExtendedResourceToleration"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    async def admit(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        names: set[str] = set()
        for key in ("containers", "initContainers"):
            for ctr in spec.get(key) or []:
                for name in _d(_d(_d(ctr).get("resources")).get("requests")):
                    if is_extended_resource_name(str(name)):
                        names.add(str(name))
        for name in sorted(names):
            add_or_update_toleration(spec, {"key": name, "operator": "Exists", "effect": "NoSchedule"})


__all__ = ["ExtendedResourceToleration", "add_or_update_toleration", "is_extended_resource_name"]
