"""No patch can cost more than its size (issue 10): copy budget, operation count, depth, list merges."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kapi.errors import BadRequest, Invalid, RequestEntityTooLarge
from kapi.object.patch import (DEFAULT_MAX_COPY_BYTES, MAX_DEPTH, apply_json_patch, apply_merge_patch,
    apply_strategic_merge_patch)
from kapi.object.schema import load_builtin

from .conftest import Api

POD = ("", "v1", "Pod")


def _doubling_copies(n: int) -> list[dict[str, Any]]:
    """Each operation appends a copy of /a to itself: /a doubles n times (~40 bytes an operation)."""
    return [{"op": "copy", "from": "/a", "path": "/a/-"} for _ in range(n)]


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_doubling_copies_stop_at_the_accumulated_copy_limit() -> None:
    ops = _doubling_copies(40)  # unbounded, 2**40 copies of "xxxxxxxx"
    with pytest.raises(Invalid) as info:
        apply_json_patch({"a": ["x" * 8]}, ops)
    assert info.value.code == 422
    assert info.value.message == "the server rejected our request due to an error in our request"
    cause = str(info.value.__cause__)
    assert cause.startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert cause.endswith(f", exceeding the limit {DEFAULT_MAX_COPY_BYTES}")


def test_copy_budget_counts_bytes_of_json() -> None:
    doc = {"a": "x" * 98}  # "xxx..." is 100 bytes of JSON
    two = [{"op": "copy", "from": "/a", "path": "/b"}, {"op": "copy", "from": "/a", "path": "/c"}]
    assert apply_json_patch(doc, two, max_copy_bytes=200) == {"a": doc["a"], "b": doc["a"], "c": doc["a"]}
    with pytest.raises(Invalid) as info:
        apply_json_patch(doc, two, max_copy_bytes=199)
    assert str(info.value.__cause__) == (
        "Unable to complete the copy, the accumulated size increase of copy is 200, exceeding the limit 199"
    )
    # 0 is no limit, as in json-patch
    assert len(orjson.dumps(apply_json_patch({"a": [1]}, _doubling_copies(12), max_copy_bytes=0))) > 3 * 4096


def test_more_than_10000_operations_is_413() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10001
    with pytest.raises(RequestEntityTooLarge) as info:
        apply_json_patch({"a": 1}, ops)
    assert info.value.code == 413
    assert info.value.message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    )
    assert apply_json_patch({"a": 1}, ops[:10000]) == {"a": 1}


def test_10000_operations_on_a_large_object() -> None:
    doc = {"data": {f"k{i}": "v" * 20 for i in range(5000)}, "items": list(range(5000))}
    ops: list[dict[str, Any]] = []
    for i in range(2500):
        ops.append({"op": "test", "path": f"/data/k{i}", "value": "v" * 20})
        ops.append({"op": "replace", "path": f"/data/k{i}", "value": str(i)})
        ops.append({"op": "move", "from": "/items/0", "path": "/items/-"})
        ops.append({"op": "add", "path": "/items/0", "value": -i})
    result = apply_json_patch(doc, ops)
    assert result["data"]["k2499"] == "2499" and result["data"]["k2500"] == "v" * 20
    assert len(result["items"]) == 7500
    assert result["items"][0] == -2499
    assert doc["data"]["k0"] == "v" * 20  # the input is untouched


def test_moves_that_nest_deeper_each_operation_are_invalid() -> None:
    # /a moves under a fresh key of itself over and over: one level deeper per operation
    ops: list[dict[str, Any]] = []
    for _ in range(MAX_DEPTH + 10):
        ops.append({"op": "add", "path": "/b", "value": {}})
        ops.append({"op": "move", "from": "/a", "path": "/b/a"})
        ops.append({"op": "move", "from": "/b", "path": "/a"})
    with pytest.raises(Invalid) as info:
        apply_json_patch({"a": {}}, ops)
    assert "nested more than" in str(info.value.__cause__)


def test_a_deep_path_that_does_not_exist_is_invalid() -> None:
    with pytest.raises(Invalid):
        apply_json_patch({"a": {}}, [{"op": "add", "path": "/a" * 100000, "value": 1}])


def test_a_deep_json_patch_value_is_invalid_not_a_500() -> None:
    with pytest.raises(Invalid):
        apply_json_patch({}, [{"op": "add", "path": "/a", "value": _nested(MAX_DEPTH + 50)}])
    with pytest.raises(Invalid):
        apply_json_patch({"a": _nested(MAX_DEPTH - 5)}, [{"op": "test", "path": "/a", "value": _nested(300)}])


def test_deep_merge_patch_is_bad_request() -> None:
    assert apply_merge_patch({}, _nested(MAX_DEPTH - 10)) == _nested(MAX_DEPTH - 10)
    with pytest.raises(BadRequest):
        apply_merge_patch({}, _nested(MAX_DEPTH + 10))
    with pytest.raises(BadRequest):
        apply_merge_patch({}, _nested(900))


def test_deep_strategic_merge_patch_is_bad_request() -> None:
    schema = load_builtin()
    patch = {"metadata": {"annotations": {"x": "y"}}, "spec": {"overhead": _nested(MAX_DEPTH - 10)}}
    assert apply_strategic_merge_patch({}, patch, schema, POD)["spec"]["overhead"] == _nested(MAX_DEPTH - 10)
    for depth in (MAX_DEPTH + 10, 900):
        with pytest.raises(BadRequest):
            apply_strategic_merge_patch({}, {"spec": {"overhead": _nested(depth)}}, schema, POD)


def test_strategic_merge_of_long_lists_goes_by_key() -> None:
    schema = load_builtin()
    n = 20000
    doc = {"spec": {"containers": [{"name": f"c{i}", "image": "a"} for i in range(n)]}}
    patch = {"spec": {"containers": [{"name": f"c{i}", "image": "b"} for i in range(0, n, 2)]
                      + [{"name": f"c{i}", "$patch": "delete"} for i in range(1, n, 4)]
                      + [{"name": "new", "image": "n"}]}}
    out = apply_strategic_merge_patch(doc, patch, schema, POD)["spec"]["containers"]
    names = [c["name"] for c in out]
    assert len(out) == n - n // 4 + 1
    assert "c1" not in names and "c3" in names and "new" in names
    assert {c["image"] for c in out if c["name"] in ("c0", "c2", "c19998")} == {"b"}
    assert next(c for c in out if c["name"] == "c3")["image"] == "a"


def test_delete_from_primitive_list_keeps_true_and_1_apart() -> None:
    schema = load_builtin()
    doc = {"x": [1, True, {"k": [1]}, "b"]}
    out = apply_strategic_merge_patch(doc, {"$deleteFromPrimitiveList/x": [True, {"k": [1.0]}]}, schema, POD)
    assert out["x"] == [1, "b"]


async def test_copy_amplification_over_http_is_422_and_the_server_goes_on(api: Api) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    assert (await api.create(path, {"metadata": {"name": "amp"}, "data": {"a": "x"}})).status == 201
    # each copy copies all of /data, earlier copies included: 2**40 times 64 bytes if unbounded
    ops = [{"op": "add", "path": "/data/big", "value": "x" * 64}]
    ops += [{"op": "copy", "from": "/data", "path": f"/data/d{i}"} for i in range(40)]
    reply = await api.request("PATCH", f"{path}/amp", ops, content_type="application/json-patch+json")
    assert reply.status == 422, reply.body
    assert reply.json()["reason"] == "Invalid"
    reply = await api.request("PATCH", f"{path}/amp", [{"op": "test", "path": "/data/a", "value": "x"}] * 10001,
                              content_type="application/json-patch+json")
    assert reply.status == 413, reply.body
    assert reply.json()["reason"] == "RequestEntityTooLarge"
    got = await api.request("GET", f"{path}/amp")
    assert got.status == 200 and got.json()["data"] == {"a": "x"}


async def test_deep_merge_patches_over_http_are_400(api: Api) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    assert (await api.create(path, {"metadata": {"name": "deep"}})).status == 201
    for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        body = b'{"metadata":{"annotations":' + b'{"a":' * 600 + b"{}" + b"}" * 602
        reply = await api.request("PATCH", f"{path}/deep", body, content_type=ctype)
        assert reply.status == 400, (ctype, reply.body)


@pytest.mark.parametrize("op", [{"op": "move", "path": "/", "from": 1}, {"op": "move", "path": {}, "from": "/a"},
                                {"op": "copy", "path": "/b", "from": 2}, {"op": "add", "path": 3, "value": 1},
                                {"op": "test", "path": ["/a"], "value": 1}])
def test_pointers_that_are_not_strings_are_invalid(op: dict[str, Any]) -> None:
    """Issue 10, found by the fuzz suite: a non-string pointer raised TypeError/AttributeError (a 500)."""
    with pytest.raises(Invalid):
        apply_json_patch({"a": 1}, [op])
