"""Object metadata on create and update."""

from __future__ import annotations

from kapi.errors import Cause, invalid
from kapi.object.validation import (RULE_DNS1035_LABEL, RULE_DNS1123_LABEL, RULE_PATH_SEGMENT, field_not_supported,
    field_too_long, validate_object_meta, validate_update_meta)

from .test_names import LABEL_MSG, SUBDOMAIN_MSG


def _obj(**md: object) -> dict[str, object]:
    return {"metadata": md}


def test_valid_meta_has_no_causes() -> None:
    obj = _obj(name="web", namespace="default", labels={"app": "web"}, annotations={"Example.com/Key": "v"},
               finalizers=["example.com/cleanup"])
    assert validate_object_meta(obj, namespaced=True, core_finalizers=True) == []


def test_invalid_name_cause_and_message() -> None:
    causes = validate_object_meta(_obj(name="Foo", namespace="default"), namespaced=True,
                                  core_finalizers=True)
    assert causes == [Cause("FieldValueInvalid", f'Invalid value: "Foo": {SUBDOMAIN_MSG}', "metadata.name")]
    err = invalid("ConfigMap", "", "Foo", causes)
    assert err.message == f'ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}'


def test_name_or_generate_name_required() -> None:
    causes = validate_object_meta(_obj(namespace="default"), namespaced=True)
    assert causes == [Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")]


def test_generate_name_is_checked_as_prefix() -> None:
    causes = validate_object_meta(_obj(name="x", generateName="Bad-", namespace="d"), namespaced=True)
    assert [c.field for c in causes] == ["metadata.generateName"]


def test_namespace_rules() -> None:
    assert validate_object_meta(_obj(name="x"), namespaced=True) == [
        Cause("FieldValueRequired", "Required value", "metadata.namespace")]
    assert validate_object_meta(_obj(name="x", namespace="Bad"), namespaced=True) == [
        Cause("FieldValueInvalid", f'Invalid value: "Bad": {LABEL_MSG}', "metadata.namespace")]
    assert validate_object_meta(_obj(name="x", namespace="default"), namespaced=False) == [
        Cause("FieldValueForbidden", "Forbidden: not allowed on this type", "metadata.namespace")]


def test_name_rule() -> None:
    ns = validate_object_meta(_obj(name="a.b"), namespaced=False, name_rule=RULE_DNS1123_LABEL)
    assert ns == [Cause("FieldValueInvalid", 'Invalid value: "a.b": must not contain dots', "metadata.name")]
    svc = validate_object_meta(_obj(name="1web", namespace="d"), namespaced=True, name_rule=RULE_DNS1035_LABEL)
    assert svc[0].message.startswith('Invalid value: "1web": a DNS-1035 label must consist')
    role = validate_object_meta(_obj(name="a/b", namespace="d"), namespaced=True,
                                name_rule=RULE_PATH_SEGMENT)
    assert role == [Cause("FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'", "metadata.name")]
    assert validate_object_meta(_obj(name="system:admin"), namespaced=False,
                                name_rule=RULE_PATH_SEGMENT) == []
    assert validate_object_meta(_obj(name="a.b"), namespaced=False, name_rule=RULE_DNS1123_LABEL)


def test_labels_and_annotations() -> None:
    causes = validate_object_meta(_obj(name="x", namespace="d", labels={"bad key": "ok", "k": "bad value"},
                                       annotations={"-x": "1"}), namespaced=True)
    assert [(c.field, c.message.split(":")[0], c.message.split(": ")[1]) for c in causes] == [
        ("metadata.labels", "Invalid value", '"bad key"'),
        ("metadata.labels", "Invalid value", '"bad value"'),
        ("metadata.annotations", "Invalid value", '"-x"'),
    ]


def test_annotations_total_size() -> None:
    causes = validate_object_meta(_obj(name="x", namespace="d", annotations={"a": "x" * (256 * 1024)}),
                                  namespaced=True)
    assert causes == [field_too_long("metadata.annotations", 262144)]
    assert causes[0].message == "Too long: may not be more than 262144 bytes"
    assert causes[0].reason == "FieldValueTooLong"


def test_finalizers() -> None:
    kube = validate_object_meta(_obj(name="x", namespace="d", finalizers=["foo"]), namespaced=True,
                                core_finalizers=True)
    assert kube == [Cause("FieldValueInvalid", 'Invalid value: "foo": name is neither a standard finalizer name '
                                               "nor is it fully qualified", "metadata.finalizers[0]")]
    # custom resources only need a qualified name
    assert validate_object_meta(_obj(name="x", namespace="d", finalizers=["foo"]), namespaced=True,
                                core_finalizers=False) == []
    both = validate_object_meta(_obj(name="x", finalizers=["orphan", "foregroundDeletion"]), namespaced=False)
    assert both[0].message == ('Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and '
                               "foregroundDeletion cannot be both set")


def test_owner_references() -> None:
    refs = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": True},
            {"apiVersion": "", "kind": "ReplicaSet", "name": "b", "uid": "2", "controller": True}]
    causes = validate_object_meta(_obj(name="x", namespace="d", ownerReferences=refs), namespaced=True)
    assert causes[0] == Cause("FieldValueInvalid", 'Invalid value: "": version must not be empty',
                              "metadata.ownerReferences.apiVersion")
    assert causes[1].message.endswith('Only one reference can have Controller set to true. Found "true" in '
                                      "references for ReplicaSet/a and ReplicaSet/b")


def test_generation_nonnegative() -> None:
    assert validate_object_meta(_obj(name="x", generation=-1), namespaced=False) == [
        Cause("FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0", "metadata.generation")]


def test_update_immutable_fields() -> None:
    old = _obj(name="a", namespace="d", uid="u1", creationTimestamp="2024-05-14T10:00:03Z")
    new = _obj(name="b", namespace="e", uid="u2", creationTimestamp="2024-05-15T10:00:03Z")
    assert validate_update_meta(new, old) == [
        Cause("FieldValueInvalid", 'Invalid value: "b": field is immutable', "metadata.name"),
        Cause("FieldValueInvalid", 'Invalid value: "e": field is immutable', "metadata.namespace"),
        Cause("FieldValueInvalid", 'Invalid value: "u2": field is immutable', "metadata.uid"),
        Cause("FieldValueInvalid", "Invalid value: 2024-05-15 10:00:03 +0000 UTC: field is immutable",
              "metadata.creationTimestamp"),
    ]


def test_update_missing_uid_keeps_old_and_labels_revalidated() -> None:
    old = _obj(name="a", namespace="d", uid="u1")
    assert validate_update_meta(_obj(name="a", namespace="d"), old) == []
    causes = validate_update_meta(_obj(name="a", namespace="d", labels={"k": "a b"}), old)
    assert [c.field for c in causes] == ["metadata.labels"]


def test_not_supported_message() -> None:
    assert field_not_supported("spec.x", "X", ["A", "B"]).message == 'Unsupported value: "X": supported values: "A", "B"'
