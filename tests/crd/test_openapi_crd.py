"""A CRD's versions in OpenAPI: /openapi/v2 definitions named as kube names them (reversed group,
version, kind), with x-kubernetes-group-version-kind, metadata as ObjectMeta and the resource's
paths; /openapi/v3/apis/<group>/<version> listed in /openapi/v3 with its hash; both follow the
table as versions come and go; and ``kubectl explain`` (1.33: v3, 1.27) of the custom kind."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from kapi import apis
from kapi.api.openapi import OpenAPIDocuments
from kapi.client import Client
from kapi.object.schema import load_builtin
from kapi.registry.resources import ResourceTable
from kapi.server.serve import Server
from tests.crd.conversion_support import GROUP, SCHEMA_V1, SCHEMA_V2, crd, request, served_resources, start
from tests.e2e.conftest import kubectl_binary

VERSIONS = [
    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA_V1}},
    {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": SCHEMA_V2}},
]
DEF_V1 = "com.example.stable.v1.CronTab"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def docs_with(versions: list[dict[str, Any]]) -> tuple[ResourceTable, OpenAPIDocuments]:
    table = ResourceTable(apis.BUILTIN)
    for r in served_resources(crd(versions)):
        table.add(r)
    return table, OpenAPIDocuments(load_builtin(), table)


def test_v2_definitions_and_paths() -> None:
    _, docs = docs_with(VERSIONS)
    v2 = orjson.loads(docs.v2().body)
    d = v2["definitions"][DEF_V1]
    assert d["x-kubernetes-group-version-kind"] == [{"group": GROUP, "kind": "CronTab", "version": "v1"}]
    assert d["type"] == "object" and d["description"] == "CronTab runs a command on a schedule."
    assert d["properties"]["metadata"]["$ref"] == f"#/definitions/{META}ObjectMeta"
    assert d["properties"]["apiVersion"]["type"] == "string" and d["properties"]["kind"]["type"] == "string"
    spec = d["properties"]["spec"]
    assert spec["properties"]["replicas"] == {"type": "integer", "minimum": 1, "description": "How many copies run."}
    assert d["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] is True
    lst = v2["definitions"]["com.example.stable.v1.CronTabList"]
    assert lst["properties"]["items"]["items"] == {"$ref": f"#/definitions/{DEF_V1}"}
    assert lst["properties"]["metadata"]["$ref"] == f"#/definitions/{META}ListMeta"
    assert lst["x-kubernetes-group-version-kind"][0]["kind"] == "CronTabList"
    assert "com.example.stable.v2.CronTab" in v2["definitions"]
    assert META + "ObjectMeta" in v2["definitions"]
    item = v2["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
    assert item["get"]["responses"]["200"]["schema"] == {"$ref": f"#/definitions/{DEF_V1}"}
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": GROUP, "kind": "CronTab", "version": "v1"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]  # kubectl's --validate asks this
    # No strategic merge for custom resources (kubectl apply then sends a JSON merge patch)
    assert patch["consumes"] == ["application/json-patch+json", "application/merge-patch+json",
                                 "application/apply-patch+yaml"]
    v3 = orjson.loads(docs.v3("apis/stable.example.com/v1").body)  # type: ignore[union-attr]
    v3_patch = v3["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in v3_patch["requestBody"]["content"]
    pods = v2["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in pods["consumes"]
    assert "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status" in v2["paths"]
    assert "/apis/stable.example.com/v2/crontabs" in v2["paths"]
    assert docs.v2_protobuf().body  # the gnostic protobuf kubectl 1.27's explain reads encodes too


def test_v2_drops_what_swagger_2_cannot_say_and_v3_keeps_it() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": True},
        "maybe": {"type": "string", "nullable": True},
        "either": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}}}}
    _, docs = docs_with([{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}])
    spec2 = orjson.loads(docs.v2().body)["definitions"][DEF_V1]["properties"]["spec"]["properties"]
    assert spec2["port"] == {"x-kubernetes-int-or-string": True}
    assert spec2["maybe"] == {}
    assert spec2["either"] == {"type": "object"}
    v3 = orjson.loads(docs.v3("apis/stable.example.com/v1").body)  # type: ignore[union-attr]
    spec3 = v3["components"]["schemas"][DEF_V1]["properties"]["spec"]["properties"]
    assert spec3["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert spec3["maybe"] == {"type": "string", "nullable": True}
    assert spec3["either"]["oneOf"] == [{"required": ["a"]}, {"required": ["b"]}]


def test_v3_document_listed_with_hash_and_following_the_table() -> None:
    table, docs = docs_with(VERSIONS[:1])
    keys = orjson.loads(docs.v3_discovery().body)["paths"]
    assert "apis/stable.example.com/v2" not in keys
    doc = docs.v3("apis/stable.example.com/v1")
    assert doc is not None
    assert keys["apis/stable.example.com/v1"]["serverRelativeURL"] == \
        f"/openapi/v3/apis/stable.example.com/v1?hash={doc.hash}"
    body = orjson.loads(doc.body)
    schemas = body["components"]["schemas"]
    assert schemas[DEF_V1]["properties"]["metadata"]["allOf"] == [{"$ref": f"#/components/schemas/{META}ObjectMeta"}]
    assert META + "ObjectMeta" in schemas and "com.example.stable.v1.CronTabList" in schemas
    assert "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs" in body["paths"]
    # A second version comes: listed; then the CRD goes: neither is.
    v2 = served_resources(crd(VERSIONS))[1]
    table.add(v2)
    assert "apis/stable.example.com/v2" in orjson.loads(docs.v3_discovery().body)["paths"]
    v3b = docs.v3("apis/stable.example.com/v2")
    assert v3b is not None and "com.example.stable.v2.CronTab" in orjson.loads(v3b.body)["components"]["schemas"]
    table.remove(GROUP, "v2", "crontabs")
    table.remove(GROUP, "v1", "crontabs")
    keys = orjson.loads(docs.v3_discovery().body)["paths"]
    assert not [k for k in keys if GROUP in k]
    assert docs.v3("apis/stable.example.com/v1") is None
    v2doc = orjson.loads(docs.v2().body)
    assert DEF_V1 not in v2doc["definitions"] and not [p for p in v2doc["paths"] if GROUP in p]


def test_a_version_without_a_schema_is_an_open_object() -> None:
    _, docs = docs_with([{"name": "v1", "served": True, "storage": True}])
    d = orjson.loads(docs.v2().body)["definitions"][DEF_V1]
    assert d["type"] == "object" and set(d["properties"]) == {"apiVersion", "kind", "metadata"}


# ----------------------------------------------------------------------- against a server, kubectl


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Server, Client, Path]]:
    data_dir = tmp_path / "a"
    server, client = await start(nursery, data_dir)
    for res in served_resources(crd(VERSIONS)):
        server.registry.table.add(res)
    async with client:
        yield server, client, data_dir / "admin.kubeconfig"
    nursery.cancel_scope.cancel()


async def test_served_openapi_documents(served: tuple[Server, Client, Path]) -> None:
    server, client, _ = served
    status, _, v2 = await request(client, "GET", "/openapi/v2")
    assert status == 200 and DEF_V1 in v2["definitions"]
    status, _, v3 = await request(client, "GET", "/openapi/v3")
    url = v3["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"]
    status, headers, doc = await request(client, "GET", url)
    assert status == 200 and DEF_V1 in doc["components"]["schemas"]
    server.registry.table.remove(GROUP, "v2", "crontabs")
    status, _, v3 = await request(client, "GET", "/openapi/v3")
    assert "apis/stable.example.com/v2" not in v3["paths"]
    status, _, _ = await request(client, "GET", "/openapi/v3/apis/stable.example.com/v2")
    assert status == 404


async def kubectl(version: str, kubeconfig: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    path = kubectl_binary(version)
    env = {**os.environ, "KUBECACHEDIR": str(kubeconfig.parent / f"cache-{version}")}
    with trio.fail_after(120):
        proc = await trio.run_process([path, "--kubeconfig", str(kubeconfig), *args], stdin=stdin or b"",
                                      capture_stdout=True, capture_stderr=True, check=False, env=env)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.mark.parametrize("version", ["1.33", "1.27"])
async def test_kubectl_explain_custom_kind(served: tuple[Server, Client, Path], version: str) -> None:
    _, _, kubeconfig = served
    # The preferred version (v2: kube orders a CRD's versions by priority) ...
    code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs")
    assert code == 0, err
    assert "KIND:" in out and "CronTab" in out and "stable.example.com" in out
    assert "The v2 desired state." in out and "metadata" in out
    code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs.spec")
    assert code == 0, err
    assert "schedule" in out and "When it runs (v2 name)." in out
    # ... and another one asked for by --api-version.
    v1 = f"--api-version={GROUP}/v1"
    code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs", v1)
    assert code == 0, err
    assert "CronTab runs a command on a schedule." in out
    assert "spec" in out and "metadata" in out
    code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs.spec", v1)
    assert code == 0, err
    assert "The desired state of the CronTab." in out
    assert "cronSpec" in out and "image" in out
    assert "replicas" in out and "<integer>" in out
    code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs.spec.cronSpec", v1)
    assert code == 0, err
    assert "The schedule, in cron format." in out


@pytest.mark.parametrize("version", ["1.33", "1.27"])
async def test_kubectl_apply_validate_strict_of_a_custom_kind(served: tuple[Server, Client, Path],
                                                              version: str) -> None:
    _, client, kubeconfig = served
    manifest = orjson.dumps({"apiVersion": f"{GROUP}/v1", "kind": "CronTab",
                             "metadata": {"name": f"k{version.replace('.', '')}", "namespace": "default"},
                             "spec": {"cronSpec": "* * * * *", "replicas": 2}})
    code, out, err = await kubectl(version, kubeconfig, "apply", "--validate=strict", "-f", "-", stdin=manifest)
    assert code == 0, err
    assert "created" in out
    status, _, got = await request(client, "GET", f"/apis/{GROUP}/v2/namespaces/default/crontabs/k{version.replace('.', '')}")
    assert status == 200 and got["spec"]["replicas"] == 2


def test_schema_keywords_are_published_and_encode_as_protobuf() -> None:
    spec_props = {
        "a": {"type": "string", "enum": ["x", "y"], "default": "x", "pattern": "^[a-z]$", "maxLength": 3},
        "b": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}},
              "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "maxItems": 4},
        "c": {"type": "object", "additionalProperties": {"type": "integer", "format": "int64", "multipleOf": 2}},
        "d": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
        "f": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]},
    }
    schema = {"type": "object", "properties": {"spec": {"type": "object", "required": ["a"], "properties": spec_props}}}
    _, docs = docs_with([{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}])
    spec = orjson.loads(docs.v2().body)["definitions"][DEF_V1]["properties"]["spec"]
    assert spec["required"] == ["a"]
    for name in ("a", "b", "c", "d"):
        assert spec["properties"][name] == spec_props[name]
    assert spec["properties"]["f"] == {"type": "string"}  # CEL rules are not swagger 2.0
    v3 = orjson.loads(docs.v3("apis/stable.example.com/v1").body)  # type: ignore[union-attr]
    assert v3["components"]["schemas"][DEF_V1]["properties"]["spec"]["properties"]["f"] == spec_props["f"]
    assert docs.v2_protobuf().body


@pytest.fixture
async def bare(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Server, Client, Path]]:
    data_dir = tmp_path / "b"
    server, client = await start(nursery, data_dir)
    async with client:
        yield server, client, data_dir / "admin.kubeconfig"
    nursery.cancel_scope.cancel()


async def test_a_crd_created_through_the_api_is_explained_then_gone(bare: tuple[Server, Client, Path]) -> None:
    """The CRD controller's resources (owners 3 and 4) carry the schema into OpenAPI; deleting the CRD
    takes its documents away."""
    _, client, kubeconfig = bare
    definition = crd(VERSIONS)
    status, _, body = await request(client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    definition)
    assert status == 201, body
    code, _, err = await kubectl("1.33", kubeconfig, "wait", "--for", "condition=established",
                                 f"crd/crontabs.{GROUP}", "--timeout=20s")
    assert code == 0, err
    for version in ("1.33", "1.27"):
        code, out, err = await kubectl(version, kubeconfig, "explain", "crontabs.spec", f"--api-version={GROUP}/v1")
        assert code == 0, err
        assert "The desired state of the CronTab." in out and "The schedule, in cron format." in out
    status, _, _ = await request(client, "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.{GROUP}")
    assert status in (200, 202)
    with trio.fail_after(20):  # a deadline against hangs, not a timing assertion
        while True:
            _, _, v3 = await request(client, "GET", "/openapi/v3")
            if not [k for k in v3["paths"] if GROUP in k]:
                break
            await trio.sleep(0.05)
    _, _, v2 = await request(client, "GET", "/openapi/v2")
    assert DEF_V1 not in v2["definitions"]
