"""Any JSON value against a schema using every keyword: validation, pruning and defaulting never raise,
pruning is idempotent, and defaulting leaves nothing to prune."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from kapi.object.structural import default, from_props, prune, validate

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["a"],
            "minProperties": 1,
            "properties": {
                "a": {"type": "string", "maxLength": 3, "pattern": "^[a-z]*$", "enum": ["ab", "c"]},
                "n": {"type": "number", "minimum": 0, "maximum": 9, "multipleOf": 0.5, "default": 1},
                "i": {"type": "integer", "format": "int32", "exclusiveMinimum": True, "minimum": 0},
                "s": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "l": {"type": "array", "maxItems": 3, "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "object", "required": ["k"], "properties": {
                          "k": {"type": "string", "format": "uuid"}, "v": {"type": "boolean", "nullable": True}}}},
                "m": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"},
                                                                  "x-kubernetes-list-type": "set"}},
                "o": {"type": "object", "oneOf": [{"required": ["x"]}, {"required": ["y"]}],
                      "properties": {"x": {"type": "string"}, "y": {"type": "string"}}},
                "e": {"type": "object", "x-kubernetes-embedded-resource": True,
                      "x-kubernetes-preserve-unknown-fields": True},
                "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["a", "n", "i", "s", "l", "m", "o", "e", "p", "k", "v", "x", "y", "apiVersion", "kind",
                         "metadata", "zz"]), children, max_size=5),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_value(spec: object) -> None:
    s = from_props(SCHEMA)
    obj = {"apiVersion": "g/v1", "kind": "K", "spec": spec}
    for c in validate(s, obj):
        assert c.field and c.message and c.reason.startswith("FieldValue")
    pruned = copy.deepcopy(obj)
    prune(pruned, s)
    assert prune(copy.deepcopy(pruned), s) == []
    default(pruned, s)
    assert prune(copy.deepcopy(pruned), s, nulls=False) == []
