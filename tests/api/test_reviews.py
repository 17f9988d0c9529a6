"""Reviews are answered by their kinds' strategies, never stored (issue 11: no kind test outside kapi/apis)."""

from __future__ import annotations

from pathlib import Path

from kapi.api.app import Health
from kapi.config import Config
from kapi.server.serve import build_app

from .conftest import Api

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
        assert r.json()["status"] == {"allowed": False}, r.json()
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
    assert review["status"] == {"allowed": False}
    review = await SUBJECT_ACCESS_REVIEWS.strategy.answer({"spec": {**ATTRS, "user": "bob", "uid": "b"}}, alice,
                                                          Deny())
    assert review["status"] == {"allowed": False}
    assert asked == [("alice", "uid-a", ("devs",))] * 2 + [("bob", "b", ())]
