"""managedFields tracking for non-apply writes, checked against what kube-apiserver records."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kapi.object.managedfields.compare import compare, field_set_of
from kapi.object.managedfields.entries import decode_managed_fields, manager_name, prefix_from_user_agent
from kapi.object.managedfields.fieldpath import FieldSet, PathElement, fields_v1, parse_fields_v1
from kapi.object.managedfields.update import ANCIENT_CHANGES_MANAGER, update_managed_fields
from kapi.registry.strategy import Strategy
from kapi.object.schema import Schema, load_builtin

DEPLOY = ("apps", "v1", "Deployment")
T0, T1, T2 = "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_builtin()


def deployment() -> dict[str, Any]:
    """A Deployment as stored after ``kubectl create deployment web --image=nginx --port=80``."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "5",
                     "generation": 1, "creationTimestamp": T0, "labels": {"app": "web"}},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "web", "image": "nginx",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "A", "value": "1"}],
                        "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "Always",
                    }],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
                },
            },
        },
    }


# The FieldsV1 kube-apiserver records for that create (compact JSON, kube's key order).
CREATED_FIELDS = (
    '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},'
    '"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":'
    '{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":'
    '{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\\"name\\":\\"web\\"}":{".":{},'
    '"f:env":{".":{},"k:{\\"name\\":\\"A\\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},'
    '"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},'
    '"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{},'
    '"f:protocol":{}}},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},'
    '"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},'
    '"f:terminationGracePeriodSeconds":{}}}}}'
)


def created(schema: Schema) -> dict[str, Any]:
    obj = deployment()
    obj["metadata"]["managedFields"] = update_managed_fields(
        schema, DEPLOY, None, obj, manager="kubectl-create", now=T0)
    return obj


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    [found] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    return found


def path(*texts: str) -> tuple[PathElement, ...]:
    out = []
    for t in texts:
        pe = PathElement.parse(t)
        assert pe is not None
        out.append(pe)
    return tuple(out)


CONTAINER = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}')


# ------------------------------------------------------------------ create


def test_create_records_every_field_for_the_creator(schema: Schema) -> None:
    obj = created(schema)
    [e] = obj["metadata"]["managedFields"]
    assert list(e) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert e["manager"] == "kubectl-create" and e["operation"] == "Update"
    assert e["apiVersion"] == "apps/v1" and e["time"] == T0 and e["fieldsType"] == "FieldsV1"
    assert json.dumps(e["fieldsV1"], separators=(",", ":")) == CREATED_FIELDS


def test_create_of_a_configmap_marks_new_maps_with_dot(schema: Schema) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "c", "namespace": "d", "finalizers": ["x/y"]}, "data": {"k": "v"}}
    [e] = update_managed_fields(schema, ("", "v1", "ConfigMap"), None, cm, manager="m", now=T0)
    assert e["fieldsV1"] == {"f:data": {".": {}, "f:k": {}},
                             "f:metadata": {"f:finalizers": {".": {}, 'v:"x/y"': {}}}}


def test_create_of_an_unknown_kind_is_deduced(schema: Schema) -> None:
    cr = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
          "spec": {"size": 3, "items": [1, 2]}}
    [e] = update_managed_fields(schema, ("x.io", "v1", "Thing"), None, cr, manager="m", now=T0)
    assert e["fieldsV1"] == {"f:spec": {".": {}, "f:items": {}, "f:size": {}}}
    assert e["apiVersion"] == "x.io/v1"


def test_create_with_an_empty_list_still_tracks(schema: Schema) -> None:
    obj = deployment()
    obj["metadata"]["managedFields"] = []
    [e] = update_managed_fields(schema, DEPLOY, None, obj, manager="kubectl-create", now=T0)
    assert e["manager"] == "kubectl-create"


def test_empty_manager_is_unknown(schema: Schema) -> None:
    [e] = update_managed_fields(schema, DEPLOY, None, deployment(), manager="", now=T0)
    assert e["manager"] == "unknown"


# ------------------------------------------------------------------ update


def test_update_moves_ownership_of_the_changed_field(schema: Schema) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    out = update_managed_fields(schema, DEPLOY, old, new, manager="kubectl-edit", now=T1)
    new["metadata"]["managedFields"] = out
    assert [e["manager"] for e in out] == ["kubectl-create", "kubectl-edit"]
    edit = entry(new, "kubectl-edit")
    assert edit["time"] == T1
    assert parse_fields_v1(edit["fieldsV1"]) == FieldSet([path(*CONTAINER, "f:image")])
    creator = entry(new, "kubectl-create")
    assert creator["time"] == T0  # not changed by someone else's write
    owned = parse_fields_v1(creator["fieldsV1"])
    assert path(*CONTAINER, "f:image") not in owned
    assert path(*CONTAINER, "f:name") in owned


def test_same_manager_keeps_one_entry_and_its_time_moves(schema: Schema) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["tier"] = "front"
    [e] = update_managed_fields(schema, DEPLOY, old, new, manager="kubectl-create", now=T1)
    assert e["time"] == T1
    assert e["fieldsV1"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}}


def test_no_op_update_changes_nothing(schema: Schema) -> None:
    old = created(schema)
    out = update_managed_fields(schema, DEPLOY, old, copy.deepcopy(old), manager="other", now=T1)
    assert out == old["metadata"]["managedFields"]


def test_removed_fields_leave_their_owner_and_empty_entries_go(schema: Schema) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["tier"] = "front"
    new["metadata"]["managedFields"] = update_managed_fields(schema, DEPLOY, old, new, manager="labeler", now=T1)
    assert entry(new, "labeler")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    newer = copy.deepcopy(new)
    del newer["metadata"]["labels"]["tier"]
    out = update_managed_fields(schema, DEPLOY, new, newer, manager="kubectl-create", now=T2)
    assert [e["manager"] for e in out] == ["kubectl-create"]
    # Removing is not owning: the remover's time stays.
    assert out[0]["time"] == T0


def test_update_of_an_untracked_object_stays_untracked(schema: Schema) -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    assert update_managed_fields(schema, DEPLOY, old, new, manager="m", now=T1) == []


@pytest.mark.parametrize("reset", [[], [{}]])
def test_request_can_reset_managed_fields(schema: Schema, reset: list[Any]) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["metadata"]["managedFields"] = reset
    new["spec"]["replicas"] = 3
    assert update_managed_fields(schema, DEPLOY, old, new, manager="m", now=T1) == []


def test_request_managed_fields_replace_the_stored_ones(schema: Schema) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["metadata"]["managedFields"] = [{
        "manager": "someone", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    out = update_managed_fields(schema, DEPLOY, old, new, manager="m", now=T1)
    assert [e["manager"] for e in out] == ["someone"]


@pytest.mark.parametrize("bad", [
    [{"manager": "x", "operation": "Patch", "apiVersion": "apps/v1", "fieldsType": "FieldsV1"}],
    [{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}],
    [{"manager": "x", "operation": "Update", "apiVersion": "apps/v1"}],
    [{"manager": "x", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV2"}],
    [{"manager": "x", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
      "fieldsV1": {"x": {}}}],
    [{"manager": "x", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
      "time": "yesterday"}],
])
def test_undecodable_request_managed_fields_fall_back_to_stored(schema: Schema, bad: list[Any]) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["metadata"]["managedFields"] = bad
    out = update_managed_fields(schema, DEPLOY, old, new, manager="m", now=T1)
    assert out == old["metadata"]["managedFields"]
    with pytest.raises(ValueError):
        decode_managed_fields(bad)


def test_status_subresource_is_recorded_and_ignores_request_entries(schema: Schema) -> None:
    old = created(schema)
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    new["metadata"]["managedFields"] = []  # would reset on the main resource
    out = update_managed_fields(schema, DEPLOY, old, new, manager="kube-controller-manager",
                                subresource="status", now=T1,
                                reset_fields=Strategy().reset_fields_of(True, "status"))
    assert [e["manager"] for e in out] == ["kubectl-create", "kube-controller-manager"]
    status = out[1]
    assert list(status)[-1] == "subresource" and status["subresource"] == "status"
    assert status["fieldsV1"] == {"f:status": {"f:conditions": {".": {}, 'k:{"type":"Available"}': {
        ".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}}


def test_reset_fields_are_neither_owned_nor_taken(schema: Schema) -> None:
    old = created(schema)
    old["status"] = {"replicas": 1}
    old["metadata"]["managedFields"].append({
        "manager": "ctrl", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}, "subresource": "status"})
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 7}
    new["spec"]["replicas"] = 2
    out = update_managed_fields(schema, DEPLOY, old, new, manager="kubectl", now=T1,
                                reset_fields=Strategy().reset_fields_of(True, ""))
    new["metadata"]["managedFields"] = out
    assert entry(new, "ctrl")["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    assert entry(new, "kubectl")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_update_managers_are_capped_at_ten(schema: Schema) -> None:
    obj = created(schema)
    for i in range(1, 11):
        new = copy.deepcopy(obj)
        new["metadata"]["labels"][f"l{i}"] = "v"
        new["metadata"]["managedFields"] = update_managed_fields(
            schema, DEPLOY, obj, new, manager=f"m{i:02}", now=f"2025-01-01T00:{i:02}:00Z")
        obj = new
    entries = obj["metadata"]["managedFields"]
    assert len(entries) == 10
    assert [e["manager"] for e in entries] == [ANCIENT_CHANGES_MANAGER] + [f"m{i:02}" for i in range(2, 11)]
    ancient = entries[0]
    # The two oldest (kubectl-create and m01) merged, with the newer one's time.
    assert ancient["time"] == "2025-01-01T00:01:00Z" and ancient["apiVersion"] == "apps/v1"
    owned = parse_fields_v1(ancient["fieldsV1"])
    assert path("f:metadata", "f:labels", "f:l1") in owned
    assert path("f:spec", "f:replicas") in owned


def test_entries_sort_apply_first_then_by_time(schema: Schema) -> None:
    old = created(schema)
    old["metadata"]["managedFields"].append({
        "manager": "applier", "operation": "Apply", "apiVersion": "apps/v1", "time": T2,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}})
    new = copy.deepcopy(old)
    new["spec"]["minReadySeconds"] = 5
    out = update_managed_fields(schema, DEPLOY, old, new, manager="a-late", now=T1)
    assert [(e["operation"], e["manager"]) for e in out] == [
        ("Apply", "applier"), ("Update", "kubectl-create"), ("Update", "a-late")]


# ------------------------------------------------------------------ sets and compare


def test_fields_v1_round_trip_is_canonical() -> None:
    raw = {"f:b": {}, "i:2": {}, "v:\"x\"": {}, 'k:{"protocol": "TCP", "containerPort": 80}': {
        "f:protocol": {}, ".": {}}, "f:a": {"f:c": {"r:future": {}}, ".": {}}, "z:ignored": {}}
    s = parse_fields_v1(raw)
    assert s.to_json() == ('{"f:a":{".":{},"f:c":{}},"f:b":{},'
                           '"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:protocol":{}},'
                           '"v:\\"x\\"":{},"i:2":{}}')
    assert FieldSet.from_json(s.to_json()) == s
    assert fields_v1(list(s)) == s.to_fields_v1()
    assert path("f:a", "f:c") in s and path("f:a") in s


@pytest.mark.parametrize("bad", [{"x": {}}, {"fx": {}}, {"k:[1]": {}}, {"k:{nope": {}}, {"i:one": {}},
                                 {"f:a": []}])
def test_malformed_fields_v1_is_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        parse_fields_v1(bad)


def test_path_elements_sort_like_structured_merge_diff() -> None:
    elems = [PathElement.of_index(0), PathElement.of_value(True), PathElement.of_value("a"),
             PathElement.of_value(2), PathElement.of_key({"name": "b"}), PathElement.of_key({"name": "a"}),
             PathElement.of_field("z"), PathElement.of_field("B")]
    assert [e.text for e in sorted(elems)] == [
        "f:B", "f:z", 'k:{"name":"a"}', 'k:{"name":"b"}', "v:2", 'v:"a"', "v:true", "i:0"]
    assert PathElement.of_value("<&>").text == 'v:"\\u003c\\u0026\\u003e"'


def test_recursive_difference_drops_children() -> None:
    s = FieldSet([path("f:spec", "f:a"), path("f:status", "f:b"), path("f:status")])
    assert s.recursive_difference(FieldSet([path("f:status")])) == FieldSet([path("f:spec", "f:a")])


def test_compare_and_field_set_of(schema: Schema) -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 2
    del new["spec"]["template"]["spec"]["containers"][0]["env"]
    diff = compare(schema, DEPLOY, old, new)
    assert diff.modified == FieldSet([path("f:spec", "f:replicas")])
    assert diff.added == FieldSet()
    assert path(*CONTAINER, "f:env") in diff.removed
    assert path(*CONTAINER, "f:env", 'k:{"name":"A"}', "f:value") in diff.removed
    full = field_set_of(schema, DEPLOY, old)
    assert path(*CONTAINER) in full and path(*CONTAINER, "f:resources") in full
    assert path("f:spec", "f:template", "f:spec") not in full


# ------------------------------------------------------------------ manager names


@pytest.mark.parametrize("agent,want", [
    ("kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef", "kubectl"),
    ("kube-controller-manager/v1.33.0", "kube-controller-manager"),
    ("my\ttool\x00/1", "mytool"),
    ("", ""),
    ("é" * 100, "é" * 64),
])
def test_prefix_from_user_agent(agent: str, want: str) -> None:
    assert prefix_from_user_agent(agent) == want


def test_manager_name_prefers_the_field_manager() -> None:
    assert manager_name("helm", "kubectl/v1.33") == "helm"
    assert manager_name("", "kubectl/v1.33") == "kubectl"
