"""x-kubernetes-validations compiled and evaluated as kube's apiextensions-apiserver does (issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

from kapi.object.cel import BUDGET_EXCEEDED, compile_rules, rule_errors
from kapi.object.structural import from_props

P = "spec.validation.openAPIV3Schema"


def schema(spec_props: dict[str, Any], rules: list[dict[str, Any]], **extra: Any) -> Any:
    spec = {"type": "object", "properties": spec_props, "x-kubernetes-validations": rules, **extra}
    return from_props({"type": "object", "properties": {"spec": spec}})


INTS = {"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"}, "name": {"type": "string", "maxLength": 63}}


def test_rule_passes_and_fails_with_kube_message() -> None:
    c = compile_rules(schema(INTS, [{"rule": "self.minReplicas <= self.replicas"}]))
    assert c.validate({"spec": {"minReplicas": 1, "replicas": 3}}) == []
    [cause] = c.validate({"spec": {"minReplicas": 5, "replicas": 3}})
    assert cause.field == "spec"
    assert cause.reason == "FieldValueInvalid"
    assert cause.message == 'Invalid value: "object": failed rule: self.minReplicas <= self.replicas'


def test_message_reason_field_path() -> None:
    c = compile_rules(schema(INTS, [{"rule": "self.name.startsWith('a')", "message": "name must start with a",
                                     "reason": "FieldValueForbidden", "fieldPath": ".name"}]))
    [cause] = c.validate({"spec": {"name": "bob"}})
    assert (cause.field, cause.reason, cause.message) == ("spec.name", "FieldValueForbidden",
                                                          "Forbidden: name must start with a")
    assert c.validate({"spec": {"name": "alice"}}) == []


def test_message_expression() -> None:
    c = compile_rules(schema(INTS, [{"rule": "self.replicas < 10", "message": "static",
                                     "messageExpression": "'replicas ' + string(self.replicas) + ' too many'"}]))
    [cause] = c.validate({"spec": {"replicas": 12}})
    assert cause.message == 'Invalid value: "object": replicas 12 too many'
    # an empty result falls back to the static message
    c2 = compile_rules(schema(INTS, [{"rule": "self.replicas < 10", "message": "static", "messageExpression": "''"}]))
    assert c2.validate({"spec": {"replicas": 12}})[0].message == 'Invalid value: "object": static'


def test_transition_rule_only_on_update() -> None:
    c = compile_rules(schema(INTS, [{"rule": "self.replicas >= oldSelf.replicas", "message": "no scale down"}]))
    assert c.validate({"spec": {"replicas": 1}}, None) == []  # create: transition rules do not run
    assert c.validate({"spec": {"replicas": 3}}, {"spec": {"replicas": 2}}) == []
    [cause] = c.validate({"spec": {"replicas": 1}}, {"spec": {"replicas": 2}})
    assert cause.message == 'Invalid value: "object": no scale down'
    # an old object without the node: the rule does not run
    assert c.validate({"spec": {"replicas": 1}}, {"metadata": {}}) == []


def test_immutable_field_self_eq_oldself() -> None:
    s = from_props({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "name is immutable"}]}}}}})
    c = compile_rules(s)
    assert c.validate({"spec": {"name": "a"}}, {"spec": {"name": "a"}}) == []
    [cause] = c.validate({"spec": {"name": "b"}}, {"spec": {"name": "a"}})
    assert (cause.field, cause.message) == ("spec.name", 'Invalid value: "string": name is immutable')


def test_optional_old_self() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas", "optionalOldSelf": True,
            "message": "no scale down"}
    c = compile_rules(schema(INTS, [rule]))
    assert c.validate({"spec": {"replicas": 1}}, None) == []  # runs on create with oldSelf none
    assert len(c.validate({"spec": {"replicas": 1}}, {"spec": {"replicas": 2}})) == 1
    # evaluated on create too: a rule that needs an old value fails there
    c2 = compile_rules(schema(INTS, [{"rule": "oldSelf.hasValue()", "optionalOldSelf": True}]))
    assert len(c2.validate({"spec": {"replicas": 1}}, None)) == 1
    assert c2.validate({"spec": {"replicas": 1}}, {"spec": {}}) == []


def test_list_items_map_correlated_by_key() -> None:
    s = from_props({"type": "object", "properties": {"spec": {"type": "object", "properties": {"ports": {
        "type": "array", "maxItems": 10, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                                   "port": {"type": "integer"}},
                  "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "immutable"}]}}}}}})
    c = compile_rules(s)
    old = {"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}}
    new = {"spec": {"ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]}}
    [cause] = c.validate(new, old)
    assert cause.field == "spec.ports[0]"


def test_root_rule_path_is_nil() -> None:
    s = from_props({"type": "object", "properties": {"spec": {"type": "object"}},
                    "x-kubernetes-validations": [{"rule": "has(self.spec) && self.metadata.name != ''"}]})
    assert rule_errors(s) == []  # metadata is always there at the root
    [cause] = compile_rules(s).validate({"metadata": {"name": "x"}})
    assert cause.field == "<nil>"
    assert cause.message == 'Invalid value: "object": failed rule: has(self.spec) && self.metadata.name != \'\''


def test_evaluation_error_message() -> None:
    c = compile_rules(schema(INTS, [{"rule": "self.replicas > 0"}]))
    [cause] = c.validate({"spec": {"minReplicas": 1}})
    assert cause.message == 'Invalid value: "object": no such key: replicas evaluating rule: self.replicas > 0'


def test_compile_once_cached() -> None:
    s = schema(INTS, [{"rule": "self.replicas > 0"}])
    assert compile_rules(s) is compile_rules(s)
    assert compile_rules(s, P) is not compile_rules(s)


# ----------------------------------------------------------------- CRD-time errors


def test_compile_error_message() -> None:
    [cause] = rule_errors(schema(INTS, [{"rule": "self.replicas <"}]), P)
    assert cause.field == f"{P}.properties[spec].x-kubernetes-validations[0].rule"
    assert cause.message.startswith(
        'Invalid value: apiextensions.ValidationRule{Rule:"self.replicas <", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:16: Syntax error:")


def test_rule_must_be_bool() -> None:
    [cause] = rule_errors(schema(INTS, [{"rule": "1 + 2"}]), P)
    assert cause.message.endswith(": cel expression must evaluate to a bool")
    # a field of the schema's non-boolean type
    [cause] = rule_errors(schema(INTS, [{"rule": "self.replicas"}]), P)
    assert cause.message.endswith(": cel expression must evaluate to a bool")
    flag = {"enabled": {"type": "boolean"}}
    assert rule_errors(schema(flag, [{"rule": "self.enabled"}]), P) == []


def test_message_checks_and_field_path() -> None:
    errs = rule_errors(schema(INTS, [
        {"rule": "true", "message": "a\nb"},
        {"rule": "true", "reason": "Bogus"},
        {"rule": "true", "fieldPath": ".nope"},
        {"rule": "true", "messageExpression": "1"},
        {"rule": "true", "optionalOldSelf": True},
        {"rule": "true", "fieldPath": ".name"},
    ]), P)
    got = {(c.field.rsplit("x-kubernetes-validations", 1)[1], c.message.split(": ", 1)[0]) for c in errs}
    assert got == {("[0].message", "Invalid value"), ("[1].reason", "Unsupported value"),
                   ("[2].fieldPath", "Invalid value"), ("[3].messageExpression", "Invalid value"),
                   ("[4].optionalOldSelf", "Invalid value")}
    by = {c.field.rsplit("x-kubernetes-validations", 1)[1]: c.message for c in errs}
    assert by["[0].message"].endswith("message must not contain line breaks")
    assert by["[2].fieldPath"] == 'Invalid value: ".nope": fieldPath must be a valid path'
    assert by["[3].messageExpression"].endswith("must evaluate to a string")


def test_cost_refusal_per_rule_and_per_crd() -> None:
    unbounded = {"tags": {"type": "array", "items": {"type": "string"}}}
    errs = rule_errors(schema(unbounded, [{"rule": "self.tags.all(t, t.matches('^[a-z]+$'))"}]), P)
    msgs = [(c.field, c.message) for c in errs]
    assert (f"{P}.properties[spec].x-kubernetes-validations[0].rule",
            "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, "
            "or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)") in msgs
    assert (f"{P}.properties[spec].x-kubernetes-validations[0].rule",
            "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ) in msgs
    assert any(f == P and m.startswith("Forbidden: x-kubernetes-validations estimated rule cost total for entire "
                                       "OpenAPIv3 schema exceeds budget by factor of") for f, m in msgs)
    # bounded: accepted
    bounded = {"tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64}}}
    assert rule_errors(schema(bounded, [{"rule": "self.tags.all(t, t.matches('^[a-z]+$'))"}]), P) == []


def test_per_crd_total_with_cheap_rules_under_many_items() -> None:
    # each rule is cheap, but it runs for every item of an unbounded list of unbounded lists
    s = from_props({"type": "object", "properties": {"spec": {"type": "object", "properties": {"rows": {
        "type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 1000,
                                                              "x-kubernetes-validations": [
                                                                  {"rule": "self.startsWith('x')"}]}}}}}}})
    errs = rule_errors(s, P)
    assert [c.field for c in errs if c.field == P]
    assert not any(c.message.startswith("Forbidden: estimated rule cost") for c in errs)


def test_runtime_cost_limit() -> None:
    s = schema({"tags": {"type": "array", "maxItems": 50, "items": {"type": "string", "maxLength": 100}}},
               [{"rule": "self.tags.all(a, self.tags.all(b, self.tags.all(c, a.size() + b.size() >= c.size() - 200)))"}])
    c = compile_rules(s)
    assert c.validate({"spec": {"tags": ["a"] * 5}}) == []
    assert rule_errors(s) == []  # statically under the per-expression limit
    [cause] = c.validate({"spec": {"tags": ["a"] * 50}})
    assert "no further validation rules will be run" in cause.message
    assert cause.message.startswith("Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded'")


def test_runtime_budget_for_request() -> None:
    many = {"items": {"type": "array", "maxItems": 200, "items": {"type": "object", "properties": {
        "tags": {"type": "array", "maxItems": 500, "items": {"type": "string", "maxLength": 10}}},
        "x-kubernetes-validations": [{"rule": "self.tags.all(a, self.tags.all(b, a.size() + b.size() >= 0))"}]}}}
    c = compile_rules(schema(many, []))
    obj = {"spec": {"items": [{"tags": ["x"] * 90} for _ in range(150)]}}
    assert c.validate({"spec": {"items": [{"tags": ["x"] * 90}]}}) == []  # one item: within the budget
    causes = c.validate(obj)
    assert causes[-1].message == f'Invalid value: "object": {BUDGET_EXCEEDED}'
    assert len(causes) == 1


@pytest.mark.parametrize("reason,body", [("FieldValueRequired", "Required value: failed rule: false"),
                                         ("FieldValueDuplicate", 'Duplicate value: "object"'),
                                         ("FieldValueInvalid", 'Invalid value: "object": failed rule: false')])
def test_reasons(reason: str, body: str) -> None:
    [cause] = compile_rules(schema(INTS, [{"rule": "false", "reason": reason}])).validate({"spec": {}})
    assert (cause.reason, cause.message) == (reason, body)


def test_number_fields_are_doubles() -> None:
    s = schema({"ratio": {"type": "number"}, "ratios": {"type": "array", "maxItems": 5, "items": {"type": "number"}}},
               [{"rule": "self.ratio + 0.5 <= 2.0"}, {"rule": "self.ratios.all(r, r + 0.5 > 0.0)"}])
    c = compile_rules(s)
    # JSON 1 in a number field is the double 1.0 (int + double has no overload)
    assert c.validate({"spec": {"ratio": 1, "ratios": [1, 2.5]}}) == []
    assert len(c.validate({"spec": {"ratio": 2, "ratios": [1]}})) == 1


def test_undefined_field_is_a_compile_error() -> None:
    [cause] = rule_errors(schema(INTS, [{"rule": "self.replicas > 0 && self.nope > 1"}]), P)
    assert cause.message.endswith("compilation failed: ERROR: <input>:1:26: undefined field 'nope'\n"
                                  " | self.replicas > 0 && self.nope > 1\n"
                                  " | .........................^")
    # has() of an undeclared field too; fields of maps and preserved objects are not checked
    assert len(rule_errors(schema(INTS, [{"rule": "has(self.nope)"}]), P)) == 1
    assert rule_errors(schema({}, [{"rule": "has(self.anything)"}], **{"x-kubernetes-preserve-unknown-fields": True}),
                       P) == []


def test_escaped_property_names() -> None:
    s = schema({"max-size": {"type": "integer"}, "namespace": {"type": "string"}, "a.b": {"type": "integer"}},
               [{"rule": "self.max__dash__size > self.a__dot__b && self.__namespace__ != ''"}])
    assert rule_errors(s, P) == []
    c = compile_rules(s)
    assert c.validate({"spec": {"max-size": 3, "a.b": 1, "namespace": "x"}}) == []
    assert len(c.validate({"spec": {"max-size": 0, "a.b": 1, "namespace": "x"}})) == 1


def test_optional_old_self_in_message_expression() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas", "optionalOldSelf": True,
            "messageExpression": "'was ' + string(oldSelf.value().replicas)"}
    c = compile_rules(schema(INTS, [rule]))
    assert rule_errors(schema(INTS, [rule])) == []
    [cause] = c.validate({"spec": {"replicas": 1}}, {"spec": {"replicas": 4}})
    assert cause.message == 'Invalid value: "object": was 4'
