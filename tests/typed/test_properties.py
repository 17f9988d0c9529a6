"""Issue 10: whatever JSON a body holds, what passes the typed walk has the types Go would have decoded."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi import errors
from kapi.object import typed
from kapi.object.schema import load_builtin

SCHEMA = load_builtin()
CONFIGMAP = SCHEMA.type_for("", "v1", "ConfigMap")
POD = SCHEMA.type_for("", "v1", "Pod")

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)  # what orjson and load_yaml yield
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
FIELDS = ["name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "finalizers", "uid",
          "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
          "managedFields"]
STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion")
INT64 = ("generation", "deletionGracePeriodSeconds")


def _is_time(value: Any) -> bool:
    return value is None or isinstance(value, str) and value.endswith("Z")


def _check_meta(md: dict[str, Any]) -> None:
    for key in STRINGS:
        assert key not in md or type(md[key]) is str
    for key in INT64:
        assert key not in md or type(md[key]) is int and -(2**63) <= md[key] < 2**63
    for key in ("labels", "annotations"):
        if key in md:
            assert type(md[key]) is dict
            assert all(type(k) is str and type(v) is str for k, v in md[key].items())
    if "finalizers" in md:
        assert type(md["finalizers"]) is list and all(type(f) is str for f in md["finalizers"])
    if "ownerReferences" in md:
        assert type(md["ownerReferences"]) is list
        for ref in md["ownerReferences"]:
            assert type(ref) is dict
            for key in ("apiVersion", "kind", "name", "uid"):
                assert key not in ref or type(ref[key]) is str
            for key in ("controller", "blockOwnerDeletion"):
                assert key not in ref or type(ref[key]) is bool
    if "managedFields" in md:
        assert type(md["managedFields"]) is list
        for entry in md["managedFields"]:
            assert type(entry) is dict
            assert "fieldsV1" not in entry or type(entry["fieldsV1"]) is dict
            assert _is_time(entry.get("time"))
    for key in ("creationTimestamp", "deletionTimestamp"):
        assert _is_time(md.get(key))


@settings(max_examples=400, deadline=None)
@given(field=st.sampled_from(FIELDS), value=JSON, nested=st.sampled_from(["", "item", "owner", "managed"]))
def test_metadata_after_the_walk_has_go_types(field: str, value: Any, nested: str) -> None:
    if nested == "item":
        value = [value]
    elif nested == "owner":
        field, value = "ownerReferences", [{"name": "o", st_key(value): value}]
    elif nested == "managed":
        field, value = "managedFields", [{"manager": "m", "time": value, "fieldsV1": value}]
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", field: value}}
    try:
        typed.check(SCHEMA, CONFIGMAP, obj)
    except errors.BadRequest as exc:
        assert exc.code == 400 and exc.message
        return
    _check_meta(obj["metadata"])
    orjson.dumps(obj)  # storable


def st_key(value: Any) -> str:
    """An owner reference field chosen by the value's kind, so each type meets each field over the run."""
    keys = ("apiVersion", "kind", "uid", "controller", "blockOwnerDeletion")
    return keys[len(repr(value)) % len(keys)]


@settings(max_examples=200, deadline=None)
@given(spec=st.dictionaries(st.sampled_from(["containers", "hostNetwork", "priority", "overhead", "nodeSelector",
                                             "terminationGracePeriodSeconds", "tolerations", "volumes"]),
                            JSON, max_size=3))
def test_pod_spec_walk_never_fails_but_with_400(spec: dict[str, Any]) -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    try:
        typed.check(SCHEMA, POD, obj)
    except errors.BadRequest as exc:
        assert exc.code == 400
        return
    orjson.dumps(obj)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(list("ab1.-:{}[],&*!|>'\"\n #?~") + [
    "!!binary ", "!!set ", "!!omap ", "!!timestamp ", "y", "0x", "e+", ".nan", "<<: ", "2024-01-01", "&a ", "*a"]),
    max_size=30))
def test_any_yaml_decodes_to_json_or_400(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        value = typed.load_yaml(text.encode())
    except errors.BadRequest as exc:
        assert exc.message.startswith("error converting YAML to JSON: ")
        return
    orjson.dumps(value)  # JSON types only: no bytes, dates, sets, tuples, non-string keys, NaN


@settings(max_examples=200, deadline=None)
@given(value=JSON)
def test_yaml_of_json_round_trips(value: Any) -> None:
    import yaml  # noqa: PLC0415  (only this test writes YAML)

    loaded = typed.load_yaml(yaml.safe_dump({"v": value}).encode())
    orjson.dumps(loaded)
    assert set(loaded) == {"v"}
