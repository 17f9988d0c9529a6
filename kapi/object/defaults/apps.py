"""apps/v1: deployments, replica sets, daemon sets, stateful sets."""

from __future__ import annotations

from kapi.object.defaults.core import default_persistent_volume_claim
from kapi.object.defaults.fields import Obj, _dicts, _obj, _unset, defaulter
from kapi.object.defaults.pods import _default_template


@defaulter
def default_deployment(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _obj(spec, "strategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _obj(strategy, "rollingUpdate")
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _default_template(spec)


@defaulter
def default_replica_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


@defaulter
def default_daemon_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    strategy = _obj(spec, "updateStrategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _obj(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _default_template(spec)


@defaulter
def default_stateful_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _obj(spec, "updateStrategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
        _obj(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict) and rolling.get("partition") is None:
        rolling["partition"] = 0
    retention = _obj(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        if _unset(retention, key):
            retention[key] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _default_template(spec)
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        # embedded claims are full PersistentVolumeClaims, type meta and status included
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        default_persistent_volume_claim(claim, None)
