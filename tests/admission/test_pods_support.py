"""What the pod admission tests share: an API over a memory registry with the admission plugins a
test asks for (kube 1.33's default set, plus ``enable``, minus ``disable``) and the namespace
controller (each namespace's ``default`` ServiceAccount and ``kube-root-ca.crt``)."""

from __future__ import annotations

from typing import Any

import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]


async def start_api(nursery: trio.Nursery, *, enable: tuple[str, ...] = (), disable: tuple[str, ...] = (),
                    informers: bool = False, **config: Any) -> Api:
    """The API; with ``informers`` the plugins read through the shared informers, as ``kapi serve``'s do."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    shared = Informers(registry) if informers else None
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           enable_admission_plugins=enable, disable_admission_plugins=disable, **config),
                    registry, TOKEN, Health(ready=True), shared)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    if shared is not None:
        await nursery.start(shared.run)
    return Api(app, registry)


def pod(name: str, *containers: Obj, **spec: Any) -> Obj:
    ctrs = list(containers) or [{"name": "c", "image": "nginx:1.27"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": ctrs, **spec}}


async def namespace(api: Api, name: str) -> None:
    reply = await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": name}})
    assert reply.status == 201, reply.body
    for _ in range(200):  # the namespace controller makes its default ServiceAccount
        if (await api.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")).status == 200:
            return
        await trio.sleep(0.01)
    raise AssertionError(f"no default ServiceAccount in {name}")


def message(reply: Any) -> str:
    return str(reply.json()["message"])
