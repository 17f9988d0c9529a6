"""CRD conversion (kapi.apis.crdconversion): the None strategy and a conversion webhook over HTTPS.

The webhook is the HTTPS server of the authn/authz webhook tests (tests/chain/test_webhooks.py)
on 127.0.0.1 with its own CA; the CRD's caBundle is that CA, and kapi's client is the chain's
WebhookClient.
"""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any, Iterator

import pytest

from kapi import errors
from kapi.apis.crdconversion import Conversion, conversion_for
from kapi.chain.webhookclient import WebhookClient
from tests.chain.test_webhooks import Answer, Pki, Webhook, make_pki

GROUP = "stable.example.com"


def client_factory(url: str, ctx: ssl.SSLContext, sni: str, timeout_s: float) -> WebhookClient:
    return WebhookClient(url, ctx, {}, sni, timeout_s)


def crd(conversion: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": GROUP, "names": {"kind": "CronTab", "plural": "crontabs"},
                            "scope": "Namespaced",
                            "versions": [{"name": "v1", "served": True, "storage": True},
                                         {"name": "v2", "served": True, "storage": False}]}
    if conversion is not None:
        spec["conversion"] = conversion
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"crontabs.{GROUP}"}, "spec": spec}


def crontab(name: str = "a", version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"app": "x"}, "finalizers": ["example.com/keep"]},
            "spec": spec or {"cronSpec": "* * * * *"}}


def test_none_rewrites_only_the_api_version() -> None:
    conv = conversion_for(crd({"strategy": "None"}))
    assert conv.strategy == "None" and not conv.needs_async
    obj = crontab(replicas=3)
    out = conv.convert_sync(obj, f"{GROUP}/v2")
    assert out["apiVersion"] == f"{GROUP}/v2"
    assert {k: v for k, v in out.items() if k != "apiVersion"} == {k: v for k, v in obj.items() if k != "apiVersion"}
    assert obj["apiVersion"] == f"{GROUP}/v1"  # the input is kept
    assert conversion_for(crd(None)).strategy == "None"  # no spec.conversion: None


async def test_none_convert_is_the_same_asynchronously() -> None:
    conv = conversion_for(crd(None))
    out = await conv.convert([crontab("a"), crontab("b", "v2")], f"{GROUP}/v2")
    assert [o["apiVersion"] for o in out] == [f"{GROUP}/v2"] * 2
    assert [o["metadata"]["name"] for o in out] == ["a", "b"]


# ------------------------------------------------------------------------------- the webhook


def converting(mutate: Any = None) -> Any:
    """A webhook answer converting every object to the desired version (and renaming spec.cronSpec)."""

    def answer(review: Any) -> Answer:
        req = review["request"]
        out = []
        for obj in req["objects"]:
            obj = dict(obj)
            obj["apiVersion"] = req["desiredAPIVersion"]
            spec = dict(obj.get("spec") or {})
            if "cronSpec" in spec and req["desiredAPIVersion"].endswith("/v2"):
                spec["schedule"] = spec.pop("cronSpec")
            obj["spec"] = spec
            out.append(obj)
        body = {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                "response": {"uid": req["uid"], "result": {"status": "Success"}, "convertedObjects": out}}
        if mutate is not None:
            mutate(body)
        return 200, body, {}

    return answer


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def hook(pki: Pki) -> Iterator[Webhook]:
    h = Webhook(pki, answer=converting())
    h.start()
    yield h
    h.stop()


def webhook_conversion(hook: Webhook, tmp_path: Path, *, versions: list[str] | None = None,
                       ca: bytes | None = None, path: str = "/convert") -> Conversion:
    """The CRD's Webhook conversion to ``hook``, presenting the client certificate the test server asks for."""
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert.write_bytes(hook.pki.client_cert)
    key.write_bytes(hook.pki.client_key)
    url = hook.url.replace("/authorize", path)
    bundle = base64.b64encode(hook.pki.ca.read_bytes() if ca is None else ca).decode()
    conv = crd({"strategy": "Webhook", "webhook": {"clientConfig": {"url": url, "caBundle": bundle},
                                                   "conversionReviewVersions": versions or ["v1", "v1beta1"]}})
    return conversion_for(conv, client_factory=client_factory, client_cert=(str(cert), str(key)))


async def test_webhook_converts_over_https_with_the_ca_bundle(hook: Webhook, tmp_path: Path) -> None:
    conv = webhook_conversion(hook, tmp_path)
    assert conv.needs_async
    out = await conv.convert([crontab("a"), crontab("b", "v2", schedule="x"), crontab("c")], f"{GROUP}/v2")
    await conv.aclose()
    assert len(hook.seen) == 1  # one review for the objects not yet in v2
    seen = hook.seen[0]
    assert seen.path == "/convert" and seen.client_cn == "kube-apiserver"
    review = seen.body
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["desiredAPIVersion"] == f"{GROUP}/v2"
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "c"]
    assert review["request"]["uid"]
    assert [o["metadata"]["name"] for o in out] == ["a", "b", "c"]
    assert out[0]["spec"] == {"schedule": "* * * * *"} and out[0]["apiVersion"] == f"{GROUP}/v2"
    assert out[1]["spec"] == {"schedule": "x"}


async def test_v1beta1_review_when_it_is_the_only_version(hook: Webhook, tmp_path: Path) -> None:
    def no_uid(body: Any) -> None:
        body["response"]["uid"] = "whatever"  # v1beta1 answers are not checked for the uid

    hook.answer = converting(no_uid)
    conv = webhook_conversion(hook, tmp_path, versions=["v1beta1"])
    out = await conv.convert([crontab()], f"{GROUP}/v2")
    await conv.aclose()
    assert hook.seen[0].body["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert out[0]["apiVersion"] == f"{GROUP}/v2"


async def test_metadata_other_than_labels_and_annotations_is_restored(hook: Webhook, tmp_path: Path) -> None:
    def tamper(body: Any) -> None:
        md = body["response"]["convertedObjects"][0]["metadata"]
        md["finalizers"] = []
        md["resourceVersion"] = "99"
        md["labels"] = {"app": "y"}
        md["annotations"] = {"converted": "yes"}

    hook.answer = converting(tamper)
    conv = webhook_conversion(hook, tmp_path)
    out = (await conv.convert([crontab()], f"{GROUP}/v2"))[0]
    await conv.aclose()
    md = out["metadata"]
    assert md["finalizers"] == ["example.com/keep"] and md["resourceVersion"] == "7"
    assert md["labels"] == {"app": "y"} and md["annotations"] == {"converted": "yes"}


def _answer_with(change: Any) -> Any:
    return converting(change)


GVK = f"{GROUP}/v1, Kind=CronTab"


@pytest.mark.parametrize(("change", "message"), [
    (lambda b: b["response"].update(uid="other"), f'conversion webhook for {GVK} failed: expected response.uid="'),
    (lambda b: b["response"].update(result={"status": "Failure", "message": "no way"}),
     f"conversion webhook for {GVK} failed: no way"),
    (lambda b: b["response"].update(result={"status": "Failure"}),
     f"conversion webhook for {GVK} failed: response.result.status was 'Failure', not 'Success'"),
    (lambda b: b.update(kind="AdmissionReview"),
     f"conversion webhook for {GVK} failed: expected webhook response of apiextensions.k8s.io/v1, "
     f"Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=AdmissionReview"),
    (lambda b: b.pop("response"), f"conversion webhook for {GVK} failed: no response provided"),
    (lambda b: b["response"]["convertedObjects"].append(b["response"]["convertedObjects"][0]),
     f"conversion webhook for {GVK} returned 2 objects, expected 1"),
    (lambda b: b["response"]["convertedObjects"][0].update(apiVersion=f"{GROUP}/v1"),
     f"conversion webhook for {GVK} returned invalid object at index 0: invalid groupVersion "
     f"(expected {GROUP}/v2, received {GROUP}/v1)"),
    (lambda b: b["response"]["convertedObjects"][0].update(kind="Other"),
     f"conversion webhook for {GVK} returned invalid object at index 0: invalid kind "
     f"(expected CronTab, received Other)"),
    (lambda b: b["response"]["convertedObjects"][0]["metadata"].update(name="b"),
     f"conversion webhook for {GVK} returned invalid object: must have the same name: a != b"),
    (lambda b: b["response"]["convertedObjects"][0]["metadata"].update(labels={"app": 1}),
     f"conversion webhook for {GVK} returned invalid metadata: metadata.labels[app] must be a string, "
     f"but is int64 in converted object"),
    (lambda b: b["response"]["convertedObjects"][0]["metadata"].update(labels={"bad key!": "v"}),
     f"conversion webhook for {GVK} returned invalid metadata: metadata.labels: Invalid value: \"bad key!\""),
])
async def test_webhook_answers_kube_refuses(hook: Webhook, tmp_path: Path, change: Any, message: str) -> None:
    hook.answer = converting(change)
    conv = webhook_conversion(hook, tmp_path)
    with pytest.raises(errors.InternalError) as caught:
        await conv.convert([crontab()], f"{GROUP}/v2")
    await conv.aclose()
    assert caught.value.code == 500
    assert str(caught.value).startswith(message), str(caught.value)


async def test_webhook_http_error_and_unreachable(hook: Webhook, tmp_path: Path) -> None:
    hook.answer = lambda body: (500, {"kind": "Status", "message": "it broke"}, {})
    conv = webhook_conversion(hook, tmp_path)
    with pytest.raises(errors.InternalError) as caught:
        await conv.convert([crontab()], f"{GROUP}/v2")
    assert str(caught.value) == f"conversion webhook for {GVK} failed: it broke"
    await conv.aclose()
    url = hook.url
    hook.stop()
    conv = webhook_conversion(hook, tmp_path)
    with pytest.raises(errors.InternalError) as caught:
        await conv.convert([crontab()], f"{GROUP}/v2")
    await conv.aclose()
    assert str(caught.value).startswith(f'conversion webhook for {GVK} failed: Post "{url.replace("/authorize", "/convert")}"')


async def test_a_ca_bundle_of_another_ca_is_refused(hook: Webhook, tmp_path: Path) -> None:
    other = make_pki(tmp_path / "other", "other-ca")
    conv = webhook_conversion(hook, tmp_path, ca=other.ca.read_bytes())
    with pytest.raises(errors.InternalError) as caught:
        await conv.convert([crontab()], f"{GROUP}/v2")
    await conv.aclose()
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert not hook.seen


async def test_service_reference_is_resolved_or_fails_clearly(hook: Webhook, tmp_path: Path) -> None:
    port = int(hook.url.split(":")[2].split("/")[0])
    asked: list[tuple[str, str, int]] = []

    async def resolve(namespace: str, name: str, svc_port: int) -> tuple[str, int]:
        asked.append((namespace, name, svc_port))
        if name == "missing":
            raise errors.ServiceUnavailable('service "missing" not found')
        return "127.0.0.1", port

    bundle = base64.b64encode(hook.pki.ca.read_bytes()).decode()
    for name in ("missing", "hook"):
        spec = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "caBundle": bundle, "service": {"namespace": "ns", "name": name, "path": "/c", "port": 8443}}}}
        conv = conversion_for(crd(spec), client_factory=client_factory, resolve_service=resolve)
        with pytest.raises(errors.InternalError) as caught:
            await conv.convert([crontab()], f"{GROUP}/v2")
        await conv.aclose()
        text = str(caught.value)
        assert text.startswith(f'conversion webhook for {GVK} failed: Post "https://{name}.ns.svc:8443/c"') or \
            name == "hook", text
        if name == "missing":
            assert 'service "missing" not found' in text
        else:
            # Reached at the endpoint's address, the certificate is checked against the service's DNS name
            # (the test server's certificate names 127.0.0.1 only).
            assert "hook.ns.svc" in text and "certificate" in text.lower(), text
    assert asked == [("ns", "missing", 8443), ("ns", "hook", 8443)]


def test_a_webhook_without_a_client_config_is_refused() -> None:
    with pytest.raises(errors.InternalError):
        conversion_for(crd({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}))
    with pytest.raises(errors.InternalError):
        conversion_for(crd({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"],
                                                               "clientConfig": {"url": "https://x"}}}))


def test_convert_sync_of_a_webhook_refuses() -> None:
    conv = conversion_for(crd({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                                                                  "clientConfig": {"url": "https://x/c"}}}))
    with pytest.raises(errors.InternalError):
        conv.convert_sync(crontab(), f"{GROUP}/v2")
    assert conv.convert_sync(crontab("a", "v2"), f"{GROUP}/v2")["metadata"]["name"] == "a"


async def test_a_slow_webhook_times_out_without_blocking_the_server(hook: Webhook, tmp_path: Path) -> None:
    import threading

    import trio

    release = threading.Event()

    def slow(review: Any) -> Answer:
        release.wait(10)  # held until the test lets it go (or 10 s)
        return converting()(review)

    hook.answer = slow
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert.write_bytes(hook.pki.client_cert)
    key.write_bytes(hook.pki.client_key)
    spec = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
        "url": hook.url.replace("/authorize", "/convert"),
        "caBundle": base64.b64encode(hook.pki.ca.read_bytes()).decode()}}}
    conv = conversion_for(crd(spec), client_factory=client_factory, client_cert=(str(cert), str(key)),
                          timeout_s=0.5)
    other_ran = trio.Event()

    async def other() -> None:
        other_ran.set()  # runs while the conversion waits on the webhook

    failures: list[errors.InternalError] = []
    ran_meanwhile: list[bool] = []
    try:
        async with trio.open_nursery() as nursery:
            async def convert() -> None:
                await trio.sleep(0)
                nursery.start_soon(other)
                try:
                    await conv.convert([crontab()], f"{GROUP}/v2")
                except errors.InternalError as exc:
                    failures.append(exc)
                    ran_meanwhile.append(other_ran.is_set())  # a blocking call would not have let it run
            nursery.start_soon(convert)
    finally:
        release.set()
        await conv.aclose()
    assert len(failures) == 1
    assert ran_meanwhile == [True]
    text = str(failures[0])
    assert text.startswith(f"conversion webhook for {GVK} failed: Post ") and "context deadline exceeded" in text, text
