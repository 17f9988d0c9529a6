"""Reviews are answered by their kinds' strategies, never stored (issue 11: no kind test outside kapi/apis)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kapi.api.app import Health
from kapi.config import Config
from kapi.server.serve import build_app

from .conftest import Api, serve_with_informers

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
LSAR = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
ATTRS = {"resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "default"}}


def _review(kind: str, spec: dict[str, object] | None = None, group: str = "authorization.k8s.io") -> dict[str, object]:
    body: dict[str, object] = {"kind": kind, "apiVersion": f"{group}/v1"}
    if spec is not None:
        body["spec"] = spec
    return body


def _deny_all(api: Api, tmp_path: Path) -> Api:
    """The same registry served with --authorization-mode AlwaysDeny and a token for user alice."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-token,alice,uid-a,"devs"\n')
    config = Config(storage_backend="memory", authorization_mode=("AlwaysDeny",), token_auth_file=str(tokens))
    return Api(build_app(config, api.registry, "test-admin-token", Health(ready=True)), api.registry)


async def test_self_subject_review_names_the_requester(api: Api) -> None:
    r = await api.create(SSR, _review("SelfSubjectReview", group="authentication.k8s.io"))
    assert r.status == 201
    body = r.json()
    assert body["kind"] == "SelfSubjectReview" and body["apiVersion"] == "authentication.k8s.io/v1"
    info = body["status"]["userInfo"]
    assert info["username"] == "kapi-admin" and info["uid"] == "kapi-admin"
    assert "system:masters" in info["groups"]


async def test_access_reviews_ask_the_authorizer(api: Api, tmp_path: Path) -> None:
    denying = _deny_all(api, tmp_path)
    # AlwaysDeny refuses alice even the review itself; the admin (system:masters) is allowed.
    r = await denying.create(SSAR, _review("SelfSubjectAccessReview", ATTRS), token="alice-token")
    assert r.status == 403
    r = await denying.create(SSAR, _review("SelfSubjectAccessReview", ATTRS))
    assert r.json()["status"] == {"allowed": True}  # kube's privileged-group authorizer gives no reason
    # A SubjectAccessReview is about the user its spec names, not the requester.
    for path, kind in ((SAR, "SubjectAccessReview"), (LSAR, "LocalSubjectAccessReview")):
        r = await denying.create(path, _review(kind, {**ATTRS, "user": "bob", "groups": ["system:masters"]}))
        assert r.status == 201 and r.json()["status"]["allowed"] is True, r.json()
        r = await denying.create(path, _review(kind, {**ATTRS, "user": "bob", "groups": ["devs"]}))
        assert r.json()["status"] == {"allowed": False, "denied": True}, r.json()  # AlwaysDeny denies (kube)
    # Under AlwaysAllow anyone may.
    r = await api.create(SAR, _review("SubjectAccessReview", {**ATTRS, "user": "bob"}))
    assert r.json()["status"]["allowed"] is True


async def test_rules_review_and_nothing_is_stored(api: Api) -> None:
    r = await api.create(SSRR, _review("SelfSubjectRulesReview", {"namespace": "default"}))
    assert r.json()["status"]["resourceRules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    # Reviews are answered, not stored: there is nothing to list or get.
    assert (await api.request("GET", SAR)).status == 405


async def test_strategies_answer_for_whom_the_authorizer_decides() -> None:
    """The answers without HTTP: a requester the authorizer denies gets no rules and no access."""
    from kapi.apis.authorization import (SELF_SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_RULES_REVIEWS,
                                         SUBJECT_ACCESS_REVIEWS)
    from kapi.object.access import DENY, Decision, Rules, UserInfo

    asked: list[tuple[str, str, tuple[str, ...]]] = []

    class Deny:
        async def authorize(self, attrs):  # type: ignore[no-untyped-def]
            asked.append((attrs.user.name, attrs.user.uid, attrs.user.groups))
            return Decision(DENY)

        async def rules_for(self, user, namespace):  # type: ignore[no-untyped-def]
            asked.append((user.name, user.uid, user.groups))
            return Rules()

        async def authenticate_token(self, token, audiences):  # type: ignore[no-untyped-def]
            return None

    alice = UserInfo("alice", "uid-a", ("devs",))
    review = await SELF_SUBJECT_RULES_REVIEWS.strategy.answer({"spec": {"namespace": "default"}}, alice, Deny())
    assert review["status"] == {"resourceRules": [], "nonResourceRules": [], "incomplete": False}
    review = await SELF_SUBJECT_ACCESS_REVIEWS.strategy.answer({"spec": ATTRS}, alice, Deny())
    assert review["status"] == {"allowed": False, "denied": True}
    review = await SUBJECT_ACCESS_REVIEWS.strategy.answer({"spec": {**ATTRS, "user": "bob", "uid": "b"}}, alice,
                                                          Deny())
    assert review["status"] == {"allowed": False, "denied": True}
    assert asked == [("alice", "uid-a", ("devs",))] * 2 + [("bob", "b", ())]


# ---------------------------------------------------------------- issue 12: the spec's attributes, kube's checks

class Recorder:
    """An Access that records what it is asked and allows."""

    def __init__(self) -> None:
        self.asked: list[object] = []

    async def authorize(self, attrs):  # type: ignore[no-untyped-def]
        from kapi.object.access import ALLOW, Decision

        self.asked.append(attrs)
        return Decision(ALLOW, "because")

    async def rules_for(self, user, namespace):  # type: ignore[no-untyped-def]
        from kapi.object.access import NonResourceRule, ResourceRule, Rules

        self.asked.append((user.name, namespace))
        return Rules((ResourceRule(("get",), ("",), ("pods",), ("a",)),), (NonResourceRule(("get",), ("/x*",)),),
                     True, "webhook unreachable")

    async def authenticate_token(self, token, audiences):  # type: ignore[no-untyped-def]
        return None


async def test_reviews_ask_about_the_spec_attributes() -> None:
    """Issue 12: kube's ResourceAttributesFrom/NonResourceAttributesFrom, the version * when empty."""
    from kapi.apis.authorization import (LOCAL_SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_ACCESS_REVIEWS,
                                         SELF_SUBJECT_RULES_REVIEWS, SUBJECT_ACCESS_REVIEWS)
    from kapi.object.access import Attributes, UserInfo

    alice = UserInfo("alice", "uid-a", ("devs",))
    rec = Recorder()
    spec = {"resourceAttributes": {"verb": "get", "group": "apps", "resource": "deployments",
                                   "subresource": "scale", "namespace": "team", "name": "web"}}
    review = await SELF_SUBJECT_ACCESS_REVIEWS.strategy.answer({"kind": "SelfSubjectAccessReview", "spec": spec},
                                                               alice, rec)
    assert review["status"] == {"allowed": True, "reason": "because"} and review["spec"] == spec
    assert rec.asked[-1] == Attributes(alice, "get", True, "apps", "*", "deployments", "scale", "team", "web")
    await SELF_SUBJECT_ACCESS_REVIEWS.strategy.answer(
        {"kind": "SelfSubjectAccessReview", "spec": {"nonResourceAttributes": {"verb": "get", "path": "/logs"}}},
        alice, rec)
    assert rec.asked[-1] == Attributes(alice, "get", False, path="/logs")
    sar = {"user": "bob", "uid": "b", "groups": ["ops"], "extra": {"scopes": ["x"]},
           "resourceAttributes": {"verb": "list", "resource": "pods", "version": "v1", "namespace": "team"}}
    await SUBJECT_ACCESS_REVIEWS.strategy.answer({"kind": "SubjectAccessReview", "spec": sar}, alice, rec)
    bob = UserInfo("bob", "b", ("ops",), {"scopes": ("x",)})
    assert rec.asked[-1] == Attributes(bob, "list", True, "", "v1", "pods", "", "team", "")
    sar["resourceAttributes"]["labelSelector"] = {"requirements": [
        {"key": "app", "operator": "In", "values": ["a", "b"]}, {"key": "tier", "operator": "DoesNotExist"}]}
    sar["resourceAttributes"]["fieldSelector"] = {"rawSelector": "spec.nodeName=n1"}
    await SUBJECT_ACCESS_REVIEWS.strategy.answer({"kind": "SubjectAccessReview", "spec": sar}, alice, rec)
    assert rec.asked[-1] == Attributes(bob, "list", True, "", "v1", "pods", "", "team", "",
                                       field_selector="spec.nodeName=n1", label_selector="app in (a,b),!tier")
    del sar["resourceAttributes"]["labelSelector"], sar["resourceAttributes"]["fieldSelector"]
    await LOCAL_SUBJECT_ACCESS_REVIEWS.strategy.answer(
        {"kind": "LocalSubjectAccessReview", "metadata": {"namespace": "team"}, "spec": sar}, alice, rec)
    assert rec.asked[-1] == Attributes(bob, "list", True, "", "v1", "pods", "", "team", "")
    review = await SELF_SUBJECT_RULES_REVIEWS.strategy.answer(
        {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {"namespace": "team"}},
        alice, rec)
    assert rec.asked[-1] == ("alice", "team")
    assert review["status"] == {
        "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x*"]}],
        "incomplete": True, "evaluationError": "webhook unreachable"}


INVALID = [
    # (path, kind, body beyond kind/apiVersion, code, message after the kind's prefix)
    (SSAR, "SelfSubjectAccessReview", {"spec": {}}, 422,
     'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": '
     "exactly one of nonResourceAttributes or resourceAttributes must be specified"),
    (SSAR, "SelfSubjectAccessReview", {"spec": {**ATTRS, "nonResourceAttributes": {"path": "/x", "verb": "get"}}},
     422, 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
     '{"path":"/x","verb":"get"}: cannot be specified in combination with resourceAttributes'),
    (SSAR, "SelfSubjectAccessReview", {"metadata": {"name": "x"}, "spec": ATTRS}, 422,
     'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: metadata: Invalid value: '),
    (SAR, "SubjectAccessReview", {"spec": ATTRS}, 422,
     'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
     "at least one of user or group must be specified"),
    (SAR, "SubjectAccessReview", {"spec": {"user": "bob", "resourceAttributes": {
        "verb": "list", "resource": "pods", "labelSelector": {"rawSelector": "a=b", "requirements": [
            {"key": "a", "operator": "In"}]}}}}, 422,
     'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes.labelSelector.rawSelector: '
     'Invalid value: "a=b": may not specified at the same time as requirements, '
     "spec.resourceAttributes.labelSelector.requirements[0].values: Required value: must be specified when "
     "`operator` is 'In' or 'NotIn']"),
    (SAR, "SubjectAccessReview", {"spec": {"user": "bob", "resourceAttributes": {
        "verb": "list", "resource": "pods", "fieldSelector": {}}}}, 422,
     'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.fieldSelector.requirements: '
     "Required value: when spec.resourceAttributes.fieldSelector is specified, requirements or rawSelector is "
     "required"),
    (LSAR, "LocalSubjectAccessReview", {"spec": {"user": "bob", "resourceAttributes": {
        "verb": "get", "resource": "pods", "namespace": "other"}}}, 422,
     'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: '
     'Invalid value: "other": must match metadata.namespace'),
    (LSAR, "LocalSubjectAccessReview", {"spec": {"user": "bob", "nonResourceAttributes": {"verb": "get"}}}, 422,
     'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
     '{"verb":"get"}: disallowed on this kind of request'),
    (LSAR, "LocalSubjectAccessReview", {"metadata": {"namespace": "other"}, "spec": {"user": "bob", **ATTRS}}, 400,
     "the namespace of the provided object does not match the namespace sent on the request"),
    (SSRR, "SelfSubjectRulesReview", {"spec": {}}, 400, "no namespace on request"),
]


@pytest.mark.parametrize(("path", "kind", "body", "code", "message"), INVALID)
async def test_reviews_refuse_what_kube_refuses(api: Api, path: str, kind: str, body: dict[str, object],
                                                code: int, message: str) -> None:
    """Issue 12: kube's authorization validation (422) and REST checks (400), never a 500."""
    r = await api.create(path, {"kind": kind, "apiVersion": "authorization.k8s.io/v1", **body})
    assert r.status == code, r.json()
    assert r.json()["message"].startswith(message), r.json()["message"]


async def test_a_local_review_takes_the_namespace_of_its_url(api: Api) -> None:
    r = await api.create(LSAR, _review("LocalSubjectAccessReview", {"user": "bob", **ATTRS}))
    assert r.status == 201 and r.json()["metadata"]["namespace"] == "default"
    # A cluster-scoped review's namespace is dropped, as kube's create handler does.
    r = await api.create(SAR, {**_review("SubjectAccessReview", {"user": "bob", **ATTRS}),
                               "metadata": {"namespace": "x"}})
    assert r.status == 201 and "namespace" not in r.json()["metadata"]


# ---------------------------------------------------------------- issue 12: answered by RBAC

async def test_reviews_answered_by_rbac(nursery: trio.Nursery, tmp_path: Path) -> None:
    """Issue 12: SSAR/SAR decide by RBAC's bindings with kube's reasons; SSRR lists RBAC's real rules."""
    api = await serve_with_informers(nursery, tmp_path, ("RBAC",), 'alice-token,alice,uid-a,"devs"\n',
                                     admin_token="test-admin-token")
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    rules = [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
              "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
             {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm"]},
             {"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}]
    assert (await api.create(f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
        "rules": rules})).status == 201
    assert (await api.create(f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]})).status == 201
    with trio.fail_after(10):
        while (await api.create(SSRR, _review("SelfSubjectRulesReview", {"namespace": "default"}),
                                token="alice-token")).status != 201:
            await trio.sleep(0.01)
    r = await api.create(SSAR, _review("SelfSubjectAccessReview", {"resourceAttributes": {
        "verb": "get", "resource": "configmaps", "namespace": "default", "name": "cm"}}), token="alice-token")
    assert r.json()["status"] == {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "b" of '
                                                           'ClusterRole "r" to User "alice"'}
    r = await api.create(SSAR, _review("SelfSubjectAccessReview", {"resourceAttributes": {
        "verb": "get", "resource": "configmaps", "namespace": "default", "name": "other"}}), token="alice-token")
    assert r.json()["status"] == {"allowed": False}  # RBAC has no opinion, nothing denies
    r = await api.create(SAR, _review("SubjectAccessReview", {"user": "alice", "nonResourceAttributes": {
        "verb": "get", "path": "/healthz/etcd"}}))
    assert r.json()["status"]["allowed"] is True
    r = await api.create(SAR, _review("SubjectAccessReview", {"user": "bob", "nonResourceAttributes": {
        "verb": "get", "path": "/healthz/etcd"}}))
    assert r.json()["status"] == {"allowed": False}
    r = await api.create(SSRR, _review("SelfSubjectRulesReview", {"namespace": "default"}), token="alice-token")
    body = r.json()
    assert body["kind"] == "SelfSubjectRulesReview" and body["spec"] == {}
    assert body["status"] == {"resourceRules": [rules[0], rules[1]], "nonResourceRules": [rules[2]],
                              "incomplete": False}
    # Alice may not ask about others.
    r = await api.create(SAR, _review("SubjectAccessReview", {"user": "bob", **ATTRS}), token="alice-token")
    assert r.status == 403


async def test_an_authorizer_error_is_the_evaluation_error() -> None:
    """Issue 12: a mode that could not decide (a webhook down) shows in status.evaluationError, as kube's REST."""
    from kapi.apis.authorization import SELF_SUBJECT_ACCESS_REVIEWS, SUBJECT_ACCESS_REVIEWS
    from kapi.object.access import NO_OPINION, Decision, UserInfo

    class Broken(Recorder):
        async def authorize(self, attrs):  # type: ignore[no-untyped-def]
            return Decision(NO_OPINION, "", 'Post "https://authz.example": connection refused')

    alice = UserInfo("alice", "uid-a", ("devs",))
    for strategy, spec in ((SELF_SUBJECT_ACCESS_REVIEWS.strategy, ATTRS),
                           (SUBJECT_ACCESS_REVIEWS.strategy, {**ATTRS, "user": "bob"})):
        review = await strategy.answer({"kind": "SubjectAccessReview", "spec": spec}, alice, Broken())
        assert review["status"] == {"allowed": False,
                                    "evaluationError": 'Post "https://authz.example": connection refused'}
