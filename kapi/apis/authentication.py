"""authentication.k8s.io/v1 TokenReview: who a bearer token is, answered by the server's token
authenticators and never stored (kube's pkg/registry/authentication/tokenreview)."""

from __future__ import annotations

from typing import Final

from kapi import errors
from kapi.apis.authorization import SelfSubjectReviewStrategy
from kapi.object.access import UserInfo, user_info_object
from kapi.registry.resources import Resource
from kapi.registry.strategy import Access, Obj, Strategy

BAD_AUDIENCES: Final = "error validating audience"


class TokenReviewStrategy(Strategy):
    """A TokenReview is created only and answered from the token authenticators (the API audiences
    unless the spec names others); a token good for none of the audiences asked is not authenticated."""

    core_finalizers = False

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        spec = review.get("spec") or {}
        token = spec.get("token") or ""
        if not token:
            raise errors.BadRequest("token is required for TokenReview in authentication")
        asked = tuple(spec.get("audiences") or ())
        try:
            found = await access.authenticate_token(token, asked)
        except errors.AuthenticationError as exc:  # kube: the token union's aggregated error
            review["status"] = {"user": {}, "error": str(exc)}
            return review
        if found is None:  # no authenticator took it, none said why: kube reports no error
            review["status"] = {"user": {}}
            return review
        user, good = found
        if asked and not [a for a in asked if a in good] or not asked and not good:
            # kube answers with a review of its own, the request's spec left out.
            return {"kind": review["kind"], "apiVersion": review["apiVersion"],
                    "metadata": {"creationTimestamp": None}, "spec": {},
                    "status": {"user": {}, "error": BAD_AUDIENCES}}
        status: Obj = {"authenticated": True, "user": user_info_object(user)}
        if good:
            status["audiences"] = list(good)
        review["status"] = status
        return review


TOKEN_REVIEWS: Final = Resource(group="authentication.k8s.io", version="v1", resource="tokenreviews",
                                kind="TokenReview", namespaced=False, verbs=("create",), virtual=True,
                                cacheable=False, strategy=TokenReviewStrategy())
# authentication.k8s.io/v1beta1 SelfSubjectReview, still served by kube 1.33 (the v1 one is in
# kapi.apis.authorization): kubectl 1.27's ``auth whoami`` asks v1beta1 (then v1alpha1), never v1.
SELF_SUBJECT_REVIEWS_V1BETA1: Final = Resource(group="authentication.k8s.io", version="v1beta1",
                                               resource="selfsubjectreviews", kind="SelfSubjectReview",
                                               namespaced=False, verbs=("create",), virtual=True, cacheable=False,
                                               strategy=SelfSubjectReviewStrategy())
