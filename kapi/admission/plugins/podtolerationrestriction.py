"""PodTolerationRestriction (kube's plugin/pkg/admission/podtolerationrestriction), and the
toleration arithmetic kube shares between plugins (pkg/util/tolerations).

A pod's create gets its namespace's default tolerations (the
``scheduler.alpha.kubernetes.io/defaultTolerations`` annotation, a JSON list; else the cluster's
``default`` from the plugin's configuration), and every pod that is not BestEffort the
``node.kubernetes.io/memory-pressure:NoSchedule`` one, merged so that a toleration another covers
is dropped. Then the pod's tolerations must each be covered by the namespace's whitelist
(``scheduler.alpha.kubernetes.io/tolerationsWhitelist``; else the configuration's ``whitelist``):
kube answers a breach with a plain error (500, ``pod tolerations (possibly merged with namespace
default tolerations) conflict with its namespace whitelist``).

The configuration (--admission-control-config-file, podtolerationrestriction.admission.k8s.io/v1alpha1
``Configuration``): ``default`` and ``whitelist``, lists of tolerations.
"""

from __future__ import annotations

import json
from typing import Any, Final

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.object.defaults import pod_qos_class
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

NS_DEFAULT_TOLERATIONS: Final = "scheduler.alpha.kubernetes.io/defaultTolerations"
NS_WHITELIST_TOLERATIONS: Final = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
_FIELDS: Final = ("key", "operator", "value", "effect", "tolerationSeconds")


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _norm(t: Obj) -> tuple[Any, ...]:
    """A toleration as Go compares it: unset strings are empty, an unset tolerationSeconds is nil."""
    return tuple(t.get(k) if k == "tolerationSeconds" else (t.get(k) or "") for k in _FIELDS)


def is_superset(ss: Obj, t: Obj) -> bool:
    """Whether toleration ``ss`` tolerates everything ``t`` does (kube's ``isSuperset``)."""
    if _norm(ss) == _norm(t):
        return True
    ss_key, t_key = ss.get("key") or "", t.get("key") or ""
    ss_op, t_op = ss.get("operator") or "", t.get("operator") or ""
    if t_key != ss_key and (ss_key != "" or ss_op != "Exists"):
        return False
    ss_effect, t_effect = ss.get("effect") or "", t.get("effect") or ""
    if t_effect != ss_effect and ss_effect != "":
        return False
    if ss_effect == "NoExecute" and ss.get("tolerationSeconds") is not None:
        if t.get("tolerationSeconds") is None or t["tolerationSeconds"] > ss["tolerationSeconds"]:
            return False
    if ss_op in ("Equal", ""):
        # kube compares the operator as given: an unset one is Equal in ss, not in t
        return t_op == "Equal" and (t.get("value") or "") == (ss.get("value") or "")
    return ss_op == "Exists"


def merge_tolerations(first: list[Obj], second: list[Obj]) -> list[Obj]:
    """kube's ``MergeTolerations``: both lists, less each toleration another one covers (of equal
    ones, the first is kept)."""
    every = list(first) + list(second)
    merged: list[Obj] = []
    for i, t in enumerate(every):
        if any(is_superset(m, t) for m in merged):
            continue
        if any(_norm(t) != _norm(t2) and is_superset(t2, t) for t2 in every[i + 1:]):
            continue
        merged.append(t)
    return merged


def verify_against_whitelist(tolerations: list[Obj], whitelist: list[Obj]) -> bool:
    if not whitelist or not tolerations:
        return True
    return all(any(is_superset(w, t) for w in whitelist) for t in tolerations)


def _tolerations(value: object) -> list[Obj]:
    return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []


class PodTolerationRestriction(Plugin):
    name = "PodTolerationRestriction"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        config = deps.configuration.get(self.name) or {}
        self.default = _tolerations(config.get("default"))
        self.whitelist = _tolerations(config.get("whitelist"))
        deps.objects.watch("", "namespaces")

    async def _namespace_tolerations(self, a: Attributes, key: str) -> list[Obj] | None:
        ns = await self.deps.objects.get("", "namespaces", "", a.namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", a.namespace)
        annotations = _d(_d(ns.get("metadata")).get("annotations"))
        if key not in annotations:
            return None
        text = annotations[key]
        if not text:
            return []
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise errors.StatusError(str(exc), reason="", code=500) from None
        if not isinstance(parsed, list) or not all(isinstance(t, dict) for t in parsed):
            raise errors.StatusError(f"json: cannot unmarshal {text} into Go value of type []v1.Toleration",
                                     reason="", code=500)
        return parsed

    async def admit(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        pod = a.obj
        spec = pod.setdefault("spec", {})
        extra: list[Obj] = []
        if a.operation == CREATE:
            found = await self._namespace_tolerations(a, NS_DEFAULT_TOLERATIONS)
            extra = list(self.default if found is None else found)
        if pod_qos_class(pod) != "BestEffort":
            extra.append({"key": MEMORY_PRESSURE, "operator": "Exists", "effect": "NoSchedule"})
        if extra:
            spec["tolerations"] = merge_tolerations(_tolerations(spec.get("tolerations")), extra)
        await self.validate(a)

    async def validate(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        tolerations = _tolerations(_d(a.obj.get("spec")).get("tolerations"))
        if not tolerations:
            return
        whitelist = await self._namespace_tolerations(a, NS_WHITELIST_TOLERATIONS)
        scope = "namespace"
        if whitelist is None:
            whitelist, scope = self.whitelist, "cluster"
        if whitelist and not verify_against_whitelist(tolerations, whitelist):
            # kube returns a plain error here (answered as a 500 without a reason)
            raise errors.StatusError("pod tolerations (possibly merged with namespace default tolerations) "
                                     f"conflict with its {scope} whitelist", reason="", code=500)


__all__ = ["PodTolerationRestriction", "is_superset", "merge_tolerations", "verify_against_whitelist"]
