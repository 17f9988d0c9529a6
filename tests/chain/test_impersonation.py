"""Issue 12: impersonation as kube's WithImpersonation: what is checked, in which order, who the request becomes."""

from __future__ import annotations

import pytest

from kapi import errors
from kapi.chain.authz import Authorizer
from kapi.chain.context import RequestContext
from kapi.chain.impersonation import asked_for, impersonate, split_service_account
from kapi.object.access import ALLOW, NO_OPINION, Attributes, Decision, UserInfo

ALICE = UserInfo("alice", "1", ("dev", "system:authenticated"))
MASTER = UserInfo("root", "", ("system:masters", "system:authenticated"))


class Grants:
    """A mode allowing exactly the (group, resource, subresource, namespace, name) it holds; records each check."""

    name = "Grants"

    def __init__(self, *allowed: tuple[str, str, str, str, str]) -> None:
        self.allowed = set(allowed)
        self.checked: list[Attributes] = []

    async def authorize(self, attrs: Attributes) -> Decision:
        self.checked.append(attrs)
        key = (attrs.group, attrs.resource, attrs.subresource, attrs.namespace, attrs.name)
        return Decision(ALLOW) if attrs.verb == "impersonate" and key in self.allowed else Decision(NO_OPINION)


def ctx(*headers: tuple[str, str], user: UserInfo = ALICE) -> RequestContext:
    first: dict[str, str] = {}
    for k, v in headers:
        first.setdefault(k.lower(), v)
    c = RequestContext("GET", "/api/v1/pods", {}, first, raw_headers=[(k.lower().encode(), v.encode())
                                                                        for k, v in headers])
    c.user = user
    return c


async def test_no_impersonation_headers_changes_nothing() -> None:
    c = ctx(("Accept", "application/json"))
    await impersonate(Authorizer([Grants()]), c)
    assert c.user is ALICE and c.impersonator is None


async def test_each_part_is_checked_with_kubes_attributes() -> None:
    grants = Grants(("", "users", "", "", "bob"), ("", "groups", "", "", "a"), ("", "groups", "", "", "b"),
                    ("authentication.k8s.io", "userextras", "scopes", "", "view"),
                    ("authentication.k8s.io", "uids", "", "", "u-7"))
    c = ctx(("Impersonate-User", "bob"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b"),
            ("Impersonate-Extra-Scopes", "view"), ("Impersonate-Uid", "u-7"))
    await impersonate(Authorizer([grants]), c)
    assert [(a.user, a.verb, a.group, a.version, a.resource, a.subresource, a.name) for a in grants.checked] == [
        (ALICE, "impersonate", "", "", "users", "", "bob"),
        (ALICE, "impersonate", "", "", "groups", "", "a"),
        (ALICE, "impersonate", "", "", "groups", "", "b"),
        (ALICE, "impersonate", "authentication.k8s.io", "v1", "userextras", "scopes", "view"),
        (ALICE, "impersonate", "authentication.k8s.io", "v1", "uids", "", "u-7")]
    assert c.user == UserInfo("bob", "u-7", ("a", "b", "system:authenticated"), {"scopes": ("view",)})
    assert c.impersonator == ALICE
    assert not [h for h in c.headers if h.startswith("impersonate-")]  # kube clears them


async def test_the_first_refusal_is_kubes_403() -> None:
    grants = Grants(("", "users", "", "", "bob"))
    c = ctx(("Impersonate-User", "bob"), ("Impersonate-Group", "system:masters"))
    with pytest.raises(errors.Forbidden) as info:
        await impersonate(Authorizer([grants]), c)
    assert info.value.message == ('groups "system:masters" is forbidden: User "alice" cannot impersonate resource '
                                  '"groups" in API group "" at the cluster scope')
    assert c.user is ALICE and c.impersonator is None  # nothing changed


async def test_refused_extra_and_uid_messages() -> None:
    with pytest.raises(errors.Forbidden, match='userextras.authentication.k8s.io "view" is forbidden: User "alice" '
                                               'cannot impersonate resource "userextras/scopes" in API group '
                                               '"authentication.k8s.io" at the cluster scope'):
        await impersonate(Authorizer([Grants(("", "users", "", "", "bob"))]),
                          ctx(("Impersonate-User", "bob"), ("Impersonate-Extra-Scopes", "view")))
    with pytest.raises(errors.Forbidden, match='uids.authentication.k8s.io "u1" is forbidden'):
        await impersonate(Authorizer([Grants(("", "users", "", "", "bob"))]),
                          ctx(("Impersonate-User", "bob"), ("Impersonate-Uid", "u1")))


async def test_a_service_account_is_checked_in_its_namespace_and_gets_its_groups() -> None:
    grants = Grants(("", "serviceaccounts", "", "ns1", "builder"))
    c = ctx(("Impersonate-User", "system:serviceaccount:ns1:builder"))
    await impersonate(Authorizer([grants]), c)
    assert grants.checked[0].namespace == "ns1" and grants.checked[0].resource == "serviceaccounts"
    assert c.user.name == "system:serviceaccount:ns1:builder"
    assert c.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated")
    with pytest.raises(errors.Forbidden, match='serviceaccounts "builder" is forbidden: User "alice" cannot '
                                               'impersonate resource "serviceaccounts" in API group "" in the '
                                               'namespace "ns2"'):
        await impersonate(Authorizer([grants]), ctx(("Impersonate-User", "system:serviceaccount:ns2:builder")))


async def test_a_service_account_with_asked_groups_gets_only_those() -> None:
    grants = Grants(("", "serviceaccounts", "", "ns1", "builder"), ("", "groups", "", "", "g"))
    c = ctx(("Impersonate-User", "system:serviceaccount:ns1:builder"), ("Impersonate-Group", "g"))
    await impersonate(Authorizer([grants]), c)
    assert c.user.groups == ("g", "system:authenticated")


def test_service_account_names_as_kube_splits_them() -> None:
    assert split_service_account("system:serviceaccount:ns:name") == ("ns", "name")
    assert split_service_account("system:serviceaccount:ns:a:b") is None
    assert split_service_account("system:serviceaccount:Bad_NS:name") is None
    assert split_service_account("system:serviceaccount::name") is None
    assert split_service_account("bob") is None


async def test_authenticated_and_unauthenticated_groups_as_kube_adds_them() -> None:
    masters = Authorizer([])  # system:masters may impersonate anyone
    c = ctx(("Impersonate-User", "bob"), ("Impersonate-Group", "system:unauthenticated"), user=MASTER)
    await impersonate(masters, c)
    assert c.user.groups == ("system:unauthenticated",)
    c = ctx(("Impersonate-User", "system:anonymous"), user=MASTER)
    await impersonate(masters, c)
    assert (c.user.name, c.user.groups) == ("system:anonymous", ("system:unauthenticated",))
    c = ctx(("Impersonate-User", "bob"), ("Impersonate-Group", "system:authenticated"), user=MASTER)
    await impersonate(masters, c)
    assert c.user.groups == ("system:authenticated",)


async def test_groups_extras_or_uid_without_a_user_are_400() -> None:
    """kube answers this with an internal error; it is the client's mistake, so 400 with kube's text."""
    with pytest.raises(errors.BadRequest) as info:
        await impersonate(Authorizer([]), ctx(("Impersonate-Group", "g"), user=MASTER))
    assert info.value.message == "requested [{Group  g    }] without impersonating a user"
    with pytest.raises(errors.BadRequest, match=r"\{UserExtra  v  authentication.k8s.io/v1  k\}"):
        asked_for(ctx(("Impersonate-Extra-K", "v")))
    with pytest.raises(errors.BadRequest, match="without impersonating a user"):
        asked_for(ctx(("Impersonate-Uid", "u")))


async def test_extra_keys_are_lowercased_and_unescaped() -> None:
    c = ctx(("Impersonate-User", "bob"), ("Impersonate-Extra-Example.org%2fTeam", "t1"),
            ("Impersonate-Extra-Example.org%2fTeam", "t2"), user=MASTER)
    await impersonate(Authorizer([]), c)
    assert c.user.extra == {"example.org/team": ("t1", "t2")}
