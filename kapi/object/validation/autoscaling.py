"""autoscaling/v2 HorizontalPodAutoscalers (kube's pkg/apis/autoscaling/validation): the scale target,
replica bounds, metrics and their targets, behavior.

v1 objects are validated as the v2 object they convert to (kube validates the internal object).
"""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _i, _l, _s, field_forbidden, field_invalid,
    field_not_supported, field_required, unique_causes)
from kapi.object.validation.names import is_valid_path_segment_name
from kapi.object.validation.quantity import QUANTITY_FORMAT_ERROR, parse_quantity

_METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}
_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600


def validate_cross_version_object_reference(ref: object, path: str) -> list[Cause]:
    ref = _d(ref)
    errs: list[Cause] = []
    kind, name = _s(ref.get("kind")), _s(ref.get("name"))
    if not kind:
        errs.append(field_required(f"{path}.kind"))
    else:
        errs += [field_invalid(f"{path}.kind", kind, m) for m in is_valid_path_segment_name(kind)]
    if not name:
        errs.append(field_required(f"{path}.name"))
    else:
        errs += [field_invalid(f"{path}.name", name, m) for m in is_valid_path_segment_name(name)]
    return errs


def _positive_quantity(value: object, path: str) -> list[Cause]:
    if value is None:
        return []
    qty = parse_quantity(value)
    if qty is None:
        return [field_invalid(path, value, QUANTITY_FORMAT_ERROR)]
    return [field_invalid(path, value, "must be positive")] if qty <= 0 else []


def _metric_target(target: object, path: str) -> list[Cause]:
    t = _d(target)
    errs: list[Cause] = []
    kind = _s(t.get("type"))
    if not kind:
        errs.append(field_required(f"{path}.type", "must specify a metric target type"))
    elif kind not in _TARGET_TYPES:
        errs.append(field_invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    errs += _positive_quantity(t.get("value"), f"{path}.value")
    errs += _positive_quantity(t.get("averageValue"), f"{path}.averageValue")
    util = _i(t.get("averageUtilization"))
    if util is not None and util < 1:
        errs.append(field_invalid(f"{path}.averageUtilization", util, "must be greater than 0"))
    return errs


def _metric_identifier(metric: object, path: str) -> list[Cause]:
    if not _s(_d(metric).get("name")):
        return [field_required(f"{path}.name", "must specify a metric name")]
    return []


def _resource_source(src: Obj, path: str, container: bool) -> list[Cause]:
    errs: list[Cause] = []
    if not _s(src.get("name")):
        errs.append(field_required(f"{path}.name", "must specify a resource name"))
    if container and not _s(src.get("container")):
        errs.append(field_required(f"{path}.container", "must specify a container"))
    target = _d(src.get("target"))
    errs += _metric_target(target, f"{path}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(field_required(f"{path}.target.averageUtilization",
                                   "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(field_forbidden(f"{path}.target.averageValue",
                                    "may not set both a target raw value and a target utilization"))
    return errs


def _metric_spec(spec: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    kind = _s(spec.get("type"))
    if not kind:
        return [field_required(f"{path}.type", "must specify a metric source type")]
    if kind not in _METRIC_TYPES:
        return [field_not_supported(f"{path}.type", kind, _METRIC_TYPES)]
    present = [f for f in _SOURCE_FIELDS.values() if spec.get(f) is not None]
    field = _SOURCE_FIELDS[kind]
    if field not in present:
        errs.append(field_required(f"{path}.{field}", "must populate information for the given metric source"))
        return errs
    if len(present) > 1:
        errs.append(field_forbidden(path, "must populate the given metric source only"))
    src, p = _d(spec.get(field)), f"{path}.{field}"
    if kind in ("Resource", "ContainerResource"):
        errs += _resource_source(src, p, kind == "ContainerResource")
    elif kind == "Pods":
        errs += _metric_identifier(src.get("metric"), f"{p}.metric")
        target = _d(src.get("target"))
        errs += _metric_target(target, f"{p}.target")
        if target.get("averageValue") is None:
            errs.append(field_required(f"{p}.target.averageValue", "must specify a positive target averageValue"))
    elif kind == "Object":
        errs += validate_cross_version_object_reference(src.get("describedObject"), f"{p}.describedObject")
        errs += _metric_identifier(src.get("metric"), f"{p}.metric")
        target = _d(src.get("target"))
        errs += _metric_target(target, f"{p}.target")
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(field_required(f"{p}.target.averageValue", "must set either a target value or averageValue"))
    elif kind == "External":
        errs += _metric_identifier(src.get("metric"), f"{p}.metric")
        target = _d(src.get("target"))
        errs += _metric_target(target, f"{p}.target")
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(field_required(f"{p}.target.averageValue", "must set either a target value for metric or a "
                                       "per-pod target"))
        if target.get("value") is not None and target.get("averageValue") is not None:
            errs.append(field_forbidden(f"{p}.target.value", "may not set both a target value for metric and a "
                                        "per-pod target"))
    return errs


def _scaling_rules(rules: object, path: str) -> list[Cause]:
    if not isinstance(rules, dict):
        return []
    errs: list[Cause] = []
    window = _i(rules.get("stabilizationWindowSeconds"))
    if window is not None and not 0 <= window <= MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(field_invalid(f"{path}.stabilizationWindowSeconds", window,
                                  f"must be greater than or equal to zero and less than or equal to "
                                  f"{MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Max", "Min", "Disabled"):
        errs.append(field_not_supported(f"{path}.selectPolicy", select, ("Disabled", "Max", "Min")))
    policies = _l(rules.get("policies"))
    if not policies and select != "Disabled":
        errs.append(field_required(f"{path}.policies", "must specify at least one Policy"))
    for i, pol in enumerate(policies):
        pol, pp = _d(pol), f"{path}.policies[{i}]"
        if pol.get("type") not in ("Pods", "Percent"):
            errs.append(field_not_supported(f"{pp}.type", pol.get("type"), ("Percent", "Pods")))
        value = _i(pol.get("value"))
        if value is None or value <= 0:
            errs.append(field_invalid(f"{pp}.value", value or 0, "must be greater than zero"))
        period = _i(pol.get("periodSeconds"))
        if period is None or not 0 < period <= MAX_PERIOD_SECONDS:
            errs.append(field_invalid(f"{pp}.periodSeconds", period or 0,
                                      f"must be greater than zero and less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs


@unique_causes
def validate_hpa(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs = validate_cross_version_object_reference(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    min_r, max_r = _i(spec.get("minReplicas")), _i(spec.get("maxReplicas")) or 0
    if min_r is not None and min_r < 1:
        errs.append(field_invalid("spec.minReplicas", min_r, "must be greater than or equal to 1"))
    if max_r < 1:
        errs.append(field_invalid("spec.maxReplicas", max_r, "must be greater than 0"))
    if min_r is not None and max_r < min_r:
        errs.append(field_invalid("spec.maxReplicas", max_r, "must be greater than or equal to `minReplicas`"))
    for i, metric in enumerate(_l(spec.get("metrics"))):
        errs += _metric_spec(_d(metric), f"spec.metrics[{i}]")
    behavior = _d(spec.get("behavior"))
    errs += _scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
    errs += _scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return errs


@unique_causes
def validate_hpa_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_hpa(new)


@unique_causes
def validate_hpa_status_update(new: Obj, old: Obj) -> list[Cause]:
    status = _d(new.get("status"))
    errs: list[Cause] = []
    for field in ("currentReplicas", "desiredReplicas"):
        v = _i(status.get(field))
        if v is not None and v < 0:
            errs.append(field_invalid(f"status.{field}", v, "must be greater than or equal to 0"))
    return errs
