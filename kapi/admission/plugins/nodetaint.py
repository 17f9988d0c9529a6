"""TaintNodesByCondition (kube's plugin/pkg/admission/nodetaint): a Node is created with the
``node.kubernetes.io/not-ready:NoSchedule`` taint, unless it already has a taint of that key and
effect, so that nothing is scheduled to it before the node lifecycle controller sees it ready
(and removes the taint)."""

from __future__ import annotations

from typing import Final

from kapi.admission.plugin import Attributes, Plugin, forbidden
from kapi.registry.admit import CREATE

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"


class TaintNodesByCondition(Plugin):
    name = "TaintNodesByCondition"
    operations = frozenset((CREATE,))
    resources = frozenset((("", "nodes"),))

    async def admit(self, a: Attributes) -> None:
        if a.subresource:
            return
        node = a.obj
        if not isinstance(node, dict):
            raise forbidden(a, f"unexpected type {type(node).__name__}")
        spec = node.get("spec")
        if not isinstance(spec, dict):
            spec = node["spec"] = {}
        taints = spec.get("taints")
        if not isinstance(taints, list):
            taints = []
        # Taint.MatchTaint: the same key and effect (the value does not count)
        if any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT and t.get("effect") == "NoSchedule"
               for t in taints):
            return
        spec["taints"] = [*taints, {"key": NOT_READY_TAINT, "effect": "NoSchedule"}]


__all__ = ["NOT_READY_TAINT", "TaintNodesByCondition"]
