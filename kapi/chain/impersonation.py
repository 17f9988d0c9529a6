"""Impersonation: kube's WithImpersonation (Impersonate-User, -Group, -Uid, Impersonate-Extra-*).

Each thing asked for is authorized for the authenticated user with the verb ``impersonate``:
``users``, ``groups`` and ``serviceaccounts`` (API group ""; a service account by its namespace
and name), ``uids`` and ``userextras/<key>`` (API group authentication.k8s.io). The first refusal
is kube's 403 for that check; when every check passes, the request goes on as the impersonated user
and the authenticated one is kept on the context (``ctx.impersonator``) for audit.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapi import errors
from kapi.chain.authn import unescape_extra_key
from kapi.chain.authz import Authorizer, forbidden
from kapi.chain.context import RequestContext
from kapi.object.access import Attributes, UserInfo
from kapi.object.validation.names import is_dns1123_label, is_dns1123_subdomain

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"

ANONYMOUS = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SA_PREFIX = "system:serviceaccount:"
AUTHENTICATION_GROUP = "authentication.k8s.io"


@dataclass(frozen=True, slots=True)
class _Asked:
    """One impersonation request (kube's ObjectReference of buildImpersonationRequests)."""

    kind: str  # ServiceAccount, User, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""  # the extra's key

    def go_string(self) -> str:
        """Go's %v of the ObjectReference (Kind Namespace Name UID APIVersion ResourceVersion FieldPath)."""
        return "{" + " ".join((self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)) + "}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """kube's serviceaccount.SplitUsername: (namespace, name) of ``system:serviceaccount:NS:NAME``, else None."""
    if not username.startswith(SA_PREFIX):
        return None
    parts = username[len(SA_PREFIX):].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if is_dns1123_label(namespace) or is_dns1123_subdomain(name):
        return None
    return namespace, name


def asked_for(ctx: RequestContext) -> list[_Asked]:
    """kube's buildImpersonationRequests: user (or service account), groups, extras, uid, in that order.

    Raises BadRequest for groups, extras or a uid without a user (kube answers that with a 500; it
    is the client's mistake).
    """
    asked: list[_Asked] = []
    user = ctx.header(USER_HEADER)
    if user:
        sa = split_service_account(user)
        asked.append(_Asked("ServiceAccount", sa[1], sa[0]) if sa else _Asked("User", user))
    groups = ctx.header_values(GROUP_HEADER)
    asked += [_Asked("Group", g) for g in groups]
    extras = False
    for name in ctx.headers:
        if name.startswith(EXTRA_PREFIX):
            extras = True
            key = unescape_extra_key(name[len(EXTRA_PREFIX):].lower())
            asked += [_Asked("UserExtra", value, api_version=f"{AUTHENTICATION_GROUP}/v1", field_path=key)
                      for value in ctx.header_values(name)]
    uid = ctx.header(UID_HEADER)
    if uid:
        asked.append(_Asked("UID", uid, api_version=f"{AUTHENTICATION_GROUP}/v1"))
    if (groups or extras or uid) and not user:
        raise errors.BadRequest(f"requested [{' '.join(a.go_string() for a in asked)}] without impersonating a user")
    return asked


def _attributes(requester: UserInfo, asked: _Asked) -> Attributes:
    group, version = ("", "") if not asked.api_version else (AUTHENTICATION_GROUP, "v1")
    resource, subresource = {"ServiceAccount": ("serviceaccounts", ""), "User": ("users", ""),
                             "Group": ("groups", ""), "UserExtra": ("userextras", asked.field_path),
                             "UID": ("uids", "")}[asked.kind]
    return Attributes(requester, "impersonate", True, group, version, resource, subresource, asked.namespace,
                      asked.name)


async def impersonate(authz: Authorizer, ctx: RequestContext) -> None:
    """Switch ``ctx.user`` to the impersonated user once every part of it is allowed; kube's 403 otherwise."""
    asked = asked_for(ctx)
    if not asked:
        return
    requester = ctx.user
    groups_specified = bool(ctx.header_values(GROUP_HEADER))
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for one in asked:
        attrs = _attributes(requester, one)
        if one.kind == "ServiceAccount":
            username = f"{SA_PREFIX}{one.namespace}:{one.name}"
            if not groups_specified:  # a service account's groups are known
                groups = ["system:serviceaccounts", f"system:serviceaccounts:{one.namespace}"]
        elif one.kind == "User":
            username = one.name
        elif one.kind == "Group":
            groups.append(one.name)
        elif one.kind == "UserExtra":
            extra.setdefault(one.field_path, []).append(one.name)
        else:
            uid = one.name
        decision = await authz.authorize(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)
    if username != ANONYMOUS:
        # kube: system:authenticated unless system:authenticated or system:unauthenticated is asked for.
        if ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
            groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_UNAUTHENTICATED)
    ctx.impersonator = requester
    ctx.user = UserInfo(username, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})
    # kube clears the impersonation headers: nothing below acts on them again.
    for name in [n for n in ctx.headers if n in (USER_HEADER, GROUP_HEADER, UID_HEADER) or n.startswith(EXTRA_PREFIX)]:
        del ctx.headers[name]

