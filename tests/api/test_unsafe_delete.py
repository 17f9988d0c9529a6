"""Issue 10: a corrupt stored object can be removed through the API, as kube-apiserver 1.32+ allows."""

from __future__ import annotations

from .conftest import Api

CMS = "/api/v1/namespaces/default/configmaps"
OPTION = "ignoreStoreReadErrorWithClusterBreakingPotential"


async def _store_corrupt(api: Api, name: str) -> None:
    key = api.registry.key(api.registry.table.get("", "v1", "configmaps"), "default", name)  # type: ignore[arg-type]
    await api.registry.storage.create(key, b"\xc1 not msgpack")


async def test_corrupt_object_is_500_until_deleted_with_the_option(api: Api) -> None:
    await _store_corrupt(api, "bad")
    r = await api.request("GET", CMS + "/bad")
    assert r.status == 500 and "corrupt object" in r.json()["message"]
    assert (await api.request("DELETE", CMS + "/bad")).status == 500
    assert (await api.request("DELETE", CMS + f"/bad?{OPTION}=false")).status == 500
    # Issue 30: kube converts the query's bool as true for anything but "0" and "false", not with ParseBool.
    r = await api.request("DELETE", CMS + f"/bad?{OPTION}=maybe")
    assert r.status == 200, r.body
    assert (await api.request("GET", CMS + "/bad")).status == 404


async def test_option_in_the_body_and_refused_on_readable_objects(api: Api) -> None:
    await _store_corrupt(api, "bad2")
    r = await api.request("DELETE", CMS + "/bad2", {OPTION: True})
    assert r.status == 200, r.body
    assert (await api.create(CMS, {"metadata": {"name": "good"}})).status == 201
    r = await api.request("DELETE", CMS + f"/good?{OPTION}=1")
    assert r.status == 422 and "exclusively used to delete corrupt" in r.json()["message"]
    assert (await api.request("GET", CMS + "/good")).status == 200


async def test_not_allowed_with_deletecollection(api: Api) -> None:
    assert (await api.create(CMS, {"metadata": {"name": "stay"}})).status == 201
    r = await api.request("DELETE", CMS + f"?{OPTION}=true")
    assert r.status == 422 and "not allowed with DELETECOLLECTION" in r.json()["message"]
    assert (await api.request("GET", CMS + "/stay")).status == 200



async def test_namespace_with_a_corrupt_object_stays_terminating_until_it_is_removed(api: Api) -> None:
    """As kube: the namespace controller cannot read a corrupt object, so the namespace is not
    finished (and the bad key is not orphaned in storage) until an unsafe deletion removes it."""
    import trio

    assert (await api.create("/api/v1/namespaces", {"metadata": {"name": "doomed"}})).status == 201
    path = "/api/v1/namespaces/doomed/configmaps"
    assert (await api.create(path, {"metadata": {"name": "fine"}})).status == 201
    res = api.registry.table.get("", "v1", "configmaps")
    assert res is not None
    await api.registry.storage.create(api.registry.key(res, "doomed", "bad"), b"\xc1 not msgpack")
    assert (await api.request("DELETE", "/api/v1/namespaces/doomed")).status == 200
    with trio.fail_after(20):
        while (await api.request("GET", path + "/fine")).status != 404:
            await trio.sleep(0.05)
    await trio.sleep(1.0)  # several passes of the controller
    ns = await api.request("GET", "/api/v1/namespaces/doomed")
    assert ns.status == 200 and ns.json()["status"]["phase"] == "Terminating"
    assert (await api.request("DELETE", path + f"/bad?{OPTION}=true")).status == 200
    with trio.fail_after(20):
        while (await api.request("GET", "/api/v1/namespaces/doomed")).status != 404:
            await trio.sleep(0.05)
