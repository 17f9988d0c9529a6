"""apps/v1: deployments, replica sets, daemon sets, stateful sets, controller revisions."""

from __future__ import annotations

import re

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _Rendered, _d, _go_map, _i, _immutable, _int_or_string, _l,
    _nonnegative, _s, _semantic_equal, field_forbidden, field_invalid, field_not_supported, field_required,
    unique_causes)
from kapi.object.validation.meta import (_go_selector, _selector_is_empty, _selector_matches,
    _selector_parses, _validate_label_selector, validate_annotations, validate_labels)
from kapi.object.validation.names import _regex_error
from kapi.object.validation.pods import _validate_pod_template_spec


def _validate_selector_for_template(spec: Obj, path: str, *, what: str) -> list[Cause]:
    """The selector and template rules shared by Deployments and ReplicaSets."""
    errs: list[Cause] = []
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required(f"{path}.selector"))
    else:
        errs.extend(_validate_label_selector(selector, f"{path}.selector"))
        if not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
            errs.append(field_invalid(f"{path}.selector", _go_selector(selector),
                    f"empty selector is invalid for {what}"))
    if not _selector_parses(selector):
        # kube-apiserver does not look at the template when the selector does not parse
        errs.append(field_invalid(f"{path}.selector", _go_selector(selector), "invalid label selector"))
        return errs
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if not _selector_is_empty(selector) and not _selector_matches(selector, labels):
        errs.append(field_invalid(f"{path}.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    return errs + _validate_replica_template(spec, path, "ReplicaSet")


def _validate_replica_template(spec: Obj, path: str, kind: str) -> list[Cause]:
    tpath = f"{path}.template"
    errs = _validate_pod_template_spec(spec.get("template"), tpath)
    pod_spec = _d(_d(spec.get("template")).get("spec"))
    restart = _s(pod_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(field_not_supported(f"{tpath}.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden(f"{tpath}.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _validate_int_or_percent(value: object, path: str) -> list[Cause]:
    if isinstance(value, str):
        if not re.fullmatch("[0-9]+%", value):
            return [field_invalid(path, _int_or_string(value),
                                  _regex_error("a valid percent string must be a numeric string followed by an "
                                               "ending '%'", "[0-9]+%", "1%", "93%"))]
        return []
    number = _i(value)
    if number is None:
        return [field_invalid(path, _int_or_string(value), "must be an integer or percentage (e.g '5%%')")]
    return _nonnegative(path, number)


def _int_or_percent_value(value: object) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if re.fullmatch("[0-9]+%", value) else 0
    return _i(value) or 0


def _not_more_than_100_percent(value: object, path: str) -> list[Cause]:
    if isinstance(value, str) and re.fullmatch("[0-9]+%", value) and int(value[:-1]) > 100:
        return [field_invalid(path, _int_or_string(value), "must not be greater than 100%")]
    return []


def _deployment_spec(spec: Obj) -> list[Cause]:
    errs = _nonnegative("spec.replicas", spec.get("replicas"))
    errs.extend(_validate_selector_for_template(spec, "spec", what="deployment"))
    strategy = _d(spec.get("strategy"))
    stype = _s(strategy.get("type"))
    if stype == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errs.append(field_forbidden("spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'"))
    elif stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            errs.append(field_required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil"))
        else:
            p = "spec.strategy.rollingUpdate"
            errs.extend(_validate_int_or_percent(rolling.get("maxUnavailable"), f"{p}.maxUnavailable"))
            errs.extend(_validate_int_or_percent(rolling.get("maxSurge"), f"{p}.maxSurge"))
            unavailable = _int_or_percent_value(rolling.get("maxUnavailable"))
            if unavailable == 0 and _int_or_percent_value(rolling.get("maxSurge")) == 0:
                errs.append(field_invalid(f"{p}.maxUnavailable", _int_or_string(rolling.get("maxUnavailable")),
                                          "may not be 0 when `maxSurge` is 0"))
            errs.extend(_not_more_than_100_percent(rolling.get("maxUnavailable"), f"{p}.maxUnavailable"))
    else:
        errs.append(field_not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate")))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    errs.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    deadline = _i(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        errs.extend(_nonnegative("spec.progressDeadlineSeconds", deadline))
        if deadline <= (_i(spec.get("minReadySeconds")) or 0):
            errs.append(field_invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


def _selector_immutable(new: Obj, old: Obj) -> list[Cause]:
    selector, before = _d(new.get("spec")).get("selector"), _d(old.get("spec")).get("selector")
    return _immutable("spec.selector", selector, before, _go_selector(selector))


@unique_causes
def validate_deployment(obj: Obj) -> list[Cause]:
    return _deployment_spec(_d(obj.get("spec")))


@unique_causes
def validate_deployment_update(new: Obj, old: Obj) -> list[Cause]:
    return _deployment_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _replicaset_spec(spec: Obj) -> list[Cause]:
    errs = _nonnegative("spec.replicas", spec.get("replicas"))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    errs.extend(_validate_selector_for_template(spec, "spec", what="deployment"))
    return errs


@unique_causes
def validate_replica_set(obj: Obj) -> list[Cause]:
    return _replicaset_spec(_d(obj.get("spec")))


@unique_causes
def validate_replica_set_update(new: Obj, old: Obj) -> list[Cause]:
    return _replicaset_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _daemonset_spec(spec: Obj) -> list[Cause]:
    selector = spec.get("selector")
    errs = _validate_label_selector(selector, "spec.selector")
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if _selector_parses(selector) and not (_selector_is_empty(selector) or _selector_matches(selector, labels)):
        errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    if isinstance(selector, dict) and not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
        errs.append(field_invalid("spec.selector", _go_selector(selector), "empty selector is invalid for daemonset"))
    errs.extend(_validate_replica_template(spec, "spec", "DaemonSet"))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    strategy = _d(spec.get("updateStrategy"))
    stype = _s(strategy.get("type"))
    if stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        p = "spec.updateStrategy.rollingUpdate"
        if not isinstance(rolling, dict):
            errs.append(field_required(p))
        else:
            for key in ("maxUnavailable", "maxSurge"):
                errs.extend(_validate_int_or_percent(rolling.get(key), f"{p}.{key}"))
            for key in ("maxUnavailable", "maxSurge"):
                errs.extend(_not_more_than_100_percent(rolling.get(key), f"{p}.{key}"))
            unavailable = _int_or_percent_value(rolling.get("maxUnavailable")) != 0
            surge = _int_or_percent_value(rolling.get("maxSurge")) != 0
            if unavailable and surge:
                errs.append(field_invalid(f"{p}.maxSurge", _int_or_string(rolling.get("maxSurge")),
                                          "may not be set when maxUnavailable is non-zero"))
            elif not unavailable and not surge:
                errs.append(field_required(f"{p}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif stype != "OnDelete":
        errs.append(field_not_supported("spec.updateStrategy", strategy, ("RollingUpdate", "OnDelete")))
    errs.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    return errs


@unique_causes
def validate_daemon_set(obj: Obj) -> list[Cause]:
    return _daemonset_spec(_d(obj.get("spec")))


@unique_causes
def validate_daemon_set_update(new: Obj, old: Obj) -> list[Cause]:
    return _daemonset_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _statefulset_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    policy = _s(spec.get("podManagementPolicy"))
    if not policy:
        errs.append(field_required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(field_invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = _d(spec.get("updateStrategy"))
    stype = _s(strategy.get("type"))
    if not stype:
        errs.append(field_required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(field_invalid("spec.updateStrategy.rollingUpdate", strategy["rollingUpdate"],
                                      "only allowed for updateStrategy 'RollingUpdate'"))
    elif stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if isinstance(rolling, dict):
            p = "spec.updateStrategy.rollingUpdate"
            errs.extend(_nonnegative(f"{p}.partition", rolling.get("partition")))
            if rolling.get("maxUnavailable") is not None:
                errs.extend(_validate_int_or_percent(rolling["maxUnavailable"], f"{p}.maxUnavailable"))
                if _int_or_percent_value(rolling["maxUnavailable"]) == 0:
                    errs.append(field_invalid(f"{p}.maxUnavailable", _int_or_string(rolling["maxUnavailable"]),
                            "cannot be 0"))
                errs.extend(_not_more_than_100_percent(rolling["maxUnavailable"], f"{p}.maxUnavailable"))
    else:
        errs.append(field_invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = _s(retention.get(key))
            if value not in ("Retain", "Delete"):
                errs.append(field_not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", value,
                        ("Retain", "Delete")))
    errs.extend(_nonnegative("spec.replicas", spec.get("replicas")))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    if isinstance(spec.get("ordinals"), dict):
        errs.extend(_nonnegative("spec.ordinals.start", spec["ordinals"].get("start")))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required("spec.selector"))
    else:
        errs.extend(_validate_label_selector(selector, "spec.selector"))
        if not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
            errs.append(field_invalid("spec.selector", _go_selector(selector),
                    "empty selector is invalid for statefulset"))
    template = _d(spec.get("template"))
    md = _d(template.get("metadata"))
    if not _selector_parses(selector):
        errs.append(field_invalid("spec.selector", _go_selector(selector), ""))
    else:
        if not _selector_is_empty(selector) and not _selector_matches(selector, md.get("labels")):
            errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(md.get("labels"))),
                                      "`selector` does not match template `labels`"))
        # kube-apiserver checks only the template's metadata here, not its pod spec.
        errs.extend(validate_labels(md.get("labels"), "spec.template.labels"))
        errs.extend(validate_annotations(md.get("annotations"), "spec.template.annotations"))
    pod_spec = _d(template.get("spec"))
    restart = _s(pod_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(field_not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


@unique_causes
def validate_stateful_set(obj: Obj) -> list[Cause]:
    return _statefulset_spec(_d(obj.get("spec")))


_STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy",
                        "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


@unique_causes
def validate_stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs = _statefulset_spec(spec)
    if not _semantic_equal({k: v for k, v in spec.items() if k not in _STATEFULSET_MUTABLE},
                           {k: v for k, v in old_spec.items() if k not in _STATEFULSET_MUTABLE}):
        errs.append(field_forbidden("spec", "updates to statefulset spec for fields other than 'replicas', "
                                            "'ordinals', 'template', 'updateStrategy', "
                                            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                            "forbidden"))
    return errs


@unique_causes
def validate_controller_revision(obj: Obj) -> list[Cause]:
    errs = [] if obj.get("data") is not None else [field_required("data", "data is mandatory")]
    return errs + _nonnegative("revision", obj.get("revision"))


@unique_causes
def validate_controller_revision_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_controller_revision(new) + _immutable("data", new.get("data"), old.get("data"))
