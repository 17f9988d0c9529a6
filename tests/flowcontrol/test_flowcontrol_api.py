"""FlowSchemas and PriorityLevelConfigurations through the API (issue 13): kube's v1 defaults, its
validation's 422s, no create on PUT, and the Table columns kubectl prints."""

from __future__ import annotations

import copy
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.apis import flowcontrolbootstrap as boot
from kapi.config import Config
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
FS = f"{FC}/flowschemas"
PL = f"{FC}/prioritylevelconfigurations"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           enable_priority_and_fairness=False), registry, TOKEN, Health(ready=True))
    yield Api(app, registry)


def plc(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name}, "spec": spec}


def queued(**queuing: Any) -> dict[str, Any]:
    return {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": queuing}}}


def fs(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name}, "spec": spec}


def rule(**extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                           "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                              "namespaces": ["*"]}]}
    out.update(extra)
    return out


def good_fs_spec(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"priorityLevelConfiguration": {"name": "system-bar"}, "matchingPrecedence": 50,
                            "rules": [rule()]}
    spec.update(extra)
    return spec


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    body = reply.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


# ------------------------------------------------------------------------------ defaults


async def test_priority_level_defaults(api: Api) -> None:
    created = (await api.create(PL, plc("foo", queued()))).json()
    assert created["spec"]["limited"] == {
        "nominalConcurrencyShares": 30, "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}
    assert created["metadata"]["generation"] == 1
    # v1's shares are a pointer: an explicit 0 stays (a "jail" level), and Reject needs no queuing
    jail = (await api.create(PL, plc("jail", {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}))).json()
    assert jail["spec"]["limited"] == {"nominalConcurrencyShares": 0, "lendablePercent": 0,
                                       "limitResponse": {"type": "Reject"}}
    exempt = (await api.create(PL, plc("exempt", {"type": "Exempt", "exempt": {}}))).json()
    assert exempt["spec"] == {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}


async def test_flow_schema_defaults(api: Api) -> None:
    spec = good_fs_spec()
    del spec["matchingPrecedence"]
    created = (await api.create(FS, fs("foo", spec))).json()
    assert created["spec"]["matchingPrecedence"] == 1000
    assert "distinguisherMethod" not in created["spec"]


async def test_bootstrap_objects_are_valid_and_unchanged_by_defaults(api: Api) -> None:
    for obj in boot.priority_level_configurations():
        got = await api.create(PL, obj)
        assert got.status == 201, got.body
        assert got.json()["spec"] == obj["spec"]
    for obj in boot.flow_schemas():
        got = await api.create(FS, obj)
        assert got.status == 201, got.body
        assert got.json()["spec"] == obj["spec"]


# ---------------------------------------------------------------------------- validation


async def test_queuing_validation(api: Api) -> None:
    q = "spec.limited.limitResponse.queuing"
    reply = await api.create(PL, plc("foo", queued(queues=7, handSize=8, queueLengthLimit=100)))
    assert causes(reply) == [("FieldValueInvalid", f"{q}.handSize",
                              "Invalid value: 8: should not be greater than queues (7)")]
    body = reply.json()
    assert body["message"] == ('PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "foo" is invalid: '
                               f"{q}.handSize: Invalid value: 8: should not be greater than queues (7)")
    reply = await api.create(PL, plc("foo", queued(queues=512, handSize=8, queueLengthLimit=100)))
    assert causes(reply) == [("FieldValueInvalid", f"{q}.handSize", "Invalid value: 8: required entropy bits "
                              "of deckSize 512 and handSize 8 should not be greater than 60")]
    reply = await api.create(PL, plc("foo", queued(queues=2147483647, handSize=3, queueLengthLimit=-1)))
    assert set(causes(reply)) == {
        ("FieldValueInvalid", f"{q}.queueLengthLimit", "Invalid value: -1: must be positive"),
        ("FieldValueInvalid", f"{q}.queues", "Invalid value: 2147483647: must not be greater than 10000000"),
        ("FieldValueInvalid", f"{q}.handSize", "Invalid value: 3: required entropy bits of deckSize 2147483647 "
         "and handSize 3 should not be greater than 60")}
    # kube's own edge: 10^7 queues with a hand of 2 is fine
    ok = await api.create(PL, plc("foo", queued(queues=10_000_000, handSize=2, queueLengthLimit=100)))
    assert ok.status == 201, ok.body


async def test_priority_level_validation(api: Api) -> None:
    reply = await api.create(PL, plc("foo", {"type": "Limited", "limited": {
        "nominalConcurrencyShares": -1, "lendablePercent": 101, "borrowingLimitPercent": -1,
        "limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}}))
    assert causes(reply) == [
        ("FieldValueInvalid", "spec.limited.nominalConcurrencyShares", "Invalid value: -1: must be a non-negative integer"),
        ("FieldValueForbidden", "spec.limited.limitResponse.queuing",
         "Forbidden: must be nil if limited.limitResponse.type is not Limited"),
        ("FieldValueInvalid", "spec.limited.lendablePercent", "Invalid value: 101: must be between 0 and 100, inclusive"),
        ("FieldValueInvalid", "spec.limited.borrowingLimitPercent",
         "Invalid value: -1: if specified, must be a non-negative integer")]
    reply = await api.create(PL, plc("foo", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}))
    assert causes(reply) == [("FieldValueRequired", "spec.limited.limitResponse.queuing",
                              "Required value: must not be empty if limited.limitResponse.type is Limited")]
    reply = await api.create(PL, plc("foo", {"type": "Limited", "exempt": {}}))
    assert causes(reply) == [
        ("FieldValueForbidden", "spec.exempt", "Forbidden: must be nil if the type is Limited"),
        ("FieldValueRequired", "spec.limited", "Required value: must not be empty when type is Limited")]
    reply = await api.create(PL, plc("foo", {"type": "Exempt"}))
    assert causes(reply) == [("FieldValueInvalid", "spec.type",
                              "Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'")]
    reply = await api.create(PL, plc("foo", {"type": "Sometimes"}))
    assert causes(reply) == [("FieldValueNotSupported", "spec.type",
                              'Unsupported value: "Sometimes": supported values: "Exempt", "Limited"')]
    reply = await api.create(PL, plc("foo", {"type": "Limited", "limited": {"limitResponse": {"type": "Maybe"}}}))
    assert causes(reply) == [("FieldValueNotSupported", "spec.limited.limitResponse.type",
                              'Unsupported value: "Maybe": supported values: "Queue", "Reject"')]


async def test_mandatory_priority_levels_are_fixed(api: Api) -> None:
    mandatory = {o["metadata"]["name"]: o for o in boot.mandatory_priority_level_configurations()}
    exempt, catch_all = mandatory["exempt"], mandatory["catch-all"]
    changed = copy.deepcopy(catch_all)
    changed["spec"]["limited"]["nominalConcurrencyShares"] = 42
    reply = await api.create(PL, changed)
    assert [(r, f) for r, f, _ in causes(reply)] == [("FieldValueInvalid", "spec")]
    assert causes(reply)[0][2].endswith("spec of 'catch-all' must equal the fixed value")
    # the exempt level's own knobs are the operator's; anything else is not
    tuned = copy.deepcopy(exempt)
    tuned["spec"]["exempt"] = {"nominalConcurrencyShares": 10, "lendablePercent": 10}
    assert (await api.create(PL, tuned)).status == 201
    current = (await api.request("GET", f"{PL}/exempt")).json()
    current["spec"]["limited"] = {"limitResponse": {"type": "Reject"}}
    reply = await api.request("PUT", f"{PL}/exempt", current)
    assert [(r, f) for r, f, _ in causes(reply)] == [
        ("FieldValueForbidden", "spec.limited"), ("FieldValueInvalid", "spec")]
    assert causes(reply)[1][2].endswith("spec of 'exempt' except the 'spec.exempt' field must equal the fixed value")
    current["spec"].pop("limited")
    current["spec"]["exempt"] = {"nominalConcurrencyShares": -1, "lendablePercent": 101}
    assert causes(await api.request("PUT", f"{PL}/exempt", current)) == [
        ("FieldValueInvalid", "spec.exempt.nominalConcurrencyShares", "Invalid value: -1: must be a non-negative integer"),
        ("FieldValueInvalid", "spec.exempt.lendablePercent", "Invalid value: 101: must be between 0 and 100, inclusive")]


async def test_flow_schema_spec_validation(api: Api) -> None:
    reply = await api.create(FS, fs("foo", good_fs_spec(matchingPrecedence=10001)))
    assert causes(reply) == [("FieldValueInvalid", "spec.matchingPrecedence",
                              "Invalid value: 10001: must not be greater than 10000")]
    reply = await api.create(FS, fs("fred", good_fs_spec(matchingPrecedence=1)))
    assert causes(reply) == [("FieldValueInvalid", "spec.matchingPrecedence",
                              "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1")]
    reply = await api.create(FS, fs("foo", good_fs_spec(matchingPrecedence=-3)))
    assert causes(reply) == [("FieldValueInvalid", "spec.matchingPrecedence", "Invalid value: -3: must be a positive value")]
    reply = await api.create(FS, fs("foo", good_fs_spec(distinguisherMethod={"type": "ByColour"})))
    assert causes(reply) == [("FieldValueNotSupported", "spec.distinguisherMethod.type",
                              'Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:"ByColour"}: '
                              'supported values: "ByNamespace", "ByUser"')]
    reply = await api.create(FS, fs("foo", good_fs_spec(priorityLevelConfiguration={"name": "system+++$$"})))
    [(reason, field, message)] = causes(reply)
    assert (reason, field) == ("FieldValueInvalid", "spec.priorityLevelConfiguration.name")
    assert message.startswith('Invalid value: "system+++$$": a lowercase RFC 1123 subdomain must consist of')
    reply = await api.create(FS, fs("foo", good_fs_spec(priorityLevelConfiguration={})))
    assert causes(reply) == [("FieldValueRequired", "spec.priorityLevelConfiguration.name",
                              "Required value: must reference a priority level")]


async def test_flow_schema_rule_validation(api: Api) -> None:
    p = "spec.rules[0]"
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[{"subjects": [{"kind": "User", "user": {"name": "x"}}]}])))
    assert causes(reply) == [("FieldValueRequired", p,
                              "Required value: at least one of resourceRules and nonResourceRules has to be non-empty")]
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(subjects=[])])))
    assert causes(reply) == [("FieldValueRequired", f"{p}.subjects", "Required value: subjects must contain at least one value")]
    s = f"{p}.subjects[0]"
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(subjects=[
        {"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}}])])))
    assert causes(reply) == [
        ("FieldValueRequired", f"{s}.serviceAccount",
         "Required value: serviceAccount is required when subject kind is 'ServiceAccount'"),
        ("FieldValueForbidden", f"{s}.user", "Forbidden: user is forbidden when subject kind is not 'User'"),
        ("FieldValueForbidden", f"{s}.group", "Forbidden: group is forbidden when subject kind is not 'Group'")]
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(subjects=[
        {"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}}])])))
    assert causes(reply) == [("FieldValueRequired", f"{s}.serviceAccount.namespace",
                              "Required value: must specify namespace for service account")]
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(subjects=[{"kind": "FooKind"}])])))
    assert causes(reply) == [("FieldValueNotSupported", f"{s}.kind",
                              'Unsupported value: "FooKind": supported values: "Group", "ServiceAccount", "User"')]
    r = f"{p}.resourceRules[0]"
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(resourceRules=[
        {"verbs": ["*", "create"], "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["*"]}])])))
    assert causes(reply) == [
        ("FieldValueInvalid", f"{r}.verbs", 'Invalid value: []string{"*", "create"}: if \'*\' is present, must not specify other verbs'),
        ("FieldValueInvalid", f"{r}.apiGroups", 'Invalid value: []string{"*", "tak"}: if \'*\' is present, must not specify other api groups'),
        ("FieldValueInvalid", f"{r}.resources", 'Invalid value: []string{"*", "tok"}: if \'*\' is present, must not specify other resources')]
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(resourceRules=[
        {"verbs": ["feed"], "apiGroups": ["*"], "resources": ["*"]}])])))
    assert causes(reply) == [
        ("FieldValueNotSupported", f"{r}.verbs", 'Unsupported value: []string{"feed"}: supported values: "create", '
         '"delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"'),
        ("FieldValueRequired", f"{r}.namespaces",
         "Required value: resource rules that are not cluster scoped must supply at least one namespace")]
    reply = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(resourceRules=[
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["-foo"]}])])))
    [(reason, field, message)] = causes(reply)
    assert (reason, field) == ("FieldValueInvalid", f"{r}.namespaces[0]")
    assert message.startswith('Invalid value: "-foo": each member of this list must be \'*\' or a DNS-1123 label; '
                              "a lowercase RFC 1123 label must consist of")
    ok = await api.create(FS, fs("foo", good_fs_spec(rules=[rule(resourceRules=[
        {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"], "clusterScope": True}])])))
    assert ok.status == 201, ok.body


async def test_non_resource_url_validation(api: Api) -> None:
    n = "spec.rules[0].nonResourceRules[0]"

    def with_urls(*urls: str) -> dict[str, Any]:
        return fs("foo", good_fs_spec(rules=[{"subjects": [{"kind": "Group", "group": {"name": "g"}}],
                                              "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": list(urls)}]}]))
    for url, why in (("foo", "must start with slash"), ("//", "must not contain double slash"),
                     ("/healthz/foo bar", "must not contain white-space"), ("/health*", "wildcard can only do suffix matching"),
                     ("/*/*", "wildcard can only do suffix matching")):
        assert causes(await api.create(FS, with_urls(url))) == [
            ("FieldValueInvalid", f"{n}.nonResourceURLs[0]", f'Invalid value: "{url}": {why}')], url
    assert causes(await api.create(FS, with_urls("*", "tik"))) == [
        ("FieldValueInvalid", f"{n}.nonResourceURLs",
         'Invalid value: []string{"*", "tik"}: if \'*\' is present, must not specify other non-resource URLs')]
    for url in ("/", "/apis/", "/healthz/*"):
        created = await api.create(FS, with_urls(url))
        assert created.status == 201, (url, created.body)
        assert (await api.request("DELETE", f"{FS}/foo")).status == 200


async def test_mandatory_flow_schemas_are_fixed(api: Api) -> None:
    for obj in boot.mandatory_flow_schemas():
        changed = copy.deepcopy(obj)
        changed["spec"]["rules"][0]["nonResourceRules"][0]["nonResourceURLs"] = ["/"]
        reply = await api.create(FS, changed)
        [(reason, field, message)] = causes(reply)
        assert (reason, field) == ("FieldValueInvalid", "spec")
        assert message.endswith(f"spec of '{obj['metadata']['name']}' must equal the fixed value")
        assert (await api.create(FS, obj)).status == 201


async def test_status_conditions_validated(api: Api) -> None:
    created = (await api.create(FS, fs("foo", good_fs_spec()))).json()
    created["status"] = {"conditions": [{"type": "Dangling", "status": "True"}, {"type": "Dangling", "status": "False"},
                                        {"type": "", "status": "True"}]}
    reply = await api.request("PUT", f"{FS}/foo/status", created)
    assert causes(reply) == [("FieldValueDuplicate", "status.conditions[1].type", 'Duplicate value: "Dangling"'),
                             ("FieldValueRequired", "status.conditions[2].type", "Required value: must not be empty")]
    created["status"]["conditions"] = created["status"]["conditions"][:1]
    written = await api.request("PUT", f"{FS}/foo/status", created)
    assert written.status == 200, written.body
    assert written.json()["metadata"]["generation"] == 1  # a status write leaves the generation


async def test_no_create_on_put(api: Api) -> None:
    # kube's strategies: AllowCreateOnUpdate false for both kinds
    assert (await api.request("PUT", f"{FS}/foo", fs("foo", good_fs_spec()))).status == 404
    assert (await api.request("PUT", f"{PL}/foo", plc("foo", queued()))).status == 404


async def test_spec_change_moves_generation(api: Api) -> None:
    created = (await api.create(PL, plc("foo", queued()))).json()
    created["spec"]["limited"]["nominalConcurrencyShares"] = 7
    updated = (await api.request("PUT", f"{PL}/foo", created)).json()
    assert updated["metadata"]["generation"] == 2


# -------------------------------------------------------------------------------- tables


async def test_tables(api: Api) -> None:
    for obj in boot.priority_level_configurations():
        assert (await api.create(PL, obj)).status == 201
    for obj in boot.flow_schemas():
        assert (await api.create(FS, obj)).status == 201
    table = (await api.request("GET", FS, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"]
    rows = [r["cells"] for r in table["rows"]]
    # kube prints FlowSchemas in matching order: precedence, then name
    assert [(c[0], c[1], c[2], c[3], c[5]) for c in rows] == [
        ("exempt", "exempt", 1, "<none>", "?"), ("probes", "exempt", 2, "<none>", "?"),
        ("system-leader-election", "leader-election", 100, "ByUser", "?"),
        ("endpoint-controller", "workload-high", 150, "ByUser", "?"),
        ("workload-leader-election", "leader-election", 200, "ByUser", "?"),
        ("system-node-high", "node-high", 400, "ByUser", "?"), ("system-nodes", "system", 500, "ByUser", "?"),
        ("kube-controller-manager", "workload-high", 800, "ByNamespace", "?"),
        ("kube-scheduler", "workload-high", 800, "ByNamespace", "?"),
        ("kube-system-service-accounts", "workload-high", 900, "ByNamespace", "?"),
        ("service-accounts", "workload-low", 9000, "ByUser", "?"),
        ("global-default", "global-default", 9900, "ByUser", "?"), ("catch-all", "catch-all", 10000, "ByUser", "?")]
    # MissingPL shows the Dangling condition once the controller wrote one
    probes = (await api.request("GET", f"{FS}/probes")).json()
    probes["status"] = {"conditions": [{"type": "Dangling", "status": "False", "reason": "Found"}]}
    assert (await api.request("PUT", f"{FS}/probes/status", probes)).status == 200
    one = (await api.request("GET", f"{FS}/probes", headers=TABLE)).json()
    assert one["rows"][0]["cells"][5] == "False"

    table = (await api.request("GET", PL, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"]
    rows = {r["cells"][0]: r["cells"][1:6] for r in table["rows"]}
    assert rows == {
        "catch-all": ["Limited", 5, "<none>", "<none>", "<none>"], "exempt": ["Exempt", "<none>", "<none>", "<none>", "<none>"],
        "global-default": ["Limited", 20, 128, 6, 50], "leader-election": ["Limited", 10, 16, 4, 50],
        "node-high": ["Limited", 40, 64, 6, 50], "system": ["Limited", 30, 64, 6, 50],
        "workload-high": ["Limited", 40, 128, 6, 50], "workload-low": ["Limited", 100, 128, 6, 50]}
