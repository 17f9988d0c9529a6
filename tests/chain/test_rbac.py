"""RBAC evaluation (issue 12): kube's rule matching, subjects, reasons, the index and the informers feeding it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.chain.authz.rbac import RBAC, Binding, RBACIndex
from kapi.errors import aggregate_messages
from kapi.object.access import ALLOW, NO_OPINION, Attributes, UserInfo
from kapi.object.rbac import applies_to, describe_subject, rule_allows
from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
ALICE = UserInfo("alice", "uid-a", ("devs", "system:authenticated"))
SA = UserInfo("system:serviceaccount:team:builder", "", ("system:serviceaccounts",
                                                          "system:serviceaccounts:team", "system:authenticated"))


def res(verb: str, resource: str, *, group: str = "", sub: str = "", ns: str = "team", name: str = "",
        user: UserInfo = ALICE) -> Attributes:
    return Attributes(user, verb, True, group, "v1", resource, sub, ns, name)


def path(verb: str, p: str, user: UserInfo = ALICE) -> Attributes:
    return Attributes(user, verb, False, path=p)


# ------------------------------------------------------------------ rule matching (kube's RuleAllows)

RULE_CASES = [
    # (rule, attributes, allowed)
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("list", "pods"), False),
    ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, res("deletecollection", "pods"), True),
    ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, res("get", "pods"), False),
    ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["deployments"]},
     res("get", "deployments", group="apps"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}, res("get", "secrets"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}, res("get", "pods", sub="log"), True),
    # pods does not cover pods/log, nor pods/log pods.
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods", sub="log"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, res("get", "pods", sub="log"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, res("get", "pods"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, res("get", "pods", sub="log"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, res("get", "pods", sub="status"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, res("get", "pods"), False),
    # kube matches pods/* literally: it is no wildcard over subresources.
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]}, res("get", "pods", sub="log"), False),
    # resourceNames: only the names listed; a list (no name) is not covered.
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
     res("get", "secrets", name="a"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
     res("get", "secrets", name="b"), False),
    ({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
     res("list", "secrets"), False),
    # Non-resource URLs: exact, a trailing * is a prefix, * is all; a resource rule never allows a path.
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, path("get", "/healthz"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, path("get", "/healthz/etcd"), False),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}, path("get", "/healthz/etcd"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, path("get", "/apis/apps"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, path("get", "/api"), False),
    ({"verbs": ["get"], "nonResourceURLs": ["*"]}, path("get", "/metrics"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}, path("post", "/metrics"), False),
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, path("get", "/version"), False),
    ({"verbs": ["*"], "nonResourceURLs": ["*"]}, res("get", "pods"), False),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed"), RULE_CASES)
def test_rule_allows_as_kube(rule: Obj, attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(rule, attrs) is allowed


SUBJECT_CASES = [
    # (subject, user, binding namespace, applies)
    ({"kind": "User", "name": "alice"}, ALICE, "", True),
    ({"kind": "User", "name": "bob"}, ALICE, "", False),
    ({"kind": "Group", "name": "devs"}, ALICE, "team", True),
    ({"kind": "Group", "name": "alice"}, ALICE, "team", False),
    ({"kind": "ServiceAccount", "name": "builder", "namespace": "team"}, SA, "", True),
    ({"kind": "ServiceAccount", "name": "builder", "namespace": "other"}, SA, "team", False),
    # A RoleBinding's ServiceAccount subject defaults to the binding's namespace; a cluster one to none.
    ({"kind": "ServiceAccount", "name": "builder"}, SA, "team", True),
    ({"kind": "ServiceAccount", "name": "builder"}, SA, "", False),
    ({"kind": "Group", "name": "system:serviceaccounts:team"}, SA, "", True),
    ({"kind": "Robot", "name": "alice"}, ALICE, "", False),
]


@pytest.mark.parametrize(("subject", "user", "namespace", "applies"), SUBJECT_CASES)
def test_subjects_apply_as_kube(subject: Obj, user: UserInfo, namespace: str, applies: bool) -> None:
    assert applies_to(subject, user, namespace) is applies


def test_subject_descriptions() -> None:
    assert describe_subject({"kind": "User", "name": "alice"}, "team") == 'User "alice"'
    assert describe_subject({"kind": "ServiceAccount", "name": "b"}, "team") == 'ServiceAccount "b/team"'
    assert describe_subject({"kind": "ServiceAccount", "name": "b", "namespace": "x"}, "") == \
        'ServiceAccount "b/x"'
    assert aggregate_messages(["a"]) == "a" and aggregate_messages(["a", "b", "a"]) == "[a, b]" and aggregate_messages([]) == ""


# ------------------------------------------------------------------ the index and the reasons

def role(name: str, *rules: Obj, ns: str = "") -> Obj:
    return {"metadata": {"name": name, **({"namespace": ns} if ns else {})}, "rules": list(rules)}


def binding(name: str, kind: str, role_name: str, *subjects: Obj, ns: str = "") -> Binding:
    md: Obj = {"name": name, **({"namespace": ns} if ns else {})}
    return Binding.from_object({"metadata": md, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                            "kind": kind, "name": role_name},
                                "subjects": list(subjects)})


READ_PODS = {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}
HEALTH = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/version"]}


def policy() -> RBAC:
    ix = RBACIndex()
    ix.put_cluster_role("pod-reader", role("pod-reader", READ_PODS))
    ix.put_cluster_role("health", role("health", HEALTH))
    ix.put_role("team", "secret-reader", role("secret-reader", {"verbs": ["get"], "apiGroups": [""],
                                                                "resources": ["secrets"]}, ns="team"))
    ix.put_binding(binding("health", "ClusterRole", "health", {"kind": "Group", "name": "system:authenticated"}))
    ix.put_binding(binding("alice-pods", "ClusterRole", "pod-reader", {"kind": "User", "name": "alice"},
                           ns="team"))
    ix.put_binding(binding("builder-secrets", "Role", "secret-reader",
                           {"kind": "ServiceAccount", "name": "builder"}, ns="team"))
    return RBAC(index=ix)


def test_decisions_and_kube_reasons() -> None:
    rbac = policy()
    d = rbac.decide(res("list", "pods"))
    assert d.decision == ALLOW
    assert d.reason == 'RBAC: allowed by RoleBinding "alice-pods/team" of ClusterRole "pod-reader" to User "alice"'
    # A namespace binding does not reach other namespaces, nor the cluster scope.
    assert rbac.decide(res("list", "pods", ns="other")).decision == NO_OPINION
    assert rbac.decide(res("list", "pods", ns="")).decision == NO_OPINION
    assert rbac.decide(res("get", "secrets")).decision == NO_OPINION  # alice holds no secrets rule
    d = rbac.decide(res("get", "secrets", user=SA))
    assert d.allowed and d.reason == ('RBAC: allowed by RoleBinding "builder-secrets/team" of Role "secret-reader" '
                                      'to ServiceAccount "builder/team"')
    d = rbac.decide(path("get", "/healthz"))
    assert d.allowed and d.reason == ('RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" '
                                      'to Group "system:authenticated"')
    # RBAC never denies: it has no opinion, and no reason when nothing went wrong.
    assert rbac.decide(path("get", "/metrics")) == rbac.decide(path("get", "/metrics")).__class__(NO_OPINION, "")


def test_missing_roles_are_reported_in_the_reason() -> None:
    rbac = policy()
    rbac.index.put_binding(binding("ghost", "ClusterRole", "nope", {"kind": "User", "name": "alice"}))
    rbac.index.put_binding(binding("ghost-role", "Role", "gone", {"kind": "User", "name": "alice"}, ns="team"))
    d = rbac.decide(res("delete", "pods"))
    assert d.decision == NO_OPINION
    assert d.reason == ('RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
                        'role.rbac.authorization.k8s.io "gone" not found]')
    # An allowed request is allowed whatever else is broken.
    assert rbac.decide(res("get", "pods")).allowed
    rules = rbac.rules_for(ALICE, "team")
    assert "not found" in rules.evaluation_error and not rules.incomplete


def test_changes_apply_at_once() -> None:
    rbac = policy()
    assert rbac.decide(res("list", "pods")).allowed  # memoised now
    rbac.index.delete_binding("team", "alice-pods")
    assert not rbac.decide(res("list", "pods")).allowed
    rbac.index.put_binding(binding("alice-pods", "ClusterRole", "pod-reader", {"kind": "Group", "name": "devs"},
                                   ns="team"))
    d = rbac.decide(res("list", "pods"))
    assert d.allowed and d.reason.endswith('to Group "devs"')
    # The role's rules change under the binding.
    rbac.index.put_cluster_role("pod-reader", role("pod-reader", {"verbs": ["get"], "apiGroups": [""],
                                                                  "resources": ["pods"]}))
    assert not rbac.decide(res("list", "pods")).allowed and rbac.decide(res("get", "pods")).allowed
    rbac.index.delete_cluster_role("pod-reader")
    assert "not found" in rbac.decide(res("get", "pods")).reason
    # A binding whose subjects change leaves the index of its old subjects.
    rbac.index.put_binding(binding("alice-pods", "ClusterRole", "health", {"kind": "User", "name": "carol"},
                                   ns="team"))
    assert rbac.index.by_subject["team"].get(("g", "devs")) is None


def test_rules_for_and_resolved_rules() -> None:
    rbac = policy()
    rules = rbac.rules_for(ALICE, "team")
    assert [(r.verbs, r.api_groups, r.resources) for r in rules.resource_rules] == \
        [(("get", "list", "watch"), ("",), ("pods",))]
    assert [(r.verbs, r.non_resource_urls) for r in rules.non_resource_rules] == \
        [(("get",), ("/healthz", "/version"))]
    # Cluster bindings first, then the namespace's (kube's visiting order).
    assert rbac.resolved_rules(ALICE, "team") == [HEALTH, READ_PODS]
    assert rbac.resolved_rules(ALICE, "other") == [HEALTH]
    returned = rbac.resolved_rules(ALICE, "team")
    returned[1]["verbs"].append("delete")  # copies: a caller cannot change the policy
    assert not rbac.decide(res("delete", "pods")).allowed
    both = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "nonResourceURLs": ["/x"]}
    rbac.index.put_cluster_role("health", role("health", both))
    rules = rbac.rules_for(ALICE, "")
    assert len(rules.resource_rules) == 1 and len(rules.non_resource_rules) == 1


# ------------------------------------------------------------------ fed by the shared informers

RBAC_API = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture
async def rbac_api(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Api]:
    """A server with --authorization-mode RBAC over a memory registry, its informers running."""
    yield await serve_with_informers(nursery, tmp_path, ("RBAC",), 'alice-token,alice,uid-a,"devs"\n')


async def _until(api: Api, path: str, status: int) -> None:
    with trio.fail_after(10):
        while (await api.request("GET", path, token="alice-token")).status != status:
            await trio.sleep(0.01)


async def test_the_informers_feed_rbac(rbac_api: Api) -> None:
    """Issue 12: a binding made through the API reaches the authorizer, and its deletion too."""
    pods = "/api/v1/namespaces/default/pods"
    r = await rbac_api.request("GET", pods, token="alice-token")
    assert r.status == 403
    assert r.json()["message"] == ('pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
                                   'in the namespace "default"')
    r = await rbac_api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "pod-reader"},
        "rules": [READ_PODS]})
    assert r.status == 201, r.json()
    r = await rbac_api.create(f"{RBAC_API}/namespaces/default/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "devs-read-pods", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]})
    assert r.status == 201, r.json()
    await _until(rbac_api, pods, 200)
    assert (await rbac_api.request("GET", "/api/v1/namespaces/kube-system/pods", token="alice-token")).status == 403
    assert (await rbac_api.request("GET", "/api/v1/namespaces/default/secrets", token="alice-token")).status == 403
    r = await rbac_api.request("DELETE", f"{RBAC_API}/namespaces/default/rolebindings/devs-read-pods")
    assert r.status == 200
    await _until(rbac_api, pods, 403)


async def test_no_path_is_exempt_from_authorization(rbac_api: Api) -> None:
    """Issue 12: as kube-apiserver, /healthz, /readyz, /livez and /version pass the authorizer like any
    path; they are public only when a binding (the bootstrap policy's system:public-info-viewer) says so."""
    for p in ("/healthz", "/readyz", "/livez", "/version"):
        r = await rbac_api.request("GET", p, token=None)
        assert r.status == 403, (p, r.body)
        assert r.json()["message"] == f'forbidden: User "system:anonymous" cannot get path "{p}"'
    r = await rbac_api.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "info"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}]})
    assert r.status == 201
    r = await rbac_api.create(f"{RBAC_API}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "info"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "info"},
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:unauthenticated"}]})
    assert r.status == 201
    with trio.fail_after(10):
        while (await rbac_api.request("GET", "/healthz", token=None)).status != 200:
            await trio.sleep(0.01)
    for p in ("/readyz", "/livez", "/version"):
        assert (await rbac_api.request("GET", p, token=None)).status == 200, p
    assert (await rbac_api.request("GET", "/healthz/etcd", token=None)).status == 403  # not listed
    assert (await rbac_api.request("GET", "/api/v1/namespaces", token=None)).status == 403


# ------------------------------------------------------------------ the index decides as kube's full visit

from hypothesis import given, settings, strategies as st  # noqa: E402

_NAMES = st.sampled_from(["alice", "bob", "system:serviceaccount:team:builder", "system:serviceaccount:other:x"])
_GROUPS = st.sampled_from(["devs", "ops", "system:authenticated", "system:serviceaccounts:team"])
_NS = st.sampled_from(["", "team", "other"])
_SUBJECT = st.one_of(
    st.builds(lambda n: {"kind": "User", "name": n}, _NAMES),
    st.builds(lambda g: {"kind": "Group", "name": g}, _GROUPS),
    st.builds(lambda n, ns: {"kind": "ServiceAccount", "name": n, **({"namespace": ns} if ns else {})},
              st.sampled_from(["builder", "x"]), _NS),
    st.just({"kind": "Robot", "name": "alice"}))
_RULE = st.fixed_dictionaries({
    "verbs": st.lists(st.sampled_from(["get", "list", "*"]), min_size=1, max_size=2),
    "apiGroups": st.lists(st.sampled_from(["", "apps", "*"]), min_size=1, max_size=2),
    "resources": st.lists(st.sampled_from(["pods", "pods/log", "*/log", "secrets", "*"]), min_size=1, max_size=2),
}, optional={"resourceNames": st.lists(st.sampled_from(["a", "b"]), max_size=1)})
_BINDING = st.tuples(st.sampled_from(["b1", "b2", "b3"]), _NS, st.sampled_from(["Role", "ClusterRole"]),
                     st.sampled_from(["r1", "r2", "missing"]), st.lists(_SUBJECT, min_size=1, max_size=3))


def _visit(bindings: dict[tuple[str, str], Binding], roles: dict[tuple[str, str, str], list[Obj]],
           attrs: Attributes) -> bool:
    """kube's VisitRulesFor with no index: every cluster binding, then every binding of the namespace."""
    for scope in ("", attrs.namespace) if attrs.namespace else ("",):
        for (ns, _), b in bindings.items():
            if ns != scope or not any(applies_to(s, attrs.user, scope) for s in b.subjects):
                continue
            rules = roles.get((b.role_kind, scope if b.role_kind == "Role" else "", b.role_name))
            if rules and any(rule_allows(r, attrs) for r in rules):
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(_BINDING, min_size=1, max_size=8),
       st.lists(st.tuples(_NS, st.sampled_from(["r1", "r2"]), st.lists(_RULE, min_size=1, max_size=2)),
                min_size=1, max_size=6),
       _NAMES, st.lists(_GROUPS, min_size=1, max_size=2, unique=True), _NS,
       st.sampled_from(["get", "list", "delete"]), st.sampled_from(["", "apps"]),
       st.sampled_from([("pods", ""), ("pods", "log"), ("secrets", ""), ("deployments", "scale")]),
       st.sampled_from(["", "a"]), st.integers(0, 8))
def test_the_index_decides_as_a_full_visit(binding_specs: list[Any], role_specs: list[Any], name: str,
                                           groups: list[str], ns: str, verb: str, group: str,
                                           resource: tuple[str, str], obj_name: str, removed: int) -> None:
    """Issue 12: for any policy, and after removing a binding, the index allows exactly what visiting
    every binding (kube's resolver) allows."""
    ix = RBACIndex()
    rbac = RBAC(index=ix)
    bindings: dict[tuple[str, str], Binding] = {}
    roles: dict[tuple[str, str, str], list[Obj]] = {}
    for role_ns, role_name, rules in role_specs:
        if role_ns:
            ix.put_role(role_ns, role_name, {"rules": rules})
        else:
            ix.put_cluster_role(role_name, {"rules": rules})
        roles[("Role" if role_ns else "ClusterRole", role_ns, role_name)] = rules
    for b_name, b_ns, kind, role_name, subjects in binding_specs:
        b = binding(b_name, kind, role_name, *subjects, ns=b_ns)
        ix.put_binding(b)
        bindings[(b_ns, b_name)] = b
    user = UserInfo(name, "", tuple(groups))
    attrs = res(verb, resource[0], group=group, sub=resource[1], ns=ns, name=obj_name, user=user)
    assert rbac.decide(attrs).allowed is _visit(bindings, roles, attrs)
    if bindings:
        key = sorted(bindings)[removed % len(bindings)]
        ix.delete_binding(*key)
        del bindings[key]
        assert rbac.decide(attrs).allowed is _visit(bindings, roles, attrs)
