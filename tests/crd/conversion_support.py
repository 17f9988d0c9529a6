"""What the conversion and OpenAPI tests share: an in-process server, and a CRD's versions served as
Resources added to its table directly (as owners 3 and 4's CRD controller will add them), each
converting with ``kapi.apis.crdconversion``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import orjson
import trio

from kapi.apis.crdconversion import Conversion, conversion_for
from kapi.client import Client, load_kubeconfig
from kapi.config import Config
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy
from kapi.server.serve import Server, serve

GROUP = "stable.example.com"
Obj = dict[str, Any]

SCHEMA_V1: Obj = {
    "type": "object",
    "description": "CronTab runs a command on a schedule.",
    "properties": {
        "spec": {"type": "object", "description": "The desired state of the CronTab.",
                 "properties": {
                     "cronSpec": {"type": "string", "description": "The schedule, in cron format."},
                     "image": {"type": "string", "description": "The container image to run."},
                     "replicas": {"type": "integer", "minimum": 1, "description": "How many copies run."}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
SCHEMA_V2: Obj = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "description": "The v2 desired state.",
                 "properties": {"schedule": {"type": "string", "description": "When it runs (v2 name)."},
                                "image": {"type": "string"}}},
    },
}


def crd(versions: list[Obj], conversion: Obj | None = None) -> Obj:
    spec: Obj = {"group": GROUP, "scope": "Namespaced", "versions": versions,
                 "names": {"kind": "CronTab", "plural": "crontabs", "singular": "crontab", "listKind": "CronTabList"}}
    if conversion:
        spec["conversion"] = conversion
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"crontabs.{GROUP}"}, "spec": spec}


@dataclasses.dataclass(eq=False)
class VersionStrategy(Strategy):
    """One served version: stored in ``storage`` (a version name), converted with ``conversion``."""

    typed_list_items: ClassVar[bool] = True  # as a custom resource's lists
    version: str
    storage: str
    conversion: Conversion
    openapi_schema: Obj | None = None

    def to_storage(self, obj: Obj) -> Obj:
        return self.conversion.convert_sync(obj, f"{GROUP}/{self.storage}")

    def from_storage(self, obj: Obj) -> Obj:
        return self.conversion.convert_sync(obj, f"{GROUP}/{self.version}")


def served_resources(definition: Obj) -> list[Resource]:
    """The served versions of ``definition`` as Resources (served: false versions left out)."""
    conversion = conversion_for(definition)
    spec = definition["spec"]
    storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
    out = []
    for v in spec["versions"]:
        if not v.get("served"):
            continue
        warning = ""
        if v.get("deprecated"):
            warning = v.get("deprecationWarning") or f"{GROUP}/{v['name']} CronTab is deprecated"
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        out.append(Resource(group=GROUP, version=v["name"], resource="crontabs", kind="CronTab",
                            singular_name="crontab", short_names=("ct",), subresources=("status",),
                            storage_version="" if v["name"] == storage else storage, warning=warning,
                            strategy=VersionStrategy(v["name"], storage, conversion, schema)))
    return out


async def start(nursery: trio.Nursery, data_dir: Path) -> tuple[Server, Client]:
    config = Config(data_dir=str(data_dir), storage_backend="memory", secure_port=0, etcd_compaction_interval_s=0)
    server: Server = await nursery.start(serve, config)
    return server, Client(load_kubeconfig(data_dir / "admin.kubeconfig"), http2=False)


async def request(client: Client, method: str, path: str, body: Any = None,
                  content_type: str = "application/json") -> tuple[int, dict[str, str], Any]:
    headers = client._headers("application/json")
    data = None
    if body is not None:
        headers["Content-Type"] = content_type
        data = body if isinstance(body, bytes) else orjson.dumps(body)
    resp = await client._http.request(method, path, content=data, headers=headers)
    warnings = resp.headers.get_list("warning")
    out = dict(resp.headers)
    out["warning"] = "\n".join(warnings)
    return resp.status_code, out, orjson.loads(resp.content) if resp.content else None


@dataclasses.dataclass(eq=False)
class WebhookVersionStrategy(Strategy):
    """A version served by a conversion webhook: the registry awaits the conversion (converts_async)."""

    version: str
    storage: str
    conversion: Conversion
    openapi_schema: Obj | None = None
    converts_async: bool = True

    async def convert_from_storage(self, objs: list[Obj]) -> list[Obj]:
        return await self.conversion.convert(objs, f"{GROUP}/{self.version}")

    async def convert_to_storage(self, obj: Obj) -> Obj:
        return await self.conversion.convert_one(obj, f"{GROUP}/{self.storage}")


def webhook_resources(definition: Obj, conversion: Conversion) -> list[Resource]:
    """The served versions of a Webhook-converting ``definition``; the non-storage ones have no watch cache."""
    spec = definition["spec"]
    storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
    out = []
    for v in spec["versions"]:
        if not v.get("served"):
            continue
        is_storage = v["name"] == storage
        strategy: Strategy = (VersionStrategy(v["name"], storage, conversion) if is_storage
                              else WebhookVersionStrategy(v["name"], storage, conversion))
        out.append(Resource(group=GROUP, version=v["name"], resource="crontabs", kind="CronTab",
                            singular_name="crontab", subresources=("status",), cacheable=is_storage,
                            storage_version="" if is_storage else storage, strategy=strategy))
    return out
