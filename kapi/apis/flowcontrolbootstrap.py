"""API Priority and Fairness's bootstrap configuration: kube 1.33's mandatory and suggested objects as data.

kube 1.33's ``apiserver/pkg/apis/flowcontrol/bootstrap/default.go`` (the release kapi's /version
names; 1.34 dropped endpoint-controller and workload-leader-election), in the v1 wire shape (what a GET of
a fresh cluster's object shows, defaulting changes none of them). The mandatory ones (the ``exempt``
and ``catch-all`` pair of each kind) are always kept as they are here; the suggested ones are the
configuration a cluster starts with and may change (``kapi.server.apfbootstrap`` keeps them). Each
carries ``apf.kubernetes.io/autoupdate-spec: "true"``. The functions hand out fresh copies, in
kube's order, so a caller may change what it gets.
"""

from __future__ import annotations

import copy
from typing import Any, Final

Obj = dict[str, Any]

API_VERSION: Final = "flowcontrol.apiserver.k8s.io/v1"
AUTO_UPDATE_ANNOTATION: Final = "apf.kubernetes.io/autoupdate-spec"

PL_EXEMPT: Final = "exempt"
PL_CATCH_ALL: Final = "catch-all"
FS_EXEMPT: Final = "exempt"
FS_CATCH_ALL: Final = "catch-all"

# Well-known users and groups (apiserver/pkg/authentication/user, .../serviceaccount).
SYSTEM_MASTERS: Final = "system:masters"
ALL_AUTHENTICATED: Final = "system:authenticated"
ALL_UNAUTHENTICATED: Final = "system:unauthenticated"
NODES_GROUP: Final = "system:nodes"
ALL_SERVICE_ACCOUNTS: Final = "system:serviceaccounts"
KUBE_CONTROLLER_MANAGER: Final = "system:kube-controller-manager"
KUBE_SCHEDULER: Final = "system:kube-scheduler"


# ----------------------------------------------------------------------------- builders (default.go's)

def _meta(name: str) -> Obj:
    return {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}}


def _plc(name: str, spec: Obj) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": _meta(name), "spec": spec}


def _limited(shares: int, lendable: int, queues: int, hand_size: int, queue_length_limit: int) -> Obj:
    return {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}}}


def _flow_schema(name: str, pl: str, precedence: int, distinguisher: str, rule: Obj) -> Obj:
    spec: Obj = {"priorityLevelConfiguration": {"name": pl}, "matchingPrecedence": precedence}
    if distinguisher:
        spec["distinguisherMethod"] = {"type": distinguisher}
    spec["rules"] = [rule]
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": _meta(name), "spec": spec}


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": n}} for n in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def _kube_system_service_accounts(*names: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": n}} for n in names]


def _resource_rule(verbs: list[str], groups: list[str], resources: list[str], namespaces: list[str],
                   cluster_scope: bool) -> Obj:
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if cluster_scope:  # omitempty on the wire
        rule["clusterScope"] = True
    rule["namespaces"] = namespaces
    return rule


def _non_resource_rule(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": verbs, "nonResourceURLs": urls}


def _everything(subjects: list[Obj]) -> Obj:
    """Rules matching every request of ``subjects``: all resources (cluster-wide too) and all non-resource URLs."""
    return {"subjects": subjects,
            "resourceRules": [_resource_rule(["*"], ["*"], ["*"], ["*"], True)],
            "nonResourceRules": [_non_resource_rule(["*"], ["*"])]}


# ----------------------------------------------------------------------------- the objects

_MANDATORY_PLCS: Final[tuple[Obj, ...]] = (
    _plc(PL_CATCH_ALL, {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
    _plc(PL_EXEMPT, {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
)

_MANDATORY_FLOW_SCHEMAS: Final[tuple[Obj, ...]] = (
    # sysadmin requests always pass (and no priority inversion through them)
    _flow_schema(FS_EXEMPT, PL_EXEMPT, 1, "", _everything(_groups(SYSTEM_MASTERS))),
    # reached only when global-default is gone
    _flow_schema(FS_CATCH_ALL, PL_CATCH_ALL, 10000, "ByUser",
                 _everything(_groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED))),
)

_SUGGESTED_PLCS: Final[tuple[Obj, ...]] = (
    _plc("system", _limited(30, 33, 64, 6, 50)),  # kubelets, kube-proxy: the cluster's self-maintenance
    _plc("node-high", _limited(40, 25, 64, 6, 50)),  # node health reports
    _plc("leader-election", _limited(10, 0, 16, 4, 50)),
    _plc("workload-high", _limited(40, 50, 128, 6, 50)),  # the scheduler, the controllers
    _plc("workload-low", _limited(100, 90, 128, 6, 50)),  # other service accounts
    _plc("global-default", _limited(20, 50, 128, 6, 50)),  # everything else
)

# kube's SuggestedFlowSchemas order (default.go lists them by use, not by precedence).
_SUGGESTED_FLOW_SCHEMAS: Final[tuple[Obj, ...]] = (
    _flow_schema("system-nodes", "system", 500, "ByUser", _everything(_groups(NODES_GROUP))),
    _flow_schema("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups(NODES_GROUP),
        "resourceRules": [
            _resource_rule(["*"], [""], ["nodes", "nodes/status"], ["*"], True),
            _resource_rule(["*"], ["coordination.k8s.io"], ["leases"], ["*"], False)]}),
    _flow_schema("probes", PL_EXEMPT, 2, "", {
        "subjects": _groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED),
        "nonResourceRules": [_non_resource_rule(["get"], ["/healthz", "/readyz", "/livez"])]}),
    _flow_schema("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": _users(KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER) + _kube_system_service_accounts("*"),
        "resourceRules": [
            _resource_rule(["get", "create", "update"], ["coordination.k8s.io"], ["leases"], ["*"], False)]}),
    # leader election on Endpoints and ConfigMaps (kube's TODO(#80289): until only Leases are used)
    _flow_schema("workload-leader-election", "leader-election", 200, "ByUser", {
        "subjects": _kube_system_service_accounts("*"),
        "resourceRules": [
            _resource_rule(["get", "create", "update"], [""], ["endpoints", "configmaps"], ["*"], False),
            _resource_rule(["get", "create", "update"], ["coordination.k8s.io"], ["leases"], ["*"], False)]}),
    # the endpoints controllers' own writes, before workload-leader-election catches them
    _flow_schema("endpoint-controller", "workload-high", 150, "ByUser", {
        "subjects": _users(KUBE_CONTROLLER_MANAGER)
        + _kube_system_service_accounts("endpoint-controller", "endpointslicemirroring-controller"),
        "resourceRules": [_resource_rule(["get", "create", "update"], [""], ["endpoints"], ["*"], False)]}),
    _flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
                 _everything(_users(KUBE_CONTROLLER_MANAGER))),
    _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", _everything(_users(KUBE_SCHEDULER))),
    _flow_schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
                 _everything(_kube_system_service_accounts("*"))),
    _flow_schema("service-accounts", "workload-low", 9000, "ByUser", _everything(_groups(ALL_SERVICE_ACCOUNTS))),
    _flow_schema("global-default", "global-default", 9900, "ByUser",
                 _everything(_groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED))),
)

MANDATORY_PRIORITY_LEVEL_NAMES: Final = frozenset(o["metadata"]["name"] for o in _MANDATORY_PLCS)
MANDATORY_FLOW_SCHEMA_NAMES: Final = frozenset(o["metadata"]["name"] for o in _MANDATORY_FLOW_SCHEMAS)
SUGGESTED_PRIORITY_LEVEL_NAMES: Final = frozenset(o["metadata"]["name"] for o in _SUGGESTED_PLCS)
SUGGESTED_FLOW_SCHEMA_NAMES: Final = frozenset(o["metadata"]["name"] for o in _SUGGESTED_FLOW_SCHEMAS)


def _copies(objs: tuple[Obj, ...]) -> list[Obj]:
    return [copy.deepcopy(o) for o in objs]


def mandatory_priority_level_configurations() -> list[Obj]:
    """kube's MandatoryPriorityLevelConfigurations: catch-all, exempt."""
    return _copies(_MANDATORY_PLCS)


def mandatory_flow_schemas() -> list[Obj]:
    """kube's MandatoryFlowSchemas: exempt, catch-all."""
    return _copies(_MANDATORY_FLOW_SCHEMAS)


def suggested_priority_level_configurations() -> list[Obj]:
    """kube's SuggestedPriorityLevelConfigurations: system, node-high, leader-election, workload-high,
    workload-low, global-default."""
    return _copies(_SUGGESTED_PLCS)


def suggested_flow_schemas() -> list[Obj]:
    """kube's SuggestedFlowSchemas: system-nodes, system-node-high, probes, system-leader-election,
    workload-leader-election, endpoint-controller, kube-controller-manager, kube-scheduler,
    kube-system-service-accounts, service-accounts, global-default."""
    return _copies(_SUGGESTED_FLOW_SCHEMAS)


def priority_level_configurations() -> list[Obj]:
    """Every bootstrap PriorityLevelConfiguration: the mandatory ones, then the suggested ones."""
    return mandatory_priority_level_configurations() + suggested_priority_level_configurations()


def flow_schemas() -> list[Obj]:
    """Every bootstrap FlowSchema: the mandatory ones, then the suggested ones."""
    return mandatory_flow_schemas() + suggested_flow_schemas()
