"""APF's bootstrap objects against kube 1.33's ``apiserver/pkg/apis/flowcontrol/bootstrap/default.go`` (issue 30).

The tables below are transcribed from that file by hand, field by field, in its own order
(MandatoryPriorityLevelConfigurations, SuggestedPriorityLevelConfigurations, MandatoryFlowSchemas,
SuggestedFlowSchemas); they do not use kapi's builders, so a difference in either shows here.
"""

from __future__ import annotations

from typing import Any

from kapi.apis import flowcontrolbootstrap as boot

Obj = dict[str, Any]

# name: (type, nominalConcurrencyShares, lendablePercent, limitResponse type, (queues, handSize, queueLengthLimit))
# (borrowingLimitPercent is set by none of them)
MANDATORY_PLCS = {
    "catch-all": ("Limited", 5, 0, "Reject", None),
    "exempt": ("Exempt", 0, 0, None, None),
}
SUGGESTED_PLCS = {
    "system": ("Limited", 30, 33, "Queue", (64, 6, 50)),
    "node-high": ("Limited", 40, 25, "Queue", (64, 6, 50)),
    "leader-election": ("Limited", 10, 0, "Queue", (16, 4, 50)),
    "workload-high": ("Limited", 40, 50, "Queue", (128, 6, 50)),
    "workload-low": ("Limited", 100, 90, "Queue", (128, 6, 50)),
    "global-default": ("Limited", 20, 50, "Queue", (128, 6, 50)),
}

# Subjects as (kind, name) or ("ServiceAccount", "namespace/name"); resource rules as
# (verbs, apiGroups, resources, namespaces, clusterScope); non-resource rules as (verbs, nonResourceURLs).
ALL = (["*"], ["*"], ["*"], ["*"], True)
ALL_URLS = (["*"], ["*"])
SYSTEM_SA = [("ServiceAccount", "kube-system/*")]
EVERYONE = [("Group", "system:unauthenticated"), ("Group", "system:authenticated")]
GCU = ["get", "create", "update"]

# name: (priority level, matchingPrecedence, distinguisher, subjects, resource rules, non-resource rules)
MANDATORY_FLOW_SCHEMAS = {
    "exempt": ("exempt", 1, None, [("Group", "system:masters")], [ALL], [ALL_URLS]),
    "catch-all": ("catch-all", 10000, "ByUser", EVERYONE, [ALL], [ALL_URLS]),
}
SUGGESTED_FLOW_SCHEMAS = {
    "system-nodes": ("system", 500, "ByUser", [("Group", "system:nodes")], [ALL], [ALL_URLS]),
    "system-node-high": ("node-high", 400, "ByUser", [("Group", "system:nodes")],
                         [(["*"], [""], ["nodes", "nodes/status"], ["*"], True),
                          (["*"], ["coordination.k8s.io"], ["leases"], ["*"], False)], []),
    "probes": ("exempt", 2, None, EVERYONE, [], [(["get"], ["/healthz", "/readyz", "/livez"])]),
    "system-leader-election": ("leader-election", 100, "ByUser",
                               [("User", "system:kube-controller-manager"), ("User", "system:kube-scheduler"),
                                *SYSTEM_SA],
                               [(GCU, ["coordination.k8s.io"], ["leases"], ["*"], False)], []),
    "workload-leader-election": ("leader-election", 200, "ByUser", SYSTEM_SA,
                                 [(GCU, [""], ["endpoints", "configmaps"], ["*"], False),
                                  (GCU, ["coordination.k8s.io"], ["leases"], ["*"], False)], []),
    "endpoint-controller": ("workload-high", 150, "ByUser",
                            [("User", "system:kube-controller-manager"),
                             ("ServiceAccount", "kube-system/endpoint-controller"),
                             ("ServiceAccount", "kube-system/endpointslicemirroring-controller")],
                            [(GCU, [""], ["endpoints"], ["*"], False)], []),
    "kube-controller-manager": ("workload-high", 800, "ByNamespace", [("User", "system:kube-controller-manager")],
                                [ALL], [ALL_URLS]),
    "kube-scheduler": ("workload-high", 800, "ByNamespace", [("User", "system:kube-scheduler")], [ALL], [ALL_URLS]),
    "kube-system-service-accounts": ("workload-high", 900, "ByNamespace", SYSTEM_SA, [ALL], [ALL_URLS]),
    "service-accounts": ("workload-low", 9000, "ByUser", [("Group", "system:serviceaccounts")], [ALL], [ALL_URLS]),
    "global-default": ("global-default", 9900, "ByUser", EVERYONE, [ALL], [ALL_URLS]),
}


def _plc_row(obj: Obj) -> tuple[Any, ...]:
    spec = obj["spec"]
    kind = spec["type"]
    part = spec["exempt" if kind == "Exempt" else "limited"]
    assert set(spec) == {"type", "exempt" if kind == "Exempt" else "limited"}, obj
    assert "borrowingLimitPercent" not in part, obj
    response = part.get("limitResponse")
    queuing = None
    if response and response.get("queuing"):
        q = response["queuing"]
        queuing = (q["queues"], q["handSize"], q["queueLengthLimit"])
    return (kind, part["nominalConcurrencyShares"], part["lendablePercent"],
            response["type"] if response else None, queuing)


def _subject(s: Obj) -> tuple[str, str]:
    kind = s["kind"]
    if kind == "ServiceAccount":
        sa = s["serviceAccount"]
        return kind, f"{sa['namespace']}/{sa['name']}"
    return kind, s["user" if kind == "User" else "group"]["name"]


def _fs_row(obj: Obj) -> tuple[Any, ...]:
    spec = obj["spec"]
    (rule,) = spec["rules"]  # every bootstrap FlowSchema has one PolicyRulesWithSubjects
    resource = [(r["verbs"], r["apiGroups"], r["resources"], r.get("namespaces", []), r.get("clusterScope", False))
                for r in rule.get("resourceRules", [])]
    non_resource = [(r["verbs"], r["nonResourceURLs"]) for r in rule.get("nonResourceRules", [])]
    return (spec["priorityLevelConfiguration"]["name"], spec["matchingPrecedence"],
            (spec.get("distinguisherMethod") or {}).get("type"), [_subject(s) for s in rule["subjects"]],
            resource, non_resource)


def _rows(objs: list[Obj], row: Any) -> list[tuple[str, Any]]:
    for obj in objs:
        assert obj["metadata"] == {"name": obj["metadata"]["name"],
                                   "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}}
    return [(o["metadata"]["name"], row(o)) for o in objs]


def test_priority_level_configurations_are_kube_1_33s() -> None:
    assert _rows(boot.mandatory_priority_level_configurations(), _plc_row) == list(MANDATORY_PLCS.items())
    assert _rows(boot.suggested_priority_level_configurations(), _plc_row) == list(SUGGESTED_PLCS.items())


def test_flow_schemas_are_kube_1_33s() -> None:
    assert _rows(boot.mandatory_flow_schemas(), _fs_row) == list(MANDATORY_FLOW_SCHEMAS.items())
    assert _rows(boot.suggested_flow_schemas(), _fs_row) == list(SUGGESTED_FLOW_SCHEMAS.items())
