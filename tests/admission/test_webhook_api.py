"""Webhooks through the API as the server builds it (the default plugins, its webhook client):
a denial is answered with the webhook's code and Status, a webhook's warnings are Warning headers,
a mutation is in the answer, and a webhook that is down fails the write with 500."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import trio

from kapi.admission.webhook.source import HookSource
from tests.admission.test_webhook_support import WAIT_S, allow, cm, configuration, deny, new_server, patch_of, webhook
from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
CMS = "/api/v1/namespaces/default/configmaps"


def source(api: Api, plugin: str) -> HookSource:
    chain = api.app.handlers.admission
    assert chain is not None
    found: HookSource = next(p for p in chain.plugins if p.name == plugin).source  # type: ignore[attr-defined]
    return found


async def configured(api: Api, path: str, plugin: str, obj: Obj) -> None:
    reply = await api.create(path, obj)
    assert reply.status == 201, reply.json()
    rv = reply.json()["metadata"]["resourceVersion"]
    inf = source(api, plugin).informer
    assert inf is not None
    with trio.fail_after(WAIT_S):
        while (inf.get("", obj["metadata"]["name"]) or {}).get("metadata", {}).get("resourceVersion") != rv:
            await trio.sleep(0.01)


async def test_webhooks_through_the_api(nursery: trio.Nursery, tmp_path: Path) -> None:
    def handler(path: str, review: Obj) -> tuple[int, Any]:
        name = review["request"].get("name", "")
        if path.startswith("/mutate"):
            return allow(review, patchType="JSONPatch", warnings=["mutated by webhook"],
                         patch=patch_of([{"op": "add", "path": "/data", "value": {"from": "webhook"}}]))
        if name == "refused":
            return deny(review, "refused by policy", 422)
        return allow(review, warnings=["looked at it"])

    server = new_server(tmp_path, handler)
    try:
        api = await serve_with_informers(nursery, tmp_path, ("AlwaysAllow",), "bob-token,bob,uid-b,devs\n")
        hook = webhook("check.example.com", server, "/validate")
        hook["rules"][0]["operations"] = ["CREATE"]
        await configured(api, VWC, "ValidatingAdmissionWebhook",
                         configuration("ValidatingWebhookConfiguration", "check", [hook]))
        await configured(api, MWC, "MutatingAdmissionWebhook",
                         configuration("MutatingWebhookConfiguration", "mutate",
                                       [webhook("mutate.example.com", server, "/mutate")]))

        reply = await api.create(CMS, cm("refused", "default"))
        assert reply.status == 422
        body = reply.json()
        assert body["message"] == 'admission webhook "check.example.com" denied the request: refused by policy'
        assert body["code"] == 422 and body["status"] == "Failure"

        reply = await api.create(CMS, cm("fine", "default"))
        assert reply.status == 201, reply.json()
        assert reply.json()["data"] == {"from": "webhook"}
        assert reply.header_values("warning") == ['299 - "mutated by webhook"', '299 - "looked at it"']
        review = next(s.review for s in server.seen if s.path.startswith("/validate") and
                      s.review["request"].get("name") == "fine")
        assert review["request"]["object"]["data"] == {"from": "webhook"}  # validating sees the mutated object
        assert review["request"]["userInfo"]["groups"] == ["system:masters", "system:authenticated"]

        # a webhook down: Fail answers 500 with kube's message
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        await configured(api, MWC, "MutatingAdmissionWebhook",
                         configuration("MutatingWebhookConfiguration", "mutate-down",
                                       [webhook("down.example.com", None, url=f"https://127.0.0.1:{port}/")]))
        reply = await api.create(CMS, cm("down", "default"))
        assert reply.status == 500
        assert reply.json()["reason"] == "InternalError"
        assert reply.json()["message"].startswith(
            'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
            f'Post "https://127.0.0.1:{port}/?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused')
    finally:
        server.stop()
