"""LimitPodHardAntiAffinityTopology (kube's plugin/pkg/admission/antiaffinity), off by default.

Refuses a pod whose required pod anti-affinity terms use a topology key other than
``kubernetes.io/hostname`` (403 ``affinity.PodAntiAffinity.RequiredDuringScheduling has
TopologyKey <k> but only key kubernetes.io/hostname is allowed``).
"""

from __future__ import annotations

from typing import Any, Final

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


class LimitPodHardAntiAffinityTopology(Plugin):
    name = "LimitPodHardAntiAffinityTopology"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    async def validate(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        anti = _d(_d(_d(a.obj.get("spec")).get("affinity")).get("podAntiAffinity"))
        terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution")
        for term in terms if isinstance(terms, list) else []:
            key = _d(term).get("topologyKey", "")
            if key != LABEL_HOSTNAME:
                # apierrors.NewForbidden with the pod's own name (none for a generateName pod)
                name = str(_d(a.obj.get("metadata")).get("name") or "")
                where = f'pods "{name}"' if name else "pods"
                raise errors.Forbidden(f"{where} is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has "
                                       f"TopologyKey {key} but only key {LABEL_HOSTNAME} is allowed",
                                       name=name, kind="pods")


__all__ = ["LimitPodHardAntiAffinityTopology"]
