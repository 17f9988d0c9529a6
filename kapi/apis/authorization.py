"""authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews, answered by the server and never stored.

Each review kind's strategy answers the create (kube's ``pkg/registry/authorization/*/rest.go``):
the handlers give it the requester and the authorizer's decision.
"""

from __future__ import annotations

from typing import Final

from kapi import errors
from kapi.errors import Cause
from kapi.object.access import Attributes, Decision, NonResourceRule, ResourceRule, UserInfo
from kapi.object.validation import is_qualified_name, is_valid_label_value
from kapi.object.validation.fields import field_forbidden, field_invalid, field_required
from kapi.registry.resources import Resource
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


def _spec(review: Obj) -> Obj:
    spec = review.get("spec")
    return spec if isinstance(spec, dict) else {}


def _attrs_obj(spec: Obj, key: str) -> Obj | None:
    value = spec.get(key)
    return value if isinstance(value, dict) else None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _meta_is_empty(md: Obj, *, but: tuple[str, ...] = ()) -> bool:
    """Whether ``metadata`` is the zero ObjectMeta (managedFields aside): kube's Semantic.DeepEqual, where
    an empty map or list is no value."""
    ignored = ("managedFields", *but)
    return not any(v not in (None, "", 0, [], {}) for k, v in md.items() if k not in ignored)


def _selector_causes(selector: object, path: str, *, labels: bool) -> list[Cause]:
    """kube's validateFieldSelectorAttributes / validateLabelSelectorAttributes (unknown operators allowed,
    so that newer clients can be authorized)."""
    if not isinstance(selector, dict):
        return []
    errs: list[Cause] = []
    raw, requirements = _str(selector.get("rawSelector")), selector.get("requirements")
    requirements = requirements if isinstance(requirements, list) else []
    if raw and requirements:
        errs.append(field_invalid(f"{path}.rawSelector", raw, "may not specified at the same time as requirements"))
    if not raw and not requirements:
        errs.append(field_required(f"{path}.requirements",
                                   f"when {path} is specified, requirements or rawSelector is required"))
    for i, req in enumerate(requirements):
        req = req if isinstance(req, dict) else {}
        p = f"{path}.requirements[{i}]"
        key, op, values = _str(req.get("key")), _str(req.get("operator")), _strings(req.get("values"))
        if not labels and not key:
            errs.append(field_required(f"{p}.key", "must be specified"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field_required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field_forbidden(f"{p}.values",
                                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        if labels:
            errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
            for j, value in enumerate(values):
                errs.extend(field_invalid(f"{p}.values[{j}]", value, m) for m in is_valid_label_value(value))
    return errs


def _attributes_causes(spec: Obj, *, subject: bool = False) -> list[Cause]:
    """kube's ValidateSelfSubjectAccessReviewSpec (``subject``: ValidateSubjectAccessReviewSpec, which also
    wants a user or a group to ask about): exactly one of resourceAttributes and nonResourceAttributes,
    and well-formed selectors."""
    errs: list[Cause] = []
    resource, non_resource = _attrs_obj(spec, "resourceAttributes"), _attrs_obj(spec, "nonResourceAttributes")
    if resource is not None and non_resource is not None:
        errs.append(field_invalid("spec.nonResourceAttributes", non_resource,
                                  "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        errs.append(field_invalid("spec.resourceAttributes", "null",  # kube prints the nil pointer so
                                  "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if subject and not _str(spec.get("user")) and not _strings(spec.get("groups")):
        errs.append(field_invalid("spec.user", _str(spec.get("user")), "at least one of user or group must be specified"))
    if resource is not None:
        errs += _selector_causes(resource.get("fieldSelector"), "spec.resourceAttributes.fieldSelector",
                                 labels=False)
        errs += _selector_causes(resource.get("labelSelector"), "spec.resourceAttributes.labelSelector",
                                 labels=True)
    return errs


def _spec_user(spec: Obj) -> UserInfo:
    """kube's AuthorizationAttributesFrom: the user, uid, groups and extra the spec names."""
    extra_in = spec.get("extra")
    extra = {k: _strings(v) for k, v in extra_in.items()} if isinstance(extra_in, dict) else {}
    return UserInfo(_str(spec.get("user")), _str(spec.get("uid")), _strings(spec.get("groups")), extra)


def spec_attributes(user: UserInfo, spec: Obj) -> Attributes:
    """kube's ResourceAttributesFrom / NonResourceAttributesFrom: what the spec asks about (a validated spec).

    An empty version is every version (``*``), as kube's matchAllVersionIfEmpty.
    """
    resource = _attrs_obj(spec, "resourceAttributes")
    if resource is not None:
        return Attributes(user, _str(resource.get("verb")), True, _str(resource.get("group")),
                          _str(resource.get("version")) or "*", _str(resource.get("resource")),
                          _str(resource.get("subresource")), _str(resource.get("namespace")),
                          _str(resource.get("name")),
                          field_selector=_selector_text(resource.get("fieldSelector"), labels=False),
                          label_selector=_selector_text(resource.get("labelSelector"), labels=True))
    non_resource = _attrs_obj(spec, "nonResourceAttributes") or {}
    return Attributes(user, _str(non_resource.get("verb")), False, path=_str(non_resource.get("path")))


def _selector_text(selector: object, *, labels: bool) -> str:
    """A spec's field or label selector as the query-string form the authorizers read: its rawSelector,
    or its requirements written out (``k in (a,b)``, ``!k``; a field's ``k=v``, ``k!=v``)."""
    if not isinstance(selector, dict):
        return ""
    raw = _str(selector.get("rawSelector"))
    if raw:
        return raw
    parts = []
    for req in selector.get("requirements") or ():
        if not isinstance(req, dict):
            continue
        key, op, values = _str(req.get("key")), _str(req.get("operator")), _strings(req.get("values"))
        if op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append("!" + key)
        elif not labels and op in ("In", "NotIn") and len(values) == 1:
            parts.append(f"{key}{'=' if op == 'In' else '!='}{values[0]}")
        elif op in ("In", "NotIn"):
            parts.append(f"{key} {op.lower()} ({','.join(values)})")
    return ",".join(parts)


def _access_status(decision: Decision) -> Obj:
    """SubjectAccessReviewStatus: allowed always, denied, reason and evaluationError when set."""
    status: Obj = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    if decision.error:
        status["evaluationError"] = decision.error
    return status


def _answered(review: Obj, status: Obj) -> Obj:
    """The review as created, with its status (kube's REST Create returns the object it was given)."""
    out = {k: v for k, v in review.items() if k != "status"}
    out["status"] = status
    return out


def _refuse(review: Obj, causes: list[Cause]) -> None:
    if causes:
        raise errors.invalid(str(review.get("kind") or ""), "authorization.k8s.io", "", causes)


class SelfSubjectAccessReviewStrategy(ReviewStrategy):
    """May the requester do what the review asks? (kube's selfsubjectaccessreview REST)"""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        spec = _spec(review)
        causes = _attributes_causes(spec)
        if not _meta_is_empty(_meta(review)):
            causes.append(field_invalid("metadata", _meta(review), "must be empty"))
        _refuse(review, causes)
        decision = await access.authorize(spec_attributes(requester, spec))
        return _answered(review, _access_status(decision))


class SubjectAccessReviewStrategy(ReviewStrategy):
    """May the user the spec names do what it asks? (kube's subjectaccessreview REST; cluster-scoped)"""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        spec = _spec(review)
        causes = _attributes_causes(spec, subject=True)
        if not _meta_is_empty(_meta(review)):
            causes.append(field_invalid("metadata", _meta(review), "must be empty"))
        _refuse(review, causes)
        decision = await access.authorize(spec_attributes(_spec_user(spec), spec))
        return _answered(review, _access_status(decision))


class LocalSubjectAccessReviewStrategy(ReviewStrategy):
    """A SubjectAccessReview within one namespace: the namespace of its URL, its metadata and its
    resourceAttributes must agree, and it asks about no path (kube's localsubjectaccessreview REST)."""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        spec = _spec(review)
        md = _meta(review)
        namespace = _str(md.get("namespace"))
        causes = _attributes_causes(spec, subject=True)
        if not _meta_is_empty(md, but=("namespace",)):
            causes.append(field_invalid("metadata", md, "must be empty except for namespace"))
        resource = _attrs_obj(spec, "resourceAttributes")
        if resource is not None and _str(resource.get("namespace")) != namespace:
            causes.append(field_invalid("spec.resourceAttributes.namespace", _str(resource.get("namespace")),
                                        "must match metadata.namespace"))
        non_resource = _attrs_obj(spec, "nonResourceAttributes")
        if non_resource is not None:
            causes.append(field_invalid("spec.nonResourceAttributes", non_resource,
                                        "disallowed on this kind of request"))
        _refuse(review, causes)
        if not namespace:  # the handlers set it from the URL
            raise errors.BadRequest("namespace is required on this type: ")
        decision = await access.authorize(spec_attributes(_spec_user(spec), spec))
        return _answered(review, _access_status(decision))


def _meta(review: Obj) -> Obj:
    md = review.get("metadata")
    return md if isinstance(md, dict) else {}


def _resource_rule(rule: ResourceRule) -> Obj:
    out: Obj = {"verbs": list(rule.verbs)}
    if rule.api_groups:
        out["apiGroups"] = list(rule.api_groups)
    if rule.resources:
        out["resources"] = list(rule.resources)
    if rule.resource_names:
        out["resourceNames"] = list(rule.resource_names)
    return out


def _non_resource_rule(rule: NonResourceRule) -> Obj:
    out: Obj = {"verbs": list(rule.verbs)}
    if rule.non_resource_urls:
        out["nonResourceURLs"] = list(rule.non_resource_urls)
    return out


class SelfSubjectRulesReviewStrategy(ReviewStrategy):
    """What may the requester do in the spec's namespace? The rule resolvers' rules (RBAC's), and
    ``incomplete`` when a mode cannot list its rules (kube's selfsubjectrulesreview REST)."""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        namespace = _str(_spec(review).get("namespace"))
        if not namespace:
            raise errors.BadRequest("no namespace on request")
        rules = await access.rules_for(requester, namespace)
        status: Obj = {"resourceRules": [_resource_rule(r) for r in rules.resource_rules],
                       "nonResourceRules": [_non_resource_rule(r) for r in rules.non_resource_rules],
                       "incomplete": rules.incomplete}
        if rules.evaluation_error:
            status["evaluationError"] = rules.evaluation_error
        # kube answers with a new object: its status only (the spec and metadata are not echoed).
        return {"kind": review.get("kind"), "apiVersion": review.get("apiVersion"),
                "metadata": {"creationTimestamp": None}, "spec": {}, "status": status}


def _review(group: str, resource: str, kind: str, strategy: ReviewStrategy, *, namespaced: bool = False) -> Resource:
    return Resource(group=group, version="v1", resource=resource, kind=kind, namespaced=namespaced,
                    verbs=("create",), virtual=True, cacheable=False, strategy=strategy)


SELF_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectaccessreviews",
                                             "SelfSubjectAccessReview", SelfSubjectAccessReviewStrategy())
SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview",
                                        SubjectAccessReviewStrategy())
LOCAL_SUBJECT_ACCESS_REVIEWS: Final = _review("authorization.k8s.io", "localsubjectaccessreviews",
                                              "LocalSubjectAccessReview", LocalSubjectAccessReviewStrategy(),
                                              namespaced=True)
SELF_SUBJECT_RULES_REVIEWS: Final = _review("authorization.k8s.io", "selfsubjectrulesreviews",
                                            "SelfSubjectRulesReview", SelfSubjectRulesReviewStrategy())
SELF_SUBJECT_REVIEWS: Final = _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview",
                                      SelfSubjectReviewStrategy())
