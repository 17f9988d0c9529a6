"""Custom objects against their structural schema (issue 14 items 2 and 3, the serving side): kube's
validation causes, pruning of unknown fields with fieldValidation Strict/Warn/Ignore, defaulting on
create, update and read from storage."""

from __future__ import annotations

from typing import Any

from kapi.encoding import codec
from tests.crd.serving_support import GROUP, cr_api  # noqa: F401 (fixture)
from tests.crd.test_serving import NS, widget

MERGE = "application/merge-patch+json"


async def test_validation_causes(cr_api: Any) -> None:
    r = await cr_api.create(NS, widget("a", "pink", size=0))
    assert r.status == 422, r.body
    status = r.json()
    assert status["details"]["name"] == "a" and status["details"]["kind"] == "Widget"
    causes = {c["field"]: c for c in status["details"]["causes"]}
    assert causes["spec.color"]["reason"] == "FieldValueNotSupported"
    assert causes["spec.color"]["message"] == 'Unsupported value: "pink": supported values: "red", "green", "blue"'
    assert causes["spec.size"]["message"] == "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    assert status["message"].startswith(f'Widget.{GROUP} "a" is invalid: ')


async def test_wrong_type_blocks_cel(cr_api: Any) -> None:
    r = await cr_api.create(NS, widget("a", min="x", max=1))
    assert r.status == 422
    causes = r.json()["details"]["causes"]
    assert any(c["field"] == "spec.min" and c["reason"] == "FieldValueTypeInvalid" for c in causes)
    assert any("some validation rules were not checked" in c["message"] for c in causes)
    assert not any("min must not exceed max" in c["message"] for c in causes)


async def test_update_validated(cr_api: Any) -> None:
    assert (await cr_api.create(NS, widget("a"))).status == 201
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"color": "pink"}}, content_type=MERGE)
    assert r.status == 422 and r.json()["details"]["causes"][0]["field"] == "spec.color"
    r = await cr_api.request("PATCH", f"{NS}/a/status", {"status": {"replicas": "many"}}, content_type=MERGE)
    assert r.status == 422 and r.json()["details"]["causes"][0]["field"] == "status.replicas"


async def test_field_validation_warn_prunes_with_a_warning(cr_api: Any) -> None:
    body = widget("a", bogus=1, free={"anything": {"goes": True}})
    r = await cr_api.create(NS, body)
    assert r.status == 201
    assert r.header_values("warning") == ['299 - "unknown field \\"spec.bogus\\""']
    obj = r.json()
    assert "bogus" not in obj["spec"] and obj["spec"]["free"] == {"anything": {"goes": True}}
    stored = codec.decode_object((await cr_api.registry.storage.get(f"/registry/{GROUP}/widgets/default/a")).value)
    assert "bogus" not in stored["spec"]


async def test_field_validation_strict_and_ignore(cr_api: Any) -> None:
    r = await cr_api.create(NS + "?fieldValidation=Strict", widget("a", bogus=1))
    assert r.status == 400
    assert r.json()["message"] == 'strict decoding error: unknown field "spec.bogus"'
    r = await cr_api.create(NS + "?fieldValidation=Ignore", widget("a", bogus=1))
    assert r.status == 201 and not r.header_values("warning") and "bogus" not in r.json()["spec"]
    r = await cr_api.request("PATCH", f"{NS}/a?fieldValidation=Strict", {"spec": {"other": 2}}, content_type=MERGE)
    assert r.status == 422 or r.status == 400
    assert 'unknown field \\"spec.other\\"' in r.body.decode() or 'unknown field "spec.other"' in r.body.decode()
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"other": 2}}, content_type=MERGE)
    assert r.status == 200 and "other" not in r.json()["spec"]
    assert r.header_values("warning") == ['299 - "unknown field \\"spec.other\\""']


async def test_defaulting_on_create_update_and_read(cr_api: Any) -> None:
    r = await cr_api.create(NS, widget("a"))
    assert r.json()["spec"]["size"] == 3
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"size": None}}, content_type=MERGE)
    assert r.status == 200 and r.json()["spec"]["size"] == 3
    # an object stored without the default (written before the schema had it): defaulted when read
    key = f"/registry/{GROUP}/widgets/default/b"
    raw = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {
        "name": "b", "namespace": "default", "uid": "u", "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 1},
        "spec": {"color": "red", "gone": True}}
    await cr_api.registry.storage.create(key, codec.encode_value(raw))
    got = (await cr_api.request("GET", f"{NS}/b")).json()
    assert got["spec"]["size"] == 3
    assert "gone" not in got["spec"]  # pruned on read too
    listed = (await cr_api.request("GET", NS)).json()
    assert {i["metadata"]["name"]: i["spec"]["size"] for i in listed["items"]} == {"a": 3, "b": 3}


async def test_generation_repaired_on_read(cr_api: Any) -> None:
    raw = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {
        "name": "old", "namespace": "default", "uid": "u", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"color": "red"}}
    await cr_api.registry.storage.create(f"/registry/{GROUP}/widgets/default/old", codec.encode_value(raw))
    assert (await cr_api.request("GET", f"{NS}/old")).json()["metadata"]["generation"] == 1
    r = await cr_api.request("PATCH", f"{NS}/old", {"spec": {"color": "blue"}}, content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 2


async def test_unknown_metadata_field(cr_api: Any) -> None:
    body = widget("a")
    body["metadata"]["bogus"] = 1
    r = await cr_api.create(NS + "?fieldValidation=Strict", body)
    assert r.status == 400 and r.json()["message"] == 'strict decoding error: unknown field "metadata.bogus"'
    r = await cr_api.create(NS, body)
    assert r.status == 201 and "bogus" not in r.json()["metadata"]
    assert r.header_values("warning") == ['299 - "unknown field \\"metadata.bogus\\""']


async def test_embedded_resource_metadata_coerced(nursery: Any) -> None:
    from tests.crd.serving_support import serve_crds, widget_crd

    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"] = {
        "type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    api = await serve_crds(nursery, crd)
    body = widget("a", template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}})
    r = await api.create(NS + "?fieldValidation=Strict", body)
    assert r.status == 400 and r.json()["message"] == 'strict decoding error: unknown field "spec.template.metadata.bogus"'
    r = await api.create(NS, body)
    assert r.status == 201 and r.json()["spec"]["template"]["metadata"] == {"name": "p"}
