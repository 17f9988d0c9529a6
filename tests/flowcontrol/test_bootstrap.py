"""APF's bootstrap configuration (issue 13): kube 1.33's objects as data, and the ensurer that keeps them."""

from __future__ import annotations

import copy
import math
from typing import Any, AsyncIterator

import pytest
import trio
import trio.testing

from kapi import errors
from kapi.apis import BUILTIN
from kapi.apis import flowcontrolbootstrap as boot
from kapi.apis.flowcontrol import FLOW_SCHEMAS as FS, PRIORITY_LEVEL_CONFIGURATIONS as PL
from kapi.registry.deletion import DeleteOptions
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.apfbootstrap import ANNOTATION, BootstrapConfiguration, ensure_apf_bootstrap, keep_apf_bootstrap
from kapi.storage.memory import MemoryStorage

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
    "endpoint-controller": (150, "workload-high", "ByUser"),
    "workload-leader-election": (200, "leader-election", "ByUser"),
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


# ---------------------------------------------------------------------------- the ensurer

ALL_NAMES = {f"PriorityLevelConfiguration/{n}" for n in PLC_TABLE} | {f"FlowSchema/{n}" for n in FS_TABLE}


@pytest.fixture
async def registry(nursery: trio.Nursery) -> AsyncIterator[Registry]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    yield Registry(storage, ResourceTable(BUILTIN))


async def _get(registry: Registry, res: Any, name: str) -> dict[str, Any]:
    return await registry.get(res, "", name)


async def _edit(registry: Registry, res: Any, name: str, change: Any) -> dict[str, Any]:
    obj = copy.deepcopy(await _get(registry, res, name))
    change(obj)
    updated, _ = await registry.update(res, "", name, obj, WriteOptions())
    return updated


async def test_ensure_on_an_empty_store_creates_everything(registry: Registry) -> None:
    done = await ensure_apf_bootstrap(registry)
    assert done == {name: "create" for name in ALL_NAMES}
    for obj in boot.priority_level_configurations():
        stored = await _get(registry, PL, obj["metadata"]["name"])
        assert stored["spec"] == obj["spec"]
        assert stored["metadata"]["annotations"] == {ANNOTATION: "true"}
    for obj in boot.flow_schemas():
        stored = await _get(registry, FS, obj["metadata"]["name"])
        assert stored["spec"] == obj["spec"]
        assert stored["metadata"]["generation"] == 1
    # a second pass finds everything as it should be and writes nothing
    assert set((await ensure_apf_bootstrap(registry)).values()) == {"none"}


async def test_changed_suggested_is_restored_while_autoupdate_is_true(registry: Registry) -> None:
    await ensure_apf_bootstrap(registry)
    await _edit(registry, PL, "workload-low",
                lambda o: o["spec"]["limited"].update(nominalConcurrencyShares=1))
    await _edit(registry, FS, "service-accounts", lambda o: o["spec"].update(matchingPrecedence=42))
    done = await ensure_apf_bootstrap(registry)
    assert done["PriorityLevelConfiguration/workload-low"] == "update"
    assert done["FlowSchema/service-accounts"] == "update"
    assert (await _get(registry, PL, "workload-low"))["spec"]["limited"]["nominalConcurrencyShares"] == 100
    assert (await _get(registry, FS, "service-accounts"))["spec"]["matchingPrecedence"] == 9000


async def test_changed_suggested_with_autoupdate_false_is_left(registry: Registry) -> None:
    await ensure_apf_bootstrap(registry)

    def mine(o: dict[str, Any]) -> None:
        o["metadata"]["annotations"][ANNOTATION] = "false"
        o["spec"]["limited"]["nominalConcurrencyShares"] = 3

    await _edit(registry, PL, "global-default", mine)
    done = await ensure_apf_bootstrap(registry)
    assert done["PriorityLevelConfiguration/global-default"] == "none"
    stored = await _get(registry, PL, "global-default")
    assert stored["spec"]["limited"]["nominalConcurrencyShares"] == 3
    assert stored["metadata"]["annotations"][ANNOTATION] == "false"


async def test_suggested_without_the_annotation_follows_its_generation(registry: Registry) -> None:
    """kube's shouldUpdateSpec: no boolean there, so auto-update only while generation is 1."""
    await ensure_apf_bootstrap(registry)
    await _edit(registry, FS, "kube-scheduler", lambda o: o["metadata"].pop("annotations"))  # generation stays 1
    await _edit(registry, FS, "kube-controller-manager", lambda o: (
        o["metadata"]["annotations"].pop(ANNOTATION), o["spec"].update(matchingPrecedence=801)))  # generation 2
    done = await ensure_apf_bootstrap(registry)
    assert done["FlowSchema/kube-scheduler"] == "update"
    assert (await _get(registry, FS, "kube-scheduler"))["metadata"]["annotations"] == {ANNOTATION: "true"}
    kcm = await _get(registry, FS, "kube-controller-manager")
    assert kcm["metadata"]["annotations"] == {ANNOTATION: "false"}
    assert kcm["spec"]["matchingPrecedence"] == 801


async def test_deleted_ones_are_created_again(registry: Registry) -> None:
    await ensure_apf_bootstrap(registry)
    for res, name in ((FS, "catch-all"), (PL, "catch-all"), (FS, "probes"), (PL, "leader-election")):
        await registry.delete(res, "", name, DeleteOptions())
    done = await ensure_apf_bootstrap(registry)
    assert {k for k, v in done.items() if v == "create"} == {
        "FlowSchema/catch-all", "PriorityLevelConfiguration/catch-all", "FlowSchema/probes",
        "PriorityLevelConfiguration/leader-election"}
    assert (await _get(registry, FS, "probes"))["spec"]["matchingPrecedence"] == 2


async def test_mandatory_annotation_is_stomped_and_exempt_knobs_kept(registry: Registry) -> None:
    await ensure_apf_bootstrap(registry)

    def tune(o: dict[str, Any]) -> None:
        o["metadata"]["annotations"][ANNOTATION] = "false"
        o["spec"]["exempt"] = {"nominalConcurrencyShares": 7, "lendablePercent": 20}

    await _edit(registry, PL, "exempt", tune)
    await _edit(registry, FS, "exempt", lambda o: o["metadata"]["annotations"].update({ANNOTATION: "no"}))
    done = await ensure_apf_bootstrap(registry)
    assert done["PriorityLevelConfiguration/exempt"] == "update"
    assert done["FlowSchema/exempt"] == "update"
    exempt = await _get(registry, PL, "exempt")
    assert exempt["metadata"]["annotations"][ANNOTATION] == "true"
    # the exempt level's spec.exempt is the operator's to change (kube 1.28+)
    assert exempt["spec"]["exempt"] == {"nominalConcurrencyShares": 7, "lendablePercent": 20}
    assert (await _get(registry, FS, "exempt"))["metadata"]["annotations"][ANNOTATION] == "true"


def _level(name: str, shares: int) -> dict[str, Any]:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name, "annotations": {ANNOTATION: "true"}},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "lendablePercent": 0,
                                                    "limitResponse": {"type": "Reject"}}}}


async def test_changed_mandatory_is_restored_even_with_autoupdate_false(registry: Registry) -> None:
    """A mandatory object is kept as the release has it, whatever the operator says (a configuration
    of the test's own: kube's mandatory objects cannot be changed through the API at all)."""
    config = BootstrapConfiguration(mandatory_priority_levels=[_level("fixed", 5)], mandatory_flow_schemas=[],
                                    suggested_priority_levels=[_level("loose", 5)], suggested_flow_schemas=[])
    await ensure_apf_bootstrap(registry, config)
    for name in ("fixed", "loose"):
        await _edit(registry, PL, name, lambda o: (o["metadata"]["annotations"].update({ANNOTATION: "false"}),
                                                   o["spec"]["limited"].update(nominalConcurrencyShares=9)))
    done = await ensure_apf_bootstrap(registry, config)
    assert done == {"PriorityLevelConfiguration/fixed": "update", "PriorityLevelConfiguration/loose": "none"}
    fixed = await _get(registry, PL, "fixed")
    assert fixed["spec"]["limited"]["nominalConcurrencyShares"] == 5
    assert fixed["metadata"]["annotations"][ANNOTATION] == "true"
    assert (await _get(registry, PL, "loose"))["spec"]["limited"]["nominalConcurrencyShares"] == 9


async def test_objects_no_longer_bootstrap_are_removed_when_autoupdating(registry: Registry) -> None:
    await ensure_apf_bootstrap(registry)
    # what another release shipped (autoupdating, not in this one's set), and two of the operator's
    for name, marks in (("retired", {ANNOTATION: "true"}), ("kept", {ANNOTATION: "false"}),
                        ("mine", None)):
        obj = _level(name, 4)
        if marks is None:
            del obj["metadata"]["annotations"]
        else:
            obj["metadata"]["annotations"] = marks
        await registry.create(PL, "", obj, WriteOptions())
    done = await ensure_apf_bootstrap(registry)
    assert done["PriorityLevelConfiguration/retired"] == "delete"
    with pytest.raises(errors.NotFound):
        await _get(registry, PL, "retired")
    assert (await _get(registry, PL, "kept"))["metadata"]["name"] == "kept"
    assert (await _get(registry, PL, "mine"))["metadata"]["name"] == "mine"


async def test_keeper_runs_a_pass_first_and_then_periodically(registry: Registry, nursery: trio.Nursery,
                                                             autojump_clock: trio.testing.MockClock) -> None:
    await nursery.start(keep_apf_bootstrap, registry)
    assert (await _get(registry, FS, "global-default"))["spec"]["matchingPrecedence"] == 9900  # before started()
    await registry.delete(FS, "", "global-default", DeleteOptions())
    await trio.sleep(61)
    assert (await _get(registry, FS, "global-default"))["spec"]["matchingPrecedence"] == 9900
