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
    r = await api.request("DELETE", CMS + f"/bad?{OPTION}=maybe")
    assert r.status == 400 and "ParseBool" in r.json()["message"]
    r = await api.request("DELETE", CMS + f"/bad?{OPTION}=true")
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

