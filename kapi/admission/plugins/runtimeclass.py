"""RuntimeClass (kube's plugin/pkg/admission/runtimeclass).

A pod created with ``spec.runtimeClassName`` gets the class's ``overhead.podFixed`` as
``spec.overhead`` and its ``scheduling``: the class's node selector merged into the pod's (a key
both set to different values is refused: ``conflict: runtimeClass.scheduling.nodeSelector[k] = a;
pod.spec.nodeSelector[k] = b``) and its tolerations merged with the pod's. A missing class is refused
(``pod rejected: RuntimeClass "x" not found``), as is a pod whose overhead is not its class's, or
that sets one without a class defining it.
"""

from __future__ import annotations

from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.admission.plugins.podtolerationrestriction import merge_tolerations
from kapi.object.validation import parse_quantity
from kapi.registry.admit import CREATE

Obj = dict[str, Any]
GROUP: Final = "node.k8s.io"


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _same_resources(a: Obj, b: Obj) -> bool:
    """Semantic equality of two resource lists (quantities compared by value)."""
    return a.keys() == b.keys() and all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)


class RuntimeClass(Plugin):
    name = "RuntimeClass"
    operations = frozenset((CREATE,))
    resources = frozenset((("", "pods"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch(GROUP, "runtimeclasses")

    async def _runtime_class(self, a: Attributes) -> Obj | None:
        name = _d(_d(a.obj).get("spec")).get("runtimeClassName")
        if name is None:
            return None
        rc = await self.deps.objects.get(GROUP, "runtimeclasses", "", str(name))  # live when the informer lags
        if rc is None:
            raise forbidden(a, f'pod rejected: RuntimeClass "{name}" not found')
        return rc

    async def admit(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        rc = await self._runtime_class(a)
        if rc is None:
            return
        spec = a.obj.setdefault("spec", {})
        overhead = rc.get("overhead")
        if isinstance(overhead, dict):
            fixed = _d(overhead.get("podFixed"))
            if spec.get("overhead") and not _same_resources(fixed, _d(spec.get("overhead"))):
                raise forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
            if fixed:
                spec["overhead"] = dict(fixed)
            else:
                spec.pop("overhead", None)
        scheduling = rc.get("scheduling")
        if not isinstance(scheduling, dict):
            return
        runtime_selector = _d(scheduling.get("nodeSelector"))
        selector = spec.get("nodeSelector")
        if not isinstance(selector, dict):
            selector = dict(runtime_selector)
        else:
            for key, value in runtime_selector.items():
                if key in selector and selector[key] != value:
                    raise forbidden(a, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                    f"pod.spec.nodeSelector[{key}] = {selector[key]}")
                selector[key] = value
        if selector:
            spec["nodeSelector"] = selector
        own = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
        extra = [t for t in scheduling.get("tolerations") or [] if isinstance(t, dict)]
        merged = merge_tolerations(own, extra)
        if merged:
            spec["tolerations"] = merged

    async def validate(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        rc = await self._runtime_class(a)
        spec = _d(a.obj.get("spec"))
        overhead = _d(rc).get("overhead") if rc is not None else None
        if isinstance(overhead, dict):
            if not _same_resources(_d(overhead.get("podFixed")), _d(spec.get("overhead"))):
                raise forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        elif spec.get("overhead") is not None:
            raise forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")


__all__ = ["RuntimeClass"]
