"""Custom objects validated against structural schemas: one row per OpenAPI keyword kube supports,
a valid and an invalid value, the cause (reason, field, message) kube-apiserver reports."""

from __future__ import annotations

import pytest

from kapi.errors import Cause
from kapi.object.structural import from_props, validate


def _obj_schema(prop: dict) -> dict:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": {"f": prop}}}}


# (keyword, schema of spec.f, valid value, invalid value, expected causes as (reason, field, message))
KEYWORDS = [
    ("type integer", {"type": "integer"}, 3, "string",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "string": spec.f in body must be of type integer: "string"')]),
    ("type integer float", {"type": "integer"}, 3.0, 1.5,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "number": spec.f in body must be of type integer: "number"'),
      ("FieldValueInvalid", "<nil>", 'Invalid value: "": Checked value must be of type integer (default format) in spec.f')]),
    ("type number", {"type": "number"}, 2, True,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "boolean": spec.f in body must be of type number: "boolean"')]),
    ("type string", {"type": "string"}, "x", 1,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "integer": spec.f in body must be of type string: "integer"')]),
    ("type boolean", {"type": "boolean"}, False, "true",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "string": spec.f in body must be of type boolean: "string"')]),
    ("type array", {"type": "array", "items": {"type": "string"}}, ["a"], {"a": 1},
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "object": spec.f in body must be of type array: "object"')]),
    ("type object", {"type": "object"}, {}, [],
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "array": spec.f in body must be of type object: "array"')]),
    ("null not nullable", {"type": "string"}, "x", None,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "null": spec.f in body must be of type string: "null"')]),
    ("nullable", {"type": "string", "nullable": True, "maxLength": 1}, None, "xy",
     [("FieldValueTooLong", "spec.f", "Too long: may not be more than 1 byte")]),
    ("int-or-string", {"x-kubernetes-int-or-string": True}, "50%", 1.5,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "number": spec.f in body must be of type integer,string: "number"')]),
    ("format int32", {"type": "integer", "format": "int32"}, 2147483647, 2147483648,
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": Checked value must be of type integer with format int32 in spec.f')]),
    ("format float", {"type": "number", "format": "float"}, 1.5, 1e39,
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": Checked value must be of type number with format float in spec.f')]),
    ("format uuid", {"type": "string", "format": "uuid"}, "8d5a3e59-4f5c-4b3a-9a5e-1c2d3e4f5a6b", "nope",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "nope": spec.f in body must be of type uuid: "nope"')]),
    ("format date-time", {"type": "string", "format": "date-time"}, "2024-01-02T03:04:05Z", "2024-01-02",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "2024-01-02": spec.f in body must be of type date-time: "2024-01-02"')]),
    ("format date", {"type": "string", "format": "date"}, "2024-02-29", "2023-02-29",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "2023-02-29": spec.f in body must be of type date: "2023-02-29"')]),
    ("format duration", {"type": "string", "format": "duration"}, "1h30m", "soon",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "soon": spec.f in body must be of type duration: "soon"')]),
    ("format byte", {"type": "string", "format": "byte"}, "aGVsbG8=", "a!",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "a!": spec.f in body must be of type byte: "a!"')]),
    ("format ipv4", {"type": "string", "format": "ipv4"}, "10.0.0.1", "10.0.0.256",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "10.0.0.256": spec.f in body must be of type ipv4: "10.0.0.256"')]),
    ("format cidr", {"type": "string", "format": "cidr"}, "10.0.0.0/8", "10.0.0.0/33",
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "10.0.0.0/33": spec.f in body must be of type cidr: "10.0.0.0/33"')]),
    ("format unknown is not checked", {"type": "string", "format": "k8s-fancy"}, "anything", 1,
     [("FieldValueTypeInvalid", "spec.f", 'Invalid value: "integer": spec.f in body must be of type string: "integer"')]),
    ("enum", {"type": "string", "enum": ["a", "b"]}, "a", "x",
     [("FieldValueNotSupported", "spec.f", 'Unsupported value: "x": supported values: "a", "b"')]),
    ("enum numbers", {"type": "integer", "enum": [1, 2]}, 2, 3,
     [("FieldValueNotSupported", "spec.f", 'Unsupported value: 3: supported values: "1", "2"')]),
    ("maximum", {"type": "integer", "maximum": 10}, 10, 11,
     [("FieldValueInvalid", "spec.f", "Invalid value: 11: spec.f in body should be less than or equal to 10")]),
    ("exclusiveMaximum", {"type": "integer", "maximum": 10, "exclusiveMaximum": True}, 9, 10,
     [("FieldValueInvalid", "spec.f", "Invalid value: 10: spec.f in body should be less than 10")]),
    ("minimum", {"type": "number", "minimum": 0.5}, 0.5, 0.25,
     [("FieldValueInvalid", "spec.f", "Invalid value: 0.25: spec.f in body should be greater than or equal to 0.5")]),
    ("exclusiveMinimum", {"type": "integer", "minimum": 0, "exclusiveMinimum": True}, 1, 0,
     [("FieldValueInvalid", "spec.f", "Invalid value: 0: spec.f in body should be greater than 0")]),
    ("multipleOf", {"type": "integer", "multipleOf": 3}, 9, 10,
     [("FieldValueInvalid", "spec.f", "Invalid value: 10: spec.f in body should be a multiple of 3")]),
    ("multipleOf float", {"type": "number", "multipleOf": 0.1}, 0.3, 0.35,
     [("FieldValueInvalid", "spec.f", "Invalid value: 0.35: spec.f in body should be a multiple of 0.1")]),
    ("maxLength", {"type": "string", "maxLength": 5}, "héllo", "toolong",
     [("FieldValueTooLong", "spec.f", "Too long: may not be more than 5 bytes")]),
    ("minLength", {"type": "string", "minLength": 2}, "ab", "a",
     [("FieldValueInvalid", "spec.f", 'Invalid value: "a": spec.f in body should be at least 2 chars long')]),
    ("pattern", {"type": "string", "pattern": "^[a-z]+$"}, "abc", "ab1",
     [("FieldValueInvalid", "spec.f", "Invalid value: \"ab1\": spec.f in body should match '^[a-z]+$'")]),
    ("pattern unanchored", {"type": "string", "pattern": "[0-9]"}, "a1b", "ab",
     [("FieldValueInvalid", "spec.f", "Invalid value: \"ab\": spec.f in body should match '[0-9]'")]),
    ("minItems", {"type": "array", "items": {"type": "integer"}, "minItems": 2}, [1, 2], [1],
     [("FieldValueInvalid", "spec.f", "Invalid value: 1: spec.f in body should have at least 2 items")]),
    ("maxItems", {"type": "array", "items": {"type": "integer"}, "maxItems": 1}, [1], [1, 2],
     [("FieldValueTooMany", "spec.f", "Too many: 2: must have at most 1 item")]),
    ("items", {"type": "array", "items": {"type": "integer"}}, [1], [1, "x"],
     [("FieldValueTypeInvalid", "spec.f[1]", 'Invalid value: "string": spec.f[1] in body must be of type integer: "string"')]),
    ("uniqueItems", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [1, 2], [1, 1],
     [("FieldValueInvalid", "spec.f", "Invalid value: \"\": spec.f in body shouldn't contain duplicates")]),
    ("minProperties", {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1}, {"a": "b"}, {},
     [("FieldValueInvalid", "spec.f", "Invalid value: 0: spec.f in body should have at least 1 properties")]),
    ("maxProperties", {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1}, {"a": "b"},
     {"a": "b", "c": "d"}, [("FieldValueTooMany", "spec.f", "Too many: 2: must have at most 1 item")]),
    ("additionalProperties", {"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1}, {"a": "x"},
     [("FieldValueTypeInvalid", "spec.f.a", 'Invalid value: "string": spec.f.a in body must be of type integer: "string"')]),
    ("required", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}, {"name": "x"}, {},
     [("FieldValueRequired", "spec.f.name", "Required value")]),
    ("properties", {"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1}, {"n": "1"},
     [("FieldValueTypeInvalid", "spec.f.n", 'Invalid value: "string": spec.f.n in body must be of type integer: "string"')]),
    ("anyOf", {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]}, 11, 5,
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.f" must validate at least one schema (anyOf)'),
      ("FieldValueInvalid", "spec.f", "Invalid value: 5: spec.f in body should be greater than or equal to 10")]),
    ("oneOf none", {"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 0}]}, 11, 5,
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found none valid'),
      ("FieldValueInvalid", "spec.f", "Invalid value: 5: spec.f in body should be greater than or equal to 10")]),
    ("oneOf two", {"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 20}]}, 5, 15,
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives')]),
    ("allOf", {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}, "abc", "abcd",
     [("FieldValueTooLong", "spec.f", "Too long: may not be more than 3 bytes"),
      ("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.f" must validate all the schemas (allOf)')]),
    ("not", {"type": "string", "not": {"enum": ["forbidden"]}}, "ok", "forbidden",
     [("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.f" must not validate the schema (not)')]),
    ("list-type set", {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}, ["a", "b"],
     ["a", "b", "a"], [("FieldValueDuplicate", "spec.f[2]", 'Duplicate value: "a"')]),
    ("list-type map", {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                       "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
     [{"name": "a"}, {"name": "b"}], [{"name": "a"}, {"name": "a"}],
     [("FieldValueDuplicate", "spec.f[1]", 'Duplicate value: map[string]interface {}{"name":"a"}')]),
    ("list-type map two keys", {"type": "array", "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name", "port"],
                                "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                           "port": {"type": "integer"}}}},
     [{"name": "a", "port": 1}, {"name": "a", "port": 2}], [{"name": "a", "port": 1}, {"name": "a", "port": 1}],
     [("FieldValueDuplicate", "spec.f[1]", 'Duplicate value: map[string]interface {}{"name":"a", "port":1}')]),
    ("list-type set in a map", {"type": "object", "additionalProperties": {
        "type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"}},
     {"k": [1, 2]}, {"k": [1, 1]}, [("FieldValueDuplicate", "spec.f[k][1]", "Duplicate value: 1")]),
    ("embedded resource", {"type": "object", "x-kubernetes-embedded-resource": True,
                           "x-kubernetes-preserve-unknown-fields": True},
     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, {"kind": "Pod", "metadata": {"name": "a/b"}},
     [("FieldValueRequired", "spec.f.apiVersion", "Required value"),
      ("FieldValueInvalid", "spec.f.metadata.name", "Invalid value: \"a/b\": may not contain '/'")]),
    ("embedded resource metadata types", {"type": "object", "x-kubernetes-embedded-resource": True,
                                          "x-kubernetes-preserve-unknown-fields": True},
     {"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": 1}}},
     [("FieldValueInvalid", "spec.f.metadata",
       'Invalid value: map[string]interface {}{"labels":map[string]interface {}{"a":1}}: json: cannot unmarshal '
       "number into Go struct field ObjectMeta.labels of type string")]),
    ("embedded resource kind", {"type": "object", "x-kubernetes-embedded-resource": True,
                                "x-kubernetes-preserve-unknown-fields": True},
     {"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "a/b/c", "kind": 1},
     [("FieldValueInvalid", "spec.f.apiVersion",
       'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'),
      ("FieldValueInvalid", "spec.f.kind", "Invalid value: 1: must be a string")]),
]


@pytest.mark.parametrize("keyword,prop,good,bad,expected", KEYWORDS, ids=[k[0] for k in KEYWORDS])
def test_keyword(keyword: str, prop: dict, good: object, bad: object, expected: list[tuple[str, str, str]]) -> None:
    s = from_props(_obj_schema(prop))
    assert validate(s, {"apiVersion": "g/v1", "kind": "K", "spec": {"f": good}}) == []
    got = validate(s, {"apiVersion": "g/v1", "kind": "K", "spec": {"f": bad}})
    assert [(c.reason, c.field, c.message) for c in got] == expected


def test_causes_are_kapi_causes() -> None:
    s = from_props(_obj_schema({"type": "integer"}))
    (c,) = validate(s, {"spec": {"f": "x"}})
    assert isinstance(c, Cause)
    assert c.to_dict()["field"] == "spec.f"


def test_path_prefix_for_a_subtree() -> None:
    # the status subresource validates status alone, its causes under "status"
    s = from_props({"type": "object", "properties": {"replicas": {"type": "integer"}}})
    (c,) = validate(s, {"replicas": "x"}, "status")
    assert (c.field, c.message) == ("status.replicas",
                                    'Invalid value: "string": replicas in body must be of type integer: "string"')


def test_compiled_once_per_node() -> None:
    s = from_props(_obj_schema({"type": "string", "pattern": "^a"}))
    validate(s, {"spec": {"f": "a"}})
    compiled = s.cache["v"]
    validate(s, {"spec": {"f": "b"}})
    assert s.cache["v"] is compiled


def test_pathological_pattern_is_linear() -> None:
    # (a+)+$ backtracks exponentially in a backtracking engine; RE2 (Go's engine) does not
    s = from_props(_obj_schema({"type": "string", "pattern": "^(a+)+$"}))
    got = validate(s, {"spec": {"f": "a" * 5000 + "!"}})
    assert [c.field for c in got] == ["spec.f"]
