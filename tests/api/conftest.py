"""In-process API fixture: the real ASGI app over the memory backend, called without sockets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import orjson
import pytest
import trio

from kapi.api.app import App, Health
from kapi.config import Config
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.controllers.namespace import NamespaceController
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage

TOKEN = "test-admin-token"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    raw_headers: list[tuple[str, str]]

    def json(self) -> Any:
        return orjson.loads(self.body)

    def header_values(self, name: str) -> list[str]:
        return [v for k, v in self.raw_headers if k == name.lower()]


@dataclass
class Api:
    app: App
    registry: Registry

    async def request(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None,
                      token: str | None = TOKEN, content_type: str = "application/json") -> Reply:
        path, _, query = path.partition("?")
        raw = body if isinstance(body, bytes) else (orjson.dumps(body) if body is not None else b"")
        hdrs = [(b"content-type", content_type.encode())]
        if token:
            hdrs.append((b"authorization", f"Bearer {token}".encode()))
        for k, v in (headers or {}).items():
            hdrs.append((k.lower().encode(), v.encode()))
        scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(),
                 "headers": hdrs, "http_version": "1.1", "scheme": "https"}
        sent = False
        out: list[dict[str, Any]] = []
        done = trio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            out.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await self.app(scope, receive, send)
        start = out[0]
        raw_headers = [(k.decode(), v.decode()) for k, v in start["headers"]]
        body_bytes = b"".join(m.get("body", b"") for m in out[1:])
        return Reply(start["status"], dict(raw_headers), body_bytes, raw_headers)

    async def create(self, path: str, obj: dict[str, Any], **kw: Any) -> Reply:
        return await self.request("POST", path, obj, **kw)


async def serve_with_informers(nursery: trio.Nursery, tmp_path: Path, modes: tuple[str, ...], tokens_csv: str, *,
                              policy: bool = False, admin_token: str = TOKEN) -> Api:
    """An app over a memory registry with ``--authorization-mode`` ``modes`` and a token file holding
    ``tokens_csv``, its namespaces and the shared informers (RBAC's, the Node authorizer's) running;
    with ``policy`` the bootstrap RBAC policy is reconciled and aggregated as ``serve()`` does (issue 12)."""
    from kapi.apis.rbac import GROUP
    from kapi.controllers.clusterroleaggregation import ClusterRoleAggregationController
    from kapi.registry.informer import Informers
    from kapi.server.rbacbootstrap import reconcile_bootstrap_policy

    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(tokens_csv)
    informers = Informers(registry)
    config = Config(storage_backend="memory", authorization_mode=modes, token_auth_file=str(tokens))
    app = build_app(config, registry, admin_token, Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    if policy:
        await reconcile_bootstrap_policy(registry)
    await nursery.start(namespaces.run)
    await nursery.start(informers.run)
    if policy:
        await nursery.start(ClusterRoleAggregationController(registry, informers.informer(GROUP, "clusterroles")).run)
    return Api(app, registry)


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    # AlwaysAllow named, not defaulted: these tests are about the handlers, and the app here has no
    # informers for RBAC (the default of --authorization-mode is Node,RBAC; issue 12).
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    await nursery.start(GarbageCollector(registry).run)
    yield Api(app, registry)
