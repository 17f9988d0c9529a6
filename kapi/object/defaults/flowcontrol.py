"""flowcontrol.apiserver.k8s.io/v1: FlowSchemas and PriorityLevelConfigurations (kube's v1 ``defaults.go``)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _obj, defaulter

FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE = 1000
DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30
DEFAULT_QUEUES = 64
DEFAULT_HAND_SIZE = 8
DEFAULT_QUEUE_LENGTH_LIMIT = 50


def _zero(value: object) -> bool:
    """A Go int32 without a pointer: absent, null and 0 are all zero."""
    return value is None or value == 0


@defaulter
def default_flow_schema(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")  # a struct, not a pointer: always defaulted
    if _zero(spec.get("matchingPrecedence")):
        spec["matchingPrecedence"] = FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE


@defaulter
def default_priority_level_configuration(obj: Obj, old: Obj | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    limited = spec.get("limited")
    if isinstance(limited, dict):
        # v1's nominalConcurrencyShares is a pointer: an explicit 0 stays (1.29+).
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = DEFAULT_NOMINAL_CONCURRENCY_SHARES
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        response = limited.get("limitResponse")
        queuing = response.get("queuing") if isinstance(response, dict) else None
        if isinstance(queuing, dict):
            for key, value in (("handSize", DEFAULT_HAND_SIZE), ("queues", DEFAULT_QUEUES),
                               ("queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT)):
                if _zero(queuing.get(key)):
                    queuing[key] = value
    exempt = spec.get("exempt")
    if isinstance(exempt, dict):
        for key in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt.get(key) is None:
                exempt[key] = 0
