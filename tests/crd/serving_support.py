"""In-process app serving custom resources (the serving tests): the built-ins plus a CRD's Resources,
watch caches following the table as ``serve()`` runs them."""

from __future__ import annotations

import copy
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.apis.customresources import custom_resources
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.caches import WatchCaches
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

GROUP = "stable.example.com"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "green", "blue"]},
                "size": {"type": "integer", "minimum": 1, "default": 3},
                "replicas": {"type": "integer", "minimum": 0},
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "x-kubernetes-validations": [{"rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                                          "message": "min must not exceed max"}],
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
                "conditions": {"type": "array", "items": {
                    "type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}},
            },
        },
    },
}

COLUMNS = [
    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def widget_crd(*, scope: str = "Namespaced", status: bool = True, scale: bool = True,
               columns: list[dict[str, Any]] | None = COLUMNS, extra_versions: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    sub: dict[str, Any] = {}
    if status:
        sub["status"] = {}
    if scale:
        sub["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector"}
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
                               "subresources": sub, "selectableFields": [{"jsonPath": ".spec.color"}]}
    if columns is not None:
        version["additionalPrinterColumns"] = columns
    plural = "widgets" if scope == "Namespaced" else "gadgets"
    kind = "Widget" if scope == "Namespaced" else "Gadget"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List",
                               "shortNames": [plural[:2]], "categories": ["all"]},
                     "versions": [version, *(extra_versions or [])]}}


async def serve_crds(nursery: trio.Nursery, *crds: dict[str, Any]) -> Api:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    resources = [r for crd in crds for r in custom_resources(crd)]
    config = Config(storage_backend="memory", authorization_mode=("AlwaysAllow",))
    registry = Registry(storage, ResourceTable([*BUILTIN, *resources]))
    app = build_app(config, registry, TOKEN, Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    await nursery.start(WatchCaches(config, registry).follow, nursery)
    return Api(app, registry)


@pytest.fixture
async def cr_api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    yield await serve_crds(nursery, widget_crd(), widget_crd(scope="Cluster", scale=False))
