"""Issue 10: the deepest body the bound lets in goes through every recursive walker of a write and a read."""

from __future__ import annotations

from typing import Any

from kapi.object import typed

from .conftest import Api

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(levels):
        value = {"a": value, "b": [1]}
    return value


def _crd(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}s.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": f"{name}s", "singular": name, "kind": name.title(),
                               "listKind": name.title() + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


async def test_deepest_allowed_any_json_round_trips(api: Api) -> None:
    # JSONSchemaProps.example is any JSON, so the depth bound is all that limits it: 7 levels lie above it.
    deep = _nested(typed.MAX_DEPTH - 8)
    crd = _crd("blob", {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "example": deep})
    r = await api.create(CRDS, crd)
    assert r.status == 201, r.body[:300]
    assert r.json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["example"] == deep
    path = CRDS + "/blobs.example.com"
    for patch, ctype in (({"metadata": {"labels": {"a": "b"}}}, "application/strategic-merge-patch+json"),
                         ({"metadata": {"labels": {"a": "c"}}}, "application/merge-patch+json")):
        r = await api.request("PATCH", path, patch, content_type=ctype)
        assert r.status == 200, r.body[:300]
    got = (await api.request("GET", path)).json()
    got["metadata"]["labels"] = {"a": "d"}
    assert (await api.request("PUT", path, got)).status == 200
    assert (await api.request("GET", CRDS)).status == 200
    too_deep = _crd("clump", {"type": "object", "example": _nested(typed.MAX_DEPTH)})
    r = await api.create(CRDS, too_deep)
    assert r.status == 400
    assert "nested more than" in r.json()["message"]


async def test_deep_crd_schema(api: Api) -> None:
    props: dict[str, Any] = {"type": "string"}
    for _ in range(45):  # two JSON levels a schema level, under spec.versions[0].schema.openAPIV3Schema
        props = {"type": "object", "properties": {"a": props}}
    r = await api.create(CRDS, _crd("thing", props))
    assert r.status == 201, r.body[:300]
    assert (await api.request("GET", CRDS + "/things.example.com")).status == 200
