"""Handlers dispatched by a table (VERBS), patches by a table from the media type (PATCHERS) (issue 11)."""

from __future__ import annotations

from typing import Any

import pytest

from kapi import errors
from kapi.api import handlers
from kapi.api.handlers import VERBS, Handlers, Verb
from kapi.api.responses import Response
from kapi.object.patch import PATCHERS, PatchTarget, patcher_for
from kapi.object.schema import load_builtin

from .conftest import Api

CM = "/api/v1/namespaces/default/configmaps"
POD = ("", "v1", "Pod")


def test_verbs_table_names_each_kube_verb_and_its_handler() -> None:
    assert set(VERBS) == {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
    for verb, route in VERBS.items():
        assert route.serve is getattr(Handlers, verb)
    assert {verb: route.named for verb, route in VERBS.items() if route.named is not None} == {
        "create": False, "update": True, "patch": True}


async def test_requests_are_dispatched_through_the_table(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []

    async def fake(self: Handlers, ctx: Any, res: Any) -> Response:
        seen.append((ctx.info.verb, res.resource))
        return Response(299, b"{}")

    monkeypatch.setitem(handlers.VERBS, "get", Verb(fake))
    assert (await api.request("GET", f"{CM}/x")).status == 299
    assert seen == [("get", "configmaps")]
    assert (await api.request("GET", CM)).status == 200  # list keeps its own entry
    monkeypatch.delitem(handlers.VERBS, "deletecollection")
    assert (await api.request("DELETE", CM)).status == 405  # a verb without an entry is not served


@pytest.mark.parametrize(("method", "path"), [("POST", f"{CM}/named"), ("PUT", CM), ("PATCH", CM)])
async def test_the_table_says_where_a_verb_may_be_asked(api: Api, method: str, path: str) -> None:
    r = await api.request(method, path, {"metadata": {"name": "named"}},
                          content_type="application/merge-patch+json" if method == "PATCH" else "application/json")
    assert r.status == 405 and r.json()["reason"] == "MethodNotAllowed"


def test_patchers_table_by_media_type() -> None:
    assert set(PATCHERS) == {"application/json-patch+json", "application/merge-patch+json",
                             "application/strategic-merge-patch+json"}
    assert patcher_for("application/merge-patch+json; charset=utf-8") is PATCHERS["application/merge-patch+json"]
    assert patcher_for("Application/JSON-Patch+JSON") is PATCHERS["application/json-patch+json"]
    with pytest.raises(errors.UnsupportedMediaType, match="is not a patch type: use one of application/json-patch"):
        patcher_for("application/json")


def test_each_patcher_applies_its_own_patch_type() -> None:
    target = PatchTarget(load_builtin(), POD)
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    containers = {"spec": {"containers": [{"name": "b", "image": "z"}]}}
    strategic = patcher_for("application/strategic-merge-patch+json")(pod, containers, target)
    assert strategic["spec"]["containers"] == [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]
    merged = patcher_for("application/merge-patch+json")(pod, containers, target)
    assert merged["spec"]["containers"] == [{"name": "b", "image": "z"}]  # a merge patch replaces lists
    ops = [{"op": "replace", "path": "/spec/containers/0/image", "value": "w"}]
    patched = patcher_for("application/json-patch+json")(pod, ops, target)
    assert patched["spec"]["containers"][0] == {"name": "a", "image": "w"}
    assert pod["spec"]["containers"][0]["image"] == "x"  # inputs untouched


@pytest.mark.parametrize(("ctype", "patch", "message"), [
    ("application/json-patch+json", {"a": 1}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ("application/merge-patch+json", [1], "error decoding patch: a merge patch must be a JSON object"),
    ("application/strategic-merge-patch+json", [1],
     "error decoding patch: a strategic merge patch must be a JSON object"),
])
def test_a_patch_of_the_wrong_shape_is_400(ctype: str, patch: Any, message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        patcher_for(ctype)({}, patch, PatchTarget(load_builtin(), POD))
    assert caught.value.message == message


async def test_patch_types_through_the_app(api: Api) -> None:
    assert (await api.create(CM, {"metadata": {"name": "p"}, "data": {"a": "1"}})).status == 201
    r = await api.request("PATCH", f"{CM}/p", {"data": {"b": "2"}}, content_type="application/merge-patch+json")
    assert r.status == 200 and r.json()["data"] == {"a": "1", "b": "2"}
    r = await api.request("PATCH", f"{CM}/p", [{"op": "remove", "path": "/data/a"}],
                          content_type="application/json-patch+json")
    assert r.status == 200 and r.json()["data"] == {"b": "2"}
    r = await api.request("PATCH", f"{CM}/p?fieldManager=m", {"apiVersion": "v1", "kind": "ConfigMap",
                          "data": {"c": "3"}}, content_type="application/apply-patch+yaml")
    assert r.status == 200 and r.json()["data"] == {"b": "2", "c": "3"}
