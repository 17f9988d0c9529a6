"""autoscaling/v2 and autoscaling/v1: HorizontalPodAutoscalers, one stored object served in two shapes.

Objects are stored as autoscaling/v2 (kube's storage version). The v1 resource converts on the way in
and out as kube's ``pkg/apis/autoscaling/v1/conversion.go``: ``targetCPUUtilizationPercentage`` is the
CPU utilization metric; what v1 cannot express (other metrics, their statuses, conditions, behavior)
rides in the ``autoscaling.alpha.kubernetes.io/*`` annotations so a v1 client's update loses nothing; a
v1 object with no metric gets the CPU 80 % default. Validation, defaults and the Table are v2's.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from kapi.encoding.tables import autoscaling as tables
from kapi.errors import Cause
from kapi.object.defaults.autoscaling import DEFAULT_CPU_UTILIZATION, default_hpa_v1, default_hpa_v2
from kapi.object.validation.autoscaling import validate_hpa, validate_hpa_status_update, validate_hpa_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

GROUP: Final = "autoscaling"
METRIC_SPECS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRIC_SPECS_ANNOTATION, METRIC_STATUSES_ANNOTATION, CONDITIONS_ANNOTATION, BEHAVIOR_ANNOTATION)
_ALL = ("all",)


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ------------------------------------------------------------- metric specs


def _metric_spec_to_v1(m: Obj) -> Obj:
    """A v2 MetricSpec as autoscaling/v1's (the annotation's) MetricSpec."""
    kind = m.get("type")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = m.get(field) or {}
        t = src.get("target") or {}
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                 "targetAverageUtilization": t.get("averageUtilization"),
                                 "targetAverageValue": t.get("averageValue")})
    elif kind == "Pods":
        src = m.get("pods") or {}
        metric = src.get("metric") or {}
        out["pods"] = _drop_none({"metricName": metric.get("name"), "selector": metric.get("selector"),
                                  "targetAverageValue": (src.get("target") or {}).get("averageValue")})
    elif kind == "Object":
        src = m.get("object") or {}
        metric, t = src.get("metric") or {}, src.get("target") or {}
        out["object"] = _drop_none({"target": src.get("describedObject"), "metricName": metric.get("name"),
                                    "targetValue": t.get("value"), "selector": metric.get("selector"),
                                    "averageValue": t.get("averageValue")})
    elif kind == "External":
        src = m.get("external") or {}
        metric, t = src.get("metric") or {}, src.get("target") or {}
        out["external"] = _drop_none({"metricName": metric.get("name"), "metricSelector": metric.get("selector"),
                                      "targetValue": t.get("value"), "targetAverageValue": t.get("averageValue")})
    return out


def _metric_spec_from_v1(m: Obj) -> Obj:
    kind = m.get("type")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = m.get(field) or {}
        if src.get("targetAverageUtilization") is not None:
            target = {"type": "Utilization", "averageUtilization": src["targetAverageUtilization"]}
        else:
            target = _drop_none({"type": "AverageValue", "averageValue": src.get("targetAverageValue")})
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"), "target": target})
    elif kind == "Pods":
        src = m.get("pods") or {}
        out["pods"] = {"metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                       "target": _drop_none({"type": "AverageValue", "averageValue": src.get("targetAverageValue")})}
    elif kind == "Object":
        src = m.get("object") or {}
        if src.get("averageValue") is not None:
            target = {"type": "AverageValue", "averageValue": src["averageValue"]}
        else:
            target = _drop_none({"type": "Value", "value": src.get("targetValue")})
        out["object"] = {"describedObject": src.get("target") or {},
                         "metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                         "target": target}
    elif kind == "External":
        src = m.get("external") or {}
        if src.get("targetAverageValue") is not None:
            target = {"type": "AverageValue", "averageValue": src["targetAverageValue"]}
        else:
            target = _drop_none({"type": "Value", "value": src.get("targetValue")})
        out["external"] = {"metric": _drop_none({"name": src.get("metricName"),
                                                 "selector": src.get("metricSelector")}), "target": target}
    return out


# ----------------------------------------------------------- metric statuses


def _metric_status_to_v1(m: Obj) -> Obj:
    kind = m.get("type")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = m.get(field) or {}
        c = src.get("current") or {}
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                 "currentAverageUtilization": c.get("averageUtilization"),
                                 "currentAverageValue": c.get("averageValue")})
    elif kind == "Pods":
        src = m.get("pods") or {}
        metric = src.get("metric") or {}
        out["pods"] = _drop_none({"metricName": metric.get("name"), "selector": metric.get("selector"),
                                  "currentAverageValue": (src.get("current") or {}).get("averageValue")})
    elif kind == "Object":
        src = m.get("object") or {}
        metric, c = src.get("metric") or {}, src.get("current") or {}
        out["object"] = _drop_none({"target": src.get("describedObject"), "metricName": metric.get("name"),
                                    "currentValue": c.get("value"), "selector": metric.get("selector"),
                                    "averageValue": c.get("averageValue")})
    elif kind == "External":
        src = m.get("external") or {}
        metric, c = src.get("metric") or {}, src.get("current") or {}
        out["external"] = _drop_none({"metricName": metric.get("name"), "metricSelector": metric.get("selector"),
                                      "currentValue": c.get("value"), "currentAverageValue": c.get("averageValue")})
    return out


def _metric_status_from_v1(m: Obj) -> Obj:
    kind = m.get("type")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = m.get(field) or {}
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"), "current": _drop_none(
            {"averageUtilization": src.get("currentAverageUtilization"),
             "averageValue": src.get("currentAverageValue")})})
    elif kind == "Pods":
        src = m.get("pods") or {}
        out["pods"] = {"metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                       "current": _drop_none({"averageValue": src.get("currentAverageValue")})}
    elif kind == "Object":
        src = m.get("object") or {}
        out["object"] = {"describedObject": src.get("target") or {},
                         "metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                         "current": _drop_none({"value": src.get("currentValue"),
                                                "averageValue": src.get("averageValue")})}
    elif kind == "External":
        src = m.get("external") or {}
        out["external"] = {"metric": _drop_none({"name": src.get("metricName"),
                                                 "selector": src.get("metricSelector")}),
                           "current": _drop_none({"value": src.get("currentValue"),
                                                  "averageValue": src.get("currentAverageValue")})}
    return out


def _is_cpu_utilization(m: Obj) -> bool:
    res = m.get("resource") or {}
    return m.get("type") == "Resource" and res.get("name") == "cpu" and \
        (res.get("target") or {}).get("averageUtilization") is not None


# --------------------------------------------------------------- objects


def hpa_to_v1(obj: Obj) -> Obj:
    """Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler (from the v2 shape)."""
    out: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "HorizontalPodAutoscaler"}
    md = copy.deepcopy(obj.get("metadata") or {})
    annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k not in _ROUND_TRIP}
    spec, status = obj.get("spec") or {}, obj.get("status")
    v1spec: Obj = _drop_none({"scaleTargetRef": spec.get("scaleTargetRef"), "minReplicas": spec.get("minReplicas"),
                              "maxReplicas": spec.get("maxReplicas")})
    other = []
    for m in spec.get("metrics") or []:
        if _is_cpu_utilization(m):
            v1spec["targetCPUUtilizationPercentage"] = m["resource"]["target"]["averageUtilization"]
            continue
        other.append(_metric_spec_to_v1(m))
    if other:
        annotations[METRIC_SPECS_ANNOTATION] = _go_json(other)
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR_ANNOTATION] = _go_json(spec["behavior"])
    out["metadata"] = md
    out["spec"] = v1spec
    if status is not None:
        v1status: Obj = _drop_none({"observedGeneration": status.get("observedGeneration"),
                                    "lastScaleTime": status.get("lastScaleTime"),
                                    "currentReplicas": status.get("currentReplicas", 0),
                                    "desiredReplicas": status.get("desiredReplicas", 0)})
        current = status.get("currentMetrics") or []
        for m in current:
            if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
                util = ((m.get("resource") or {}).get("current") or {}).get("averageUtilization")
                if util is not None:
                    v1status["currentCPUUtilizationPercentage"] = util
        if current:
            annotations[METRIC_STATUSES_ANNOTATION] = _go_json([_metric_status_to_v1(m) for m in current])
        if status.get("conditions"):
            annotations[CONDITIONS_ANNOTATION] = _go_json(status["conditions"])
        out["status"] = v1status
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    return out


def _annotation_list(annotations: dict[str, Any], key: str) -> list[Any] | None:
    try:
        value = json.loads(annotations[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value if isinstance(value, list) else None


def hpa_from_v1(obj: Obj) -> Obj:
    """Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler (to the v2 shape)."""
    out: Obj = {"apiVersion": f"{GROUP}/v2", "kind": "HorizontalPodAutoscaler"}
    md = copy.deepcopy(obj.get("metadata") or {})
    given = md.get("annotations") or {}
    annotations = {k: v for k, v in given.items() if k not in _ROUND_TRIP}
    spec, status = obj.get("spec") or {}, obj.get("status")
    v2spec: Obj = _drop_none({"scaleTargetRef": spec.get("scaleTargetRef"), "minReplicas": spec.get("minReplicas"),
                              "maxReplicas": spec.get("maxReplicas")})
    metrics: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    other = _annotation_list(given, METRIC_SPECS_ANNOTATION)
    if other is not None:
        metrics = [_metric_spec_from_v1(m) for m in other if isinstance(m, dict)] + metrics
    if not metrics:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    v2spec["metrics"] = metrics
    try:
        behavior = json.loads(given[BEHAVIOR_ANNOTATION])
        if isinstance(behavior, dict):
            v2spec["behavior"] = behavior
    except (KeyError, TypeError, ValueError):
        pass
    out["metadata"] = md
    out["spec"] = v2spec
    if status is not None:
        v2status: Obj = _drop_none({"observedGeneration": status.get("observedGeneration"),
                                    "lastScaleTime": status.get("lastScaleTime"),
                                    "currentReplicas": status.get("currentReplicas"),
                                    "desiredReplicas": status.get("desiredReplicas", 0)})
        if status.get("currentCPUUtilizationPercentage") is not None:
            v2status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
        current = _annotation_list(given, METRIC_STATUSES_ANNOTATION)
        if current is not None:
            v2status["currentMetrics"] = [_metric_status_from_v1(m) for m in current if isinstance(m, dict)]
        conditions = _annotation_list(given, CONDITIONS_ANNOTATION)
        if conditions is not None:
            v2status["conditions"] = conditions
        out["status"] = v2status
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    return out


class HorizontalPodAutoscalerStrategy(Strategy):
    """autoscaling/v2, the storage version."""

    tracks_generation = True
    printer = tables.HORIZONTAL_POD_AUTOSCALER

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_hpa_v2(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_hpa(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_hpa_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_hpa_status_update(new, old)


class HorizontalPodAutoscalerV1Strategy(Strategy):
    """autoscaling/v1: converted to and from the stored v2 object; validated as that object."""

    tracks_generation = True
    printer = tables.v1_printer(hpa_from_v1)

    def default(self, obj: Obj, old: Obj | None) -> None:
        # The object as kube answers it: defaulted, through the stored (v2) form and back (the CPU 80 %
        # default, the round-trip annotations), so a write's response is what a read gives.
        default_hpa_v1(obj, old)
        converted = hpa_to_v1(hpa_from_v1(obj))
        obj.clear()
        obj.update(converted)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_hpa(hpa_from_v1(obj))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_hpa_update(hpa_from_v1(new), hpa_from_v1(old))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_hpa_status_update(hpa_from_v1(new), hpa_from_v1(old))

    def to_storage(self, obj: Obj) -> Obj:
        return hpa_from_v1(obj)

    def from_storage(self, obj: Obj) -> Obj:
        return hpa_to_v1(obj)


HORIZONTAL_POD_AUTOSCALERS: Final = Resource(
    group=GROUP, version="v2", resource="horizontalpodautoscalers", kind="HorizontalPodAutoscaler",
    short_names=("hpa",), categories=_ALL, subresources=("status",), strategy=HorizontalPodAutoscalerStrategy())
HORIZONTAL_POD_AUTOSCALERS_V1: Final = Resource(
    group=GROUP, version="v1", resource="horizontalpodautoscalers", kind="HorizontalPodAutoscaler",
    short_names=("hpa",), categories=_ALL, subresources=("status",), storage_version="v2",
    strategy=HorizontalPodAutoscalerV1Strategy())
