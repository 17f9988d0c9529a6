"""A DELETE's DeleteOptions come from its body when it has one, else from its query, never both.

kube's DeleteResource and DeleteCollection decode a non-empty body as DeleteOptions and then never
read the query's gracePeriodSeconds, propagationPolicy, orphanDependents, dryRun or
ignoreStoreReadErrorWithClusterBreakingPotential (not even to convert them); only an empty body
leaves them to the query. A DELETE of a collection still takes its list options from the query.
"""

from __future__ import annotations

from typing import Any

import pytest

from kapi.admission.chain import DELETE
from kapi.chain.context import RequestContext, new_request_info, parse_query
from kapi.object.access import UserInfo

from .conftest import Api

CMS = "/api/v1/namespaces/default/configmaps"


async def _config_maps(api: Api, *names: str) -> None:
    for name in names:
        assert (await api.create(CMS, {"metadata": {"name": name}})).status == 201


async def _names(api: Api) -> list[str]:
    return [o["metadata"]["name"] for o in (await api.request("GET", CMS)).json()["items"]]


async def test_a_body_leaves_the_querys_dry_run_out(api: Api) -> None:
    """``?dryRun=All`` with a body that has no dryRun deletes for real: dryRun is a DeleteOptions field."""
    await _config_maps(api, "a", "b")
    r = await api.request("DELETE", f"{CMS}/a?dryRun=All", {})
    assert r.status == 200, r.body
    assert (r.json()["kind"], r.json()["status"]) == ("Status", "Success")
    assert await _names(api) == ["b"]


async def test_a_bodys_dry_run_is_a_dry_run(api: Api) -> None:
    await _config_maps(api, "a")
    r = await api.request("DELETE", f"{CMS}/a", {"dryRun": ["All"]})
    assert r.status == 200, r.body
    assert await _names(api) == ["a"]


@pytest.mark.parametrize("query", [
    "gracePeriodSeconds=later",  # not even converted: no 400
    "dryRun=Sometimes",  # not validated: no 422
    "orphanDependents=1&propagationPolicy=Background",  # not both set: no 422
    "ignoreStoreReadErrorWithClusterBreakingPotential=true",  # not asked: no 422 for a readable object
])
async def test_a_body_leaves_the_querys_delete_options_out(api: Api, query: str) -> None:
    await _config_maps(api, "a", "b")
    r = await api.request("DELETE", f"{CMS}/a?{query}", {"kind": "DeleteOptions", "apiVersion": "v1"})
    assert r.status == 200, r.body
    assert (r.json()["kind"], r.json()["status"]) == ("Status", "Success")
    assert await _names(api) == ["b"]


async def test_a_bodys_options_are_not_mixed_with_the_querys(api: Api) -> None:
    """The body's orphanDependents with the query's propagationPolicy is no conflict: only the body counts."""
    await _config_maps(api, "a")
    r = await api.request("DELETE", f"{CMS}/a?propagationPolicy=Background", {"orphanDependents": True})
    assert r.status == 200, r.body
    assert r.json()["metadata"]["finalizers"] == ["orphan"]


async def test_without_a_body_the_query_is_read(api: Api) -> None:
    await _config_maps(api, "a")
    r = await api.request("DELETE", f"{CMS}/a?dryRun=All")
    assert r.status == 200, r.body
    assert await _names(api) == ["a"]
    r = await api.request("DELETE", f"{CMS}/a?gracePeriodSeconds=later")
    assert r.status == 400
    r = await api.request("DELETE", f"{CMS}/a?orphanDependents=1")
    assert r.status == 200, r.body
    assert r.json()["metadata"]["finalizers"] == ["orphan"]


async def test_deletecollection_a_body_leaves_the_querys_delete_options_out(api: Api) -> None:
    await _config_maps(api, "a", "b")
    r = await api.request("DELETE", f"{CMS}?dryRun=All&gracePeriodSeconds=later", {})
    assert r.status == 200, r.body
    assert await _names(api) == []


async def test_deletecollection_takes_its_list_options_from_the_query_with_a_body(api: Api) -> None:
    await _config_maps(api, "a", "b")
    r = await api.request("DELETE", f"{CMS}?limit=", {"dryRun": ["All"]})
    assert r.status == 400
    assert r.json()["message"] == 'strconv.ParseInt: parsing "": invalid syntax'
    r = await api.request("DELETE", f"{CMS}?fieldSelector=metadata.name%3Da&dryRun=All", {})
    assert r.status == 200, r.body
    assert await _names(api) == ["b"]


def _request(method: str, target: str, body: bytes) -> RequestContext:
    path, _, query = target.partition("?")
    ctx = RequestContext(method, path, parse_query(query), {}, query_string=query.encode())
    ctx.info = new_request_info(method, path, ctx.query)
    ctx.user = UserInfo("admin", groups=("system:masters",))

    async def read() -> bytes:
        return body

    ctx.body_reader = read
    return ctx


@pytest.mark.parametrize(("target", "body", "options"), [
    (f"{CMS}/a?dryRun=All", b"{}", {}),
    (f"{CMS}/a?dryRun=All&gracePeriodSeconds=5", b'{"gracePeriodSeconds":1}', {"gracePeriodSeconds": 1}),
    (f"{CMS}/a?dryRun=All&gracePeriodSeconds=5", b"", {"gracePeriodSeconds": 5, "dryRun": ["All"]}),
])
async def test_admission_is_given_the_options_decoded(api: Api, target: str, body: bytes,
                                                      options: dict[str, Any]) -> None:
    """What webhooks and policies see as ``request.options``: the DeleteOptions the delete uses."""
    ctx = _request("DELETE", target, body)
    await ctx.read_body()
    opts = api.app.handlers._delete_options(ctx)
    assert opts.admission is not None
    assert opts.admission.options(DELETE) == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **options}
