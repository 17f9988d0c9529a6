"""The RBAC authorization mode, evaluated from the shared RBAC informers (kube's RBACAuthorizer).

kube's DefaultRuleResolver visits, for a user and a namespace, every ClusterRoleBinding naming
the user and then every RoleBinding of the namespace naming it, and each rule of the role each
references; the first rule allowing the request allows it (with the binding in the reason), and
nothing else decides: RBAC never denies, it has no opinion. Errors met on the way (a binding to a
role that does not exist) are reported in the reason of a refusal.

Here the four informers feed an index, kept up to date by their handlers (each object is decoded
once per change, never per request): roles and cluster roles by name, and bindings by subject
(user name, group name) per namespace. A request looks up the bindings of the user's name and
groups only, and the resolved rules of a (user, groups, namespace) are memoised until the next
RBAC change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from kapi.errors import aggregate_messages
from kapi.object.access import (NO_OPINION, ALLOW, Attributes, Decision, NonResourceRule, ResourceRule, Rules,
                                UserInfo)
from kapi.object.rbac import applies_to, describe_subject, rule_allows, subject_key

if TYPE_CHECKING:
    from kapi.registry.informer import Informer, Informers, Item

RBAC_GROUP = "rbac.authorization.k8s.io"
Obj = dict[str, Any]
MEMO_LIMIT = 4096  # resolved (user, groups, namespace) entries kept between RBAC changes


@dataclass(frozen=True, slots=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding, as the index keeps it."""

    namespace: str
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_object(cls, obj: Obj) -> Binding:
        md = obj.get("metadata") or {}
        ref = obj.get("roleRef") or {}
        subjects = tuple(s for s in (obj.get("subjects") or ()) if isinstance(s, dict))
        return cls(md.get("namespace") or "", md.get("name") or "", str(ref.get("kind") or ""),
                   str(ref.get("name") or ""), subjects)

    def keys(self) -> Iterator[tuple[str, str]]:
        """The index keys of its subjects: ("u", user name) for User and ServiceAccount subjects, ("g", group)."""
        for s in self.subjects:
            key = subject_key(s, self.namespace)
            if key is not None:
                yield key

    def describe(self, subject: Mapping[str, Any]) -> str:
        """kube's binding describers: ``ClusterRoleBinding "x" of ClusterRole "y" to User "z"``."""
        if self.namespace:
            return (f'RoleBinding "{self.name}/{self.namespace}" of {self.role_kind} "{self.role_name}" '
                    f"to {describe_subject(subject, self.namespace)}")
        return (f'ClusterRoleBinding "{self.name}" of {self.role_kind} "{self.role_name}" '
                f'to {describe_subject(subject, "")}')


class Grant:
    """The rules one binding gives a user, and the subject of the binding that names the user."""

    __slots__ = ("binding", "subject", "rules", "_source")

    def __init__(self, binding: Binding, subject: Mapping[str, Any], rules: tuple[Mapping[str, Any], ...]) -> None:
        self.binding, self.subject, self.rules = binding, subject, rules
        self._source = ""

    @property
    def source(self) -> str:
        """Where the rules come from, as kube's reasons say it (made once, when first asked)."""
        if not self._source:
            self._source = self.binding.describe(self.subject)
        return self._source


@dataclass(frozen=True, slots=True)
class Resolved:
    """What RBAC gives one (user, groups, namespace): the grants in kube's visiting order, and the errors met."""

    grants: tuple[Grant, ...]
    errors: tuple[str, ...]


def _rules(obj: Obj) -> tuple[Mapping[str, Any], ...]:
    return tuple(r for r in (obj.get("rules") or ()) if isinstance(r, dict))


class RBACIndex:
    """Roles, cluster roles and bindings, indexed for lookups by subject; fed by informer handlers."""

    def __init__(self) -> None:
        self.roles: dict[tuple[str, str], tuple[Mapping[str, Any], ...]] = {}  # (namespace, name) -> rules
        self.cluster_roles: dict[str, tuple[Mapping[str, Any], ...]] = {}
        self.bindings: dict[tuple[str, str], Binding] = {}  # (namespace, name); namespace "" for cluster
        # namespace ("" for cluster bindings) -> subject key -> {binding name: None} (an ordered set)
        self.by_subject: dict[str, dict[tuple[str, str], dict[str, None]]] = {}
        self.generation = 0
        self._memo: dict[tuple[str, tuple[str, ...], str], Resolved] = {}

    def _changed(self) -> None:
        self.generation += 1
        self._memo.clear()

    # ------------------------------------------------------------- updates

    def put_role(self, namespace: str, name: str, obj: Obj) -> None:
        self.roles[(namespace, name)] = _rules(obj)
        self._changed()

    def delete_role(self, namespace: str, name: str) -> None:
        self.roles.pop((namespace, name), None)
        self._changed()

    def put_cluster_role(self, name: str, obj: Obj) -> None:
        self.cluster_roles[name] = _rules(obj)
        self._changed()

    def delete_cluster_role(self, name: str) -> None:
        self.cluster_roles.pop(name, None)
        self._changed()

    def put_binding(self, binding: Binding) -> None:
        self._unindex(binding.namespace, binding.name)
        self.bindings[(binding.namespace, binding.name)] = binding
        index = self.by_subject.setdefault(binding.namespace, {})
        for key in binding.keys():
            index.setdefault(key, {})[binding.name] = None
        self._changed()

    def delete_binding(self, namespace: str, name: str) -> None:
        self._unindex(namespace, name)
        self._changed()

    def _unindex(self, namespace: str, name: str) -> None:
        old = self.bindings.pop((namespace, name), None)
        if old is None:
            return
        index = self.by_subject.get(namespace, {})
        for key in old.keys():
            names = index.get(key)
            if names is not None:
                names.pop(name, None)
                if not names:
                    del index[key]
        if not index:
            self.by_subject.pop(namespace, None)

    # ------------------------------------------------------------- lookups

    def _candidates(self, user: UserInfo, namespace: str) -> list[Binding]:
        """The bindings of ``namespace`` ("" for cluster bindings) that may name ``user``, by name."""
        index = self.by_subject.get(namespace)
        if not index:
            return []
        names: set[str] = set()
        hit = index.get(("u", user.name))
        if hit:
            names.update(hit)
        for group in user.groups:
            hit = index.get(("g", group))
            if hit:
                names.update(hit)
        return [self.bindings[(namespace, n)] for n in sorted(names)]

    def role_rules(self, binding: Binding) -> tuple[tuple[Mapping[str, Any], ...] | None, str]:
        """kube's GetRoleReferenceRules: the rules of the role ``binding`` references, or an error message
        (the informer listers' NotFound: ``clusterrole.rbac.authorization.k8s.io "x" not found``)."""
        if binding.role_kind == "Role":
            rules = self.roles.get((binding.namespace, binding.role_name))
            if rules is None:
                return None, f'role.{RBAC_GROUP} "{binding.role_name}" not found'
            return rules, ""
        if binding.role_kind == "ClusterRole":
            rules = self.cluster_roles.get(binding.role_name)
            if rules is None:
                return None, f'clusterrole.{RBAC_GROUP} "{binding.role_name}" not found'
            return rules, ""
        return None, f'unsupported role reference kind: "{binding.role_kind}"'

    def resolve(self, user: UserInfo, namespace: str) -> Resolved:
        """The grants of ``user`` in ``namespace`` (cluster bindings first, then the namespace's), memoised."""
        key = (user.name, tuple(user.groups), namespace)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        grants: list[Grant] = []
        errs: list[str] = []
        scopes = ("", namespace) if namespace else ("",)
        for scope in scopes:
            for binding in self._candidates(user, scope):
                subject = next((s for s in binding.subjects if applies_to(s, user, scope)), None)
                if subject is None:
                    continue
                rules, err = self.role_rules(binding)
                if rules is None:
                    errs.append(err)
                    continue
                grants.append(Grant(binding, subject, rules))
        resolved = Resolved(tuple(grants), tuple(errs))
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = resolved
        return resolved


class RBAC:
    """The ``RBAC`` authorization mode and rule resolver, reading the shared RBAC informers."""

    name = "RBAC"

    def __init__(self, informers: Informers | None = None, index: RBACIndex | None = None) -> None:
        self.index = index or RBACIndex()
        if informers is not None:
            self.watch(informers)

    def watch(self, informers: Informers) -> None:
        """Feed the index from the four shared RBAC informers of ``informers``."""
        ix = self.index
        _follow(informers.informer(RBAC_GROUP, "roles"),
                lambda item: ix.put_role(item.namespace, item.name, item.object()),
                lambda item: ix.delete_role(item.namespace, item.name))
        _follow(informers.informer(RBAC_GROUP, "clusterroles"),
                lambda item: ix.put_cluster_role(item.name, item.object()),
                lambda item: ix.delete_cluster_role(item.name))
        for resource in ("rolebindings", "clusterrolebindings"):
            _follow(informers.informer(RBAC_GROUP, resource),
                    lambda item: ix.put_binding(Binding.from_object(item.object())),
                    lambda item: ix.delete_binding(item.namespace, item.name))

    async def authorize(self, attrs: Attributes) -> Decision:
        return self.decide(attrs)

    def decide(self, attrs: Attributes) -> Decision:
        """kube's RBACAuthorizer.Authorize: Allow with the granting binding, else NoOpinion (with the errors met)."""
        resolved = self.index.resolve(attrs.user, attrs.namespace)
        for grant in resolved.grants:
            for rule in grant.rules:
                if rule_allows(rule, attrs):
                    return Decision(ALLOW, f"RBAC: allowed by {grant.source}")
        if resolved.errors:
            return Decision(NO_OPINION, f"RBAC: {aggregate_messages(resolved.errors)}")
        return Decision(NO_OPINION)

    def rules_and_errors(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[str]]:
        """kube's DefaultRuleResolver.RulesFor: every rule that applies (PolicyRule dicts, copies) and the errors."""
        resolved = self.index.resolve(user, namespace)
        rules = [_copy_rule(rule) for grant in resolved.grants for rule in grant.rules]
        return rules, list(resolved.errors)

    def resolved_rules(self, user: UserInfo, namespace: str) -> list[Obj]:
        """The PolicyRules ``user`` holds in ``namespace`` (cluster-wide ones included), for escalation checks."""
        return self.rules_and_errors(user, namespace)[0]

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """kube's RBACAuthorizer.RulesFor: a rule with resources is a resource rule, one with
        nonResourceURLs a non-resource rule (a rule with both is both); never incomplete."""
        resolved = self.index.resolve(user, namespace)
        resource: list[ResourceRule] = []
        non_resource: list[NonResourceRule] = []
        for grant in resolved.grants:
            for rule in grant.rules:
                verbs = _strings(rule.get("verbs"))
                if rule.get("resources"):
                    resource.append(ResourceRule(verbs, _strings(rule.get("apiGroups")),
                                                 _strings(rule.get("resources")),
                                                 _strings(rule.get("resourceNames"))))
                if rule.get("nonResourceURLs"):
                    non_resource.append(NonResourceRule(verbs, _strings(rule.get("nonResourceURLs"))))
        return Rules(tuple(resource), tuple(non_resource), False, aggregate_messages(resolved.errors))


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _copy_rule(rule: Mapping[str, Any]) -> Obj:
    return {k: list(v) if isinstance(v, list | tuple) else v for k, v in rule.items()}


def _follow(informer: Informer, put: Callable[[Item], None], delete: Callable[[Item], None]) -> None:
    informer.add_handler(put, lambda _old, new: put(new), delete)
