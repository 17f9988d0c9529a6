"""``ServerAccess``: the server's authorizer and authenticators as the strategies see them (registry's ``Access``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kapi.chain.authn import Authenticator
from kapi.chain.authz import Authorizer
from kapi.chain.authz.rbac import Binding
from kapi.object.access import Attributes, Decision, Rules, UserInfo
from kapi.registry.strategy import PolicyRuleResolver


@dataclass(frozen=True)
class ServerAccess:
    authorizer: Authorizer
    authenticator: Authenticator

    async def authorize(self, attrs: Attributes) -> Decision:
        return await self.authorizer.authorize(attrs)

    async def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return self.authorizer.rules_for(user, namespace)

    async def authenticate_token(self, token: str, audiences: tuple[str, ...]
                                 ) -> tuple[UserInfo, tuple[str, ...]] | None:
        return await self.authenticator.authenticate_token(token, audiences)

    def policy_rules(self) -> PolicyRuleResolver | None:
        for mode in self.authorizer.modes:
            index = getattr(mode, "index", None)
            if mode.name == "RBAC" and index is not None:
                return _RBACRules(mode, index)
        return None


@dataclass(frozen=True)
class _RBACRules:
    """The RBAC mode's index as the escalation checks read it (kube's AuthorizationRuleResolver)."""

    mode: Any
    index: Any

    def rules_and_errors(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
        rules, errs = self.mode.rules_and_errors(user, namespace)
        return list(rules), list(errs)

    def role_reference_rules(self, kind: str, name: str, namespace: str
                             ) -> tuple[list[dict[str, Any]] | None, str]:
        rules, err = self.index.role_rules(Binding(namespace, "", kind, name, ()))
        return (None, err) if rules is None else ([dict(r) for r in rules], "")
