"""The server's request chain pieces built from its flags: the authenticator union, the authorizer
union (and the in-process informers they read), audit. ``serve`` and ``build_app`` call these."""

from __future__ import annotations

from kapi.chain.authn import Authenticator, read_token_file
from kapi.chain.authz import Authorizer, Mode, from_modes
from kapi.config import Config
from kapi.object.access import UserInfo
from kapi.registry.informer import Informers

ADMIN = UserInfo("kapi-admin", "kapi-admin", ("system:masters", "system:authenticated"))


def build_authenticator(config: Config, informers: Informers | None, admin_token: str) -> Authenticator:
    """kube's authenticator union, in kube's order, from the flags; the admin token is system:masters."""
    tokens: dict[str, UserInfo] = {}
    if config.token_auth_file:
        tokens.update(read_token_file(config.token_auth_file))
    if admin_token:
        tokens[admin_token] = ADMIN
    return Authenticator(tokens, anonymous=config.anonymous_auth)


def build_authorizer(config: Config, informers: Informers | None) -> Authorizer:
    """The --authorization-mode union; RBAC and Node read ``informers`` (required for them)."""
    build: dict[str, Mode] = {}
    return from_modes(config.authorization_mode, build)
