"""PolicyRule matching and subject matching, as kube's RBAC authorizer does them.

``rule_allows`` is kube's ``RuleAllows`` (plugin/pkg/auth/authorizer/rbac/rbac.go) with the
helpers of ``pkg/apis/rbac/v1/evaluation_helpers.go``; ``applies_to`` is ``appliesToUser`` of
``pkg/registry/rbac/validation/rule.go``. Rules and subjects are the decoded JSON dicts
(``{"verbs": [...], "apiGroups": [...], ...}``, ``{"kind": "User", "name": ...}``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from kapi.object.access import Attributes, UserInfo

Rule = Mapping[str, Any]
Subject = Mapping[str, Any]

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def verb_matches(rule: Rule, verb: str) -> bool:
    """``*`` or the verb itself."""
    for v in rule.get("verbs") or ():
        if v == "*" or v == verb:
            return True
    return False


def api_group_matches(rule: Rule, group: str) -> bool:
    """``*`` or the group itself ("" is the core group)."""
    for g in rule.get("apiGroups") or ():
        if g == "*" or g == group:
            return True
    return False


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """``*``, the exact ``resource[/subresource]``, or ``*/subresource`` for a subresource request.

    ``pods`` does not cover ``pods/log``, and ``pods/*`` is no wildcard (kube matches it literally).
    """
    for r in rule.get("resources") or ():
        if r == "*" or r == combined:
            return True
        if subresource and len(r) == len(subresource) + 2 and r.startswith("*/") and r.endswith(subresource):
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    """No resourceNames: any name (and none); else the name must be listed (a list or create has none)."""
    names = rule.get("resourceNames")
    if not names:
        return True
    return name in names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    """``*``, the exact path, or a prefix written with a trailing ``*`` (``/healthz*``, ``/apis/*``)."""
    for url in rule.get("nonResourceURLs") or ():
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(rule: Rule, attrs: Attributes) -> bool:
    """Whether ``rule`` (a PolicyRule dict) allows the request ``attrs`` (kube's RuleAllows)."""
    if attrs.resource_request:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (verb_matches(rule, attrs.verb) and api_group_matches(rule, attrs.group)
                and resource_matches(rule, combined, attrs.subresource)
                and resource_name_matches(rule, attrs.name))
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


def rules_allow(rules: Sequence[Rule], attrs: Attributes) -> bool:
    """Whether any of ``rules`` allows ``attrs``."""
    return any(rule_allows(rule, attrs) for rule in rules)


def service_account_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``, the user a service account's tokens authenticate as."""
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def applies_to(subject: Subject, user: UserInfo, binding_namespace: str) -> bool:
    """Whether a binding's ``subject`` names ``user`` (kube's appliesToUser).

    A User subject matches by name, a Group by membership; a ServiceAccount subject matches its
    service account's user name, its namespace defaulting to the binding's (a ClusterRoleBinding's
    ServiceAccount subject without a namespace matches nobody). Any other kind matches nobody.
    """
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        if not namespace:
            return False
        return user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def subject_key(subject: Subject, binding_namespace: str) -> tuple[str, str] | None:
    """The key an index of bindings files ``subject`` under: ("u", user name) for a User or a
    ServiceAccount (its user name), ("g", group) for a Group; None when it names nobody (as
    ``applies_to``: an unknown kind, a cluster binding's ServiceAccount without a namespace)."""
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return "u", name
    if kind == "Group":
        return "g", name
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return ("u", service_account_username(namespace, name)) if namespace else None
    return None


def subject_index(subjects: Sequence[Subject] | None, user: UserInfo, binding_namespace: str) -> int:
    """The index of the first of ``subjects`` that names ``user``, or -1 (kube's appliesTo)."""
    for i, subject in enumerate(subjects or ()):
        if applies_to(subject, user, binding_namespace):
            return i
    return -1


def describe_subject(subject: Subject, binding_namespace: str) -> str:
    """How kube's RBAC reasons name a subject: ``User "alice"``, ``ServiceAccount "default/ns"``."""
    kind = subject.get("kind", "")
    name = subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'
