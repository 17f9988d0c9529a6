"""OpenAPI v2 and v3 documents built from the schema table."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from kapi.api.openapi import OpenAPIDocuments, ServedResource
from kapi.object.schema import load_builtin

RESOURCES = (
    ServedResource("", "v1", "pods", "Pod", True, ("status", "binding", "eviction", "log")),
    ServedResource("", "v1", "namespaces", "Namespace", False, ("status", "finalize")),
    ServedResource("apps", "v1", "deployments", "Deployment", True, ("status", "scale")),
    ServedResource("coordination.k8s.io", "v1", "leases", "Lease", True),
    ServedResource(
        "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=("create",)
    ),
)


@pytest.fixture(scope="module")
def docs() -> OpenAPIDocuments:
    return OpenAPIDocuments(load_builtin(), RESOURCES)


def _load(body: bytes) -> dict[str, Any]:
    return orjson.loads(body)


def test_v2_definitions_and_paths(docs: OpenAPIDocuments) -> None:
    v2 = _load(docs.v2().body)
    assert v2["swagger"] == "2.0"
    pod = v2["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    containers = v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    assert v2["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.Table" not in v2["definitions"]
    paths = v2["paths"]
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in paths
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in paths
    assert "/api/v1/namespaces/{namespace}/pods/{name}/log" not in paths
    patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert {p["name"] for p in patch["parameters"]} >= {"body", "fieldValidation", "fieldManager", "dryRun", "force"}
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}


def test_v3_discovery_lists_group_versions_with_hashes(docs: OpenAPIDocuments) -> None:
    disc = _load(docs.v3_discovery().body)
    assert sorted(disc["paths"]) == [
        "api/v1",
        "apis/apps/v1",
        "apis/authorization.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
    ]
    apps = docs.v3("apis/apps/v1")
    assert apps is not None
    assert disc["paths"]["apis/apps/v1"]["serverRelativeURL"] == f"/openapi/v3/apis/apps/v1?hash={apps.hash}"
    assert apps.hash == hashlib.sha512(apps.body).hexdigest().upper()
    assert apps.etag == f'"{apps.hash}"'


def test_v3_group_document_declares_field_validation(docs: OpenAPIDocuments) -> None:
    apps = docs.v3("apis/apps/v1")
    assert apps is not None
    doc = _load(apps.body)
    assert doc["openapi"] == "3.0.0"
    collection = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]
    item = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    for op in (collection["post"], item["put"], item["patch"]):
        names = {p["name"] for p in op["parameters"]}
        assert {"fieldValidation", "fieldManager", "dryRun"} <= names
    assert "application/apply-patch+yaml" in item["patch"]["requestBody"]["content"]
    schemas = doc["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert deployment["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas
    assert "io.k8s.api.core.v1.PodSpec" in schemas
    # Only what the group's paths reach: no Lease here.
    assert "io.k8s.api.coordination.v1.Lease" not in schemas
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["oneOf"] == [{"type": "integer"}, {"type": "string"}]


def test_v3_create_only_resource(docs: OpenAPIDocuments) -> None:
    doc = docs.v3("apis/authorization.k8s.io/v1")
    assert doc is not None
    paths = _load(doc.body)["paths"]
    post = paths["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]["post"]
    assert post["operationId"] == "createAuthorizationV1SelfSubjectAccessReview"
    assert "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/{name}" not in paths


def test_operation_ids_follow_kubernetes(docs: OpenAPIDocuments) -> None:
    v3 = docs.v3("api/v1")
    assert v3 is not None
    paths = _load(v3.body)["paths"]
    assert paths["/api/v1/namespaces/{namespace}/pods"]["get"]["operationId"] == "listCoreV1NamespacedPod"
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert paths["/api/v1/namespaces/{name}/status"]["patch"]["operationId"] == "patchCoreV1NamespaceStatus"
    assert paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]["operationId"] == (
        "createCoreV1NamespacedPodEviction"
    )


def test_documents_are_encoded_once(docs: OpenAPIDocuments) -> None:
    assert docs.v2() is docs.v2()
    assert docs.v3("apis/apps/v1") is docs.v3("/apis/apps/v1/")
    assert docs.v3("apis/nope/v1") is None
