"""The request info of a list or watch whose query does not convert to ListOptions, as kube's RequestInfoFactory.

kube decodes the query into ListOptions to tell a list from a watch and to take the name of a
``fieldSelector=metadata.name=<n>``. When the decoding fails (``limit=``, a bad labelSelector, ...) it
logs, starts over from empty ListOptions and still reports a watch when ``watch`` is set to anything but
"0" or "false" (any case): ``?watch=1&limit=`` is authorized, classified and audited as a watch, then
answered 400. What it drops is the name: such a request addresses no object, so a ``resourceNames``
rule does not allow it.
"""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest
import trio

from kapi.chain.context import new_request_info, parse_query
from tests.api.conftest import Api, serve_with_informers

RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"
TOKENS = 'alice-token,alice,uid-a,"devs"\nbob-token,bob,uid-b,"ops"\n'
PARSE_LIMIT = 'strconv.ParseInt: parsing "": invalid syntax'


async def _bind(api: Api, user: str, role: str, rule: dict[str, object]) -> None:
    r = await api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
        "rules": [rule]})
    assert r.status == 201, r.json()
    r = await api.create(f"{RBAC_API}/namespaces/default/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role, "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]})
    assert r.status == 201, r.json()


@pytest.fixture
async def api(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Api]:
    """RBAC: alice may list configmaps in default (not watch them); bob may list and watch config map "a" only."""
    api = await serve_with_informers(nursery, tmp_path, ("RBAC",), TOKENS)
    assert (await api.create(CMS, {"metadata": {"name": "a"}})).status == 201
    await _bind(api, "alice", "cm-lister", {"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]})
    await _bind(api, "bob", "cm-a", {"verbs": ["list", "watch"], "apiGroups": [""], "resources": ["configmaps"],
                                     "resourceNames": ["a"]})
    with trio.fail_after(10):
        for token, path in (("alice-token", CMS), ("bob-token", f"{CMS}?fieldSelector=metadata.name%3Da")):
            while (await api.request("GET", path, token=token)).status != 200:
                await trio.sleep(0.01)
    yield api


@pytest.mark.parametrize(("query", "verb"), [
    ("watch=1&limit=", "watch"), ("watch=&limit=", "watch"), ("watch=no&limit=", "watch"),
    ("watch=TRUE&timeoutSeconds=x", "watch"), ("watch=1&labelSelector=a%20in", "watch"),
    ("watch=0&limit=", "list"), ("watch=false&limit=", "list"), ("watch=False&limit=", "list"), ("limit=", "list"),
])
def test_the_verb_of_a_query_that_does_not_convert(query: str, verb: str) -> None:
    """The verb audit records, APF classifies and RBAC decides on."""
    assert new_request_info("GET", CMS, parse_query(query)).verb == verb


async def test_a_watch_that_does_not_convert_is_authorized_as_a_watch(api: Api) -> None:
    """alice may list but not watch: ``?watch=1&limit=`` is a watch to kube's authorizer, so 403, not 400."""
    r = await api.request("GET", f"{CMS}?watch=1&limit=", token="alice-token")
    assert r.status == 403
    assert r.json()["message"] == ('configmaps is forbidden: User "alice" cannot watch resource "configmaps" in '
                                   'API group "" in the namespace "default"')
    r = await api.request("GET", f"{CMS}?watch=0&limit=", token="alice-token")  # a list: allowed, then refused
    assert (r.status, r.json()["message"]) == (400, PARSE_LIMIT)


@pytest.mark.parametrize("verb_query", ["", "watch=1&"])
@pytest.mark.parametrize("bad", ["limit=", "timeoutSeconds=soon", "labelSelector=a%20in"])
async def test_no_name_is_taken_from_the_field_selector_when_the_query_does_not_convert(
        api: Api, verb_query: str, bad: str) -> None:
    """bob's rule names config map "a": ``metadata.name=a`` addresses it only when the whole query converts."""
    selector = "fieldSelector=metadata.name%3Da"
    verb = "watch" if verb_query else "list"
    r = await api.request("GET", f"{CMS}?{verb_query}{selector}&{bad}", token="bob-token")
    assert r.status == 403, r.body
    assert r.json()["message"] == (f'configmaps is forbidden: User "bob" cannot {verb} resource "configmaps" in '
                                   'API group "" in the namespace "default"')
    r = await api.request("GET", f"{CMS}?{selector}&limit=1", token="bob-token")
    assert r.status == 200, r.body
