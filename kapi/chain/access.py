"""``ServerAccess``: the server's authorizer and authenticators as the strategies see them (registry's ``Access``)."""

from __future__ import annotations

from dataclasses import dataclass

from kapi.chain.authn import Authenticator
from kapi.chain.authz import Authorizer
from kapi.object.access import Attributes, Decision, Rules, UserInfo


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
