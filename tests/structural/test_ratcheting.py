"""Validation ratcheting on update (kube's CRDValidationRatcheting, on by default since 1.30): an old
invalid value left as it was is not refused again; a changed one is."""

from __future__ import annotations

from kapi.object.structural import from_props, validate, validate_update

SCHEMA = from_props({"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 3},
    "other": {"type": "string"},
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"],
              "items": {"type": "object", "required": ["n"], "properties": {
                  "n": {"type": "string"}, "p": {"type": "integer", "maximum": 10}}}},
    "plain": {"type": "array", "items": {"type": "integer", "maximum": 10}},
}}}})

TOO_LONG = "Too long: may not be more than 3 bytes"


def _fields(causes: list) -> list[str]:
    return [c.field for c in causes]


def test_unchanged_invalid_field_is_kept() -> None:
    old = {"spec": {"name": "toolong", "other": "a"}}
    new = {"spec": {"name": "toolong", "other": "b"}}
    assert _fields(validate(SCHEMA, new)) == ["spec.name"]
    assert validate_update(SCHEMA, new, old) == []


def test_changed_invalid_field_is_refused() -> None:
    old = {"spec": {"name": "toolong"}}
    new = {"spec": {"name": "toolonger"}}
    (c,) = validate_update(SCHEMA, new, old)
    assert (c.field, c.message) == ("spec.name", TOO_LONG)


def test_list_map_entries_correlate_by_key() -> None:
    old = {"spec": {"ports": [{"n": "a", "p": 11}, {"n": "b", "p": 1}]}}
    new = {"spec": {"ports": [{"n": "b", "p": 2}, {"n": "a", "p": 11}]}}  # reordered, a unchanged
    assert validate_update(SCHEMA, new, old) == []
    new = {"spec": {"ports": [{"n": "a", "p": 12}]}}
    assert _fields(validate_update(SCHEMA, new, old)) == ["spec.ports[0].p"]


def test_other_lists_only_whole() -> None:
    old = {"spec": {"plain": [11, 1]}}
    assert validate_update(SCHEMA, {"spec": {"plain": [11, 1]}}, old) == []
    assert _fields(validate_update(SCHEMA, {"spec": {"plain": [11, 2]}}, old)) == ["spec.plain[0]"]


def test_no_old_is_a_create() -> None:
    assert _fields(validate_update(SCHEMA, {"spec": {"name": "toolong"}}, None)) == ["spec.name"]
