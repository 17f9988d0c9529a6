"""Custom objects' status and scale subresources (spec/status split, generation only on spec changes),
and x-kubernetes-validations (CEL) refusing a write (issue 14 item 2)."""

from __future__ import annotations

from typing import Any

import trio

from tests.crd.serving_support import GROUP, cr_api, serve_crds, widget_crd  # noqa: F401 (fixture)
from tests.crd.test_serving import CLUSTER, NS, widget

MERGE = "application/merge-patch+json"


async def test_status_subresource_splits_spec_and_status(cr_api: Any) -> None:
    body = widget("a", replicas=1)
    body["status"] = {"replicas": 7}
    created = (await cr_api.create(NS, body)).json()
    assert "status" not in created  # a create drops status when the subresource is on
    r = await cr_api.request("PATCH", f"{NS}/a/status", {"status": {"replicas": 2}, "spec": {"color": "blue"}},
                             content_type=MERGE)
    assert r.status == 200, r.body
    obj = r.json()
    assert obj["status"] == {"replicas": 2} and obj["spec"]["color"] == "red"  # spec untouched by /status
    assert obj["metadata"]["generation"] == 1  # a status write leaves the generation
    r = await cr_api.request("PATCH", f"{NS}/a", {"status": {"replicas": 9}, "metadata": {"labels": {"z": "1"}}},
                             content_type=MERGE)
    assert r.json()["status"] == {"replicas": 2} and r.json()["metadata"]["generation"] == 1
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"color": "green"}}, content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 2
    got = (await cr_api.request("GET", f"{NS}/a/status")).json()
    assert got["status"] == {"replicas": 2} and got["kind"] == "Widget"
    got["status"]["replicas"] = 3
    r = await cr_api.request("PUT", f"{NS}/a/status", got)
    assert r.status == 200 and r.json()["status"] == {"replicas": 3}


async def test_without_status_subresource_every_change_moves_generation(nursery: trio.Nursery) -> None:
    api = await serve_crds(nursery, widget_crd(status=False, scale=False))
    body = widget("a")
    body["status"] = {"replicas": 1}
    created = (await api.create(NS, body)).json()
    assert created["status"] == {"replicas": 1} and created["metadata"]["generation"] == 1
    assert (await api.request("GET", f"{NS}/a/status")).status == 404
    r = await api.request("PATCH", f"{NS}/a", {"status": {"replicas": 2}}, content_type=MERGE)
    assert r.json()["status"] == {"replicas": 2} and r.json()["metadata"]["generation"] == 2
    r = await api.request("PATCH", f"{NS}/a", {"metadata": {"annotations": {"a": "b"}}}, content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 2


async def test_scale_subresource(cr_api: Any) -> None:
    await cr_api.create(NS, widget("a", replicas=2))
    await cr_api.request("PATCH", f"{NS}/a/status", {"status": {"replicas": 1, "selector": "app=red"}},
                         content_type=MERGE)
    r = await cr_api.request("GET", f"{NS}/a/scale")
    assert r.status == 200
    scale = r.json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 1, "selector": "app=red"}
    # kubectl scale: a merge patch of the scale subresource
    r = await cr_api.request("PATCH", f"{NS}/a/scale", {"spec": {"replicas": 5}}, content_type=MERGE)
    assert r.status == 200, r.body
    assert r.json()["spec"] == {"replicas": 5}
    obj = (await cr_api.request("GET", f"{NS}/a")).json()
    assert obj["spec"]["replicas"] == 5 and obj["metadata"]["generation"] == 2
    scale = (await cr_api.request("GET", f"{NS}/a/scale")).json()
    scale["spec"]["replicas"] = 0
    r = await cr_api.request("PUT", f"{NS}/a/scale", scale)
    assert r.status == 200 and r.json()["spec"]["replicas"] == 0
    scale["spec"]["replicas"] = 4  # stale resourceVersion
    assert (await cr_api.request("PUT", f"{NS}/a/scale", scale)).status == 409
    r = await cr_api.request("PATCH", f"{NS}/a/scale", {"spec": {"replicas": -1}}, content_type=MERGE)
    assert r.status == 422
    assert (await cr_api.request("GET", f"{CLUSTER}/x/scale")).status == 404  # gadgets have no scale


async def test_scale_of_an_object_without_replicas(cr_api: Any) -> None:
    await cr_api.create(NS, widget("a"))
    scale = (await cr_api.request("GET", f"{NS}/a/scale")).json()
    assert scale["spec"] == {"replicas": 0} and scale["status"] == {"replicas": 0, "selector": ""}
    r = await cr_api.request("PATCH", f"{NS}/a/scale", {"spec": {"replicas": 3}}, content_type=MERGE)
    assert r.status == 200
    assert (await cr_api.request("GET", f"{NS}/a")).json()["spec"]["replicas"] == 3


async def test_cel_rule_refuses_a_write(cr_api: Any) -> None:
    r = await cr_api.create(NS, widget("a", min=5, max=2))
    assert r.status == 422, r.body
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Widget" and status["details"]["group"] == GROUP
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "spec" and "min must not exceed max" in cause["message"]
    assert (await cr_api.create(NS, widget("a", min=1, max=2))).status == 201
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"min": 3}}, content_type=MERGE)
    assert r.status == 422 and "min must not exceed max" in r.json()["message"]


async def test_scale_paths_validated(nursery: trio.Nursery) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}
    api = await serve_crds(nursery, crd)
    r = await api.create(NS, widget("a", replicas=-2))
    assert r.status == 422
    (cause,) = r.json()["details"]["causes"]
    assert cause == {"reason": "FieldValueInvalid", "field": ".spec.replicas",
                     "message": "Invalid value: -2: should be a non-negative integer"}
    r = await api.create(NS, widget("a", replicas="two"))
    assert r.json()["details"]["causes"][0]["message"] == (
        "Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64")
    assert (await api.create(NS, widget("a", replicas=1))).status == 201
    r = await api.request("PATCH", f"{NS}/a/status", {"status": {"selector": {"app": "x"}}}, content_type=MERGE)
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == ".status.selector"
    assert "expected string" in r.json()["details"]["causes"][0]["message"]
