"""JSON patch, merge patch and strategic merge patch, against RFC and Kubernetes results."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kapi.errors import BadRequest, Invalid, RequestEntityTooLarge
from kapi.object.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from kapi.object.schema import load_builtin

POD = ("", "v1", "Pod")


# ------------------------------------------------------------ RFC 6902


@pytest.mark.parametrize(
    ("doc", "ops", "expected"),
    [
        # RFC 6902 appendix A.1 - A.10, A.14, A.16
        ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
        ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
        ({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        ({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}], {"foo": "bar", "child": {"grandchild": {}}}),
        ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        ({"a/b": 1, "m~n": 2}, [{"op": "replace", "path": "/a~1b", "value": 3}, {"op": "remove", "path": "/m~0n"}], {"a/b": 3}),
        ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
    ],
)
def test_json_patch_rfc_examples(doc: Any, ops: list[dict[str, Any]], expected: Any) -> None:
    before = copy.deepcopy(doc)
    assert apply_json_patch(doc, ops) == expected
    assert doc == before


@pytest.mark.parametrize(
    ("doc", "ops"),
    [
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),  # A.12
        ({"foo": "bar"}, [{"op": "remove", "path": "/nope"}]),
        ({"foo": "bar"}, [{"op": "replace", "path": "/nope", "value": 1}]),
        ({"foo": [1]}, [{"op": "add", "path": "/foo/5", "value": 1}]),
        ({"foo": [1]}, [{"op": "add", "path": "/foo/01", "value": 1}]),
        ({"foo": 1}, [{"op": "frobnicate", "path": "/foo"}]),
        ({"foo": 1}, [{"op": "test", "path": "/foo", "value": True}]),
        ({"foo": {"a": 1}}, [{"op": "move", "from": "/foo", "path": "/foo/a/b"}]),
    ],
)
def test_json_patch_that_does_not_apply_is_invalid(doc: Any, ops: list[dict[str, Any]]) -> None:
    with pytest.raises(Invalid) as info:
        apply_json_patch(doc, ops)
    assert info.value.code == 422
    assert info.value.message == "the server rejected our request due to an error in our request"
    assert info.value.__cause__ is not None


def test_json_patch_test_failure_message_detail() -> None:
    with pytest.raises(Invalid) as info:
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert str(info.value.__cause__) == "testing value /a failed: test failed"


@pytest.mark.parametrize("patch", [{"op": "add"}, "x", [1, 2]])
def test_json_patch_undecodable_is_bad_request(patch: Any) -> None:
    with pytest.raises(BadRequest):
        apply_json_patch({}, patch)


def test_json_patch_operation_limit() -> None:
    # kube-apiserver answers 413 RequestEntityTooLarge (issue 10)
    ops = [{"op": "test", "path": "", "value": {}}] * 10001
    with pytest.raises(RequestEntityTooLarge, match="maximum operations in a JSON patch is 10000, got 10001"):
        apply_json_patch({}, ops)


def test_json_patch_result_shares_nothing_with_inputs() -> None:
    value = {"x": [1]}
    result = apply_json_patch({"a": {"b": 1}}, [{"op": "add", "path": "/v", "value": value}])
    result["v"]["x"].append(2)
    result["a"]["b"] = 2
    assert value == {"x": [1]}


# ------------------------------------------------------------ RFC 7386


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc_examples(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert apply_merge_patch(target, patch) == expected
    assert target == before


# ------------------------------------------------ strategic merge patch


def _smp(doc: dict[str, Any], patch: dict[str, Any], gvk: tuple[str, str, str] = POD) -> dict[str, Any]:
    before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    result = apply_strategic_merge_patch(doc, patch, load_builtin(), gvk)
    assert doc == before and patch == patch_before, "inputs must not be mutated"
    return result


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_smp_containers_merge_by_name() -> None:
    doc = _pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    out = _smp(doc, {"spec": {"containers": [{"name": "b", "image": "b:2"}]}})
    assert out["spec"]["containers"] == [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]


def test_smp_new_element_goes_first_like_kubernetes() -> None:
    # apimachinery's mergeSortedSlice puts patch items unknown to the server first.
    doc = _pod(containers=[{"name": "a", "image": "a:1"}])
    out = _smp(doc, {"spec": {"containers": [{"name": "z", "image": "z:1"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["z", "a"]


def test_smp_env_by_name_and_delete_directive() -> None:
    doc = _pod(
        containers=[
            {"name": "a", "image": "i", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
        ]
    )
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "A", "$patch": "delete"}]}]}}
    out = _smp(doc, patch)
    assert out["spec"]["containers"][0]["env"] == [{"name": "B", "value": "3"}]
    assert out["spec"]["containers"][0]["image"] == "i"


def test_smp_list_replace_directive() -> None:
    doc = _pod(containers=[{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
    out = _smp(doc, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c"}]}})
    assert out["spec"]["containers"] == [{"name": "c", "image": "c"}]


def test_smp_map_directives() -> None:
    doc = _pod(containers=[], nodeSelector={"a": "1", "b": "2"})
    assert _smp(doc, {"spec": {"nodeSelector": {"$patch": "replace", "c": "3"}}})["spec"]["nodeSelector"] == {"c": "3"}
    assert _smp(doc, {"spec": {"nodeSelector": {"$patch": "delete"}}})["spec"]["nodeSelector"] == {}


def test_smp_null_deletes_and_maps_merge() -> None:
    doc = {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"containers": []}}
    out = _smp(doc, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"nodeName": "n1"}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"]["nodeName"] == "n1"


def test_smp_retain_keys_on_volume_source() -> None:
    doc = _pod(containers=[], volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "secret": {"secretName": "s"}}])
    patch = {"spec": {"volumes": [{"name": "v", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/x"}}]}}
    out = _smp(doc, patch)
    assert out["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": "/x"}}, {"name": "w", "secret": {"secretName": "s"}}]


def test_smp_retain_keys_must_cover_patch() -> None:
    doc = _pod(containers=[], volumes=[{"name": "v", "emptyDir": {}}])
    with pytest.raises(BadRequest, match="invalid patch format of retainKeys"):
        _smp(doc, {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/x"}}]}})


def test_smp_retain_keys_deployment_strategy() -> None:
    doc = {
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}, "template": {"spec": {"containers": []}}}
    }
    out = _smp(doc, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, ("apps", "v1", "Deployment"))
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_primitive_list_merge_and_delete_from_primitive_list() -> None:
    doc = {"metadata": {"name": "p", "finalizers": ["a", "b"]}}
    assert _smp(doc, {"metadata": {"finalizers": ["b", "c"]}})["metadata"]["finalizers"] == ["a", "b", "c"]
    out = _smp(doc, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]


def test_smp_lists_without_strategy_are_replaced() -> None:
    doc = _pod(containers=[{"name": "a", "image": "i", "args": ["x", "y"]}], tolerations=[{"key": "k1"}])
    out = _smp(doc, {"spec": {"containers": [{"name": "a", "args": ["z"]}], "tolerations": [{"key": "k2"}]}})
    assert out["spec"]["containers"][0]["args"] == ["z"]
    assert out["spec"]["tolerations"] == [{"key": "k2"}]


def test_smp_set_element_order() -> None:
    doc = _pod(containers=[{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "a2"}],
        }
    }
    out = _smp(doc, patch)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [("c", "c"), ("a", "a2"), ("b", "b")]


def test_smp_set_element_order_primitive() -> None:
    doc = {"metadata": {"name": "p", "finalizers": ["a", "b"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}
    assert _smp(doc, patch)["metadata"]["finalizers"] == ["c", "b", "a"]


def test_smp_service_ports_merge_by_port() -> None:
    doc = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}}
    out = _smp(doc, {"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}, ("", "v1", "Service"))
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 9443}]


def test_smp_new_field_gets_directives_applied() -> None:
    doc = _pod(containers=[{"name": "a", "image": "i"}])
    out = _smp(doc, {"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": None}}]}})
    assert out["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


def test_smp_missing_merge_key_is_bad_request() -> None:
    # kube answers its library's error as a 500; bad input is a 400 in kapi (issue 10)
    doc = _pod(containers=[{"name": "a", "image": "i"}])
    with pytest.raises(BadRequest) as info:
        _smp(doc, {"spec": {"containers": [{"image": "x"}]}})
    assert info.value.message == "map: map[image:x] does not contain declared merge key: name"
    assert info.value.code == 400


@pytest.mark.parametrize("patch", [
    {"metadata": {"$patch": "x"}}, {"$patch": ["a"]}, {"data": {"$patch": 1}},
    {"spec": {"containers": [{"$patch": "merge"}]}}, {"spec": {"containers": [{"name": "a", "$patch": "x"}]}},
])
def test_smp_unknown_directives_are_bad_request(patch: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        _smp(_pod(containers=[{"name": "a", "image": "i"}]), patch)


def test_smp_patch_must_be_object() -> None:
    with pytest.raises(BadRequest):
        apply_strategic_merge_patch({}, ["x"], load_builtin(), POD)


def test_smp_on_realistic_pod(pod_json: dict[str, Any]) -> None:
    patch = {"metadata": {"labels": {"tier": None, "new": "x"}}, "spec": {"containers": [{"name": pod_json["spec"]["containers"][0]["name"], "image": "patched:1"}]}}
    out = _smp(pod_json, patch)
    assert out["spec"]["containers"][0]["image"] == "patched:1"
    assert len(out["spec"]["containers"]) == len(pod_json["spec"]["containers"])
    assert "tier" not in out["metadata"]["labels"] and out["metadata"]["labels"]["new"] == "x"
    assert out["status"] == pod_json["status"]
