"""The chain through the ASGI app (issue 11): the body is read after authorization; --request-timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import trio

from kapi.api.app import App, Health
from kapi.chain.authz import Authorizer
from kapi.object.access import Attributes
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage

from .conftest import TOKEN, Api

CM = "/api/v1/namespaces/default/configmaps"
USER = "user-token"


class Exchange:
    """One request whose body arrives only when (if ever) the app asks for it; ``events`` says when.

    A body the app did not read is still received once the answer is written (and dropped) so
    that the server's connection can go on: what matters is that it comes after "responded".
    """

    def __init__(self, method: str, path: str, token: str, body: bytes, *, query: str = "",
                 events: list[str] | None = None) -> None:
        self.scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(),
                      "http_version": "1.1", "scheme": "https",
                      "headers": [(b"authorization", f"Bearer {token}".encode()),
                                  (b"content-type", b"application/json"),
                                  (b"content-length", str(len(body)).encode())]}
        self.body = body
        self.events = events if events is not None else []
        self.out: list[dict[str, Any]] = []
        self.answered = trio.Event()

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            self.events.append("body received")
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.answered.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.out.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            self.events.append("responded")  # the answer's bytes are out
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.answered.set()

    async def run(self, app: App) -> int:
        with trio.fail_after(30):
            await app(self.scope, self.receive, self.send)
        return int(self.out[0]["status"])

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = orjson.loads(b"".join(m.get("body", b"") for m in self.out[1:]))
        return status


def _configmap(name: str, size: int = 0) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": {"k": "x" * size}})


async def test_an_unauthenticated_client_gets_401_without_its_body_read(api: Api) -> None:
    """Issue 11: the body was read (up to --max-body-bytes) before authentication."""
    big = _configmap("big", 2 * 1024 * 1024)
    for token in ("not-a-token", ""):
        call = Exchange("POST", CM, token, big)
        if not token:
            call.scope["headers"] = call.scope["headers"][1:]
            api.app.chain.authn.anonymous = False  # anonymous requests are refused too, unread
        assert await call.run(api.app) == 401
        assert call.status()["reason"] == "Unauthorized"
        assert call.events == ["responded", "body received"]  # dropped once answered, never decoded
    # A body over the limit is not even looked at: 401, not 413.
    too_big = Exchange("POST", CM, "not-a-token", b"x" * (api.app.max_body_bytes + 1))
    assert await too_big.run(api.app) == 401 and too_big.events == ["responded", "body received"]


async def test_the_body_is_read_after_authorization(api: Api) -> None:
    """Issue 11: authorized first, then read; a refused method on a resource is not read either."""
    events: list[str] = []

    class Recording(Authorizer):
        async def check(self, attrs: Attributes) -> None:
            events.append("authorized")
            await super().check(attrs)

    api.app.chain.authz = Recording()
    call = Exchange("POST", CM, TOKEN, _configmap("read-late"), events=events)
    assert await call.run(api.app) == 201
    assert events == ["authorized", "body received", "responded"]
    events.clear()
    refused = Exchange("POST", f"{CM}/named", TOKEN, _configmap("named"), events=events)  # create on a name
    assert await refused.run(api.app) == 405
    assert events == ["authorized", "responded", "body received"]


async def test_a_forbidden_client_gets_403_without_its_body_read(nursery: trio.Nursery, tmp_path: Path) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{USER},alice,uid-1,"developers"\n')
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysDeny",), token_auth_file=str(tokens)),
                    registry, TOKEN, Health(ready=True))
    await bootstrap(registry, NamespaceController(registry))
    call = Exchange("POST", CM, USER, _configmap("denied"))
    assert await call.run(app) == 403
    assert call.events == ["responded", "body received"]
    allowed = Exchange("POST", CM, TOKEN, _configmap("master"))  # system:masters may
    assert await allowed.run(app) == 201 and allowed.events == ["body received", "responded"]


async def test_a_handler_slower_than_the_request_timeout_is_504(api: Api,
                                                                autojump_clock: trio.testing.MockClock) -> None:
    """Issue 11: --request-timeout was parsed but bounded nothing but the body read."""
    assert (await api.create(CM, {"metadata": {"name": "slow"}})).status == 201
    real_get = api.registry.get

    async def slow_get(*args: Any, **kw: Any) -> Any:
        await trio.sleep(api.app.chain.request_timeout_s + 5)
        return await real_get(*args, **kw)

    api.registry.get = slow_get  # type: ignore[method-assign]
    r = await api.request("GET", f"{CM}/slow")
    assert r.status == 504
    status = r.json()
    assert (status["reason"], status["code"]) == ("Timeout", 504)
    assert status["message"] == "Timeout: request did not complete within the allotted timeout"
    api.registry.get = real_get  # type: ignore[method-assign]
    assert (await api.request("GET", f"{CM}/slow")).status == 200


async def test_a_watch_outlives_the_request_timeout(api: Api, autojump_clock: trio.testing.MockClock) -> None:
    """Issue 11: watches are long-running: an event after --request-timeout still arrives, then timeoutSeconds ends it."""
    api.app.chain.request_timeout_s = 2
    watch = Exchange("GET", CM, TOKEN, b"", query="watch=true&timeoutSeconds=10")

    async def create_late() -> None:
        await trio.sleep(5)
        assert (await api.create(CM, {"metadata": {"name": "late"}})).status == 201

    async with trio.open_nursery() as nursery:
        nursery.start_soon(create_late)
        assert await watch.run(api.app) == 200
    events = [orjson.loads(line) for m in watch.out[1:] for line in m.get("body", b"").splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "late")]
    assert watch.out[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
