"""APF's bootstrap configuration (issue 13): kube 1.34's objects as data, and the ensurer that keeps them."""

from __future__ import annotations

import math

from kapi.apis import flowcontrolbootstrap as boot

# ---------------------------------------------------------------------------- the data

# SEMANTICS §6's table: name -> (type, shares, lendable %, (queues, hand, qlen) or None, nominal@600, min).
PLC_TABLE = {
    "exempt": ("Exempt", 0, 0, None, None, None),
    "system": ("Limited", 30, 33, (64, 6, 50), 74, 50),
    "node-high": ("Limited", 40, 25, (64, 6, 50), 98, 73),
    "leader-election": ("Limited", 10, 0, (16, 4, 50), 25, 25),
    "workload-high": ("Limited", 40, 50, (128, 6, 50), 98, 49),
    "workload-low": ("Limited", 100, 90, (128, 6, 50), 245, 24),
    "global-default": ("Limited", 20, 50, (128, 6, 50), 49, 24),
    "catch-all": ("Limited", 5, 0, None, 13, 13),
}

# name -> (matchingPrecedence, priority level, distinguisher)
FS_TABLE = {
    "exempt": (1, "exempt", None),
    "probes": (2, "exempt", None),
    "system-leader-election": (100, "leader-election", "ByUser"),
    "system-node-high": (400, "node-high", "ByUser"),
    "system-nodes": (500, "system", "ByUser"),
    "kube-controller-manager": (800, "workload-high", "ByNamespace"),
    "kube-scheduler": (800, "workload-high", "ByNamespace"),
    "kube-system-service-accounts": (900, "workload-high", "ByNamespace"),
    "service-accounts": (9000, "workload-low", "ByUser"),
    "global-default": (9900, "global-default", "ByUser"),
    "catch-all": (10000, "catch-all", "ByUser"),
}


def test_priority_levels_match_the_published_table():
    plcs = {o["metadata"]["name"]: o for o in boot.priority_level_configurations()}
    assert set(plcs) == set(PLC_TABLE)
    limited = [o["spec"]["limited"] for o in plcs.values() if o["spec"]["type"] == "Limited"]
    total = sum(lim["nominalConcurrencyShares"] for lim in limited)
    assert total == 245
    for name, (kind, shares, lendable, queuing, nominal, minimum) in PLC_TABLE.items():
        spec = plcs[name]["spec"]
        assert spec["type"] == kind, name
        part = spec["exempt" if kind == "Exempt" else "limited"]
        assert (part["nominalConcurrencyShares"], part["lendablePercent"]) == (shares, lendable), name
        if kind == "Exempt":
            continue
        got_nominal = math.ceil(600 * shares / total)
        assert got_nominal == nominal, name
        # Go's math.Round: halves away from zero (98 * 25 % = 24.5 lends 25)
        assert got_nominal - math.floor(got_nominal * lendable / 100 + 0.5) == minimum, name
        response = part["limitResponse"]
        if queuing is None:
            assert response == {"type": "Reject"}, name
        else:
            q = response["queuing"]
            assert response["type"] == "Queue"
            assert (q["queues"], q["handSize"], q["queueLengthLimit"]) == queuing, name


def test_flow_schemas_match_the_published_list():
    fss = {o["metadata"]["name"]: o for o in boot.flow_schemas()}
    assert set(fss) == set(FS_TABLE)
    plcs = {o["metadata"]["name"] for o in boot.priority_level_configurations()}
    for name, (precedence, pl, distinguisher) in FS_TABLE.items():
        spec = fss[name]["spec"]
        assert spec["matchingPrecedence"] == precedence, name
        assert spec["priorityLevelConfiguration"]["name"] == pl in plcs, name
        assert (spec.get("distinguisherMethod") or {}).get("type") == distinguisher, name
        assert spec["rules"] and all(r["subjects"] for r in spec["rules"]), name


def test_every_object_autoupdates_and_copies_are_fresh():
    for obj in boot.flow_schemas() + boot.priority_level_configurations():
        assert obj["metadata"]["annotations"] == {boot.AUTO_UPDATE_ANNOTATION: "true"}
        assert obj["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1"
    first = boot.flow_schemas()
    first[0]["spec"]["rules"][0]["subjects"].clear()
    assert boot.flow_schemas()[0]["spec"]["rules"][0]["subjects"]
    assert boot.MANDATORY_FLOW_SCHEMA_NAMES == {"exempt", "catch-all"}
    assert boot.MANDATORY_PRIORITY_LEVEL_NAMES == {"exempt", "catch-all"}


def test_rules_as_kube_writes_them():
    fss = {o["metadata"]["name"]: o for o in boot.flow_schemas()}
    node_high = fss["system-node-high"]["spec"]["rules"][0]
    assert node_high["subjects"] == [{"kind": "Group", "group": {"name": "system:nodes"}}]
    assert node_high["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "clusterScope": True,
         "namespaces": ["*"]},
        {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]}]
    assert "nonResourceRules" not in node_high
    leader = fss["system-leader-election"]["spec"]["rules"][0]
    assert leader["subjects"] == [
        {"kind": "User", "user": {"name": "system:kube-controller-manager"}},
        {"kind": "User", "user": {"name": "system:kube-scheduler"}},
        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}]
    probes = fss["probes"]["spec"]["rules"][0]
    assert probes["nonResourceRules"] == [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]
    assert "resourceRules" not in probes
