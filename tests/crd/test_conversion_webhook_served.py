"""A CRD version served through a conversion webhook, end to end in an in-process server: GET,
LIST, WATCH, create and update of the v2 version convert each object through the HTTPS webhook
(asynchronously: the server keeps serving meanwhile), and a webhook that fails makes the request
a 500 with kube's message."""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from kapi.apis.crdconversion import conversion_for
from kapi.chain.webhookclient import WebhookClient
from kapi.client import Client
from kapi.server.serve import Server
from tests.chain.test_webhooks import Answer, Webhook, make_pki
from tests.crd.conversion_support import GROUP, crd, request, start, webhook_resources

WAIT_S = 20  # a deadline against hangs, not a timing assertion
NS = "/apis/stable.example.com/{v}/namespaces/default/crontabs"


def convert(review: Any) -> Answer:
    """v1 spec.cronSpec <-> v2 spec.schedule."""
    req = review["request"]
    out = []
    for obj in req["objects"]:
        obj = dict(obj)
        spec = dict(obj.get("spec") or {})
        if req["desiredAPIVersion"].endswith("/v2") and "cronSpec" in spec:
            spec["schedule"] = spec.pop("cronSpec")
        if req["desiredAPIVersion"].endswith("/v1") and "schedule" in spec:
            spec["cronSpec"] = spec.pop("schedule")
        obj["spec"] = spec
        obj["apiVersion"] = req["desiredAPIVersion"]
        out.append(obj)
    return 200, {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                 "response": {"uid": req["uid"], "result": {"status": "Success"}, "convertedObjects": out}}, {}


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Server, Client, Webhook]]:
    pki = make_pki(tmp_path / "pki")
    hook = Webhook(pki, answer=convert)
    hook.start()
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert.write_bytes(pki.client_cert)
    key.write_bytes(pki.client_key)
    definition = crd([{"name": "v1", "served": True, "storage": True}, {"name": "v2", "served": True}],
                     {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
                         "url": hook.url.replace("/authorize", "/convert"),
                         "caBundle": base64.b64encode(pki.ca.read_bytes()).decode()}}})

    def factory(url: str, ctx: ssl.SSLContext, sni: str, timeout_s: float) -> WebhookClient:
        return WebhookClient(url, ctx, {}, sni, timeout_s)

    conversion = conversion_for(definition, client_factory=factory, client_cert=(str(cert), str(key)))
    server, client = await start(nursery, tmp_path / "a")
    for res in webhook_resources(definition, conversion):
        server.registry.table.add(res)
    async with client:
        yield server, client, hook
    await conversion.aclose()
    hook.stop()
    nursery.cancel_scope.cancel()


def crontab(name: str, version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_reads_and_writes_of_v2_go_through_the_webhook(served: tuple[Server, Client, Webhook]) -> None:
    server, client, hook = served
    status, _, made = await request(client, "POST", NS.format(v="v1"), crontab("a", "v1", {"cronSpec": "*/5"}))
    assert status == 201, made
    assert not hook.seen  # the storage version needs no conversion
    status, _, got = await request(client, "GET", NS.format(v="v2") + "/a")
    assert status == 200, got
    assert got["apiVersion"] == f"{GROUP}/v2" and got["spec"] == {"schedule": "*/5"}
    assert got["metadata"]["uid"] == made["metadata"]["uid"]
    assert hook.seen[-1].body["request"]["desiredAPIVersion"] == f"{GROUP}/v2"

    # create in v2: stored as v1 (converted by the webhook before the write)
    status, _, made2 = await request(client, "POST", NS.format(v="v2"), crontab("b", "v2", {"schedule": "@daily"}))
    assert status == 201, made2
    assert made2["apiVersion"] == f"{GROUP}/v2" and made2["spec"] == {"schedule": "@daily"}
    status, _, in_v1 = await request(client, "GET", NS.format(v="v1") + "/b")
    assert in_v1["spec"] == {"cronSpec": "@daily"}

    # LIST of v2: one review for the page
    before = len(hook.seen)
    status, _, listed = await request(client, "GET", NS.format(v="v2"))
    assert status == 200, listed
    assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == \
        [("a", {"schedule": "*/5"}), ("b", {"schedule": "@daily"})]
    assert len(hook.seen) == before + 1 and len(hook.seen[-1].body["request"]["objects"]) == 2

    # update (PUT) in v2: read converted, written converted back
    got["spec"] = {"schedule": "@hourly"}
    status, _, put = await request(client, "PUT", NS.format(v="v2") + "/a", got)
    assert status == 200, put
    assert put["spec"] == {"schedule": "@hourly"}
    _, _, in_v1 = await request(client, "GET", NS.format(v="v1") + "/a")
    assert in_v1["spec"] == {"cronSpec": "@hourly"}
    # merge patch in v2
    status, _, patched = await request(client, "PATCH", NS.format(v="v2") + "/a", {"spec": {"schedule": "@weekly"}},
                                       "application/merge-patch+json")
    assert status == 200 and patched["spec"] == {"schedule": "@weekly"}, patched
    _, _, in_v1 = await request(client, "GET", NS.format(v="v1") + "/a")
    assert in_v1["spec"] == {"cronSpec": "@weekly"}
    assert (GROUP, "crontabs/v2") not in server.registry.cachers  # served from storage


async def test_watch_of_v2_converts_each_event(served: tuple[Server, Client, Webhook]) -> None:
    _, client, _ = served
    events: list[tuple[str, str, Any]] = []

    async def watch(ready: trio.Event) -> None:
        async with client._http.stream("GET", NS.format(v="v2") + "?watch=1",
                                       headers=client._headers("application/json")) as resp:
            ready.set()
            async for line in resp.aiter_lines():
                if line:
                    ev = orjson.loads(line)
                    events.append((ev["type"], ev["object"]["apiVersion"], ev["object"].get("spec")))
                    if len(events) == 2:
                        return

    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            ready = trio.Event()
            nursery.start_soon(watch, ready)
            await ready.wait()
            await request(client, "POST", NS.format(v="v1"), crontab("w", "v1", {"cronSpec": "1"}))
            await request(client, "DELETE", NS.format(v="v1") + "/w")
    assert events == [("ADDED", f"{GROUP}/v2", {"schedule": "1"}), ("DELETED", f"{GROUP}/v2", {"schedule": "1"})]


async def test_a_failing_webhook_is_a_500_with_kubes_message(served: tuple[Server, Client, Webhook]) -> None:
    _, client, hook = served
    await request(client, "POST", NS.format(v="v1"), crontab("a", "v1", {"cronSpec": "x"}))
    hook.answer = lambda review: (200, {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                                        "response": {"uid": review["request"]["uid"],
                                                     "result": {"status": "Failure", "message": "nope"}}}, {})
    status, _, body = await request(client, "GET", NS.format(v="v2") + "/a")
    assert status == 500, body
    assert body["message"] == f"conversion webhook for {GROUP}/v1, Kind=CronTab failed: nope"
    status, _, body = await request(client, "GET", NS.format(v="v2"))
    assert status == 500 and "failed: nope" in body["message"]
    status, _, body = await request(client, "POST", NS.format(v="v2"), crontab("c", "v2", {"schedule": "y"}))
    assert status == 500
    assert body["message"] == f"conversion webhook for {GROUP}/v2, Kind=CronTab failed: nope"
    status, _, body = await request(client, "GET", NS.format(v="v1") + "/c")
    assert status == 404  # nothing was stored
    status, _, body = await request(client, "GET", NS.format(v="v1") + "/a")
    assert status == 200  # the storage version needs no webhook


async def test_delete_answers_in_the_version_asked(served: tuple[Server, Client, Webhook]) -> None:
    _, client, _ = served
    obj = crontab("f", "v1", {"cronSpec": "z"})
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    await request(client, "POST", NS.format(v="v1"), obj)
    status, _, body = await request(client, "DELETE", NS.format(v="v2") + "/f")
    assert status in (200, 202), body
    assert body["apiVersion"] == f"{GROUP}/v2" and body["spec"] == {"schedule": "z"}  # the object stays
    assert body["metadata"]["deletionTimestamp"]
    status, _, body = await request(client, "DELETE", NS.format(v="v2") + "?labelSelector=")
    assert status == 200, body
    assert body["apiVersion"] == f"{GROUP}/v2"
    assert [(i.get("apiVersion", f"{GROUP}/v2"), i["spec"]) for i in body["items"]] == [(f"{GROUP}/v2", {"schedule": "z"})]
