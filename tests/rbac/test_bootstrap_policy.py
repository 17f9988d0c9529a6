"""Issue 12: kube's bootstrap RBAC policy, reconciled at start-up, aggregated, and escalation refused.

Table-driven checks of what the bootstrap policy lets users do (with the RBAC authorizer reading
the shared informers), the reconciliation's union and autoupdate rules, the aggregation controller,
and kube's escalation checks of Roles, ClusterRoles and bindings over the API.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.apis import BUILTIN, rbacpolicy
from kapi.controllers.clusterroleaggregation import aggregated_rules
from kapi.controllers.namespace import NamespaceController
from kapi.object.access import Attributes, UserInfo
from kapi.object.rbac.covers import compact_string, covers, escalation_error
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.bootstrap import bootstrap
from kapi.server.rbacbootstrap import reconcile_binding, reconcile_bootstrap_policy, reconcile_role
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
RBAC_API = f"/apis/{GROUP}/v1"
ALICE = UserInfo("alice", "uid-a", ("devs", "system:authenticated"))
ANONYMOUS = UserInfo("system:anonymous", "", ("system:unauthenticated",))
KUBELET = UserInfo("system:node:n1", "", ("system:nodes", "system:authenticated"))


# ------------------------------------------------------------------ the policy as data


def test_every_bootstrap_object_is_labelled_and_autoupdates() -> None:
    objects = (rbacpolicy.bootstrap_cluster_roles() + rbacpolicy.bootstrap_cluster_role_bindings()
               + rbacpolicy.namespace_roles() + rbacpolicy.namespace_role_bindings())
    names = [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]
    assert len(names) == len(set(names))
    for obj in objects:
        md = obj["metadata"]
        assert md["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert md["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    roles = {o["metadata"]["name"]: o for o in rbacpolicy.bootstrap_cluster_roles()}
    for name in ("cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
                 "system:public-info-viewer", "system:node", "system:node-proxier", "system:kube-controller-manager",
                 "system:kube-scheduler", "system:monitoring", "system:service-account-issuer-discovery",
                 "system:auth-delegator", "system:heapster", "system:controller:clusterrole-aggregation-controller"):
        assert name in roles, name
    bindings = {o["metadata"]["name"]: o for o in rbacpolicy.bootstrap_cluster_role_bindings()}
    for name, binding in bindings.items():
        assert binding["roleRef"]["name"] in roles, name


def test_rules_are_sorted_as_kubes_rule_builder_makes_them() -> None:
    r = rbacpolicy.rule(("list", "get"), ("apps", ""), ("b", "a"))
    assert r == {"apiGroups": ["", "apps"], "resources": ["a", "b"], "verbs": ["get", "list"]}
    assert rbacpolicy.rule("get", urls="/x") == {"nonResourceURLs": ["/x"], "verbs": ["get"]}


# ------------------------------------------------------------------ covers (kube's policy_comparator)

R = rbacpolicy.rule

COVERS = [
    # owner rules, servant rules, covered, uncovered atoms (compact strings)
    ([R("*", "*", "*")], [R(("get", "create"), "apps", "deployments")], True, []),
    ([R("get", "", "pods")], [R(("get", "list"), "", "pods")], False, ['{APIGroups:[""], Resources:["pods"], Verbs:["list"]}']),
    ([R("get", "", "*/status")], [R("get", "", "pods/status")], True, []),
    ([R("get", "", "*/status")], [R("get", "", "pods")], False, ['{APIGroups:[""], Resources:["pods"], Verbs:["get"]}']),
    ([R("get", "", "pods", names="a")], [R("get", "", "pods")], False,
     ['{APIGroups:[""], Resources:["pods"], Verbs:["get"]}']),
    ([R("get", "", "pods")], [R("get", "", "pods", names=("a", "b"))], True, []),
    ([R("get", "", "pods", names="a")], [R("get", "", "pods", names=("a", "b"))], False,
     ['{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["get"]}']),
    ([R("get", urls="/api/*")], [R("get", urls=("/api/v1", "/api"))], False, ['{NonResourceURLs:["/api"], Verbs:["get"]}']),
    ([R("*", urls="*")], [R(("get", "post"), urls="/anything")], True, []),
    ([R("get", "apps", "deployments")], [R("get", "extensions", "deployments")], False,
     ['{APIGroups:["extensions"], Resources:["deployments"], Verbs:["get"]}']),
]


@pytest.mark.parametrize(("owner", "servant", "ok", "missing"), COVERS)
def test_covers(owner: list[Obj], servant: list[Obj], ok: bool, missing: list[str]) -> None:
    covered, uncovered = covers(owner, servant)
    assert covered is ok
    assert [compact_string(r) for r in uncovered] == missing


def test_escalation_message_is_kubes() -> None:
    msg = escalation_error(ALICE, [R("get", "", "pods")], [R(("get", "list", "watch"), "", ("pods", "nodes"))],
                           ['clusterrole.rbac.authorization.k8s.io "gone" not found'])
    assert msg == ('user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions '
                   'not currently held:\n'
                   '{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list" "watch"]}\n'
                   '{APIGroups:[""], Resources:["pods"], Verbs:["list" "watch"]}'
                   '; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]')
    assert escalation_error(ALICE, [R("*", "*", "*")], [R("get", "", "pods")]) is None


# ------------------------------------------------------------------ aggregation (pure)


def test_aggregated_rules_union_selected_roles_by_name_without_duplicates() -> None:
    agg = {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "1"}}]},
           "rules": [R("*", "*", "*")]}
    b = {"metadata": {"name": "b", "labels": {"x": "1"}}, "rules": [R("get", "", "pods"), R("list", "", "pods")]}
    a = {"metadata": {"name": "a", "labels": {"x": "1"}}, "rules": [R("list", "", "pods")]}
    other = {"metadata": {"name": "c", "labels": {"x": "2"}}, "rules": [R("get", "", "secrets")]}
    assert aggregated_rules(agg, [b, other, a, agg]) == [R("list", "", "pods"), R("get", "", "pods")]
    assert aggregated_rules({"metadata": {"name": "x"}, "aggregationRule": {"clusterRoleSelectors": []}}, [a]) == []


# ------------------------------------------------------------------ reconciliation


@pytest.fixture
async def registry(nursery: trio.Nursery) -> Registry:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    reg = Registry(storage, ResourceTable(BUILTIN))
    await bootstrap(reg, NamespaceController(reg))
    return reg


def _res(registry: Registry, resource: str) -> Any:
    res = registry.table.get(GROUP, "v1", resource)
    assert res is not None
    return res


async def test_reconcile_creates_the_whole_policy_once(registry: Registry) -> None:
    await reconcile_bootstrap_policy(registry)
    cr = _res(registry, "clusterroles")
    for expected in rbacpolicy.bootstrap_cluster_roles():
        stored = await registry.get(cr, "", expected["metadata"]["name"])
        assert stored.get("rules") == expected.get("rules")
        assert stored.get("aggregationRule") == expected.get("aggregationRule")
    role = await registry.get(_res(registry, "roles"), "kube-system", "extension-apiserver-authentication-reader")
    assert role["rules"][0]["resourceNames"] == ["extension-apiserver-authentication"]
    binding = await registry.get(_res(registry, "rolebindings"), "kube-public", "system:controller:bootstrap-signer")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}]
    before = (await registry.get(cr, "", "cluster-admin"))["metadata"]["resourceVersion"]
    for expected in rbacpolicy.bootstrap_cluster_roles():
        assert await reconcile_role(registry, cr, expected) == "none"
    assert (await registry.get(cr, "", "cluster-admin"))["metadata"]["resourceVersion"] == before


async def test_reconcile_adds_missing_rules_and_keeps_extra_ones_and_labels(registry: Registry) -> None:
    cr = _res(registry, "clusterroles")
    expected = next(r for r in rbacpolicy.cluster_roles() if r["metadata"]["name"] == "system:basic-user")
    mine = copy.deepcopy(expected)
    mine["rules"] = [R("get", "", "configmaps"), expected["rules"][1]]
    mine["metadata"] = {"name": "system:basic-user", "labels": {"kubernetes.io/bootstrapping": "mine", "team": "a"}}
    await registry.create(cr, "", mine, WriteOptions())
    assert await reconcile_role(registry, cr, expected) == "update"
    stored = await registry.get(cr, "", "system:basic-user")
    assert stored["rules"] == [R("get", "", "configmaps"), expected["rules"][1],
                               R("create", "authorization.k8s.io", "selfsubjectaccessreviews"),
                               R("create", "authorization.k8s.io", "selfsubjectrulesreviews")]
    # the stored labels' values win; the policy's annotation is added
    assert stored["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "mine", "team": "a"}
    assert stored["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}


async def test_reconcile_leaves_autoupdate_false_alone(registry: Registry) -> None:
    cr, crb = _res(registry, "clusterroles"), _res(registry, "clusterrolebindings")
    await registry.create(cr, "", {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {
        "name": "view", "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}},
        "rules": [R("get", "", "pods")]}, WriteOptions())
    await registry.create(crb, "", {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": {
        "name": "system:basic-user", "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}}, WriteOptions())
    await reconcile_bootstrap_policy(registry)
    view = await registry.get(cr, "", "view")
    assert view["rules"] == [R("get", "", "pods")] and "aggregationRule" not in view
    binding = await registry.get(crb, "", "system:basic-user")
    assert binding["roleRef"]["name"] == "view" and "subjects" not in binding


async def test_reconcile_unions_subjects_and_recreates_a_binding_to_another_role(registry: Registry) -> None:
    crb = _res(registry, "clusterrolebindings")
    expected = {b["metadata"]["name"]: b for b in rbacpolicy.cluster_role_bindings()}
    bob = {"apiGroup": GROUP, "kind": "User", "name": "bob"}
    await registry.create(crb, "", {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding",
                                    "metadata": {"name": "system:discovery"},
                                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "system:discovery"},
                                    "subjects": [bob]}, WriteOptions())
    await registry.create(crb, "", {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding",
                                    "metadata": {"name": "system:monitoring"},
                                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
                                    "subjects": [bob]}, WriteOptions())
    assert await reconcile_binding(registry, crb, expected["system:discovery"]) == "update"
    assert (await registry.get(crb, "", "system:discovery"))["subjects"] == [
        bob, {"apiGroup": GROUP, "kind": "Group", "name": "system:authenticated"}]
    assert await reconcile_binding(registry, crb, expected["system:monitoring"]) == "recreate"
    monitoring = await registry.get(crb, "", "system:monitoring")
    assert monitoring["roleRef"]["name"] == "system:monitoring"
    assert monitoring["subjects"] == [{"apiGroup": GROUP, "kind": "Group", "name": "system:monitoring"}]


async def test_an_old_unaggregated_admin_moves_its_rules_to_its_part(registry: Registry) -> None:
    cr = _res(registry, "clusterroles")
    await registry.create(cr, "", {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "admin"},
                                   "rules": [R("get", "example.com", "widgets")]}, WriteOptions())
    await reconcile_bootstrap_policy(registry)
    part = await registry.get(cr, "", "system:aggregate-to-admin")
    assert R("get", "example.com", "widgets") in part["rules"]
    assert R("create", "authorization.k8s.io", "localsubjectaccessreviews") in part["rules"]
    assert (await registry.get(cr, "", "admin"))["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]


# ------------------------------------------------------------------ a server with the policy


@pytest.fixture
async def api(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Api]:
    """--authorization-mode RBAC over a memory registry with the bootstrap policy and its controllers."""
    a = await serve_with_informers(nursery, tmp_path, ("RBAC",), 'alice-token,alice,uid-a,"devs"\nbob-token,bob,uid-b\n',
                                   policy=True)
    for ns in ("team", "other"):
        r = await a.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert r.status == 201, r.json()
    yield a


async def _bind(api: Api, namespace: str, role: str, user: str, kind: str = "ClusterRole", name: str = "") -> None:
    r = await api.create(f"{RBAC_API}/namespaces/{namespace}/rolebindings", {
        "apiVersion": f"{GROUP}/v1", "kind": "RoleBinding",
        "metadata": {"name": name or f"{user}-{role}"},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
        "subjects": [{"apiGroup": GROUP, "kind": "User", "name": user}]})
    assert r.status == 201, r.json()


async def _decide(api: Api, attrs: Attributes, want: bool) -> None:
    """Wait until the informers have brought RBAC to the answer wanted (at most 30 s), then hold it."""
    authorizer = api.app.handlers.authorizer
    with trio.move_on_after(30):
        while (await authorizer.authorize(attrs)).allowed is not want:
            await trio.sleep(0.01)
    assert (await authorizer.authorize(attrs)).allowed is want, attrs


def res(user: UserInfo, verb: str, resource: str, ns: str = "team", group: str = "", sub: str = "",
        name: str = "") -> Attributes:
    return Attributes(user, verb, True, group, "v1", resource, sub, ns, name)


def url(user: UserInfo, p: str) -> Attributes:
    return Attributes(user, "get", False, path=p)


BOB = UserInfo("bob", "uid-b", ("system:authenticated",))

# (role bound to bob in "team", attributes, allowed)
BOUND = [
    ("view", res(BOB, "get", "pods"), True),
    ("view", res(BOB, "list", "deployments", group="apps"), True),
    ("view", res(BOB, "get", "pods", sub="log"), True),
    ("view", res(BOB, "get", "secrets"), False),
    ("view", res(BOB, "create", "pods"), False),
    ("view", res(BOB, "get", "pods", ns="other"), False),
    ("view", res(BOB, "list", "roles", group=GROUP), False),
    ("edit", res(BOB, "create", "deployments", group="apps"), True),
    ("edit", res(BOB, "get", "secrets"), True),
    ("edit", res(BOB, "create", "pods", sub="exec"), True),
    ("edit", res(BOB, "impersonate", "serviceaccounts"), True),
    ("edit", res(BOB, "create", "rolebindings", group=GROUP), False),
    ("edit", res(BOB, "create", "deployments", group="apps", ns="other"), False),
    ("edit", res(BOB, "update", "resourcequotas"), False),
    ("admin", res(BOB, "create", "rolebindings", group=GROUP), True),
    ("admin", res(BOB, "create", "localsubjectaccessreviews", group="authorization.k8s.io"), True),
    ("admin", res(BOB, "delete", "deployments", group="apps"), True),
    ("admin", res(BOB, "get", "nodes", ns=""), False),
    ("admin", res(BOB, "create", "rolebindings", group=GROUP, ns="other"), False),
    ("cluster-admin", res(BOB, "delete", "secrets"), True),
    ("cluster-admin", res(BOB, "get", "nodes", ns=""), False),  # a RoleBinding grants in its namespace only
]


@pytest.mark.parametrize(("role", "attrs", "allowed"), BOUND)
async def test_bootstrap_roles_bound_in_a_namespace(api: Api, role: str, attrs: Attributes, allowed: bool) -> None:
    assert not (await api.app.handlers.authorizer.authorize(attrs)).allowed
    await _bind(api, "team", role, "bob")
    await _decide(api, attrs, allowed)


# (attributes, allowed) for users bound by the bootstrap ClusterRoleBindings alone
UNBOUND = [
    (url(ANONYMOUS, "/healthz"), True),
    (url(ANONYMOUS, "/livez"), True),
    (url(ANONYMOUS, "/readyz"), True),
    (url(ANONYMOUS, "/version"), True),
    (url(ANONYMOUS, "/api"), False),
    (url(ANONYMOUS, "/metrics"), False),
    (res(ANONYMOUS, "get", "secrets", ns="default"), False),
    (res(ANONYMOUS, "list", "pods", ns=""), False),
    (url(BOB, "/api"), True),
    (url(BOB, "/apis/apps/v1"), True),
    (url(BOB, "/openapi/v3"), True),
    (url(BOB, "/metrics"), False),
    (res(BOB, "create", "selfsubjectaccessreviews", ns="", group="authorization.k8s.io"), True),
    (res(BOB, "create", "selfsubjectrulesreviews", ns="", group="authorization.k8s.io"), True),
    (res(BOB, "create", "selfsubjectreviews", ns="", group="authentication.k8s.io"), True),
    (res(BOB, "get", "pods", ns="default"), False),
    (res(UserInfo("system:kube-scheduler", "", ("system:authenticated",)), "create", "pods", ns="t",
         sub="binding"), True),
    (res(UserInfo("system:kube-proxy", "", ("system:authenticated",)), "list", "endpointslices", ns="",
         group="discovery.k8s.io"), True),
    (res(UserInfo("system:kube-controller-manager", "", ("system:authenticated",)), "list", "secrets", ns=""), True),
    (url(UserInfo("prom", "", ("system:monitoring", "system:authenticated")), "/metrics"), True),
    (url(UserInfo("system:serviceaccount:a:b", "", ("system:serviceaccounts", "system:authenticated")),
         "/openid/v1/jwks"), True),
    (res(UserInfo("system:serviceaccount:kube-system:generic-garbage-collector", "",
                  ("system:serviceaccounts", "system:authenticated")), "delete", "widgets", group="x.io"), True),
    # kubelets get nothing from RBAC (system:node's binding has no subjects): the Node authorizer decides
    (res(KUBELET, "get", "nodes", ns="", name="n1"), False),
]


@pytest.mark.parametrize(("attrs", "allowed"), UNBOUND)
async def test_bootstrap_cluster_role_bindings(api: Api, attrs: Attributes, allowed: bool) -> None:
    await _decide(api, attrs, allowed)


async def test_aggregated_roles_have_their_parts_rules(api: Api) -> None:
    cr = _res(api.registry, "clusterroles")
    part = next(r for r in rbacpolicy.cluster_roles() if r["metadata"]["name"] == "system:aggregate-to-view")

    async def rules(name: str) -> list[dict[str, Any]]:
        return (await api.registry.get(cr, "", name)).get("rules") or []

    # edit aggregates view's rules and admin edit's: the cascade settles through the informer's
    # events, so wait for the last step (admin covering edit covering view) rather than for any rules.
    with trio.move_on_after(30):
        while not (await rules("view") == part["rules"] and covers(await rules("edit"), await rules("view"))[0]
                   and covers(await rules("admin"), await rules("edit"))[0]):
            await trio.sleep(0.01)
    view, edit, admin = await rules("view"), await rules("edit"), await rules("admin")
    assert view == part["rules"]
    assert covers(edit, view)[0] and covers(admin, edit)[0] and not covers(view, edit)[0]


async def test_aggregation_picks_up_a_new_labelled_cluster_role(api: Api) -> None:
    widgets = R(("get", "list"), "example.com", "widgets")
    r = await api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": f"{GROUP}/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [widgets]})
    assert r.status == 201, r.json()
    await _bind(api, "team", "edit", "bob")
    # view picks it up, edit picks up view's, and the binding to edit grants it
    await _decide(api, res(BOB, "list", "widgets", group="example.com"), True)
    r = await api.request("GET", f"{RBAC_API}/clusterroles/view")
    assert widgets in r.json()["rules"]
    r = await api.request("DELETE", f"{RBAC_API}/clusterroles/widget-viewer")
    assert r.status == 200
    await _decide(api, res(BOB, "list", "widgets", group="example.com"), False)


# ------------------------------------------------------------------ escalation over the API

ROLE = {"apiVersion": f"{GROUP}/v1", "kind": "Role", "metadata": {"name": "r"}}


async def test_escalation_refused_then_allowed_with_escalate(api: Api) -> None:
    await _bind(api, "team", "admin", "alice")
    await _decide(api, res(ALICE, "create", "roles", group=GROUP), True)
    roles = f"{RBAC_API}/namespaces/team/roles"
    # what admin holds may be granted
    r = await api.create(roles, {**ROLE, "rules": [R(("get", "list"), "", "pods")]}, token="alice-token")
    assert r.status == 201, r.json()
    # more than alice holds: kube's 403
    wanted = [R(("get", "list"), "", ("pods", "nodes")), R("delete", "", "persistentvolumes")]
    r = await api.request("PUT", f"{roles}/r", {**ROLE, "rules": wanted}, token="alice-token")
    assert r.status == 403, r.json()
    assert r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == (
        'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["devs" "system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list"]}\n'
        '{APIGroups:[""], Resources:["persistentvolumes"], Verbs:["delete"]}')
    r = await api.create(roles, {**ROLE, "metadata": {"name": "r2"}, "rules": wanted}, token="alice-token")
    assert r.status == 403
    assert r.json()["details"] == {"name": "r2", "group": GROUP, "kind": "roles"}
    assert (await api.request("GET", f"{roles}/r2")).status == 404  # nothing written
    # the escalate verb on roles lets her
    r = await api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "role-escalator"},
        "rules": [R("escalate", GROUP, "roles")]})
    assert r.status == 201
    await _bind(api, "team", "role-escalator", "alice")
    await _decide(api, res(ALICE, "escalate", "roles", group=GROUP), True)
    r = await api.request("PUT", f"{roles}/r", {**ROLE, "rules": wanted}, token="alice-token")
    assert r.status == 200, r.json()
    # ... in her namespace only
    await _bind(api, "other", "admin", "alice")
    await _decide(api, res(ALICE, "create", "roles", group=GROUP, ns="other"), True)
    r = await api.create(f"{RBAC_API}/namespaces/other/roles", {**ROLE, "rules": wanted}, token="alice-token")
    assert r.status == 403


async def test_cluster_role_escalation_and_the_aggregation_rule(api: Api) -> None:
    r = await api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "role-writer"},
        "rules": [R(("create", "update", "get"), GROUP, "clusterroles"), R("get", "", "pods")]})
    assert r.status == 201
    r = await api.create(f"{RBAC_API}/clusterrolebindings", {
        "apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "alice-role-writer"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "role-writer"},
        "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "alice"}]})
    assert r.status == 201
    await _decide(api, res(ALICE, "create", "clusterroles", group=GROUP, ns=""), True)
    cr = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "pods-getter"},
          "rules": [R("get", "", "pods")]}
    r = await api.create(f"{RBAC_API}/clusterroles", cr, token="alice-token")
    assert r.status == 201, r.json()
    agg = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "aggregator"},
           "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}
    r = await api.create(f"{RBAC_API}/clusterroles", agg, token="alice-token")
    assert r.status == 403
    assert r.json()["message"] == ('clusterroles.rbac.authorization.k8s.io "aggregator" is forbidden: '
                                   'must have cluster-admin privileges to use the aggregationRule')
    r = await api.create(f"{RBAC_API}/clusterroles", agg)  # the admin (system:masters) may
    assert r.status == 201


async def test_binding_needs_the_roles_rules_or_bind(api: Api) -> None:
    await _bind(api, "team", "admin", "alice")
    await _decide(api, res(ALICE, "create", "rolebindings", group=GROUP), True)
    bindings = f"{RBAC_API}/namespaces/team/rolebindings"

    def binding(name: str, role: str, kind: str = "ClusterRole") -> Obj:
        return {"apiVersion": f"{GROUP}/v1", "kind": "RoleBinding", "metadata": {"name": name},
                "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
                "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "carol"}]}

    # edit's rules are all admin's: alice may hand them out in her namespace
    r = await api.create(bindings, binding("carol-edit", "edit"), token="alice-token")
    assert r.status == 201, r.json()
    # cluster-admin's she does not hold
    r = await api.create(bindings, binding("carol-root", "cluster-admin"), token="alice-token")
    assert r.status == 403
    message = r.json()["message"]
    assert message.startswith('rolebindings.rbac.authorization.k8s.io "carol-root" is forbidden: user "alice" '
                              '(groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions '
                              'not currently held:\n'), message
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in message
    assert '{NonResourceURLs:["*"], Verbs:["*"]}' in message
    # a role that does not exist: kube's registry NotFound
    r = await api.create(bindings, binding("carol-none", "nope", "Role"), token="alice-token")
    assert r.status == 403
    assert r.json()["message"] == ('rolebindings.rbac.authorization.k8s.io "carol-none" is forbidden: '
                                   'roles.rbac.authorization.k8s.io "nope" not found')
    # "bind" on that one cluster role lets her
    r = await api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "root-binder"},
        "rules": [R("bind", GROUP, "clusterroles", names="cluster-admin")]})
    assert r.status == 201
    await _bind(api, "team", "root-binder", "alice")
    await _decide(api, res(ALICE, "bind", "clusterroles", group=GROUP, name="cluster-admin"), True)
    r = await api.create(bindings, binding("carol-root", "cluster-admin"), token="alice-token")
    assert r.status == 201, r.json()
    # a ClusterRoleBinding asks "bind" at the cluster scope: her namespaced grant does not reach it
    r = await api.create(f"{RBAC_API}/clusterrolebindings", {**binding("carol-root", "cluster-admin"),
                                                            "kind": "ClusterRoleBinding"}, token="alice-token")
    assert r.status == 403


async def test_only_gc_fields_changes_skip_the_check(api: Api) -> None:
    roles = f"{RBAC_API}/namespaces/team/roles"
    r = await api.create(roles, {**ROLE, "rules": [R("get", "", "nodes")]})  # the admin writes it
    assert r.status == 201
    r = await api.create(f"{RBAC_API}/namespaces/team/roles", {
        **ROLE, "metadata": {"name": "updater"}, "rules": [R(("get", "update", "patch"), GROUP, "roles")]})
    assert r.status == 201
    await _bind(api, "team", "updater", "alice", kind="Role")
    await _decide(api, res(ALICE, "update", "roles", group=GROUP, name="r"), True)
    current = (await api.request("GET", f"{roles}/r")).json()
    current["metadata"]["finalizers"] = ["example.com/keep"]
    r = await api.request("PUT", f"{roles}/r", current, token="alice-token")
    assert r.status == 200, r.json()
    current = r.json()
    current["metadata"]["labels"] = {"a": "b"}
    r = await api.request("PUT", f"{roles}/r", current, token="alice-token")
    assert r.status == 403  # not only GC fields: her rules must cover the role's


async def test_a_patch_is_checked_like_an_update(api: Api) -> None:
    await _bind(api, "team", "admin", "alice")
    await _decide(api, res(ALICE, "patch", "roles", group=GROUP), True)
    roles = f"{RBAC_API}/namespaces/team/roles"
    r = await api.create(roles, {**ROLE, "rules": [R("get", "", "pods")]}, token="alice-token")
    assert r.status == 201, r.json()
    patch = {"rules": [R("get", "", "pods"), R("get", "", "nodes")]}
    r = await api.request("PATCH", f"{roles}/r", patch, token="alice-token",
                          content_type="application/merge-patch+json")
    assert r.status == 403, r.json()
    assert 'is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["nodes"], ' \
           'Verbs:["get"]}' in r.json()["message"]
    r = await api.request("GET", f"{roles}/r")
    assert r.json()["rules"] == [R("get", "", "pods")]
    r = await api.request("PATCH", f"{roles}/r?dryRun=All", patch, token="alice-token",
                          content_type="application/merge-patch+json")
    assert r.status == 403  # a dry run is judged as the write would be
