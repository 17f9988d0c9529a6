"""autoscaling/v2 HorizontalPodAutoscaler defaults (kube's pkg/apis/autoscaling/v2/defaults.go)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

DEFAULT_CPU_UTILIZATION = 80
_SCALING_PERIOD = 15


def _rules(rules: Any, default: Obj) -> Obj:
    """copyHPAScalingRules: the given rules' set fields over the defaults."""
    out = dict(default)
    if isinstance(rules, dict):
        for k in ("stabilizationWindowSeconds", "selectPolicy", "policies"):
            if rules.get(k) is not None:
                out[k] = rules[k]
        for k, v in rules.items():
            out.setdefault(k, v)
    return {k: v for k, v in out.items() if v is not None}


def default_hpa_v2(obj: Obj, old: Obj | None = None) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), {
            "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": _SCALING_PERIOD},
                         {"type": "Percent", "value": 100, "periodSeconds": _SCALING_PERIOD}]})
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), {
            "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": _SCALING_PERIOD}]})


def default_hpa_v1(obj: Obj, old: Obj | None = None) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
