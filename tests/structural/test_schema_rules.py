"""The structural-schema rules a CRD's openAPIV3Schema must pass: one row per rule, kube's cause."""

from __future__ import annotations

import pytest

from kapi.object.structural import validate_schema

P = "spec.versions[0].schema.openAPIV3Schema"
OK_SPEC = {"type": "object", "properties": {"a": {"type": "string"}}}


def _root(**props: dict) -> dict:
    return {"type": "object", "properties": props}


RULES = [
    ("type required for fields", _root(spec={"properties": {"a": {"type": "string"}}}),
     [(f"{P}.properties[spec].type", "Required value: must not be empty for specified object fields")]),
    ("type required for items", _root(l={"type": "array", "items": {}}),
     [(f"{P}.properties[l].items.type", "Required value: must not be empty for specified array items")]),
    ("type required at the root", {"properties": {"spec": OK_SPEC}},
     [(f"{P}.type", "Required value: must not be empty at the root")]),
    ("root must be object", {"type": "string"}, [(f"{P}.type", 'Invalid value: "string": must be object at the root')]),
    ("array needs items", _root(l={"type": "array"}), [(f"{P}.properties[l].items", "Required value: must be specified")]),
    ("no additionalProperties at the root", {"type": "object", "additionalProperties": {"type": "string"}},
     [(f"{P}.additionalProperties", "Forbidden: must not be used at the root")]),
    ("int-or-string and preserve", _root(x={"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}),
     [(f"{P}.properties[x].x-kubernetes-preserve-unknown-fields",
       "Invalid value: true: must be false if x-kubernetes-int-or-string is true")]),
    ("embedded needs object", _root(e={"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
     [(f"{P}.properties[e].type", "Required value: must be object if x-kubernetes-embedded-resource is true")]),
    ("embedded needs properties", _root(e={"type": "object", "x-kubernetes-embedded-resource": True}),
     [(f"{P}.properties[e].properties", "Required value: must not be empty if x-kubernetes-embedded-resource is "
                                        "true without x-kubernetes-preserve-unknown-fields")]),
    ("metadata only name and generateName",
     _root(metadata={"type": "object", "properties": {"labels": {"type": "object"}}}),
     [(f"{P}.properties[metadata]", "Forbidden: must not specify anything other than name and generateName, but "
                                    "metadata is implicitly specified")]),
    ("metadata name is fine", _root(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 9}}}),
     []),
    ("kind must be string at the root", _root(kind={"type": "integer"}),
     [(f"{P}.properties[kind].type", 'Invalid value: "integer": must be string')]),
    ("no type in anyOf", _root(spec={"type": "object", "anyOf": [{"type": "object"}]}),
     [(f"{P}.properties[spec].anyOf[0].type", "Forbidden: must be empty to be structural")]),
    ("no default in allOf", _root(spec={"type": "string", "allOf": [{"default": "x"}]}),
     [(f"{P}.properties[spec].allOf[0].default", "Forbidden: must be undefined to be structural")]),
    ("no additionalProperties in oneOf", _root(spec={"type": "object", "oneOf": [{"additionalProperties": {}}]}),
     [(f"{P}.properties[spec].oneOf[0].additionalProperties", "Forbidden: must be undefined to be structural")]),
    ("no nullable in not", _root(spec={"type": "string", "not": {"nullable": True}}),
     [(f"{P}.properties[spec].not.nullable", "Forbidden: must be false to be structural")]),
    ("int-or-string anyOf pattern allowed", _root(
        x={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}), []),
    ("completeness at the root", {"type": "object", "properties": {"spec": OK_SPEC},
                                  "anyOf": [{"properties": {"status": {}}}]},
     [(f"{P}.properties[status]", f"Required value: because it is defined in {P}.anyOf[0].properties[status]")]),
    ("invalid pattern", _root(s={"type": "string", "pattern": "(["}),
     [(f"{P}.properties[s].pattern", None)]),
    ("uniqueItems", _root(l={"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
     [(f"{P}.properties[l].uniqueItems",
       "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]),
    ("properties xor additionalProperties",
     _root(m={"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
     [(f"{P}.properties[m].additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive")]),
    ("preserve false", _root(m={"type": "object", "x-kubernetes-preserve-unknown-fields": False}),
     [(f"{P}.properties[m].x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or undefined")]),
    ("map-type on objects only", _root(m={"type": "string", "x-kubernetes-map-type": "atomic"}),
     [(f"{P}.properties[m].type", 'Invalid value: "string": must be object if x-kubernetes-map-type is specified')]),
    ("map-type values", _root(m={"type": "object", "x-kubernetes-map-type": "other"}),
     [(f"{P}.properties[m].x-kubernetes-map-type", 'Unsupported value: "other": supported values: "atomic", "granular"')]),
    ("list-type on arrays only", _root(l={"type": "object", "x-kubernetes-list-type": "set"}),
     [(f"{P}.properties[l].type", 'Invalid value: "object": must be array if x-kubernetes-list-type is specified')]),
    ("list-type values", _root(l={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
     [(f"{P}.properties[l].x-kubernetes-list-type",
       'Unsupported value: "bag": supported values: "atomic", "set", "map"')]),
    ("list-map-keys need list-type map", _root(l={"type": "array", "items": {"type": "object", "properties": {
        "n": {"type": "string"}}, "required": ["n"]}, "x-kubernetes-list-type": "set", "x-kubernetes-list-map-keys": ["n"]}),
     [(f"{P}.properties[l].items.x-kubernetes-map-type",
       'Invalid value: "set": must be atomic as item of a list with x-kubernetes-list-type=set'),
      (f"{P}.properties[l].x-kubernetes-list-type",
       'Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty')]),
    ("list-type map needs keys", _root(l={"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"}),
     [(f"{P}.properties[l].x-kubernetes-list-map-keys", "Required value: must not be empty if x-kubernetes-list-type is map")]),
    ("list-type map items object", _root(l={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["n"]}),
     [(f"{P}.properties[l].items.type",
       "Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map")]),
    ("list-map keys are item properties", _root(l={"type": "array", "items": {"type": "object", "properties": {
        "n": {"type": "string"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["x"]}),
     [(f"{P}.properties[l].x-kubernetes-list-map-keys",
       'Invalid value: []interface {}{"x"}: entries must all be names of item properties')]),
    ("list-map keys required or defaulted", _root(l={"type": "array", "items": {"type": "object", "properties": {
        "n": {"type": "string"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"]}),
     [(f"{P}.properties[l].items.properties[n].default", "Required value: this property is in "
       "x-kubernetes-list-map-keys, so it must have a default or be a required property")]),
    ("default must validate", _root(spec={"type": "object", "properties": {"r": {"type": "integer", "default": "x"}}}),
     [(f"{P}.properties[spec].properties[r].default",
       'Invalid value: "string":  in body must be of type integer: "string"')]),
    ("default must be pruned", _root(d={"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}}),
     [(f"{P}.properties[d].default",
       'Invalid value: map[string]interface {}{"b":1}: must not have unknown fields')]),
    ("no default in top-level metadata", _root(metadata={"type": "object", "default": {"name": "x"}}),
     [(f"{P}.properties[metadata].default", "Forbidden: must not be set in top-level metadata")]),
    ("validation rule required", _root(spec={"type": "object", "x-kubernetes-validations": [{"rule": " "}]}),
     [(f"{P}.properties[spec].x-kubernetes-validations[0].rule", "Required value: rule is not specified")]),
    ("validation reason", _root(spec={"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "X"}]}),
     [(f"{P}.properties[spec].x-kubernetes-validations[0].reason",
       'Unsupported value: "X": supported values: "FieldValueDuplicate", "FieldValueForbidden", '
       '"FieldValueInvalid", "FieldValueRequired"')]),
    ("a good schema", _root(spec=OK_SPEC, status={"type": "object", "x-kubernetes-preserve-unknown-fields": True}), []),
]


@pytest.mark.parametrize("name,schema,expected", RULES, ids=[r[0] for r in RULES])
def test_rule(name: str, schema: dict, expected: list[tuple[str, str | None]]) -> None:
    got = validate_schema(schema, P)
    assert [c.field for c in got] == [f for f, _ in expected]
    for c, (_, msg) in zip(got, expected):
        if msg is not None:
            assert c.message == msg
