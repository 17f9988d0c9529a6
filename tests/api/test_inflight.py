"""The max-in-flight filter: reads and writes limited apart, 429 with Retry-After, masters and watches exempt.

It limits when API Priority and Fairness is off (--enable-priority-and-fairness=false, issue 13); its
refusal is kube's tooManyRequests, plain text as APF's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import trio

from kapi.api.app import App, Health
from kapi.config import Config
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.controllers.namespace import NamespaceController
from kapi.storage.memory import MemoryStorage

ADMIN, USER = "admin-token", "user-token"


async def make_app(nursery: trio.Nursery, tmp_path: Path, reads: int, writes: int) -> App:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{USER},alice,uid-1,"developers"\n')
    # The user's requests must reach the in-flight limit whatever the default authorization (issue 12).
    config = Config(storage_backend="memory", max_requests_inflight=reads, max_mutating_requests_inflight=writes,
                    token_auth_file=str(tokens), authorization_mode=("AlwaysAllow",),
                    enable_priority_and_fairness=False)
    app = build_app(config, registry, ADMIN, Health(ready=True))
    await bootstrap(registry, NamespaceController(registry))
    return app


class Call:
    """One request; ``hold`` keeps it from finishing its answer until set."""

    def __init__(self, app: App, method: str, path: str, token: str, body: Any = None,
                 hold: trio.Event | None = None) -> None:
        self.app, self.method, self.path, self.token, self.body, self.hold = app, method, path, token, body, hold
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.answer = b""
        self.started = trio.Event()
        self.done = trio.Event()

    async def run(self) -> None:
        path, _, query = self.path.partition("?")
        scope = {"type": "http", "method": self.method, "path": path, "query_string": query.encode(),
                 "headers": [(b"authorization", f"Bearer {self.token}".encode()),
                             (b"content-type", b"application/json")], "http_version": "1.1", "scheme": "https"}
        raw = orjson.dumps(self.body) if self.body is not None else b""
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await self.done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.headers = dict(message["headers"])
                self.started.set()
                if self.hold is not None:
                    await self.hold.wait()  # the answer is still being sent
            else:
                self.answer += message.get("body", b"")
                if not message.get("more_body"):
                    self.done.set()

        await self.app(scope, receive, send)


async def test_one_read_in_flight_refuses_the_next_with_429(nursery: trio.Nursery, tmp_path: Path) -> None:
    app = await make_app(nursery, tmp_path, reads=1, writes=1)
    hold = trio.Event()
    slow = Call(app, "GET", "/api/v1/namespaces/default/configmaps", USER, hold=hold)
    nursery.start_soon(slow.run)
    await slow.started.wait()
    refused = Call(app, "GET", "/api/v1/namespaces", USER)
    await refused.run()
    assert refused.status == 429 and refused.headers[b"retry-after"] == b"1"
    # kube's tooManyRequests (http.Error): plain text, not a Status (issue 13)
    assert refused.headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert refused.answer == b"Too many requests, please try again later.\n"
    assert app.chain.flowcontrol is None
    # Writes have their own limit; masters and watches are not counted.
    write = Call(app, "POST", "/api/v1/namespaces/default/configmaps", USER,
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}})
    await write.run()
    assert write.status == 201
    master = Call(app, "GET", "/api/v1/namespaces", ADMIN)
    await master.run()
    assert master.status == 200
    hold.set()
    await slow.done.wait()
    again = Call(app, "GET", "/api/v1/namespaces", USER)
    await again.run()
    assert again.status == 200
    assert b'apiserver_dropped_requests_total{request_kind="readOnly"} 1.0' in app.metrics.exposition()


async def test_zero_means_no_limit(nursery: trio.Nursery, tmp_path: Path) -> None:
    app = await make_app(nursery, tmp_path, reads=0, writes=0)
    hold = trio.Event()
    calls = [Call(app, "GET", "/api/v1/namespaces", USER, hold=hold) for _ in range(5)]
    for c in calls:
        nursery.start_soon(c.run)
    for c in calls:
        await c.started.wait()
    assert [c.status for c in calls] == [200] * 5
    hold.set()
