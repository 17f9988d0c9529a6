"""kapi.admission.matching against kube's webhook predicates and policy matching: rules (operations,
groups, versions, resources with subresources, scope), namespace and object selectors, the
equivalent resources of matchPolicy Equivalent and the conversion to them, and a policy's
MatchResources (excludeResourceRules, resourceNames)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi import errors
from kapi.admission import matching
from kapi.admission.plugin import Attributes, Objects
from kapi.apis import BUILTIN
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, DELETE, UPDATE, AdmissionRequest
from kapi.registry.informer import Informers
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]
TABLE = ResourceTable(BUILTIN)


def res(group: str, version: str, resource: str) -> Resource:
    found = TABLE.get(group, version, resource)
    assert found is not None
    return found


def attrs(op: str, r: Resource, *, sub: str = "", ns: str = "app", name: str = "x", obj: Obj | None = None,
          old: Obj | None = None, kind: tuple[str, str, str] = ("", "", "")) -> Attributes:
    return Attributes(AdmissionRequest(op, r, sub, ns, name, obj, old, False, kind), UserInfo("alice"), {}, [])


def rule(resources: list[str], ops: list[str] | None = None, groups: list[str] | None = None,
         versions: list[str] | None = None, **extra: Any) -> Obj:
    return {"operations": ops or ["*"], "apiGroups": groups if groups is not None else ["*"],
            "apiVersions": versions or ["*"], "resources": resources, **extra}


PODS = res("", "v1", "pods")
NAMESPACES = res("", "v1", "namespaces")
DEPLOYMENTS = res("apps", "v1", "deployments")


@pytest.mark.parametrize(("resources", "sub", "expected"), [
    (["pods"], "", True), (["pods"], "status", False), (["*"], "", True), (["*"], "status", False),
    (["*/*"], "status", True), (["*/*"], "", True), (["pods/status"], "status", True), (["pods/status"], "", False),
    (["pods/*"], "status", True), (["pods/*"], "", True), (["*/status"], "status", True), (["*/status"], "log", False),
    (["configmaps"], "", False),
])
def test_rule_resources_and_subresources(resources: list[str], sub: str, expected: bool) -> None:
    assert matching.rule_matches(rule(resources), attrs(UPDATE, PODS, sub=sub)) is expected


def test_rule_operations_groups_versions() -> None:
    a = attrs(CREATE, DEPLOYMENTS)
    assert matching.rule_matches(rule(["deployments"], ["CREATE"], ["apps"], ["v1"]), a)
    assert not matching.rule_matches(rule(["deployments"], ["UPDATE", "DELETE"]), a)
    assert not matching.rule_matches(rule(["deployments"], groups=[""]), a)
    assert not matching.rule_matches(rule(["deployments"], versions=["v1beta1"]), a)
    assert not matching.rule_matches({"resources": ["deployments"]}, a)  # no operations: nothing


def test_rule_scope() -> None:
    namespaced = rule(["*"], scope="Namespaced")
    cluster = rule(["*"], scope="Cluster")
    pod, ns = attrs(CREATE, PODS), attrs(CREATE, NAMESPACES, ns="", name="n")
    ns_named = attrs(UPDATE, NAMESPACES, ns="n", name="n")  # kube sets a Namespace's namespace to its name
    assert matching.rule_matches(namespaced, pod) and not matching.rule_matches(cluster, pod)
    assert matching.rule_matches(cluster, ns) and not matching.rule_matches(namespaced, ns)
    assert matching.rule_matches(cluster, ns_named) and not matching.rule_matches(namespaced, ns_named)
    assert matching.rule_matches(rule(["*"], scope="*"), pod)
    assert not matching.rule_matches(rule(["*"], scope="Elsewhere"), pod)


def test_object_selector_reads_new_then_old_labels() -> None:
    sel = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}
    web = {"metadata": {"labels": {"tier": "web"}}}
    assert matching.object_matches(sel, attrs(CREATE, PODS, obj=web))
    assert matching.object_matches(sel, attrs(DELETE, PODS, old=web))
    assert not matching.object_matches(sel, attrs(UPDATE, PODS, obj={"metadata": {}}, old={"metadata": {}}))
    assert matching.object_matches({}, attrs(DELETE, PODS)) and matching.object_matches(None, attrs(DELETE, PODS))
    with pytest.raises(errors.InternalError):
        matching.object_matches({"matchExpressions": [{"key": "a", "operator": "Near"}]}, attrs(CREATE, PODS, obj=web))


@pytest.fixture
async def objects(nursery: trio.Nursery) -> Objects:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    await registry.create(NAMESPACES, "", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "app", "labels": {"env": "prod"}}}, WriteOptions())
    informers = Informers(registry)
    out = Objects(registry, informers)
    out.watch("", "namespaces")
    await nursery.start(informers.run)
    return out


async def test_namespace_selector(objects: Objects) -> None:
    prod = {"matchLabels": {"env": "prod"}}
    assert await matching.namespace_matches(prod, attrs(CREATE, PODS), objects)
    assert not await matching.namespace_matches({"matchLabels": {"env": "dev"}}, attrs(CREATE, PODS), objects)
    # a cluster-scoped request that is not a Namespace always matches
    nodes = res("", "v1", "nodes")
    assert await matching.namespace_matches({"matchLabels": {"env": "dev"}}, attrs(CREATE, nodes, ns=""), objects)
    # a Namespace being written: its own labels; deleted: the stored ones
    new_ns = {"metadata": {"name": "n", "labels": {"env": "dev"}}}
    assert await matching.namespace_matches({"matchLabels": {"env": "dev"}},
                                            attrs(CREATE, NAMESPACES, ns="", name="n", obj=new_ns), objects)
    assert await matching.namespace_matches(prod, attrs(DELETE, NAMESPACES, ns="", name="app"), objects)
    with pytest.raises(errors.NotFound) as caught:
        await matching.namespace_matches(prod, attrs(CREATE, PODS, ns="nowhere"), objects)
    assert caught.value.message == 'namespaces "nowhere" not found'
    assert await matching.namespace_matches({}, attrs(CREATE, PODS, ns="nowhere"), objects)  # empty: not read


def test_equivalent_resources_share_storage() -> None:
    core_events, new_events = res("", "v1", "events"), res("events.k8s.io", "v1", "events")
    assert matching.equivalents(attrs(CREATE, core_events), TABLE) == [core_events, new_events]
    assert matching.equivalents(attrs(CREATE, new_events), TABLE) == [new_events, core_events]
    hpa1, hpa2 = res("autoscaling", "v1", "horizontalpodautoscalers"), res("autoscaling", "v2",
                                                                           "horizontalpodautoscalers")
    assert set(map(id, matching.equivalents(attrs(CREATE, hpa2), TABLE))) == {id(hpa1), id(hpa2)}
    assert matching.equivalents(attrs(CREATE, PODS), TABLE) == [PODS]
    # only those serving the request's subresource
    assert matching.equivalents(attrs(UPDATE, hpa2, sub="status"), TABLE)[0] is hpa2
    assert matching.equivalents(attrs(UPDATE, hpa2, sub="scale"), TABLE) == [hpa2]
    assert matching.kind_for(hpa1, attrs(UPDATE, hpa2)) == ("autoscaling", "v1", "HorizontalPodAutoscaler")
    scale = ("autoscaling", "v1", "Scale")
    assert matching.kind_for(DEPLOYMENTS, attrs(UPDATE, DEPLOYMENTS, sub="scale", kind=scale)) == scale


def test_webhook_rules_under_each_match_policy() -> None:
    core_events = res("", "v1", "events")
    new_rule = [rule(["events"], groups=["events.k8s.io"])]
    a = attrs(CREATE, core_events)
    assert matching.webhook_rules_match(new_rule, "Exact", a, TABLE) is None
    matched = matching.webhook_rules_match(new_rule, "Equivalent", a, TABLE)
    assert matched is not None and matched.group == "events.k8s.io"
    assert matching.webhook_rules_match([rule(["events"], groups=[""])], "Equivalent", a, TABLE) is core_events


def test_convert_to_an_equivalent_version() -> None:
    core_events, new_events = res("", "v1", "events"), res("events.k8s.io", "v1", "events")
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "app"},
             "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hello", "reason": "R"}
    converted = matching.convert_to(core_events, new_events, event)
    assert converted["apiVersion"] == "events.k8s.io/v1" and converted["note"] == "hello"
    assert converted["regarding"] == {"kind": "Pod", "name": "p"}
    assert event["message"] == "hello" and "note" not in event  # the original is left alone
    back = matching.convert_to(new_events, core_events, converted)
    assert back["message"] == "hello" and back["apiVersion"] == "v1"
    assert matching.convert_to(core_events, core_events, event) is event


async def test_match_resources_of_a_policy(objects: Objects) -> None:
    constraints = {"resourceRules": [rule(["pods"], ["CREATE"], [""], ["v1"], resourceNames=["named"])],
                   "namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Equivalent"}
    assert await matching.match_resources(constraints, attrs(CREATE, PODS, name="named"), objects, TABLE) == (True, PODS)
    assert await matching.match_resources(constraints, attrs(CREATE, PODS, name="other"), objects, TABLE) == \
        (False, None)
    # no resourceRules: everything not excluded
    excluding = {"excludeResourceRules": [rule(["pods"])], "namespaceSelector": {"matchLabels": {"env": "prod"}}}
    assert await matching.match_resources(excluding, attrs(CREATE, PODS), objects, TABLE) == (False, None)
    assert await matching.match_resources(excluding, attrs(CREATE, DEPLOYMENTS), objects, TABLE) == \
        (True, DEPLOYMENTS)
    with pytest.raises(errors.NotFound):  # a missing namespace fails a request the rules match
        await matching.match_resources(excluding, attrs(CREATE, DEPLOYMENTS, ns="missing"), objects, TABLE)
    # ... and not one they exclude
    assert await matching.match_resources(excluding, attrs(CREATE, PODS, ns="missing"), objects, TABLE) == \
        (False, None)

    # Equivalent: an equivalent resource matches, its resourceNames unchecked (as kube's matcher)
    core_events, new_events = res("", "v1", "events"), res("events.k8s.io", "v1", "events")
    eq = {"resourceRules": [rule(["events"], groups=["events.k8s.io"], resourceNames=["only-this"])],
          "matchPolicy": "Equivalent"}
    ok, matched = await matching.match_resources(eq, attrs(CREATE, core_events, name="any"), objects, TABLE)
    assert ok and matched is new_events
    assert await matching.match_resources({**eq, "matchPolicy": "Exact"}, attrs(CREATE, core_events, name="any"),
                                          objects, TABLE) == (False, None)


def test_exempt_kinds() -> None:
    vwc = res("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    assert matching.is_exempt(attrs(CREATE, vwc, ns=""))
    assert not matching.is_exempt(attrs(CREATE, PODS))
