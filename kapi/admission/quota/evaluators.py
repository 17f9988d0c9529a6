"""What quota measures per object (kube's pkg/quota/v1/evaluator/core and apiserver/pkg/quota/v1/generic).

An evaluator knows, for one resource, which quota resource names it measures
(``matching_resources``), whether a write changes usage (``handles``), whether an object falls
in a quota's scopes (``matches_scope``), the usage of one object (``usage``), and the admission
constraints on it (``constraints``: the pod's "must specify"). Pods, services and
persistentvolumeclaims have their own; every other resource is counted (``count/<resource>[.<group>]``,
and the legacy names configmaps, secrets, replicationcontrollers, resourcequotas). The admission
plugin and the ResourceQuota controller share them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Iterable, Mapping

from kapi.admission.quota.resources import ONE, ZERO, Quantity, ResourceList, add, parse_list
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
HUGEPAGES_PREFIX = "hugepages-"

# The scopes a quota may name (kube's ResourceQuotaScope)
TERMINATING = "Terminating"
NOT_TERMINATING = "NotTerminating"
BEST_EFFORT = "BestEffort"
NOT_BEST_EFFORT = "NotBestEffort"
PRIORITY_CLASS = "PriorityClass"
CROSS_NAMESPACE_POD_AFFINITY = "CrossNamespacePodAffinity"

# Object counts by their legacy names as well (kube's legacyObjectCountAliases)
LEGACY_COUNT_NAMES: Mapping[tuple[str, str], str] = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}

# Not quota-ed (kube's DefaultIgnoredResources): virtual resources, and events.
IGNORED: frozenset[tuple[str, str]] = frozenset((
    ("", "bindings"), ("", "componentstatuses"), ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"), ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"), ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"), ("", "events"), ("events.k8s.io", "events"),
))


def object_count_name(group: str, resource: str) -> str:
    """``count/<resource>`` for the core group, ``count/<resource>.<group>`` otherwise."""
    return f"count/{resource}" if not group else f"count/{resource}.{group}"


def parse_count_name(name: str) -> tuple[str, str] | None:
    """The (group, resource) a ``count/...`` name counts."""
    if not name.startswith("count/"):
        return None
    rest = name[len("count/"):]
    resource, _, group = rest.partition(".")
    return (group, resource) if resource else None


def scope_selectors(quota: Obj) -> list[Obj]:
    """The quota's scopes and scopeSelector as requirements (kube's getScopeSelectorsFromQuota)."""
    spec = quota.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    out += [dict(r) for r in ((spec.get("scopeSelector") or {}).get("matchExpressions") or ()) if isinstance(r, dict)]
    return out


class Evaluator:
    """An object count: ``count/<resource>`` (and a legacy name) is one per object; no scopes match."""

    def __init__(self, group: str, resource: str) -> None:
        self.group = group
        self.resource = resource
        names = [object_count_name(group, resource)]
        if (group, resource) in LEGACY_COUNT_NAMES:
            names.append(LEGACY_COUNT_NAMES[(group, resource)])
        self.names: tuple[str, ...] = tuple(names)

    def handles(self, operation: str, subresource: str) -> bool:
        return operation == CREATE and not subresource

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in self.names]

    def matches_scope(self, selector: Obj, obj: Obj) -> bool:
        return False

    def matches(self, quota: Obj, obj: Obj) -> bool:
        """kube's generic Matches: the quota limits something this evaluator measures, and the object
        is in all its scopes."""
        hard = (quota.get("status") or {}).get("hard") or {}
        if not self.matching_resources(hard):
            return False
        return all(self.matches_scope(sel, obj) for sel in scope_selectors(quota))

    def constraints(self, required: list[str], obj: Obj) -> str:
        """What the object lacks for the quota's resources ("" when nothing)."""
        return ""

    def usage(self, obj: Obj, now: dt.datetime | None = None) -> ResourceList:
        return {name: ONE for name in self.names}

    def usage_stats(self, objects: Iterable[Obj], selectors: list[Obj], resources: list[str],
                    now: dt.datetime | None = None) -> ResourceList:
        """kube's CalculateUsageStats: each tracked resource from zero, plus the usage of every object
        in all the scopes."""
        used: ResourceList = {name: ZERO for name in resources}
        for obj in objects:
            if all(self.matches_scope(sel, obj) for sel in selectors):
                used = add(used, self.usage(obj, now))
        return used


# ----------------------------------------------------------------- services

class ServiceEvaluator(Evaluator):
    NAMES = ("count/services", "services", "services.loadbalancers", "services.nodeports")

    def __init__(self) -> None:
        super().__init__("", "services")
        self.names = self.NAMES

    def handles(self, operation: str, subresource: str) -> bool:
        return operation in (CREATE, UPDATE) and not subresource

    def usage(self, obj: Obj, now: dt.datetime | None = None) -> ResourceList:
        spec = obj.get("spec") or {}
        ports = spec.get("ports") or []
        out: ResourceList = {"services": ONE, "count/services": ONE, "services.loadbalancers": ZERO,
                             "services.nodeports": ZERO}
        kind = spec.get("type")
        if kind == "NodePort":
            out["services.nodeports"] = Quantity(len(ports))
        elif kind == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") is False:
                out["services.nodeports"] = Quantity(sum(1 for p in ports if isinstance(p, dict) and p.get("nodePort")))
            else:
                out["services.nodeports"] = Quantity(len(ports))
            out["services.loadbalancers"] = ONE
        return out


# ----------------------------------------------------------------- persistentvolumeclaims

def claim_class(pvc: Obj) -> str:
    """The claim's storage class: the beta annotation, else spec.storageClassName."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return str(annotations["volume.beta.kubernetes.io/storage-class"])
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


class PersistentVolumeClaimEvaluator(Evaluator):
    NAMES = ("persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage")

    def __init__(self) -> None:
        super().__init__("", "persistentvolumeclaims")
        self.names = self.NAMES

    def handles(self, operation: str, subresource: str) -> bool:
        return operation in (CREATE, UPDATE) and not subresource

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for n in names:
            if n in self.NAMES:
                out.append(n)
            elif STORAGE_CLASS_SUFFIX in n and (n.endswith("requests.storage") or n.endswith("persistentvolumeclaims")):
                out.append(n)
        return out

    def usage(self, obj: Obj, now: dt.datetime | None = None) -> ResourceList:
        out: ResourceList = {"persistentvolumeclaims": ONE, "count/persistentvolumeclaims": ONE}
        cls = claim_class(obj)
        if cls:
            out[f"{cls}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = ONE
        storage = _claim_storage(obj)
        if storage is not None:
            out["requests.storage"] = storage
            if cls:
                out[f"{cls}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
        return out


def _claim_storage(pvc: Obj) -> Quantity | None:
    """The request, or the allocated size when larger (RecoverVolumeExpansionFailure), in whole bytes."""
    requests = parse_list(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    if "storage" not in requests:
        return None
    result = requests["storage"].round_up()
    allocated = parse_list((pvc.get("status") or {}).get("allocatedResources")).get("storage")
    if allocated is not None and allocated.value > result.value:
        result = allocated.round_up()
    return result


# ----------------------------------------------------------------- pods

POD_NAMES = ("count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
             "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods")
_POD_PREFIXES = (HUGEPAGES_PREFIX, REQUESTS_PREFIX + HUGEPAGES_PREFIX)
# "must specify": cpu and memory oblige every container to say (kube's validationSet)
_VALIDATION_SET = frozenset(("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"))


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """kube's IsExtendedResourceName: a qualified, not native name, not itself ``requests.``-prefixed."""
    return not _is_native(name) and not name.startswith(REQUESTS_PREFIX)


def _is_extended_for_quota(name: str) -> bool:
    return name.startswith(REQUESTS_PREFIX) and is_extended_resource(name[len(REQUESTS_PREFIX):])


def compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """kube's podComputeUsageHelper."""
    out: ResourceList = {"pods": ONE}
    for base in ("cpu", "memory", "ephemeral-storage"):
        if base in requests:
            out[base] = requests[base]
            out[REQUESTS_PREFIX + base] = requests[base]
        if base in limits:
            out[LIMITS_PREFIX + base] = limits[base]
    for name, value in requests.items():
        if name.startswith(HUGEPAGES_PREFIX):
            out[name] = value
            out[REQUESTS_PREFIX + name] = value
        if is_extended_resource(name):
            out[REQUESTS_PREFIX + name] = value
    return out


def _container_lists(container: Obj) -> tuple[ResourceList, ResourceList]:
    res = container.get("resources") or {}
    return parse_list(res.get("requests")), parse_list(res.get("limits"))


def _max_into(acc: ResourceList, other: Mapping[str, Quantity]) -> None:
    for key, value in other.items():
        if key not in acc or value.value > acc[key].value:
            acc[key] = value


def _pod_resources(pod: Obj, which: int) -> ResourceList:
    """kube's resourcehelper.PodRequests (which=0) / PodLimits (which=1): the containers' sum, at
    least each init container's (plus the sidecars started before it), plus the overhead. A
    container being resized (InPlacePodVerticalScaling) counts the larger of what its spec asks
    and what its status says it has."""
    spec = pod.get("spec") or {}
    statuses = {cs.get("name"): cs for cs in (pod.get("status") or {}).get("containerStatuses") or ()
                if isinstance(cs, dict) and isinstance(cs.get("resources"), dict)}
    total: ResourceList = {}
    for c in spec.get("containers") or ():
        if isinstance(c, dict):
            own = dict(_container_lists(c)[which])
            cs = statuses.get(c.get("name"))
            if cs is not None:
                _max_into(own, parse_list(cs["resources"].get("limits" if which else "requests")))
            total = add(total, own)
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in spec.get("initContainers") or ():
        if not isinstance(c, dict):
            continue
        own = _container_lists(c)[which]
        if c.get("restartPolicy") == "Always":
            sidecars = add(sidecars, own)
            _max_into(init_max, sidecars)
        else:
            _max_into(init_max, add(sidecars, own))
    total = add(total, sidecars)
    _max_into(total, init_max)
    overhead = parse_list(spec.get("overhead"))
    if which == 0:
        total = add(total, overhead)
    else:
        for key, value in overhead.items():
            if key in total:
                total[key] = total[key] + value
    return total


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def quota_pod(pod: Obj, now: dt.datetime | None = None) -> bool:
    """kube's QuotaV1Pod: not in a terminal phase, and not past its deletion grace period."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return False
    md = pod.get("metadata") or {}
    deleted = _parse_time(md.get("deletionTimestamp"))
    grace = md.get("deletionGracePeriodSeconds")
    if deleted is not None and isinstance(grace, int):
        now = now or dt.datetime.now(dt.timezone.utc)
        if now > deleted + dt.timedelta(seconds=grace):
            return False
    return True


def is_best_effort(pod: Obj) -> bool:
    """kube's QoS BestEffort: no container (init ones included) requests or limits cpu or memory."""
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    spec = pod.get("spec") or {}
    for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
        if not isinstance(c, dict):
            continue
        requests, limits = _container_lists(c)
        for rl in (requests, limits):
            if any(rl.get(name, ZERO).value > 0 for name in ("cpu", "memory")):
                return False
    return True


def is_terminating(pod: Obj) -> bool:
    ads = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(ads, int) and not isinstance(ads, bool) and ads >= 0


def uses_cross_namespace_affinity(pod: Obj) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        terms += [(w or {}).get("podAffinityTerm") or {}
                  for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
        if any(isinstance(t, dict) and (t.get("namespaces") or t.get("namespaceSelector") is not None)
               for t in terms):
            return True
    return False


def selector_matches(requirement: Obj, labels: Mapping[str, str]) -> bool:
    """A scope selector requirement as a label selector on ``{scopeName: value}``
    (kube's ScopedResourceSelectorRequirementsAsSelector)."""
    key = requirement.get("scopeName")
    op = requirement.get("operator")
    values = requirement.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


class PodEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "pods")
        self.names = POD_NAMES

    def handles(self, operation: str, subresource: str) -> bool:
        if subresource and subresource != "resize":
            return False
        return operation == CREATE or (subresource == "resize" and operation == UPDATE)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        names = list(names)
        out = [n for n in names if n in POD_NAMES]
        out += [n for n in names if n.startswith(_POD_PREFIXES) or _is_extended_for_quota(n)]
        return out

    def matches_scope(self, selector: Obj, obj: Obj) -> bool:
        scope = selector.get("scopeName")
        if scope == TERMINATING:
            return is_terminating(obj)
        if scope == NOT_TERMINATING:
            return not is_terminating(obj)
        if scope == BEST_EFFORT:
            return is_best_effort(obj)
        if scope == NOT_BEST_EFFORT:
            return not is_best_effort(obj)
        if scope == PRIORITY_CLASS:
            name = str((obj.get("spec") or {}).get("priorityClassName") or "")
            if selector.get("operator") == "Exists":
                return bool(name)
            return selector_matches(selector, {PRIORITY_CLASS: name} if name else {})
        if scope == CROSS_NAMESPACE_POD_AFFINITY:
            return uses_cross_namespace_affinity(obj)
        return False

    def constraints(self, required: list[str], obj: Obj) -> str:
        """kube's pod Constraints: with cpu or memory quota-ed, each container must say its own."""
        wanted = set(required) & _VALIDATION_SET
        missing: dict[str, set[str]] = {}
        spec = obj.get("spec") or {}
        for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
            if not isinstance(c, dict):
                continue
            have = set(compute_usage(*_container_lists(c)))
            for name in wanted - have:
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
        if not missing:
            return ""
        return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))

    def usage(self, obj: Obj, now: dt.datetime | None = None) -> ResourceList:
        out: ResourceList = {"count/pods": ONE}
        if not quota_pod(obj, now):
            return out
        return add(out, compute_usage(_pod_resources(obj, 0), _pod_resources(obj, 1)))


_SPECIAL: dict[tuple[str, str], Callable[[], Evaluator]] = {
    ("", "pods"): PodEvaluator,
    ("", "services"): ServiceEvaluator,
    ("", "persistentvolumeclaims"): PersistentVolumeClaimEvaluator,
}


class Evaluators:
    """The evaluators by (group, resource): the three of their own, an object count for the rest
    (made on first use, as kube's admission adds them)."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str], Evaluator] = {}

    def get(self, group: str, resource: str) -> Evaluator | None:
        if (group, resource) in IGNORED:
            return None
        found = self._by.get((group, resource))
        if found is None:
            make = _SPECIAL.get((group, resource))
            found = make() if make is not None else Evaluator(group, resource)
            self._by[(group, resource)] = found
        return found

    def for_names(self, names: Iterable[str]) -> dict[tuple[str, str], Evaluator]:
        """The evaluators measuring some of ``names``: the three of their own when they do, and the
        object counts the ``count/`` names (and legacy names) ask for."""
        names = list(names)
        out: dict[tuple[str, str], Evaluator] = {}
        for key in _SPECIAL:
            ev = self.get(*key)
            if ev is not None and ev.matching_resources(names):
                out[key] = ev
        wanted = {parsed for n in names if (parsed := parse_count_name(n)) is not None}
        wanted |= {key for key, legacy in LEGACY_COUNT_NAMES.items() if legacy in names}
        for key in wanted:
            ev = self.get(*key)
            if ev is not None and key not in out:
                out[key] = ev
        return out
