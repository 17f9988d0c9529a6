"""authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews, answered by the server and never stored.

Each review kind's strategy answers the create (kube's ``pkg/registry/authorization/*/rest.go``):
the handlers give it the requester and the authorizer's decision.
"""

from __future__ import annotations

from typing import Final

from kapi.registry.resources import Resource
from kapi.object.access import Attributes, UserInfo
from kapi.registry.strategy import Access, Obj, Strategy


class ReviewStrategy(Strategy):
    """A review is created only, and answered rather than stored: nothing of the generic store applies."""

    core_finalizers = False


class SelfSubjectReviewStrategy(ReviewStrategy):
    """authentication.k8s.io SelfSubjectReview: who the server takes the requester to be."""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        info: Obj = {"username": requester.name, "groups": list(requester.groups)}
        if requester.uid:
            info["uid"] = requester.uid
        if requester.extra:
            info["extra"] = {k: list(v) for k, v in requester.extra.items()}
        review["status"] = {"userInfo": info}
        return review


def _access_status(allowed: bool, reason: str) -> Obj:
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


class SelfSubjectAccessReviewStrategy(ReviewStrategy):
    """May the requester do what the review asks?"""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        decision = await access.authorize(Attributes(requester, ""))  # issue 12 makes these attributes the spec's
        review["status"] = _access_status(decision.allowed, decision.reason)
        return review


class SubjectAccessReviewStrategy(ReviewStrategy):
    """(Local)SubjectAccessReview: may the user the spec names do what it asks?"""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        spec = review.get("spec") or {}
        user = UserInfo(spec.get("user", ""), spec.get("uid", ""), tuple(spec.get("groups") or ()))
        decision = await access.authorize(Attributes(user, ""))
        review["status"] = _access_status(decision.allowed, decision.reason)
        return review


class SelfSubjectRulesReviewStrategy(ReviewStrategy):
    """What may the requester do? Everything or nothing, as the authorization modes decide."""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        allowed = (await access.authorize(Attributes(requester, ""))).allowed
        rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}] if allowed else []
        non_resource = [{"verbs": ["*"], "nonResourceURLs": ["*"]}] if allowed else []
        review["status"] = {"resourceRules": rules, "nonResourceRules": non_resource, "incomplete": False}
        return review


def _review(group: str, resource: str, kind: str, strategy: ReviewStrategy, *, namespaced: bool = False) -> Resource:
    return Resource(group=group, version="v1", resource=resource, kind=kind, namespaced=namespaced,
                    verbs=("create",), virtual=True, cacheable=False, strategy=strategy)


SELF_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectaccessreviews",
                                             "SelfSubjectAccessReview", SelfSubjectAccessReviewStrategy())
SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview",
                                        SubjectAccessReviewStrategy())
LOCAL_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "localsubjectaccessreviews",
                                              "LocalSubjectAccessReview", SubjectAccessReviewStrategy(),
                                              namespaced=True)
SELF_SUBJECT_RULES_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectrulesreviews",
                                            "SelfSubjectRulesReview", SelfSubjectRulesReviewStrategy())
SELF_SUBJECT_REVIEWS: Final = _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview",
                                      SelfSubjectReviewStrategy())
