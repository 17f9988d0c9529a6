"""MutatingAdmissionPolicy and its binding served as kube 1.34 serves them: admissionregistration.k8s.io
v1beta1 (stored) and v1alpha1 (the same objects), cluster scoped, defaulted (failurePolicy Fail,
matchPolicy Equivalent, empty selectors, rule scope "*", parameterNotFoundAction Deny), validated
with kube's field errors, printed with kube's columns, in discovery and the OpenAPI."""

from __future__ import annotations

from typing import Any

from tests.api import conftest as _api
from tests.api.conftest import Api

api = _api.api  # the in-process API fixture, used by name

Obj = dict[str, Any]
BETA = "/apis/admissionregistration.k8s.io/v1beta1"
ALPHA = "/apis/admissionregistration.k8s.io/v1alpha1"


def policy(name: str = "add-label", **spec: Any) -> Obj:
    body: Obj = {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                "resources": ["configmaps"]}]},
        "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": 'Object{metadata: Object.metadata{labels: {"a": "b"}}}'}}],
    }
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}


def binding(name: str = "add-label-binding", policy_name: str = "add-label", **spec: Any) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": policy_name, **spec}}


async def test_create_defaults_and_read_at_both_versions(api: Api) -> None:
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", policy())
    assert r.status == 201, r.body
    got = r.json()
    assert got["spec"]["failurePolicy"] == "Fail"
    match = got["spec"]["matchConstraints"]
    assert match["matchPolicy"] == "Equivalent"
    assert match["namespaceSelector"] == {} and match["objectSelector"] == {}
    assert match["resourceRules"][0]["scope"] == "*"
    assert got["metadata"]["generation"] == 1
    alpha = (await api.request("GET", f"{ALPHA}/mutatingadmissionpolicies/add-label")).json()
    assert alpha["apiVersion"] == "admissionregistration.k8s.io/v1alpha1"
    assert alpha["spec"] == got["spec"]
    r = await api.create(f"{ALPHA}/mutatingadmissionpolicybindings", {
        **binding(paramRef={"name": "p", "namespace": "default"}),
        "apiVersion": "admissionregistration.k8s.io/v1alpha1"})
    assert r.status == 201, r.body
    assert r.json()["spec"]["paramRef"]["parameterNotFoundAction"] == "Deny"
    beta = (await api.request("GET", f"{BETA}/mutatingadmissionpolicybindings/add-label-binding")).json()
    assert beta["apiVersion"] == "admissionregistration.k8s.io/v1beta1"
    assert beta["spec"]["policyName"] == "add-label"


async def test_validation_messages(api: Api) -> None:
    bad = policy(mutations=[], reinvocationPolicy="Sometimes")
    bad["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["DELETE"]
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", bad)
    assert r.status == 422
    causes = {(c["field"], c["reason"]) for c in r.json()["details"]["causes"]}
    assert ("spec.mutations", "FieldValueRequired") in causes
    assert ("spec.reinvocationPolicy", "FieldValueNotSupported") in causes
    assert ("spec.matchConstraints.resourceRules.operations", "FieldValueNotSupported") in causes
    msg = r.json()["message"]
    assert msg.startswith('MutatingAdmissionPolicy.admissionregistration.k8s.io "add-label" is invalid: ')
    assert "spec.mutations: Required value: mutations must contain at least one item" in msg

    bad = policy(mutations=[{"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}}])
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", bad)
    assert r.status == 422
    msg = r.json()["message"]
    assert "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch" in msg
    assert ('spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified '
            "when patchType is JSONPatch" in msg)
    assert ('spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", '
            '"CONNECT", "CREATE", "UPDATE"') in (await api.create(f"{BETA}/mutatingadmissionpolicies", {
                **policy(name="del"), "spec": {**policy()["spec"], "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                    "resources": ["pods"]}]}}})).json()["message"]

    r = await api.create(f"{BETA}/mutatingadmissionpolicybindings", binding(policy_name="",
                         paramRef={"parameterNotFoundAction": "Maybe"}))
    assert r.status == 422
    fields = {c["field"] for c in r.json()["details"]["causes"]}
    assert {"spec.policyName", "spec.paramRef", "spec.paramRef.parameterNotFoundAction"} <= fields
    r = await api.create(f"{BETA}/mutatingadmissionpolicybindings", binding(paramRef={
        "name": "a/b", "selector": {}, "parameterNotFoundAction": "Allow"}))
    causes = {(c["field"], c["message"]) for c in r.json()["details"]["causes"]}
    assert causes == {("spec.paramRef.name", "Invalid value: \"a/b\": may not contain '/'"),
                      ("spec.paramRef.name", "Forbidden: name and selector are mutually exclusive"),
                      ("spec.paramRef.selector", "Forbidden: name and selector are mutually exclusive")}
    bad = policy(variables=[{"name": "in", "expression": "1"}, {"name": "", "expression": " "}],
                 paramKind={"apiVersion": "a/b/c", "kind": "Config Map"})
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", bad)
    msg = r.json()["message"]
    assert 'spec.variables[0].name: Invalid value: "in": must be a valid CEL identifier' in msg
    assert "spec.variables[1].name: Required value: name is not specified" in msg
    assert "spec.variables[1].expression: Required value: expression is not specified" in msg
    assert 'spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c' in msg
    assert 'spec.paramKind.kind: Invalid value: "Config Map": may have mixed case, but should otherwise match: ' in msg


async def test_table_discovery_and_openapi(api: Api) -> None:
    assert (await api.create(f"{BETA}/mutatingadmissionpolicies", policy())).status == 201
    r = await api.request("GET", f"{BETA}/mutatingadmissionpolicies",
                          headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Mutations", "ParamKind", "Age"]
    assert table["rows"][0]["cells"][:3] == ["add-label", 1, "<unset>"]
    disc = (await api.request("GET", BETA)).json()
    names = {r["name"]: r for r in disc["resources"]}
    assert names["mutatingadmissionpolicies"]["kind"] == "MutatingAdmissionPolicy"
    assert names["mutatingadmissionpolicies"]["namespaced"] is False
    assert "mutatingadmissionpolicybindings" in names
    assert (await api.request("GET", ALPHA)).status == 200
    r = await api.request("GET", "/openapi/v3/apis/admissionregistration.k8s.io/v1beta1")
    assert r.status == 200
    schemas = r.json()["components"]["schemas"]
    assert "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicySpec" in schemas
    r = await api.request("GET", "/openapi/v2")
    assert r.status == 200
    assert "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicy" in r.json()["definitions"]
    r = await api.request("GET", f"{BETA}/mutatingadmissionpolicies/add-label",
                          headers={"accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 200 and r.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    assert r.body.startswith(b"k8s\x00") and b"add-label" in r.body
