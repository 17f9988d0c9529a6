"""authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews, answered by the server and never stored.

The answers are the handlers' (they ask the authorizer); the strategy is the generic one.
"""

from __future__ import annotations

from typing import Final

from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy


class ReviewStrategy(Strategy):
    """A review is created only, and answered rather than stored: nothing of the generic store applies."""

    core_finalizers = False


def _review(group: str, resource: str, kind: str, *, namespaced: bool = False) -> Resource:
    return Resource(group=group, version="v1", resource=resource, kind=kind, namespaced=namespaced,
                    verbs=("create",), virtual=True, cacheable=False, strategy=ReviewStrategy())


SELF_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectaccessreviews",
                                             "SelfSubjectAccessReview")
SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview")
LOCAL_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "localsubjectaccessreviews",
                                              "LocalSubjectAccessReview", namespaced=True)
SELF_SUBJECT_RULES_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectrulesreviews",
                                            "SelfSubjectRulesReview")
SELF_SUBJECT_REVIEWS: Final = _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview")
