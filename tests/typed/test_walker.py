"""Issue 10: the typed walk refuses what Go's decoder refuses, with its messages, and nothing else."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kapi import errors
from kapi.object import typed
from kapi.object.schema import load_builtin

SCHEMA = load_builtin()
CONFIGMAP = SCHEMA.type_for("", "v1", "ConfigMap")
POD = SCHEMA.type_for("", "v1", "Pod")
LEASE = SCHEMA.type_for("coordination.k8s.io", "v1", "Lease")


def message(obj: dict[str, Any], root: Any = CONFIGMAP) -> str:
    with pytest.raises(errors.BadRequest) as info:
        typed.check(SCHEMA, root, obj)
    assert info.value.code == 400
    return info.value.message


def meta(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", **fields}}


def unmarshal(value: str, path: str, go_type: str, struct: str = "ObjectMeta") -> str:
    return f"json: cannot unmarshal {value} into Go struct field {struct}.{path} of type {go_type}"


STRING_FIELDS = ["name", "generateName", "namespace", "uid", "resourceVersion"]
CASES = [(f, v, unmarshal(k, f"metadata.{f}", "string")) for f in STRING_FIELDS
         for v, k in ((1, "number"), (1.5, "number"), (True, "bool"), ([], "array"), ({}, "object"))]
for f in ("labels", "annotations"):
    CASES += [(f, v, unmarshal(k, f"metadata.{f}", "map[string]string"))
              for v, k in (("a", "string"), (1, "number"), (False, "bool"), (["a"], "array"))]
    CASES += [(f, {"k": v}, unmarshal(k, f"metadata.{f}", "string"))
              for v, k in ((1, "number"), (True, "bool"), ([], "array"), ({}, "object"))]
CASES += [("finalizers", v, unmarshal(k, "metadata.finalizers", "[]string"))
          for v, k in (("a", "string"), (1, "number"), (True, "bool"), ({}, "object"))]
CASES += [("finalizers", [v], unmarshal(k, "metadata.finalizers", "string"))
          for v, k in ((1, "number"), (True, "bool"), ([], "array"), ({}, "object"))]
CASES += [("ownerReferences", v, unmarshal(k, "metadata.ownerReferences", "[]v1.OwnerReference"))
          for v, k in (("a", "string"), (1, "number"), (True, "bool"), ({}, "object"))]
CASES += [("ownerReferences", [v], unmarshal(k, "metadata.ownerReferences", "v1.OwnerReference"))
          for v, k in (("a", "string"), (1, "number"), ([], "array"))]
CASES += [("ownerReferences", [{"uid": 1}], unmarshal("number", "metadata.ownerReferences.uid", "string",
                                                      "OwnerReference")),
          ("ownerReferences", [{"controller": "true"}],
           unmarshal("string", "metadata.ownerReferences.controller", "bool", "OwnerReference"))]
for f in ("generation", "deletionGracePeriodSeconds"):
    CASES += [(f, v, unmarshal(k, f"metadata.{f}", "int64"))
              for v, k in (("1", "string"), (True, "bool"), ([], "array"), ({}, "object"), (1.5, "number 1.5"),
                           (2**63, f"number {2**63}"), (-(2**63) - 1, f"number {-(2**63) - 1}"))]
for f in ("creationTimestamp", "deletionTimestamp"):
    CASES += [(f, v, unmarshal(k, f"metadata.{f}", "string"))
              for v, k in ((1, "number"), (True, "bool"), ([], "array"), ({}, "object"))]
    CASES += [(f, "tomorrow",
               'parsing time "tomorrow" as "2006-01-02T15:04:05Z07:00": cannot parse "tomorrow" as "2006"'),
              (f, "2026-13-01T00:00:00Z", 'parsing time "2026-13-01T00:00:00Z": month out of range'),
              (f, "2026-12-01", 'parsing time "2026-12-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"')]
CASES += [("managedFields", v, unmarshal(k, "metadata.managedFields", "[]v1.ManagedFieldsEntry"))
          for v, k in (("a", "string"), (1, "number"), ({}, "object"))]
CASES += [("managedFields", [{"manager": 1}],
           unmarshal("number", "metadata.managedFields.manager", "string", "ManagedFieldsEntry")),
          ("managedFields", [{"fieldsV1": "f:x"}],
           unmarshal("string", "metadata.managedFields.fieldsV1", "v1.FieldsV1", "ManagedFieldsEntry"))]


@pytest.mark.parametrize("field,value,expected", CASES, ids=[f"{f}={v!r}" for f, v, _ in CASES])
def test_metadata_field_types(field: str, value: Any, expected: str) -> None:
    assert message(meta(**{field: value})) == expected


def test_every_metadata_field_is_covered() -> None:
    covered = {f for f, _, _ in CASES}
    assert covered == {"name", "generateName", "namespace", "labels", "annotations", "ownerReferences",
                       "finalizers", "uid", "resourceVersion", "generation", "creationTimestamp",
                       "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"}


def test_metadata_itself_and_unknown_kinds() -> None:
    assert message({"metadata": []}) == unmarshal("array", "metadata", "v1.ObjectMeta", "ConfigMap")
    # A kind the schema does not know (a custom resource) still gets its ObjectMeta checked.
    assert message({"metadata": {"labels": ["a"]}}, None) == unmarshal(
        "array", "metadata.labels", "map[string]string")
    cr = {"metadata": {"name": "x"}, "spec": {"anything": [1, {"goes": True}]}}
    assert typed.check(SCHEMA, None, copy.deepcopy(cr)) == cr


def test_spec_fields() -> None:
    pod = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 2**31}]}]}}
    assert message(pod, POD) == unmarshal(f"number {2**31}", "spec.containers.ports.containerPort", "int32",
                                          "ContainerPort")
    pod = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80.0}]}]}}
    assert "number 80.0 into" in message(pod, POD)
    assert message({"spec": {"containers": "c"}}, POD) == unmarshal("string", "spec.containers", "[]v1.Container",
                                                                    "PodSpec")
    assert message({"spec": {"hostNetwork": "yes"}}, POD) == unmarshal("string", "spec.hostNetwork", "bool",
                                                                       "PodSpec")
    assert message({"spec": {"terminationGracePeriodSeconds": "30"}}, POD).endswith("of type int64")
    assert message({"data": {"a": 1}}) == unmarshal("number", "data", "string", "ConfigMap")
    assert message({"binaryData": {"a": "!!!!"}}) == "illegal base64 data at input byte 0"
    resources = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": {}}}}]}}
    assert message(resources, POD).startswith("quantities must match the regular expression")
    probe = {"spec": {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": True}}}]}}
    assert message(probe, POD) == unmarshal("bool", "spec.containers.livenessProbe.httpGet.port", "int32",
                                            "HTTPGetAction")


def test_right_types_pass_unchanged(pod_json: dict[str, Any]) -> None:
    obj = copy.deepcopy(pod_json)
    assert typed.check(SCHEMA, POD, obj) is obj
    assert obj == pod_json
    ok = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 2**31 - 1}],
                                   "resources": {"limits": {"cpu": "500m", "memory": 1}},
                                   "livenessProbe": {"httpGet": {"port": "http"}}}]}}
    assert typed.check(SCHEMA, POD, copy.deepcopy(ok)) == ok


def test_nulls_as_go_leaves_them() -> None:
    obj = {"metadata": {"name": "n", "labels": {"a": None}, "finalizers": [None], "uid": None,
                        "creationTimestamp": None}, "data": None}
    typed.check(SCHEMA, CONFIGMAP, obj)
    # A null map value or list item is the zero value; a null field is omitted (a zero Time stays null).
    assert obj == {"metadata": {"name": "n", "labels": {"a": ""}, "finalizers": [""], "creationTimestamp": None}}


@pytest.mark.parametrize("sent,stored", [
    ("2026-12-01T17:50:12Z", "2026-12-01T17:50:12Z"),
    ("2026-12-01T17:50:12+00:00", "2026-12-01T17:50:12Z"),
    ("2026-12-01T19:50:12+02:00", "2026-12-01T17:50:12Z"),
    ("2026-12-01T17:50:12.999-00:30", "2026-12-01T18:20:12Z"),
    ("2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00Z"),
    ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
])
def test_times_are_canonical(sent: str, stored: str) -> None:
    obj = meta(creationTimestamp=sent)
    typed.check(SCHEMA, CONFIGMAP, obj)
    assert obj["metadata"]["creationTimestamp"] == stored


def test_micro_times_are_canonical() -> None:
    obj = {"spec": {"renewTime": "2026-12-01T19:50:12.123456+02:00", "acquireTime": "2026-12-01T17:50:12.000000Z"}}
    typed.check(SCHEMA, LEASE, obj)
    assert obj["spec"] == {"renewTime": "2026-12-01T17:50:12.123456Z", "acquireTime": "2026-12-01T17:50:12.000000Z"}
    for bad in ("2026-12-01T17:50:12Z", "2026-12-01T17:50:12.123Z", "2026-12-01T17:50:12.1234567Z"):
        assert message({"spec": {"renewTime": bad}}, LEASE).startswith(
            f'parsing time "{bad}" as "2006-01-02T15:04:05.000000Z07:00"')


@pytest.mark.parametrize("bad", ["2026-02-30T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T17:60:00Z",
                                 "2026-12-01T17:50:60Z", "2026-12-01 17:50:12Z", "2026-12-01T17:50:12",
                                 "2026-12-01T17:50:12z", "2026-12-01T17:50:12+0100", ""])
def test_bad_times_are_400(bad: str) -> None:
    assert message(meta(deletionTimestamp=bad)).startswith(f'parsing time "{bad}"')


def test_depth_is_bounded_before_recursion() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(typed.MAX_DEPTH + 5):
        inner["a"] = {}
        inner = inner["a"]
    assert "nested more than" in message({"metadata": {"name": "n"}, "unknown": deep})
    assert "nested more than" in message({"metadata": {"name": "n"}, "spec": deep}, None)
    with pytest.raises(errors.BadRequest):
        typed.check_depth([deep])
    shallow: dict[str, Any] = {}
    inner = shallow
    for _ in range(typed.MAX_DEPTH - 5):
        inner["a"] = {}
        inner = inner["a"]
    typed.check(SCHEMA, None, {"metadata": {"name": "n"}, "spec": shallow})
    typed.check_depth(shallow)


def test_lone_surrogates_become_replacement_characters() -> None:
    obj = {"metadata": {"name": "n", "annotations": {"k\udc00": "v\ud800"}}, "data": {"a": "\ud800x"},
           "extra": ["\udfff"]}
    typed.check(SCHEMA, CONFIGMAP, obj)
    assert obj["metadata"]["annotations"] == {"k\ufffd": "v\ufffd"}
    assert obj["data"] == {"a": "\ufffdx"}
    assert obj["extra"] == ["\ufffd"]
    json.dumps(obj, ensure_ascii=False).encode("utf-8")  # storable: no surrogate left


def test_delete_options_type() -> None:
    name = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    assert message({"gracePeriodSeconds": "1"}, name) == unmarshal("string", "gracePeriodSeconds", "int64",
                                                                   "DeleteOptions")
    assert message({"preconditions": []}, name) == unmarshal("array", "preconditions", "v1.Preconditions",
                                                             "DeleteOptions")
    assert message({"dryRun": "All"}, name) == unmarshal("string", "dryRun", "[]string", "DeleteOptions")
    assert typed.check(SCHEMA, name, {"gracePeriodSeconds": 0, "dryRun": ["All"]}) == {
        "gracePeriodSeconds": 0, "dryRun": ["All"]}


def test_early_years_keep_four_digits() -> None:
    obj = meta(creationTimestamp="0999-01-01T00:30:00+01:00")
    typed.check(SCHEMA, CONFIGMAP, obj)
    assert obj["metadata"]["creationTimestamp"] == "0998-12-31T23:30:00Z"
