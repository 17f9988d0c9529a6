"""The flowcontrol filter through the in-process app (issue 13): the PF headers, kube's plain-text 429 with
Retry-After on a Reject level, the exempt admin, a watch's seats given back once it is initialized, a
queued request cancelled when its client goes away, a queued request's body received ahead, the debug
dumps, and max-in-flight when APF is off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import trio

from kapi.api.app import App, Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage

ADMIN, ALICE, BOB = "admin-token", "alice-token", "bob-token"
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"
TOO_MANY = b"Too many requests, please try again later.\n"


class Call:
    """One request through the ASGI app. ``hold``: its answer's start is not sent on until set (it keeps its
    seats); ``gone``: once set, the client disconnects; ``chunks``: the body, one message each."""

    def __init__(self, app: App, method: str, path: str, token: str, chunks: tuple[bytes, ...] = (b"",), *,
                 hold: trio.Event | None = None, gone: trio.Event | None = None, stream: bool = False) -> None:
        self.app, self.method, self.path, self.token = app, method, path, token
        self.chunks, self.hold, self.gone, self.stream = chunks, hold, gone, stream
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.answer = b""
        self.started = trio.Event()
        self.first_chunk = trio.Event()
        self.done = trio.Event()
        self.received_all = trio.Event()  # the app has received the whole body

    async def run(self) -> None:
        path, _, query = self.path.partition("?")
        scope = {"type": "http", "method": self.method, "path": path, "query_string": query.encode(),
                 "headers": [(b"authorization", f"Bearer {self.token}".encode()),
                             (b"content-type", b"application/json")], "http_version": "1.1", "scheme": "https"}
        pending = list(self.chunks)

        async def receive() -> dict[str, Any]:
            if pending:
                chunk = pending.pop(0)
                if not pending:
                    self.received_all.set()
                return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
            if self.gone is not None:
                await self.gone.wait()
            else:
                await self.done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.headers = dict(message["headers"])
                self.started.set()
                if self.hold is not None:
                    await self.hold.wait()
            else:
                self.answer += message.get("body", b"")
                if message.get("body"):
                    self.first_chunk.set()
                if not message.get("more_body"):
                    self.done.set()

        await self.app(scope, receive, send)

    def json(self) -> Any:
        return orjson.loads(self.answer)


async def call(app: App, method: str, path: str, token: str, body: Any = None) -> Call:
    c = Call(app, method, path, token, (orjson.dumps(body),) if body is not None else (b"",))
    await c.run()
    return c


def _level(name: str, limit_response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                    "limitResponse": limit_response}}}


def _schema(name: str, level: str, user: str) -> dict[str, Any]:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 100,
                     "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                   "namespaces": ["*"], "clusterScope": True}],
                                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}


async def make_app(nursery: trio.Nursery, tmp_path: Path, **config: Any) -> tuple[App, dict[str, str]]:
    """An app with APF over in-process informers: alice's requests go to a Reject level, bob's to a level
    with one queue; each level has one seat (server limit 7: the two levels' shares 1, catch-all's 5).
    Returns the app and the uids of the objects made."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f"{ALICE},alice,uid-a\n{BOB},bob,uid-b\n")
    informers = Informers(registry)
    settings: dict[str, Any] = dict(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                                    token_auth_file=str(tokens), max_requests_inflight=5,
                                    max_mutating_requests_inflight=2)
    settings.update(config)
    app = build_app(Config(**settings), registry, ADMIN, Health(ready=True), informers)
    await bootstrap(registry, NamespaceController(registry))
    await nursery.start(informers.run)
    uids: dict[str, str] = {}
    if app.chain.flowcontrol is None:
        return app, uids
    await nursery.start(app.chain.flowcontrol.controller.run)
    made = [(f"{FC}/prioritylevelconfigurations", _level("reject-pl", {"type": "Reject"})),
            (f"{FC}/prioritylevelconfigurations",
             _level("queue-pl", {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 10}})),
            (f"{FC}/flowschemas", _schema("alice-fs", "reject-pl", "alice")),
            (f"{FC}/flowschemas", _schema("bob-fs", "queue-pl", "bob"))]
    for path, obj in made:
        created = await call(app, "POST", path, ADMIN, obj)
        assert created.status == 201, created.answer
        uids[obj["metadata"]["name"]] = created.json()["metadata"]["uid"]
    controller = app.chain.flowcontrol.controller
    with trio.fail_after(10):
        while not {"alice-fs", "bob-fs"} <= {fs.name for fs in controller.flow_schemas} \
                or not {"reject-pl", "queue-pl"} <= set(controller.dump()):
            await trio.sleep(0.01)
    return app, uids


def _pf(c: Call) -> tuple[bytes | None, bytes | None]:
    return c.headers.get(b"x-kubernetes-pf-flowschema-uid"), c.headers.get(b"x-kubernetes-pf-prioritylevel-uid")


async def test_classified_answers_carry_the_uids_and_a_full_reject_level_answers_429_at_once(
        nursery: trio.Nursery, tmp_path: Path) -> None:
    app, uids = await make_app(nursery, tmp_path)
    ok = await call(app, "GET", CM, ALICE)
    assert ok.status == 200
    assert _pf(ok) == (uids["alice-fs"].encode(), uids["reject-pl"].encode())
    # An error answer carries them too.
    missing = await call(app, "GET", f"{CM}/nothing", ALICE)
    assert missing.status == 404 and _pf(missing) == _pf(ok)
    # alice's one seat taken: the next is refused at once, as kube's tooManyRequests writes it.
    hold = trio.Event()
    slow = Call(app, "GET", CM, ALICE, hold=hold)
    nursery.start_soon(slow.run)
    await slow.started.wait()
    refused = await call(app, "GET", "/api/v1/namespaces", ALICE)
    assert refused.status == 429
    assert refused.answer == TOO_MANY
    assert refused.headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert 1 <= int(refused.headers[b"retry-after"]) <= 32
    assert _pf(refused) == _pf(ok)
    exposition = app.metrics.exposition()
    assert (b'apiserver_flowcontrol_rejected_requests_total{flow_schema="alice-fs",priority_level="reject-pl",'
            b'reason="concurrency-limit"} 1.0') in exposition
    # The exempt admin is not held back by alice's level, nor is bob (another level).
    admin = await call(app, "GET", "/api/v1/namespaces", ADMIN)
    assert admin.status == 200 and _pf(admin)[0] not in (None, uids["alice-fs"].encode())
    bob = await call(app, "GET", "/api/v1/namespaces", BOB)
    assert bob.status == 200 and _pf(bob) == (uids["bob-fs"].encode(), uids["queue-pl"].encode())
    hold.set()
    await slow.done.wait()
    again = await call(app, "GET", "/api/v1/namespaces", ALICE)
    assert again.status == 200  # the seat was given back when the answer was sent


async def test_a_queued_request_leaves_its_queue_when_its_client_goes_away(nursery: trio.Nursery,
                                                                            tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path)
    assert app.chain.flowcontrol is not None
    controller = app.chain.flowcontrol.controller
    hold, gone = trio.Event(), trio.Event()
    first = Call(app, "GET", CM, BOB, hold=hold)
    nursery.start_soon(first.run)
    await first.started.wait()
    queued = Call(app, "GET", "/api/v1/namespaces", BOB, gone=gone)
    nursery.start_soon(queued.run)
    with trio.fail_after(5):
        while controller.dump()["queue-pl"].waiting != 1:
            await trio.sleep(0.01)
    assert not queued.started.is_set()
    gone.set()
    with trio.fail_after(5):
        await queued.done.wait()
    assert queued.status == 429
    level = controller.dump()["queue-pl"]
    assert level.waiting == 0 and level.cancelled == 1 and level.executing == 1
    hold.set()
    await first.done.wait()


async def test_a_queued_request_s_body_is_received_while_it_waits_and_read_once_dispatched(
        nursery: trio.Nursery, tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path)
    assert app.chain.flowcontrol is not None
    controller = app.chain.flowcontrol.controller
    hold = trio.Event()
    first = Call(app, "GET", CM, BOB, hold=hold)
    nursery.start_soon(first.run)
    await first.started.wait()
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "queued"},
                         "data": {"k": "v" * 1000}})
    post = Call(app, "POST", CM, BOB, (body[:100], body[100:500], body[500:]))
    nursery.start_soon(post.run)
    with trio.fail_after(5):
        await post.received_all.wait()  # received ahead, while it waits in its queue
    assert controller.dump()["queue-pl"].waiting == 1 and not post.started.is_set()
    hold.set()
    with trio.fail_after(5):
        await post.done.wait()
    assert post.status == 201, post.answer
    got = await call(app, "GET", f"{CM}/queued", ADMIN)
    assert got.json()["data"] == {"k": "v" * 1000}


async def test_a_queued_body_over_the_limit_is_413_once_dispatched(nursery: trio.Nursery, tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path, max_body_bytes=1000)
    hold = trio.Event()
    first = Call(app, "GET", CM, BOB, hold=hold)
    nursery.start_soon(first.run)
    await first.started.wait()
    post = Call(app, "POST", CM, BOB, (b"{" + b" " * 900, b" " * 900 + b"}"))
    nursery.start_soon(post.run)
    with trio.fail_after(5):
        await post.received_all.wait()
    hold.set()
    with trio.fail_after(5):
        await post.done.wait()
    assert post.status == 413 and post.json()["reason"] == "RequestEntityTooLarge"


async def test_a_request_waits_a_quarter_of_its_deadline_then_is_refused(nursery: trio.Nursery,
                                                                        tmp_path: Path) -> None:
    app, uids = await make_app(nursery, tmp_path, request_timeout_s=0.4)
    assert app.chain.flowcontrol is not None
    hold = trio.Event()
    first = Call(app, "GET", CM, BOB, hold=hold)
    nursery.start_soon(first.run)
    await first.started.wait()
    queued = Call(app, "GET", "/api/v1/namespaces", BOB)
    with trio.fail_after(5):
        await queued.run()
    assert queued.status == 429 and queued.answer == TOO_MANY and b"retry-after" in queued.headers
    assert _pf(queued) == (uids["bob-fs"].encode(), uids["queue-pl"].encode())
    assert app.chain.flowcontrol.controller.dump()["queue-pl"].timed_out == 1
    assert (b'apiserver_flowcontrol_rejected_requests_total{flow_schema="bob-fs",priority_level="queue-pl",'
            b'reason="time-out"} 1.0') in app.metrics.exposition()
    hold.set()
    await first.done.wait()


async def test_a_watch_gives_its_seats_back_once_its_initial_events_are_sent(nursery: trio.Nursery,
                                                                             tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path, request_timeout_s=8.0)
    assert app.chain.flowcontrol is not None
    controller = app.chain.flowcontrol.controller
    watch = Call(app, "GET", "/api/v1/namespaces?watch=1", BOB)  # rv "": initial events first
    nursery.start_soon(watch.run)
    with trio.fail_after(5):
        await watch.first_chunk.wait()
    # Still streaming, no longer holding queue-pl's one seat: bob's next request runs at once.
    with trio.fail_after(5):
        while controller.dump()["queue-pl"].executing:
            await trio.sleep(0.01)
    assert not watch.done.is_set()
    get = await call(app, "GET", "/api/v1/namespaces", BOB)
    assert get.status == 200
    assert controller.dump()["queue-pl"].dispatched == 2
    watch.done.set()  # the client goes away


async def test_debug_dumps_name_the_levels_and_the_heaviest_flows(nursery: trio.Nursery, tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path)
    for _ in range(3):
        assert (await call(app, "GET", CM, BOB)).status == 200
    levels = await call(app, "GET", "/debug/api_priority_and_fairness/dump_priority_levels", ADMIN)
    assert levels.status == 200 and levels.headers[b"content-type"] == b"text/plain; charset=utf-8"
    table, flows = levels.answer.decode().split("\n\n")
    rows = {line.split(",")[0]: [c.strip() for c in line.split(",")] for line in table.splitlines()}
    assert rows["PriorityLevelName"][1:3] == ["ActiveQueues", "IsIdle"]
    assert rows["queue-pl"][6] == "3"  # DispatchedRequests
    assert {"catch-all", "exempt", "reject-pl", "queue-pl"} <= set(rows)
    flow_rows = [[c.strip() for c in line.split(",")] for line in flows.splitlines()[1:]]
    assert ["queue-pl", "bob-fs", "bob"] in [r[:3] for r in flow_rows]
    queues = await call(app, "GET", "/debug/api_priority_and_fairness/dump_queues", ADMIN)
    assert [[c.strip() for c in line.split(",")][:3] for line in queues.answer.decode().splitlines()
            if line.startswith("queue-pl")] == [["queue-pl", "0", "0"]]  # one queue, nothing pending
    hold = trio.Event()
    held = Call(app, "GET", CM, BOB, hold=hold)
    nursery.start_soon(held.run)
    await held.started.wait()
    requests = await call(app, "GET", "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1",
                          ADMIN)
    lines = [[c.strip() for c in line.split(",")] for line in requests.answer.decode().splitlines()]
    assert lines[0][0] == "PriorityLevelName" and lines[0][10] == "UserName"
    bob = [line for line in lines if line[0] == "queue-pl"]
    assert len(bob) == 1 and bob[0][1:5] == ["bob-fs", "0", "-1", "bob"]  # executing from queue 0
    assert bob[0][10:] == ["bob", "list", CM, "default", "", "v1", "configmaps", ""]
    hold.set()
    await held.done.wait()
    # Only those allowed the non-resource URL may read them (alice is, with AlwaysAllow; unknown is not).
    unknown = await call(app, "GET", "/debug/api_priority_and_fairness/dump_queues", "nobody")
    assert unknown.status == 401


async def test_with_apf_off_max_in_flight_limits(nursery: trio.Nursery, tmp_path: Path) -> None:
    app, _ = await make_app(nursery, tmp_path, enable_priority_and_fairness=False, max_requests_inflight=1)
    assert app.chain.flowcontrol is None
    hold = trio.Event()
    slow = Call(app, "GET", CM, ALICE, hold=hold)
    nursery.start_soon(slow.run)
    await slow.started.wait()
    assert _pf(slow) == (None, None)
    refused = await call(app, "GET", CM, BOB)
    assert refused.status == 429 and refused.headers[b"retry-after"] == b"1" and refused.answer == TOO_MANY
    dump = await call(app, "GET", "/debug/api_priority_and_fairness/dump_queues", ADMIN)
    assert dump.status == 404  # kube installs the dumps only with APF on
    hold.set()
    await slow.done.wait()
