"""Table printers of the autoscaling group (``pkg/printers/internalversion/printers.go``).

Rows are printed from the autoscaling/v2 shape (kube prints the internal object, which is v2's);
the v1 printer converts first (``v1_printer``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_int, as_list, as_map, as_str, column, since

_COLUMNS: Final = (
    NAME,
    column("Reference", "string", "scaleTargetRef points to the target resource to scale, and is used to the "
           "pods for which metrics should be collected, as well as to actually change the replica count."),
    column("Targets", "string", "metrics contains the specifications for which to use to calculate the desired "
           "replica count (the maximum replica count across all metrics will be used).  The desired replica count "
           "is calculated multiplying the ratio between the target value and the current value by the current "
           "number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See "
           "the individual metric source types for more information about how each type of metric must respond. "
           "If not set, the default metric will be set to 80% average CPU utilization."),
    column("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the "
           "autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature "
           "gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is "
           "active as long as at least one metric value is available."),
    column("MaxPods", "string", "maxReplicas is the upper limit for the number of replicas to which the "
           "autoscaler can scale up. It cannot be less that minReplicas."),
    column("Replicas", "string", "currentReplicas is current number of replicas of pods managed by this "
           "autoscaler, as last seen by the autoscaler."),
    AGE,
)


def _q(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def format_hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    """formatHPAMetrics: at most two targets, ``current/target`` each."""
    if not specs:
        return "<none>"
    out: list[str] = []
    for i, spec in enumerate(as_map(s) for s in specs):
        st = as_map(statuses[i]) if i < len(statuses) else {}
        kind = spec.get("type")
        field = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
                 "ContainerResource": "containerResource"}.get(as_str(kind))
        if field is None:
            out.append("<unknown type>")
            continue
        src, cur = as_map(spec.get(field)), as_map(as_map(st.get(field)).get("current"))
        target = as_map(src.get("target"))
        if kind in ("Resource", "ContainerResource"):
            name = as_str(src.get("name"))
            if target.get("averageValue") is not None:
                current = _q(cur["averageValue"]) if cur.get("averageValue") is not None else "<unknown>"
                out.append(f"{name}: {current}/{_q(target['averageValue'])}")
            else:
                current = f"{as_int(cur['averageUtilization'])}%" if cur.get("averageUtilization") is not None \
                    else "<unknown>"
                tgt = f"{as_int(target['averageUtilization'])}%" if target.get("averageUtilization") is not None \
                    else "<auto>"
                out.append(f"{name}: {current}/{tgt}")
        elif kind == "Pods":
            current = _q(cur["averageValue"]) if cur.get("averageValue") is not None else "<unknown>"
            out.append(f"{current}/{_q(target.get('averageValue'))}")
        elif target.get("averageValue") is not None:
            current = _q(cur["averageValue"]) if cur.get("averageValue") is not None else "<unknown>"
            out.append(f"{current}/{_q(target['averageValue'])} (avg)")
        else:
            current = _q(cur["value"]) if cur.get("value") is not None else "<unknown>"
            out.append(f"{current}/{_q(target.get('value'))}")
    if len(out) > 2:
        return f"{', '.join(out[:2])} + {len(out) - 2} more..."
    return ", ".join(out)


def _hpa_row(obj: Obj, now: float) -> list[Any]:
    md, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    ref = as_map(spec.get("scaleTargetRef"))
    min_pods: Any = "<unset>" if spec.get("minReplicas") is None else as_int(spec.get("minReplicas"))
    return [as_str(md.get("name")), f"{as_str(ref.get('kind'))}/{as_str(ref.get('name'))}",
            format_hpa_metrics(as_list(spec.get("metrics")), as_list(status.get("currentMetrics"))),
            min_pods, as_int(spec.get("maxReplicas")), as_int(status.get("currentReplicas")),
            since(md.get("creationTimestamp"), now)]


HORIZONTAL_POD_AUTOSCALER: Final = Printer(_COLUMNS, _hpa_row)


def v1_printer(to_v2: Callable[[Any], Any]) -> Printer:
    """The same columns for autoscaling/v1 objects, printed from their v2 form."""
    return Printer(_COLUMNS, lambda obj, now: _hpa_row(to_v2(obj), now))
