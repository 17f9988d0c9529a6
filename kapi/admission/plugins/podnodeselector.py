"""PodNodeSelector (kube's plugin/pkg/admission/podnodeselector), off by default.

A pod created in a namespace annotated ``scheduler.alpha.kubernetes.io/node-selector: "k=v,..."``
(else under the configuration's ``clusterDefaultNodeSelector``) gets that node selector merged
into its own; a pod selecting another value for one of its keys is refused (403 ``pod node label
selector conflicts with its namespace node label selector``), and so is one selecting labels
outside the configuration's whitelist for its namespace (``pod node label selector labels
conflict with its namespace whitelist``).

The configuration (--admission-control-config-file): ``podNodeSelectorPluginConfig``, a map of
``clusterDefaultNodeSelector`` and namespace names to selectors ("k=v,k2=v2").
"""

from __future__ import annotations

from typing import Any, Final

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.registry.admit import CREATE

Obj = dict[str, Any]

NAMESPACE_NODE_SELECTORS: Final = ("scheduler.alpha.kubernetes.io/node-selector",)
CLUSTER_DEFAULT: Final = "clusterDefaultNodeSelector"


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def selector_to_map(selector: str) -> dict[str, str]:
    """kube's ``labels.ConvertSelectorToLabelsMap``: "k=v,k2=v2" as a map; a malformed one is an error."""
    out: dict[str, str] = {}
    if not selector:
        return out
    for label in selector.split(","):
        parts = label.split("=")
        if len(parts) != 2:
            raise errors.StatusError(f"invalid selector: [{' '.join(parts)}]", reason="", code=500)
        out[parts[0].strip()] = parts[1].strip()
    return out


def conflicts(a: dict[str, str], b: dict[str, str]) -> bool:
    return any(k in b and b[k] != v for k, v in a.items())


class PodNodeSelector(Plugin):
    name = "PodNodeSelector"
    operations = frozenset((CREATE,))
    resources = frozenset((("", "pods"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        config = _d((deps.configuration.get(self.name) or {}).get("podNodeSelectorPluginConfig"))
        self.cluster_node_selectors = {str(k): str(v) for k, v in config.items()}
        deps.objects.watch("", "namespaces")

    async def namespace_node_selector(self, namespace: str) -> dict[str, str]:
        ns = await self.deps.objects.get("", "namespaces", "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        annotations = _d(_d(ns.get("metadata")).get("annotations"))
        selector: dict[str, str] = {}
        found = False
        for key in NAMESPACE_NODE_SELECTORS:
            if key in annotations:
                labels = selector_to_map(str(annotations[key]))
                if conflicts(selector, labels):
                    raise errors.StatusError(f"{namespace} annotations' node label selectors conflict",
                                             reason="", code=500)
                selector.update(labels)
                found = True
        if not found:
            selector = selector_to_map(self.cluster_node_selectors.get(CLUSTER_DEFAULT, ""))
        return selector

    @staticmethod
    def _forbidden(a: Attributes, reason: str) -> errors.Forbidden:
        # apierrors.NewForbidden with the pod's own name (none for a generateName pod)
        name = str(_d(_d(a.obj).get("metadata")).get("name") or "")
        where = f'pods "{name}"' if name else "pods"
        return errors.Forbidden(f"{where} is forbidden: {reason}", name=name, kind="pods")

    async def admit(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        ns_selector = await self.namespace_node_selector(a.namespace)
        own = {str(k): str(v) for k, v in _d(spec.get("nodeSelector")).items()}
        if conflicts(ns_selector, own):
            raise self._forbidden(a, "pod node label selector conflicts with its namespace node label selector")
        merged = {**ns_selector, **own}
        if merged:
            spec["nodeSelector"] = merged
        await self.validate(a)

    async def validate(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        own = {str(k): str(v) for k, v in _d(_d(a.obj.get("spec")).get("nodeSelector")).items()}
        ns_selector = await self.namespace_node_selector(a.namespace)
        if conflicts(ns_selector, own):
            raise self._forbidden(a, "pod node label selector conflicts with its namespace node label selector")
        whitelist = selector_to_map(self.cluster_node_selectors.get(a.namespace, ""))
        if whitelist and any(whitelist.get(k) != v for k, v in own.items()):
            raise self._forbidden(a, "pod node label selector labels conflict with its namespace whitelist")


__all__ = ["PodNodeSelector", "selector_to_map"]
