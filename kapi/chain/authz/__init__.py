"""Authorization: the union of the ``--authorization-mode`` authorizers, kube's order and messages.

``Authorizer`` asks system:masters' privileged-group check first (kube's authorizer factory puts
it ahead of every mode), then each mode in flag order: the first Allow or Deny decides, a
NoOpinion passes on, and when every mode passes the request is denied. A mode is anything with
``name`` and ``async authorize(attrs) -> Decision``; a mode that can list what a user may do
(RBAC) has ``rules_for`` too (kube's RuleResolver), which SelfSubjectRulesReview reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from kapi import errors
from kapi.object.access import (ALLOW, DENY, NO_OPINION, Attributes, Decision, NonResourceRule, ResourceRule, Rules,
                                UserInfo)

SYSTEM_MASTERS = "system:masters"
MODES = ("AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook")


class Mode(Protocol):
    name: str

    async def authorize(self, attrs: Attributes) -> Decision: ...


@runtime_checkable
class RuleResolver(Protocol):
    def rules_for(self, user: UserInfo, namespace: str) -> Rules: ...


@dataclass(frozen=True)
class AlwaysAllow:
    name: str = "AlwaysAllow"

    async def authorize(self, attrs: Attributes) -> Decision:
        return Decision(ALLOW)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules((ResourceRule(("*",), ("*",), ("*",)),), (NonResourceRule(("*",), ("*",)),))


@dataclass(frozen=True)
class AlwaysDeny:
    name: str = "AlwaysDeny"

    async def authorize(self, attrs: Attributes) -> Decision:
        return Decision(DENY)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules()


_PRIVILEGED = Decision(ALLOW)


@dataclass
class Authorizer:
    """The union of ``modes`` behind the privileged group (system:masters may do anything)."""

    modes: Sequence[Mode] = field(default_factory=lambda: (AlwaysAllow(),))

    @property
    def mode_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.modes)

    async def authorize(self, attrs: Attributes) -> Decision:
        if SYSTEM_MASTERS in attrs.user.groups:
            return _PRIVILEGED
        reasons, errs = [], []
        for mode in self.modes:
            decision = await mode.authorize(attrs)
            if decision.decision != NO_OPINION:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
            if decision.error:
                errs.append(decision.error)
        # kube's union: the reasons one per line, the errors aggregated.
        return Decision(NO_OPINION, "\n".join(reasons), errors.aggregate_messages(errs))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """Every mode's rules for ``user``, as kube's union of rule resolvers: concatenated, incomplete if
        one is, their errors aggregated. The privileged group lists none of its own (as kube's): a
        system:masters user's rules are those RBAC's bindings give it (cluster-admin's)."""
        resource: list[ResourceRule] = []
        non_resource: list[NonResourceRule] = []
        incomplete, errs = False, []
        for mode in self.modes:
            if not isinstance(mode, RuleResolver):
                continue
            rules = mode.rules_for(user, namespace)
            resource += rules.resource_rules
            non_resource += rules.non_resource_rules
            incomplete |= rules.incomplete
            if rules.evaluation_error:
                errs.append(rules.evaluation_error)
        return Rules(tuple(resource), tuple(non_resource), incomplete, errors.aggregate_messages(errs))

    async def check(self, attrs: Attributes) -> None:
        """Raise kube's 403 Forbidden unless the union allows ``attrs``; 500 when it could not decide
        (an authorizer's error, a webhook down: kube's WithAuthorization answers InternalError)."""
        decision = await self.authorize(attrs)
        if not decision.allowed:
            if decision.error:
                raise errors.InternalError(f"Internal error occurred: {decision.error}")
            raise forbidden(attrs, decision.reason)


def forbidden_message(attrs: Attributes) -> str:
    """kube's responsewriters.forbiddenMessage."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        return (f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" '
                f'in the namespace "{attrs.namespace}"')
    return f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" at the cluster scope'


def forbidden(attrs: Attributes, reason: str = "") -> errors.Forbidden:
    """kube's responsewriters.Forbidden: ``<resource>.<group> "<name>" is forbidden: <message>[: <reason>]``."""
    message = forbidden_message(attrs)
    if reason:
        message = f"{message}: {reason}"
    if not attrs.resource_request:
        return errors.Forbidden(f"forbidden: {message}")
    what = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    if attrs.name:
        return errors.Forbidden(f'{what} "{attrs.name}" is forbidden: {message}', name=attrs.name,
                                group=attrs.group, kind=attrs.resource)
    return errors.Forbidden(f"{what} is forbidden: {message}", group=attrs.group, kind=attrs.resource)


def from_modes(names: Sequence[str], build: dict[str, Mode] | None = None) -> Authorizer:
    """The union for ``--authorization-mode`` names; ``build`` supplies the modes that need the server
    (Node, RBAC, Webhook), keyed by name."""
    modes: list[Mode] = []
    for name in names:
        if name not in MODES:
            raise ValueError(f"unsupported authorization mode {name!r}; supported: {', '.join(MODES)}")
        if name == "AlwaysAllow":
            modes.append(AlwaysAllow())
        elif name == "AlwaysDeny":
            modes.append(AlwaysDeny())
        elif build and name in build:
            modes.append(build[name])
        else:
            raise ValueError(f"authorization mode {name} needs the server to build it")
    return Authorizer(modes)
