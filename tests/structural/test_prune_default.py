"""Pruning of unknown fields, defaulting and embedded metadata coercion, as apiextensions does them."""

from __future__ import annotations

from kapi.object.structural import coerce, default, from_props, prune

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "items": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"},
                                                     "port": {"type": "integer", "default": 80}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "on"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "nul": {"type": "string", "nullable": True, "default": "d"},
                "obj": {"type": "object", "default": {"a": "b"}, "properties": {"a": {"type": "string"}}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def test_prune_drops_undeclared_fields_and_reports_them_sorted() -> None:
    s = from_props(SCHEMA)
    obj = {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "extra": 1,
           "spec": {"zzz": 1, "replicas": 2, "items": [{"name": "a", "bogus": True}],
                    "free": {"anything": {"deep": 1}, "typed": {"a": "x", "b": "y"}},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                                 "spec": {"x": "1", "y": "2"}, "other": 1}},
           "status": {"ready": True, "phase": "x"}}
    paths = prune(obj, s)
    assert paths == ["extra", "spec.free.typed.b", "spec.items[0].bogus", "spec.template.other",
                     "spec.template.spec.y", "spec.zzz", "status.phase"]
    assert obj == {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"},
                   "spec": {"replicas": 2, "items": [{"name": "a"}],
                            "free": {"anything": {"deep": 1}, "typed": {"a": "x"}},
                            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                                         "spec": {"x": "1"}}},
                   "status": {"ready": True}}


def test_prune_keeps_meta_fields_only_at_root_and_embedded() -> None:
    s = from_props(SCHEMA)
    obj = {"spec": {"items": [{"kind": "x", "name": "n"}]}}
    assert prune(obj, s) == ["spec.items[0].kind"]
    assert obj == {"spec": {"items": [{"name": "n"}]}}


def test_prune_root_preserve_unknown_fields() -> None:
    s = from_props({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    obj = {"foo": 1, "spec": {"a": "x", "b": 2}}
    assert prune(obj, s) == ["spec.b"]
    assert obj == {"foo": 1, "spec": {"a": "x"}}


def test_default_fills_absent_fields_items_and_map_nulls() -> None:
    s = from_props(SCHEMA)
    obj = {"spec": {"items": [{"name": "a"}, {"port": 81}], "labels": {"k": None, "j": "x"}, "nul": None}}
    default(obj, s)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["items"] == [{"name": "a", "port": 80}, {"port": 81}]
    assert obj["spec"]["labels"] == {"k": "on", "j": "x"}
    assert obj["spec"]["nul"] is None  # nullable: null stays
    assert obj["spec"]["obj"] == {"a": "b"}
    assert "status" not in obj  # no default there


def test_default_copies_the_default() -> None:
    s = from_props(SCHEMA)
    a: dict = {"spec": {}}
    b: dict = {"spec": {}}
    default(a, s)
    a["spec"]["obj"]["a"] = "changed"
    default(b, s)
    assert b["spec"]["obj"] == {"a": "b"}


def test_default_replaces_non_nullable_null() -> None:
    s = from_props(SCHEMA)
    obj = {"spec": {"replicas": None}}
    default(obj, s)
    assert obj["spec"]["replicas"] == 1


def test_coerce_embedded_metadata() -> None:
    s = from_props(SCHEMA)
    obj = {"metadata": {"name": "a", "bogus": 1},
           "spec": {"template": {"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "x", "foo": "bar", "creationTimestamp": None}}}}
    err, unknown = coerce(obj, s)
    assert err is None
    assert unknown == ["metadata.bogus", "spec.template.metadata.foo"]
    assert obj["spec"]["template"]["metadata"] == {"name": "x"}
    assert obj["metadata"] == {"name": "a"}


def test_coerce_malformed_embedded_kind() -> None:
    s = from_props(SCHEMA)
    obj = {"spec": {"template": {"apiVersion": "v1", "kind": 3}}}
    err, _ = coerce(obj, s)
    assert err is not None and (err.field, err.message) == ("spec.template.kind", "Invalid value: 3: must be a string")
    err, _ = coerce(obj, s, drop_invalid=True)
    assert err is None and obj["spec"]["template"] == {"apiVersion": "v1"}


def test_prune_drops_non_nullable_nulls_without_defaults() -> None:
    s = from_props(SCHEMA)
    obj = {"spec": {"items": None, "replicas": None, "nul": None, "labels": {"a": None}},
           "status": {"ready": None}}
    assert prune(obj, s) == []
    # items and status.ready: not nullable, no default: dropped; replicas has a default (defaulting
    # fills it), nul is nullable, the map entry has a default
    assert obj == {"spec": {"replicas": None, "nul": None, "labels": {"a": None}}, "status": {}}
    assert prune({"spec": {"items": None}}, s, nulls=False) == []


def test_coerce_writes_metadata_back_as_object_meta() -> None:
    # omitempty fields go, deletionGracePeriodSeconds (a pointer) keeps its 0
    obj = {"metadata": {"name": "a", "labels": {}, "generation": 0, "deletionGracePeriodSeconds": 0,
                        "generateName": "", "uid": None}}
    assert coerce(obj, None) == (None, [])
    assert obj["metadata"] == {"name": "a", "deletionGracePeriodSeconds": 0}
