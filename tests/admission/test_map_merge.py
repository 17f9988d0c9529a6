"""The structured merge of an apply configuration into an object (kapi.object.managedfields.merge), and
the rewrite of CEL's Object / JSONPatch initializers (kapi.admission.policy.mutating.rewrite)."""

from __future__ import annotations

import copy

import pytest

from kapi.admission import cel
from kapi.admission.policy.mutating import TYPE_KEY, rewrite
from kapi.object.managedfields.merge import MergeError, atomic_paths, merge
from kapi.object.schema import Schema, load_builtin

DEPLOY = ("apps", "v1", "Deployment")


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_builtin()


def deployment() -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "1"}, "finalizers": ["x"]},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "a", "image": "i", "args": ["1", "2"], "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "b", "image": "j"}]}}}}


def test_list_map_items_merge_by_key_in_the_patch_order(schema: Schema) -> None:
    live = deployment()
    before = copy.deepcopy(live)
    containers = [{"name": "c", "image": "k"}, {"name": "a", "image": "i2"}]
    patch = {"spec": {"template": {"spec": {"containers": containers}}}}
    out = merge(schema, DEPLOY, live, patch)
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "a", "b"]
    assert containers[1] == {"name": "a", "image": "i2", "args": ["1", "2"],
                             "ports": [{"containerPort": 80, "protocol": "TCP"}]}
    assert live == before  # inputs untouched


def test_maps_sets_atomics_and_scalars(schema: Schema) -> None:
    patch = {"metadata": {"labels": {"b": "2"}, "finalizers": ["y", "x"]}, "spec": {"replicas": 3, "template": {
        "spec": {"containers": [{"name": "a", "args": ["9"], "ports": [{"containerPort": 81, "protocol": "TCP"}]}]}}}}
    out = merge(schema, DEPLOY, deployment(), patch)
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert out["metadata"]["finalizers"] == ["y", "x"]
    assert out["spec"]["replicas"] == 3
    a = out["spec"]["template"]["spec"]["containers"][0]
    assert a["args"] == ["9"]  # atomic: replaced
    assert a["ports"] == [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81, "protocol": "TCP"}]
    out = merge(schema, DEPLOY, deployment(), {"metadata": {"finalizers": ["z"]}})
    assert out["metadata"]["finalizers"] == ["x", "z"]  # a set: union, the object's first


def test_free_form_and_unknown_kinds(schema: Schema) -> None:
    live = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {"a": "1"}},
            "spec": {"list": [1, 2], "map": {"k": 1}}}
    patch = {"metadata": {"labels": {"b": "2"}}, "spec": {"list": [3], "map": {"j": 2}, "new": True}}
    out = merge(schema, ("x.io", "v1", "Thing"), live, patch)
    assert out["spec"] == {"list": [3], "map": {"k": 1, "j": 2}, "new": True}
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}


def test_list_map_errors(schema: Schema) -> None:
    with pytest.raises(MergeError, match=r'omits all key fields \["name"\] \(and doesn\'t have default values'):
        merge(schema, DEPLOY, deployment(), {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}})
    with pytest.raises(MergeError, match="duplicate entries for key"):
        merge(schema, DEPLOY, deployment(), {"spec": {"template": {"spec": {"containers": [
            {"name": "q"}, {"name": "q"}]}}}})


def test_atomic_paths(schema: Schema) -> None:
    patch = {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [
        {"name": "a", "command": ["sh"]}, {"name": "b", "image": "x"}]}}}}
    assert atomic_paths(schema, DEPLOY, patch) == [".spec.selector", ".spec.template.spec.containers[0].command"]
    assert atomic_paths(schema, DEPLOY, {"metadata": {"labels": {"a": "b"}}}) == []


@pytest.mark.parametrize(("text", "want"), [
    ("Object{}", f'{{"{TYPE_KEY}": "Object"}}'),
    ('Object{metadata: Object.metadata{labels: {"a": "b"}}}',
     f'{{"{TYPE_KEY}": "Object", "metadata": {{"{TYPE_KEY}": "Object.metadata", "labels": {{"a": "b"}}}}}}'),
    ("Object{?spec: optional.none()}", f'{{"{TYPE_KEY}": "Object", ?"spec": optional.none()}}'),
    ('"Object{x: 1}"', '"Object{x: 1}"'),  # a string literal is left alone
    ("object.Object{a: 1}", "object.Object{a: 1}"),  # not a type name after a dot
    ('JSONPatch{op: "remove", path: "/a"}', f'{{"{TYPE_KEY}": "JSONPatch", "op": "remove", "path": "/a"}}'),
])
def test_rewrite(text: str, want: str) -> None:
    assert rewrite(text) == want


def test_rewritten_expressions_evaluate() -> None:
    c = cel.compile_expression(rewrite(
        'Object{spec: Object.spec{containers: object.spec.names.map(n, Object.spec.containers{name: n})}}'),
        kind="any")
    value = c.evaluate(cel.Activation(object={"spec": {"names": ["a", "b"]}}))
    assert value["spec"]["containers"] == [{TYPE_KEY: "Object.spec.containers", "name": "a"},
                                           {TYPE_KEY: "Object.spec.containers", "name": "b"}]
    c = cel.compile_expression(rewrite('jsonpatch.escapeKey("a/b~c")'), kind="any")
    assert c.evaluate(cel.Activation()) == "a~1b~0c"
    c = cel.compile_expression(rewrite('[JSONPatch{path: "/" + jsonpatch.escapeKey("x/y"), op: "add"}]'), kind="any")
    assert c.evaluate(cel.Activation()) == [{TYPE_KEY: "JSONPatch", "path": "/x~1y", "op": "add"}]


def test_compile_errors_point_into_the_expression_as_written() -> None:
    from kapi.admission.policy.mutating import compile_mutation

    m = compile_mutation({"patchType": "ApplyConfiguration",
                          "applyConfiguration": {"expression": "Object{\n  metadata: objectx\n}"}})
    assert isinstance(m.expression, cel.CelError)
    assert m.expression.message == ("compilation failed: ERROR: <input>:2:13: undeclared reference to 'objectx' "
                                    "(in container '')\n |   metadata: objectx\n | ............^")


def test_type_errors(schema: Schema) -> None:
    from kapi.object.managedfields.merge import type_errors

    assert type_errors(schema, DEPLOY, {"spec": {"replicas": 1, "nope": 2, "template": {"spec": {
        "containers": {"name": "x"}}}}}) == [".spec.nope: field not declared in schema",
                                             ".spec.template.spec.containers: expected list, got map"]
    assert type_errors(schema, ("x.io", "v1", "Thing"), {"spec": {"anything": [1]}}) == []


def test_custom_resources_merge_with_their_structural_schema(schema: Schema) -> None:
    from kapi.object.managedfields.merge import structural_types
    from kapi.object.structural import from_props

    props = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "port": {"type": "integer"}}}},
        "args": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    gvk = ("x.io", "v1", "Thing")
    ext = schema.extended(structural_types(*gvk, from_props(props)))
    live = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": {"ports": [{"name": "a", "port": 1}], "args": ["x"], "tags": {"k": "v"}}}
    out = merge(ext, gvk, live, {"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 3}],
                                          "tags": {"j": "w"}, "free": {"any": [1]}}})
    assert out["spec"]["ports"] == [{"name": "b", "port": 2}, {"name": "a", "port": 3}]
    assert out["spec"]["tags"] == {"k": "v", "j": "w"}
    assert atomic_paths(ext, gvk, {"spec": {"args": ["y"]}}) == [".spec.args"]  # no list type: atomic
    from kapi.object.managedfields.merge import type_errors
    assert type_errors(ext, gvk, {"spec": {"nope": 1, "free": {"x": 1}}}) == [
        ".spec.nope: field not declared in schema"]
