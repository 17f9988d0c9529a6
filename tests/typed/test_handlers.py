"""Issue 10: bodies are type-checked as Go's decoder checks them, through the ASGI app (no sockets)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from .conftest import Api

CMS = "/api/v1/namespaces/default/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
YAML = "application/yaml"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def _names(api: Api) -> list[str]:
    return [i["metadata"]["name"] for i in (await api.request("GET", CMS)).json()["items"]]


async def test_wrong_labels_type_is_400_with_kube_message_and_nothing_stored(api: Api) -> None:
    """Issue 10: labels: ["a"] answered 201 and then killed the watch cache."""
    r = await api.create(CMS, {"metadata": {"name": "l", "labels": ["a"]}})
    assert r.status == 400
    body = r.json()
    assert body["reason"] == "BadRequest" and body["code"] == 400
    assert body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
                               "array into Go struct field ObjectMeta.metadata.labels of type map[string]string")
    assert (await api.request("GET", CMS + "/l")).status == 404


WRONG_METADATA = [
    ("name", 1), ("name", ["a"]), ("name", {}), ("name", True),
    ("generateName", 1.5), ("generateName", {}), ("namespace", 7), ("namespace", []),
    ("labels", ["a"]), ("labels", "a"), ("labels", 1), ("labels", {"a": 1}), ("labels", {"a": {}}),
    ("annotations", ["a"]), ("annotations", True), ("annotations", {"a": []}), ("annotations", {"a": False}),
    ("ownerReferences", 1), ("ownerReferences", True), ("ownerReferences", {}), ("ownerReferences", ["a"]),
    ("ownerReferences", [{"uid": 1}]), ("ownerReferences", [{"controller": "yes"}]),
    ("finalizers", 1), ("finalizers", "a"), ("finalizers", [1]), ("finalizers", [{}]), ("finalizers", {}),
    ("uid", 1), ("uid", []), ("resourceVersion", 5), ("resourceVersion", {}),
    ("generation", "1"), ("generation", 1.5), ("generation", True), ("generation", 2**63),
    ("creationTimestamp", 1), ("creationTimestamp", "yesterday"), ("creationTimestamp", {}),
    ("deletionTimestamp", True), ("deletionTimestamp", "2026-13-01T00:00:00Z"), ("deletionTimestamp", []),
    ("deletionGracePeriodSeconds", "30"), ("deletionGracePeriodSeconds", 0.5), ("deletionGracePeriodSeconds", {}),
    ("managedFields", 1), ("managedFields", {}), ("managedFields", [1]), ("managedFields", [{"manager": 1}]),
    ("managedFields", [{"fieldsV1": "x"}]), ("managedFields", [{"time": "noon"}]),
]


@pytest.mark.parametrize("field,value", WRONG_METADATA, ids=[f"{f}={v!r}" for f, v in WRONG_METADATA])
async def test_every_metadata_field_is_type_checked(api: Api, field: str, value: Any) -> None:
    """Issue 10: 102 of 140 wrongly typed metadata fields were accepted; kube answers 400 to all."""
    md = {"name": "t", field: value} if field != "name" else {field: value}
    r = await api.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md})
    assert r.status == 400, r.body
    message = r.json()["message"]
    assert message.startswith('ConfigMap in version "v1" cannot be handled as a ConfigMap: ')
    assert "json: cannot unmarshal" in message or "parsing time" in message
    assert await _names(api) == []


async def test_spec_field_types_and_int32_range(api: Api) -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 99999999999, "selector": {"matchLabels": {"a": "b"}},
                       "template": {"metadata": {"labels": {"a": "b"}},
                                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    r = await api.create("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert r.status == 400
    assert r.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 99999999999 '
        "into Go struct field DeploymentSpec.spec.replicas of type int32")
    deploy["spec"]["replicas"] = 1
    deploy["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    r = await api.create("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert r.status == 400
    assert r.json()["message"].endswith("json: cannot unmarshal string into Go struct field "
                                        "ContainerPort.spec.template.spec.containers.ports.containerPort of type int32")


async def test_merge_patch_results_are_type_checked(api: Api) -> None:
    """Issue 10: merge patch {"metadata":{"labels":[1]}} was stored; {"metadata":[]} answered 500."""
    await api.create(CMS, cm("p", a="1"))
    before = (await api.request("GET", CMS + "/p")).json()
    for patch, ctype in (({"metadata": {"labels": [1]}}, MERGE_PATCH), ({"metadata": []}, MERGE_PATCH),
                         ([{"op": "add", "path": "/metadata/labels", "value": [1]}], JSON_PATCH),
                         ({"data": {"a": 1}}, MERGE_PATCH), ({"metadata": {"finalizers": 1}}, MERGE_PATCH)):
        r = await api.request("PATCH", CMS + "/p", patch, content_type=ctype)
        # kube-apiserver: a patch whose result does not decode is 422 Invalid on the field "patch".
        assert r.status == 422, (patch, r.body)
        body = r.json()
        assert body["reason"] == "Invalid"
        assert [c["field"] for c in body["details"]["causes"]] == ["patch"]
        assert "json: cannot unmarshal" in body["message"]
    r = await api.request("PATCH", CMS + "/p", {"metadata": {"labels": [1]}}, content_type=SMP)
    assert 400 <= r.status < 500, r.body
    assert (await api.request("GET", CMS + "/p")).json() == before


async def test_delete_options_are_type_checked(api: Api) -> None:
    await api.create(CMS, cm("d"))
    r = await api.request("DELETE", CMS + "/d", {"gracePeriodSeconds": "5"})
    assert r.status == 400
    assert r.json()["message"] == ("json: cannot unmarshal string into Go struct field "
                                   "DeleteOptions.gracePeriodSeconds of type int64")
    for body in ({"preconditions": 1}, {"preconditions": {"uid": 1}}, {"dryRun": "All"},
                 {"orphanDependents": "true"}, {"propagationPolicy": ["Foreground"]}):
        r = await api.request("DELETE", CMS + "/d", body)
        assert r.status == 400, (body, r.body)
    assert await _names(api) == ["d"]
    r = await api.request("DELETE", CMS + "/d", {"gracePeriodSeconds": 0, "preconditions": None})
    assert r.status == 200, r.body


async def test_scale_body_is_an_autoscaling_v1_scale(api: Api) -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "s"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                       "template": {"metadata": {"labels": {"a": "b"}},
                                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert (await api.create("/apis/apps/v1/namespaces/default/deployments", deploy)).status == 201
    path = "/apis/apps/v1/namespaces/default/deployments/s/scale"
    scale = (await api.request("GET", path)).json()
    scale["spec"]["replicas"] = "3"
    r = await api.request("PUT", path, scale)
    assert r.status == 400
    assert r.json()["message"] == ('Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                                   "string into Go struct field ScaleSpec.spec.replicas of type int32")
    r = await api.request("PATCH", path, {"spec": {"replicas": "3"}}, content_type=MERGE_PATCH)
    assert r.status == 422, r.body


async def test_put_of_a_get_with_offset_times_succeeds(api: Api) -> None:
    """Issue 10: the Python client sends creationTimestamp back as +00:00 and got 422 'field is immutable'."""
    created = (await api.create(CMS, cm("t", a="1"))).json()
    stamp = created["metadata"]["creationTimestamp"]
    assert stamp.endswith("Z")
    obj = (await api.request("GET", CMS + "/t")).json()
    obj["metadata"]["creationTimestamp"] = stamp[:-1] + "+00:00"
    obj["data"]["a"] = "2"
    r = await api.request("PUT", CMS + "/t", obj)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["creationTimestamp"] == stamp
    obj = r.json()
    obj["metadata"]["creationTimestamp"] = "not a time"
    r = await api.request("PUT", CMS + "/t", obj)
    assert r.status == 400
    assert "parsing time \"not a time\"" in r.json()["message"]


async def test_put_with_another_creation_timestamp_keeps_the_stored_one(api: Api) -> None:
    """Issue 10: kube's BeforeUpdate ignores a changed creationTimestamp (no 422): the old one stays."""
    created = (await api.create(CMS, cm("keep", a="1"))).json()
    obj = dict(created, data={"a": "2"})
    obj["metadata"] = dict(created["metadata"], creationTimestamp="2001-02-03T04:05:06Z")
    r = await api.request("PUT", CMS + "/keep", obj)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert r.json()["data"] == {"a": "2"}


async def test_lease_replace_with_micro_times_at_offsets(api: Api) -> None:
    """Issue 10: leader election with the Python client (renewTime/acquireTime are MicroTime)."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                      "acquireTime": "2026-12-01T17:50:12.000001+00:00",
                      "renewTime": "2026-12-01T19:50:12.123456+02:00"}}
    r = await api.create(LEASES, lease)
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["acquireTime"] == "2026-12-01T17:50:12.000001Z"
    assert spec["renewTime"] == "2026-12-01T17:50:12.123456Z"
    got = (await api.request("GET", LEASES + "/leader")).json()
    got["spec"]["renewTime"] = "2026-12-01T18:50:13.654321+01:00"
    got["metadata"]["creationTimestamp"] = got["metadata"]["creationTimestamp"][:-1] + "+00:00"
    r = await api.request("PUT", LEASES + "/leader", got)
    assert r.status == 200, r.body
    assert r.json()["spec"]["renewTime"] == "2026-12-01T17:50:13.654321Z"
    got = r.json()
    got["spec"]["renewTime"] = "2026-12-01T17:50:13Z"  # MicroTime wants exactly six fraction digits
    r = await api.request("PUT", LEASES + "/leader", got)
    assert r.status == 400
    assert 'as "2006-01-02T15:04:05.000000Z07:00"' in r.json()["message"]


async def test_yaml_is_decoded_as_json_compatible_values(api: Api) -> None:
    """Issue 10: !!binary answered 500 but committed the object; dates and !!set answered 500."""
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\n"
            b"data:\n  bin: !!binary aGVsbG8=\n  date: 2024-01-01\n  when: 2001-12-14t21:59:43.10-05:00\n"
            b"  port: 22:22\n  quoted: \"1\"\n")
    r = await api.request("POST", CMS, body, content_type=YAML)
    assert r.status == 201, r.body
    assert r.json()["data"] == {"bin": "hello", "date": "2024-01-01", "when": "2001-12-14t21:59:43.10-05:00",
                                "port": "22:22", "quoted": "1"}
    r = await api.request("POST", CMS, b"metadata: {name: s}\ndata: !!set {a, b}\n", content_type=YAML)
    assert r.status == 201, r.body  # a set is a map of nulls, and a null string in a Go map is ""
    assert r.json()["data"] == {"a": "", "b": ""}
    r = await api.request("POST", CMS, b"metadata: {name: n}\ndata: {a: .nan}\n", content_type=YAML)
    assert r.status == 400
    assert r.json()["message"] == "error converting YAML to JSON: json: unsupported value: NaN"
    assert sorted(await _names(api)) == ["s", "yml"]


async def test_yaml_binary_into_binary_data(api: Api) -> None:
    data = base64.b64encode(b"\x00\x01").decode()
    body = f"metadata: {{name: b}}\nbinaryData:\n  k: {data}\n".encode()
    r = await api.request("POST", CMS, body, content_type=YAML)
    assert r.status == 201, r.body
    assert r.json()["binaryData"] == {"k": data}
    r = await api.request("POST", CMS, b"metadata: {name: c}\nbinaryData: {k: '!!'}\n", content_type=YAML)
    assert r.status == 400
    assert r.json()["message"].endswith("illegal base64 data at input byte 0")


async def test_yaml_billion_laughs_and_deep_nesting_are_400(api: Api) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    laughs = ("metadata: {name: lol}\nx:\n" + "\n".join("  " + line for line in lines) + "\n").encode()
    r = await api.request("POST", CMS, laughs, content_type=YAML)
    assert r.status == 400
    assert "excessive aliasing" in r.json()["message"]
    deep = b"metadata: {name: deep}\nx: " + b"[" * 1000 + b"]" * 1000 + b"\n"
    r = await api.request("POST", CMS, deep, content_type=YAML)
    assert r.status == 400, r.body
    assert await _names(api) == []


async def test_yaml_multi_document_uses_the_first(api: Api) -> None:
    body = b"metadata: {name: first}\n---\nmetadata: {name: second}\n"
    r = await api.request("POST", CMS, body, content_type=YAML)
    assert r.status == 201, r.body
    assert await _names(api) == ["first"]


async def test_deep_json_is_400_before_any_recursive_code(api: Api) -> None:
    """Issue 10: annotations nested 1,000 levels answered a RecursionError 500."""
    deep = b'{"metadata":{"name":"deep"},"x":' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"}"
    r = await api.request("POST", CMS, deep)
    assert r.status == 400, r.body
    await api.create(CMS, cm("p"))
    patch = b'{"metadata":{"annotations":' + b'{"a":' * 500 + b'"1"' + b"}" * 500 + b"}}"
    for ctype in (MERGE_PATCH, SMP):
        r = await api.request("PATCH", CMS + "/p", patch, content_type=ctype)
        assert r.status == 400, r.body
    assert await _names(api) == ["p"]


async def test_lone_surrogates_never_reach_storage(api: Api) -> None:
    """Issue 10: "\\ud800" in ConfigMap data answered a UnicodeEncodeError 500."""
    # Go's decoder takes an escaped lone surrogate as U+FFFD.
    r = await api.request("POST", CMS, b'{"metadata":{"name":"j","annotations":{"k":"v\\udfff"}},'
                          b'"data":{"a":"\\ud800"}}')
    assert r.status == 201, r.body
    assert r.json()["data"] == {"a": "\ufffd"} and r.json()["metadata"]["annotations"] == {"k": "v\ufffd"}
    r = await api.request("PATCH", CMS + "/j", b'{"data":{"b":"y\\udc00"}}', content_type=MERGE_PATCH)
    assert r.status == 200, r.body
    assert r.json()["data"]["b"] == "y\ufffd"
    r = await api.request("POST", CMS, b'{"metadata":{"name":"n"},"data":{"a":"\\ud800"},"x":NaN}')
    assert r.status == 400
    # YAML: go-yaml refuses a surrogate escape, in values and in (unknown, Strict) field names.
    r = await api.request("POST", CMS, b'metadata: {name: s}\ndata: {a: "x\\ud800", b: "\\udc00y"}\n',
                          content_type=YAML)
    assert r.status == 400 and "invalid Unicode character escape code" in r.json()["message"], r.body
    r = await api.request("POST", CMS + "?fieldValidation=Strict", b'{"metadata":{"name":"t"},'
                          b'"\\ud89f\\udcf6":"NaN"}', content_type=YAML)
    assert r.status == 400, r.body
    listed = (await api.request("GET", CMS)).body
    assert {i["metadata"]["name"]: i["data"]["a"] for i in orjson.loads(listed)["items"]} == {"j": "\ufffd"}


async def test_json_patch_that_builds_depth_is_4xx(api: Api) -> None:
    """Issue 10: a patch can build a value deeper than its own body; the result is bounded all the same."""
    await api.create(CMS, cm("jp"))
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/x", "value": {}}]
    ops += [{"op": "copy", "from": "/x", "path": "/x/a"} for _ in range(120)]
    r = await api.request("PATCH", CMS + "/jp", ops, content_type=JSON_PATCH)
    assert 400 <= r.status < 500, r.body
    assert "x" not in (await api.request("GET", CMS + "/jp")).json()


async def test_kind_and_api_version_must_be_strings(api: Api) -> None:
    r = await api.create(CMS, {"apiVersion": "v1", "kind": 1, "metadata": {"name": "k"}})
    assert r.status == 400
    assert r.json()["message"] == ("couldn't get version/kind; json parse error: json: cannot unmarshal number "
                                   "into Go struct field .kind of type string")
    r = await api.create(CMS, {"apiVersion": ["v1"], "metadata": {"name": "k"}})
    assert r.status == 400
    assert await _names(api) == []


async def test_bodies_that_are_not_objects(api: Api) -> None:
    r = await api.request("POST", CMS, b"[1]")
    assert r.status == 400
    assert r.json()["message"] == (
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct "
        '{ APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
    r = await api.request("POST", CMS, b"null")
    assert r.status == 400
    assert r.json()["message"] == "Object 'Kind' is missing in 'null'"
    r = await api.request("POST", CMS, b"- a\n", content_type=YAML)
    assert r.status == 400
    assert "cannot unmarshal array into Go value of type struct" in r.json()["message"]
    r = await api.request("POST", CMS, b"# nothing\n", content_type=YAML)
    assert r.status == 400
    assert r.json()["message"].startswith("Object 'Kind' is missing in ")


async def test_error_quoting_a_lone_surrogate_is_still_a_status(api: Api) -> None:
    """A fuzz finding: Strict's message quotes the unknown field's name, here with a lone surrogate
    (a JSON escape, read as U+FFFD only where the schema walks): the Status must still encode."""
    r = await api.request("POST", CMS + "?fieldValidation=Strict", b'{"metadata":{"name":"v"},"\\ud800x":1}')
    assert r.status == 400, r.body
    assert r.json()["message"] == 'strict decoding error: unknown field "\ufffdx"'
