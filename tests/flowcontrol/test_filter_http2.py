"""A request queued by APF on a real HTTP/2 connection (issue 13): while it waits, with its 400 kB body
received ahead, the other streams of the connection go on (the exempt admin's request is answered), and
once dispatched the body reaches the handler whole."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpx
import orjson
import trio
import yaml

from kapi.chain.context import RequestContext
from kapi.config import Config
from kapi.server.serve import Server, serve

BOB = "bob-token"
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"


async def test_a_queued_body_does_not_stall_its_http2_connection(nursery: trio.Nursery, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f"{BOB},bob,uid-b\n")
    config = Config(data_dir=str(tmp_path / "data"), storage_backend="memory", secure_port=0,
                    token_auth_file=str(tokens), authorization_mode=("AlwaysAllow",), max_requests_inflight=3,
                    max_mutating_requests_inflight=1, watch_cache=False)
    server: Server = await nursery.start(serve, config)
    app = server.app
    assert app.chain.flowcontrol is not None
    controller = app.chain.flowcontrol.controller
    release = trio.Event()
    handle = app.handlers.handle

    async def held_handle(ctx: RequestContext) -> Any:  # a request asking for it holds its seat until released
        if ctx.query.get("labelSelector") == "hold=1":
            await release.wait()
        return await handle(ctx)

    app.handlers.handle = held_handle  # type: ignore[method-assign]
    kubeconfig = yaml.safe_load((tmp_path / "data" / "admin.kubeconfig").read_text())
    admin = {"Authorization": f"Bearer {kubeconfig['users'][0]['user']['token']}"}
    bob = {"Authorization": f"Bearer {BOB}"}
    tls = ssl.create_default_context(cafile=str(tmp_path / "data" / "pki" / "ca.crt"))
    async with httpx.AsyncClient(base_url=server.url, http2=True, verify=tls, timeout=20) as client:
        level = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                 "metadata": {"name": "bob-pl"},
                 "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {
                     "type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 10}}}}}
        schema = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "bob"},
                  "spec": {"priorityLevelConfiguration": {"name": "bob-pl"}, "matchingPrecedence": 100,
                           "rules": [{"subjects": [{"kind": "User", "user": {"name": "bob"}}],
                                      "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                         "namespaces": ["*"]}]}]}}
        for path, obj in ((f"{FC}/prioritylevelconfigurations", level), (f"{FC}/flowschemas", schema)):
            assert (await client.post(path, json=obj, headers=admin)).status_code == 201
        with trio.fail_after(10):
            while "bob-pl" not in controller.dump() or "bob" not in {fs.name for fs in controller.flow_schemas}:
                await trio.sleep(0.01)
        answers: dict[str, httpx.Response] = {}

        async def send(name: str, method: str, path: str, body: bytes = b"") -> None:
            answers[name] = await client.request(method, path, content=body or None,
                                                 headers={**bob, "Content-Type": "application/json"})

        seats = controller.priority_levels["bob-pl"].current_limit  # every seat of bob's level held
        for i in range(seats):
            nursery.start_soon(send, f"held{i}", "GET", f"{CM}?labelSelector=hold=1")
        with trio.fail_after(10):
            while controller.dump()["bob-pl"].executing != seats:
                await trio.sleep(0.01)
        big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x" * 400_000}}
        nursery.start_soon(send, "big", "POST", CM, orjson.dumps(big))  # 400 kB: more than a stream's window
        with trio.fail_after(10):
            while controller.dump()["bob-pl"].waiting < 1:
                await trio.sleep(0.01)
        # The connection is not stalled by the queued bodies: the admin's request on it is answered now.
        with trio.fail_after(10):
            listed = await client.get("/api/v1/namespaces", headers=admin)
        assert listed.status_code == 200
        assert "big" not in answers
        release.set()
        with trio.fail_after(10):
            while len(answers) < seats + 1:
                await trio.sleep(0.01)
        assert [answers[f"held{i}"].status_code for i in range(seats)] == [200] * seats
        assert answers["big"].status_code == 201, answers["big"].text
        got = await client.get(f"{CM}/big", headers=admin)
        assert got.json()["data"]["k"] == "x" * 400_000
    nursery.cancel_scope.cancel()  # the server
