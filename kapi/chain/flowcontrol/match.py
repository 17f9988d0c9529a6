"""FlowSchema rules against a request (kube's pkg/util/flowcontrol/rule.go), compiled once per FlowSchema.

A FlowSchema matches a request when one of its rules does: a rule matches when one of its subjects
names the user and, for a resource request, one of its resource rules matches (a non-resource
request: one of its non-resource rules). ``compile_flow_schema`` turns a FlowSchema object into a
``FlowSchemaMatcher`` of sets and prefixes when the configuration is digested, so that matching a
request (every request, in ``Controller.classify``) is a few set look-ups.

kube's quirks kept: a wildcard (``*``) counts only when it is the list's only member (validation
makes it so; otherwise ``*`` is an ordinary value); a non-resource URL rule ``/x`` or ``/x/*``
matches ``/x`` and everything under ``/x/``; a ServiceAccount subject named ``*`` matches every
service account of its namespace; a request without a namespace matches only ``clusterScope`` rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kapi.chain.context import RequestInfo
from kapi.object.access import UserInfo

__all__ = ["FlowSchemaMatcher", "PolicyRuleMatcher", "ResourceRuleMatcher", "NonResourceRuleMatcher",
           "compile_flow_schema", "compile_rule", "request_namespace"]

Obj = dict[str, Any]
NAME_ALL = "*"  # flowcontrol's NameAll, VerbAll, APIGroupAll, ResourceAll, NamespaceEvery, NonResourceAll
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

# A compiled list: None means "every value" (the list is exactly [*]), else the set of its values.
Values = frozenset[str] | None


def _values(items: Any) -> Values:
    """kube's containsString, precomputed: the wildcard matters only as the list's only member."""
    items = [str(x) for x in items] if isinstance(items, list) else []
    if len(items) == 1 and items[0] == NAME_ALL:
        return None
    return frozenset(items)


def request_namespace(info: RequestInfo) -> str:
    """The namespace kube's RequestInfo carries: a namespace's own URL (``/api/v1/namespaces/x``) has ``x``."""
    if info.namespace or not info.is_resource:
        return info.namespace
    if info.resource == "namespaces" and info.name:  # kapi's RequestInfo leaves it empty there
        return info.name
    return ""


@dataclass(frozen=True, slots=True)
class ResourceRuleMatcher:
    verbs: Values
    api_groups: Values
    resources: Values  # "pods" or "pods/status"
    cluster_scope: bool
    namespaces: Values

    def matches(self, info: RequestInfo, namespace: str) -> bool:
        if self.verbs is not None and info.verb not in self.verbs:
            return False
        if self.resources is not None:
            seek = info.resource + "/" + info.subresource if info.subresource else info.resource
            if seek not in self.resources:
                return False
        if self.api_groups is not None and info.group not in self.api_groups:
            return False
        if not namespace:
            return self.cluster_scope
        return self.namespaces is None or namespace in self.namespaces


@dataclass(frozen=True, slots=True)
class NonResourceRuleMatcher:
    verbs: Values
    everything: bool  # a URL "*"
    paths: frozenset[str]  # exact URLs
    prefixes: tuple[str, ...]  # each URL without its trailing "*", ending in "/"

    def matches(self, info: RequestInfo) -> bool:
        if self.verbs is not None and info.verb not in self.verbs:
            return False
        path = info.path
        return self.everything or path in self.paths or path.startswith(self.prefixes)


@dataclass(frozen=True, slots=True)
class PolicyRuleMatcher:
    """One ``PolicyRulesWithSubjects``: who (users, groups, service accounts) and what (the rules)."""

    all_users: bool  # a User "*" or a Group "*"
    users: frozenset[str]  # user names, service accounts' "system:serviceaccount:<ns>:<name>" included
    groups: frozenset[str]
    service_account_namespaces: tuple[str, ...]  # "system:serviceaccount:<ns>:" of ServiceAccount "*" subjects
    resource_rules: tuple[ResourceRuleMatcher, ...]
    non_resource_rules: tuple[NonResourceRuleMatcher, ...]

    def matches_user(self, user: UserInfo) -> bool:
        if self.all_users or user.name in self.users:
            return True
        if self.groups and not self.groups.isdisjoint(user.groups):
            return True
        return bool(self.service_account_namespaces) and user.name.startswith(self.service_account_namespaces)

    def matches(self, user: UserInfo, info: RequestInfo, namespace: str) -> bool:
        return self.matches_user(user) and self.matches_request(info, namespace)

    def matches_request(self, info: RequestInfo, namespace: str) -> bool:
        """Whether its rules match the request (its subjects aside)."""
        if info.is_resource:
            for rr in self.resource_rules:
                if rr.matches(info, namespace):
                    return True
            return False
        for nr in self.non_resource_rules:
            if nr.matches(info):
                return True
        return False


@dataclass(frozen=True, slots=True)
class FlowSchemaMatcher:
    """A FlowSchema digested: its identity, its level, its distinguisher and its compiled rules."""

    name: str
    uid: str
    matching_precedence: int
    priority_level: str
    distinguisher_method: str  # "ByUser", "ByNamespace" or "" (none)
    rules: tuple[PolicyRuleMatcher, ...]

    @property
    def sort_key(self) -> tuple[int, str]:
        """kube's FlowSchemaSequence order: increasing matchingPrecedence, then name."""
        return (self.matching_precedence, self.name)

    def matches(self, user: UserInfo, info: RequestInfo, namespace: str) -> bool:
        """Whether one of its rules matches; ``namespace`` is ``request_namespace(info)``."""
        for rule in self.rules:
            if rule.matches(user, info, namespace):
                return True
        return False

    def rules_for(self, user: UserInfo) -> tuple[PolicyRuleMatcher, ...]:
        """Its rules whose subjects name ``user``: the schema can match the user's requests only through them."""
        return tuple(rule for rule in self.rules if rule.matches_user(user))

    def distinguisher(self, user: UserInfo, namespace: str) -> str:
        """kube's computeFlowDistinguisher: the user's name (ByUser), the namespace (ByNamespace), or ""."""
        if self.distinguisher_method == "ByUser":
            return user.name
        if self.distinguisher_method == "ByNamespace":
            return namespace
        return ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _resource_rule(rule: Mapping[str, Any]) -> ResourceRuleMatcher:
    return ResourceRuleMatcher(_values(rule.get("verbs")), _values(rule.get("apiGroups")),
                               _values(rule.get("resources")), rule.get("clusterScope") is True,
                               _values(rule.get("namespaces")))


def _non_resource_rule(rule: Mapping[str, Any]) -> NonResourceRuleMatcher:
    urls = [str(u) for u in rule.get("nonResourceURLs") or () if isinstance(u, str)]
    prefixes = []
    for url in urls:
        prefix = url[:-1] if url.endswith("*") else url  # strings.TrimSuffix(rulePath, "*")
        prefixes.append(prefix if prefix.endswith("/") else prefix + "/")
    return NonResourceRuleMatcher(_values(rule.get("verbs")), NAME_ALL in urls, frozenset(urls),
                                  tuple(dict.fromkeys(prefixes)))


def compile_rule(rule: Mapping[str, Any]) -> PolicyRuleMatcher:
    """One ``PolicyRulesWithSubjects`` object compiled (subjects of unknown kinds match nobody, as kube's)."""
    all_users = False
    users: set[str] = set()
    groups: set[str] = set()
    sa_namespaces: list[str] = []
    for subject in rule.get("subjects") or ():
        subject = _mapping(subject)
        kind = subject.get("kind")
        if kind == "User":
            spec = subject.get("user")
            if isinstance(spec, dict):
                name = str(spec.get("name") or "")
                if name == NAME_ALL:
                    all_users = True
                users.add(name)
        elif kind == "Group":
            spec = subject.get("group")
            if isinstance(spec, dict):
                name = str(spec.get("name") or "")
                if name == NAME_ALL:
                    all_users = True
                groups.add(name)
        elif kind == "ServiceAccount":
            spec = subject.get("serviceAccount")
            if isinstance(spec, dict):
                namespace, name = str(spec.get("namespace") or ""), str(spec.get("name") or "")
                if name == NAME_ALL:
                    sa_namespaces.append(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:")
                else:
                    users.add(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
    return PolicyRuleMatcher(
        all_users, frozenset(users), frozenset(groups), tuple(dict.fromkeys(sa_namespaces)),
        tuple(_resource_rule(_mapping(r)) for r in rule.get("resourceRules") or ()),
        tuple(_non_resource_rule(_mapping(r)) for r in rule.get("nonResourceRules") or ()))


def compile_flow_schema(obj: Obj) -> FlowSchemaMatcher:
    """A FlowSchema object (v1) compiled for matching."""
    md = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    precedence = spec.get("matchingPrecedence")
    if not isinstance(precedence, int) or isinstance(precedence, bool):
        precedence = 1000  # v1's default, for an object stored before defaulting
    method = str(_mapping(spec.get("distinguisherMethod")).get("type") or "")
    return FlowSchemaMatcher(
        name=str(md.get("name") or ""), uid=str(md.get("uid") or ""), matching_precedence=precedence,
        priority_level=str(_mapping(spec.get("priorityLevelConfiguration")).get("name") or ""),
        distinguisher_method=method,
        rules=tuple(compile_rule(_mapping(r)) for r in spec.get("rules") or ()))
