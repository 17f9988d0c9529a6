"""CRD validation (issue 14): kube's 422 messages for names, group, scope, versions, conversion,
subresources, printer columns, selectable fields, and the update rules; one HTTP round trip."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from kapi.object.validation import validate_custom_resource_definition as validate
from kapi.object.validation import validate_custom_resource_definition_update as validate_update
from tests.crd.test_lifecycle import CRD_PATH, Cluster, cluster, crd  # noqa: F401  (fixture)

Obj = dict[str, Any]


def base() -> Obj:
    obj = crd()
    obj["spec"]["names"]["listKind"] = "WidgetList"
    obj["spec"]["conversion"] = {"strategy": "None"}
    obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object", "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string"}, "size": {"type": "integer"}, "tags": {"type": "array",
                                                                             "items": {"type": "string"}}}}}}
    return obj


def v0(o: Obj) -> Obj:
    return o["spec"]["versions"][0]


CASES: list[tuple[str, Callable[[Obj], Any], list[tuple[str, str]]]] = [
    ("name", lambda o: o["metadata"].update(name="widgets.other.com"),
     [("metadata.name", 'Invalid value: "widgets.other.com": must be spec.names.plural+"."+spec.group')]),
    ("group without dot", lambda o: (o["spec"].update(group="example"), o["metadata"].update(name="widgets.example")),
     [("spec.group", 'Invalid value: "example": should be a domain with at least one dot')]),
    ("scope", lambda o: o["spec"].update(scope="Global"),
     [("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')]),
    ("plural", lambda o: (o["spec"]["names"].update(plural="Widgets"), o["metadata"].update(name="Widgets.example.com")),
     [("spec.names.plural", "Invalid value: \"Widgets\": a DNS-1035 label must consist of lower case alphanumeric "
       "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
       "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")]),
    ("kind", lambda o: o["spec"]["names"].update(kind="Wid_get"),
     [("spec.names.kind", "Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: a DNS-1035 "
       "label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end "
       "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
       "'[a-z]([-a-z0-9]*[a-z0-9])?')")]),
    ("listKind same as kind", lambda o: o["spec"]["names"].update(listKind="Widget"),
     [("spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the same')]),
    ("singular missing", lambda o: o["spec"]["names"].pop("singular"), [("spec.names.singular", "Required value")]),
    ("no versions", lambda o: o["spec"].update(versions=[]),
     [("spec.versions", "Required value: must have at least one version")]),
    ("two storage versions", lambda o: o["spec"]["versions"].append({**copy.deepcopy(v0(o)), "name": "v2"}),
     [("spec.versions", 'Invalid value: ["v1","v2"]: must have exactly one version marked as storage version')]),
    ("duplicate version", lambda o: o["spec"]["versions"].append({**copy.deepcopy(v0(o)), "storage": False}),
     [("spec.versions", 'Invalid value: ["v1","v1"]: must contain unique version names')]),
    ("version name", lambda o: v0(o).update(name="V1"),
     [("spec.versions[0].name", "Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric "
       "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
       "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")]),
    ("schema missing", lambda o: v0(o).pop("schema"), [("spec.versions[0].schema.openAPIV3Schema", "Required value")]),
    ("root nullable", lambda o: v0(o)["schema"]["openAPIV3Schema"].update(nullable=True),
     [("spec.versions[0].schema.openAPIV3Schema.nullable", "Forbidden: nullable cannot be true at the root")]),
    ("strategy", lambda o: o["spec"]["conversion"].update(strategy="Magic"),
     [("spec.conversion.strategy", 'Unsupported value: "Magic": supported values: "None", "Webhook"')]),
    ("webhook without config", lambda o: o["spec"]["conversion"].update(strategy="Webhook"),
     [("spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook"),
      ("spec.conversion.conversionReviewVersions", "Required value")]),
    ("webhook http url", lambda o: o["spec"]["conversion"].update(strategy="Webhook", webhook={
        "clientConfig": {"url": "http://hook.example.com/convert"}, "conversionReviewVersions": ["v2"]}),
     [("spec.conversion.webhookClientConfig.url",
       "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"),
      ("spec.conversion.conversionReviewVersions", 'Invalid value: ["v2"]: must include at least one of v1, v1beta1')]),
    ("webhook url and service", lambda o: o["spec"]["conversion"].update(strategy="Webhook", webhook={
        "clientConfig": {"url": "https://h/", "service": {"name": "s", "namespace": "n"}},
        "conversionReviewVersions": ["v1"]}),
     [("spec.conversion.webhookClientConfig", "Required value: exactly one of url or service is required")]),
    ("None with webhook", lambda o: o["spec"]["conversion"].update(webhook={
        "clientConfig": {"url": "https://h/"}, "conversionReviewVersions": ["v1"]}),
     [("spec.conversion.webhookClientConfig", "Forbidden: should not be set when strategy is not set to Webhook"),
      ("spec.conversion.conversionReviewVersions", "Forbidden: should not be set when strategy is not set to Webhook")]),
    ("scale paths", lambda o: v0(o).update(subresources={"scale": {"specReplicasPath": ".status.replicas",
                                                                   "statusReplicasPath": "status.replicas",
                                                                   "labelSelectorPath": ".metadata.labels"}}),
     [("spec.versions[0].subresources.scale.specReplicasPath",
       'Invalid value: ".status.replicas": should be a json path under .spec'),
      ("spec.versions[0].subresources.scale.statusReplicasPath",
       'Invalid value: "status.replicas": must be a simple json path starting with .'),
      ("spec.versions[0].subresources.scale.labelSelectorPath",
       'Invalid value: ".metadata.labels": should be a json path under either .spec or .status')]),
    ("scale required", lambda o: v0(o).update(subresources={"scale": {}}),
     [("spec.versions[0].subresources.scale.specReplicasPath", "Required value"),
      ("spec.versions[0].subresources.scale.statusReplicasPath", "Required value")]),
    ("printer columns", lambda o: v0(o).update(additionalPrinterColumns=[
        {"name": "Color", "type": "color", "format": "hex", "jsonPath": "spec.color"}, {"name": "X"}]),
     [("spec.versions[0].additionalPrinterColumns[0].type",
       'Invalid value: "color": must be one of boolean,date,integer,number,string'),
      ("spec.versions[0].additionalPrinterColumns[0].format",
       'Invalid value: "hex": must be one of byte,date,date-time,double,float,int32,int64,password'),
      ("spec.versions[0].additionalPrinterColumns[0].JSONPath",
       'Invalid value: "spec.color": must be a simple json path starting with .'),
      ("spec.versions[0].additionalPrinterColumns[1].type",
       "Required value: must be one of boolean,date,integer,number,string"),
      ("spec.versions[0].additionalPrinterColumns[1].JSONPath", "Required value")]),
    ("selectable fields", lambda o: v0(o).update(selectableFields=[
        {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.tags"}, {"jsonPath": ".spec.nope"},
        {"jsonPath": ".metadata.name"}, {"jsonPath": ".spec.color"}, {}]),
     [("spec.versions[0].selectableFields[1].jsonPath",
       'Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields '
       "and strings with formats are allowed."),
      ("spec.versions[0].selectableFields[2].jsonPath",
       'Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field'),
      ("spec.versions[0].selectableFields[3].jsonPath",
       'Invalid value: ".metadata.name": must not point to fields in metadata'),
      ("spec.versions[0].selectableFields[4].jsonPath", 'Duplicate value: ".spec.color"'),
      ("spec.versions[0].selectableFields[5].jsonPath", "Required value")]),
    ("too many selectable fields", lambda o: (
        v0(o)["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].update(
            {f"f{i}": {"type": "string"} for i in range(9)}),
        v0(o).update(selectableFields=[{"jsonPath": f".spec.f{i}"} for i in range(9)])),
     [("spec.versions[0].selectableFields", "Too many: 9: must have at most 8 items")]),
    ("deprecation warning", lambda o: v0(o).update(deprecationWarning="old"),
     [("spec.versions[0].deprecationWarning", 'Invalid value: "old": can only be set for deprecated versions')]),
    ("protected group", lambda o: (o["spec"].update(group="x.k8s.io"), o["metadata"].update(name="widgets.x.k8s.io")),
     [("metadata.annotations[api-approved.kubernetes.io]", 'Required value: protected groups must have approval '
       'annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111')]),
]


def test_the_base_is_valid() -> None:
    assert validate(base()) == []


@pytest.mark.parametrize(("change", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_messages(change: Callable[[Obj], Any], expected: list[tuple[str, str]]) -> None:
    obj = base()
    change(obj)
    assert [(c.field, c.message) for c in validate(obj)] == expected


def established(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    obj["status"] = {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v1"]}
    return obj


def test_update_rules() -> None:
    old = established(base())
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["group"] = "example.org"
    new["metadata"]["name"] = "widgets.example.org"
    assert [(c.field, c.message) for c in validate_update(new, old)] == [
        ("spec.scope", 'Invalid value: "Cluster": field is immutable'),
        ("spec.group", 'Invalid value: "example.org": field is immutable')]
    # Not established yet: the scope may still change.
    old["status"]["conditions"] = []
    assert [c.field for c in validate_update(new, old)] == ["spec.group"]


def test_a_stored_version_cannot_leave_spec() -> None:
    old = base()
    old["spec"]["versions"].append({**copy.deepcopy(v0(old)), "name": "v2", "storage": False})
    old = established(old)
    old["status"]["storedVersions"] = ["v1", "v2"]
    new = copy.deepcopy(old)
    new["spec"]["versions"] = new["spec"]["versions"][:1]
    assert [(c.field, c.message) for c in validate_update(new, old)] == [(
        "status.storedVersions[1]", 'Invalid value: "v2": missing from spec.versions; v2 was previously a storage '
        "version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v2 "
        "and removes v2 from status.storedVersions")]


async def test_refused_over_http_with_a_422(cluster: Cluster) -> None:  # noqa: F811
    obj = base()
    obj["spec"]["scope"] = "Global"
    reply = await cluster.api.create(CRD_PATH, obj)
    assert reply.status == 422
    body = reply.json()
    assert body["reason"] == "Invalid"
    assert body["message"] == ('CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
                               'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"')
