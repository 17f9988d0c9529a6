"""DefaultIngressClass (kube's plugin/pkg/admission/network/defaultingressclass): an Ingress created
without ``spec.ingressClassName`` and without the ``kubernetes.io/ingress.class`` annotation gets the
default IngressClass (annotation ``ingressclass.kubernetes.io/is-default-class: "true"``); with
several defaults the newest is taken (then the first by name), as kube does since 1.28."""

from __future__ import annotations

from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.admission.plugins.defaultstorageclass import annotations, newest
from kapi.registry.admit import CREATE

Obj = dict[str, Any]

DEFAULT_INGRESS_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"
INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
GROUP: Final = "networking.k8s.io"


class DefaultIngressClass(Plugin):
    name = "DefaultIngressClass"
    operations = frozenset((CREATE,))
    resources = frozenset(((GROUP, "ingresses"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch(GROUP, "ingressclasses")

    async def admit(self, a: Attributes) -> None:
        ing = a.obj
        if a.subresource or not isinstance(ing, dict):
            return
        spec = ing.get("spec")
        if isinstance(spec, dict) and spec.get("ingressClassName") is not None:
            return
        if INGRESS_CLASS_ANNOTATION in annotations(ing):
            return
        classes = await self.deps.objects.list(GROUP, "ingressclasses")
        default = newest(c for c in classes if annotations(c).get(DEFAULT_INGRESS_CLASS_ANNOTATION) == "true")
        if default is None:
            return
        if not isinstance(spec, dict):
            spec = ing["spec"] = {}
        spec["ingressClassName"] = default["metadata"]["name"]


__all__ = ["DefaultIngressClass"]
