"""Who asks, and what for: kube's ``user.Info``, ``authorizer.Attributes`` and decisions, as plain data.

These live below every layer that reads them: the chain's filters make them, the authorizers
judge them, the registry's strategies (the reviews, RBAC's escalation check) receive them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Mapping


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who makes a request, as kube's user.Info: name, uid, groups, extra."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def user_info_object(user: UserInfo) -> dict[str, object]:
    """authentication.k8s.io/v1 UserInfo as kube writes it (a TokenReview's status, an audit event):
    empty fields left out."""
    out: dict[str, object] = {"username": user.name} if user.name else {}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do, as kube's authorizer.AttributesRecord.

    A resource request names verb, API group and version, resource, subresource, namespace and
    name; a non-resource request (``resource_request`` False) names the verb (the HTTP method
    lowered: get, post, put, ...) and the path.
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    # A list, watch or deletecollection's ?fieldSelector= and ?labelSelector= as sent (kube's
    # AuthorizeWithSelectors): the Node authorizer and the Webhook's SubjectAccessReview read them.
    field_selector: str = ""
    label_selector: str = ""


ALLOW: Final = "Allow"
DENY: Final = "Deny"
NO_OPINION: Final = "NoOpinion"


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorizer's answer: ALLOW, DENY or NO_OPINION, with the reason it gives (may be empty)."""

    decision: str
    reason: str = ""
    error: str = ""  # an authorizer that could not decide (a webhook down): kube's err; 500 unless allowed

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOW

    @property
    def denied(self) -> bool:
        return self.decision == DENY


@dataclass(frozen=True, slots=True)
class ResourceRule:
    """One rule of a rules review (kube's authorizationv1.ResourceRule)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NonResourceRule:
    verbs: tuple[str, ...]
    non_resource_urls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rules:
    """What a user may do in a namespace, as a SelfSubjectRulesReview's status reports it."""

    resource_rules: tuple[ResourceRule, ...] = ()
    non_resource_rules: tuple[NonResourceRule, ...] = ()
    incomplete: bool = False
    evaluation_error: str = ""
