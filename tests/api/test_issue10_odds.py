"""Issue 10: query integers parsed as Go parses them, and discovery bodies end as Go's encoder ends them."""

from __future__ import annotations

from .conftest import Api

CMS = "/api/v1/namespaces/default/configmaps"


async def test_grace_period_query_is_an_int64(api: Api) -> None:
    assert (await api.create(CMS, {"metadata": {"name": "g"}})).status == 201
    r = await api.request("DELETE", CMS + "/g?gracePeriodSeconds=" + "9" * 400)
    assert r.status == 400 and "value out of range" in r.json()["message"]
    r = await api.request("DELETE", CMS + "/g?gracePeriodSeconds=1_0")
    assert r.status == 400 and "invalid syntax" in r.json()["message"]
    assert (await api.request("GET", CMS + "/g")).status == 200
    assert (await api.request("DELETE", CMS + "/g?gracePeriodSeconds=0")).status == 200


async def test_discovery_bodies_end_with_a_newline(api: Api) -> None:
    for path in ("/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"):
        r = await api.request("GET", path)
        assert r.status == 200 and r.body.endswith(b"}\n"), path
    r = await api.request("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert r.status == 200 and r.body.endswith(b"}\n")


async def test_resource_versions_out_of_range_or_in_the_future(api: Api) -> None:
    """A 30-digit or non-numeric resourceVersion is 400; one past storage is kube's 504 ResourceVersionTooLarge."""
    assert (await api.create(CMS, {"metadata": {"name": "rv"}})).status == 201
    for q in ("resourceVersion=" + "9" * 30, "resourceVersion=abc", "resourceVersion=18446744073709551616"):
        for path in (CMS + "/rv?" + q, CMS + "?" + q, CMS + "?resourceVersionMatch=Exact&" + q):
            r = await api.request("GET", path)
            assert r.status == 400 and r.json()["reason"] == "BadRequest", (path, r.body)
    for path in (CMS + "/rv?resourceVersion=99999", CMS + "?resourceVersion=99999&resourceVersionMatch=Exact",
                 CMS + "?resourceVersion=18446744073709551615&resourceVersionMatch=Exact"):
        r = await api.request("GET", path)
        assert r.status == 504, (path, r.body)
        assert r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    current = (await api.request("GET", CMS)).json()["metadata"]["resourceVersion"]
    r = await api.request("GET", CMS + "/rv?resourceVersion=" + current)
    assert r.status == 200 and r.json()["metadata"]["name"] == "rv"


async def test_methods_named_after_verbs_are_405(api: Api) -> None:
    """The fuzz suite found that an HTTP method "DELETECOLLECTION" deleted the whole collection."""
    assert (await api.create(CMS, {"metadata": {"name": "kept"}})).status == 201
    for method in ("DELETECOLLECTION", "LIST", "WATCH", "CREATE", "UPDATE", "get", "delete", "OPTIONS"):
        path = CMS if method != "delete" else CMS + "/kept"
        r = await api.request(method, path)
        assert r.status == 405, (method, r.body)
        assert r.json()["reason"] == "MethodNotAllowed"
    assert (await api.request("GET", CMS + "/kept")).status == 200
