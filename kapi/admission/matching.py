"""Which writes an admission webhook or policy applies to (kube's admission/plugin/webhook/predicates
and admission/plugin/policy/matching).

A rule (``RuleWithOperations``; a policy's ``NamedRuleWithOperations``) matches an operation, API
group, version, resource (``pods``, ``pods/status``, ``pods/*``, ``*/scale``, ``*/*``) and scope. A
``namespaceSelector`` is matched against the labels of the request's namespace (a Namespace's own
labels when the request writes it), an ``objectSelector`` against the new or the old object's. With
``matchPolicy: Equivalent`` a rule that does not name the request's resource may name the same
objects served at another version or group (those sharing its storage: every version of a custom
resource, autoscaling/v1 and v2 HorizontalPodAutoscalers, core and events.k8s.io Events); the
hook or policy then sees the object converted to that version (``convert``).
"""

from __future__ import annotations

import copy
from typing import Any

from kapi import errors
from kapi.admission.plugin import Attributes, Objects
from kapi.object.selectors import LabelSelector, label_selector_from_spec
from kapi.registry.admit import CREATE, UPDATE
from kapi.registry.resources import Resource, ResourceTable

Obj = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
# kube's IsExemptAdmissionConfigurationResource: webhooks are never called for these kinds, so that a
# broken webhook cannot lock its own configuration (or the policies) away.
EXEMPT_KINDS = frozenset((
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
))


def is_exempt(a: Attributes) -> bool:
    """Whether the request writes a webhook configuration or an admission policy (or binding)."""
    group, _, kind = a.gvk
    return group == ADMISSION_GROUP and kind in EXEMPT_KINDS


def _is_namespace_resource(res: Resource) -> bool:
    return res.group == "" and res.resource == "namespaces"


def _exact_or_wildcard(items: Any, requested: str) -> bool:
    return any(item == "*" or item == requested for item in items or ())


def rule_matches(rule: Obj, a: Attributes, res: Resource | None = None) -> bool:
    """kube's ``rules.Matcher.Matches``: ``rule`` against the request (or, for matchPolicy
    Equivalent, against the equivalent resource ``res`` with the request's subresource)."""
    res = res or a.resource
    scope = rule.get("scope") or "*"
    if scope != "*":
        namespaced = not _is_namespace_resource(res) and bool(a.namespace)
        if scope == "Namespaced" and not namespaced:
            return False
        if scope == "Cluster" and namespaced:
            return False
        if scope not in ("Namespaced", "Cluster"):
            return False
    if not _exact_or_wildcard(rule.get("operations"), a.operation):
        return False
    if not _exact_or_wildcard(rule.get("apiGroups"), res.group):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions"), res.version):
        return False
    sub = a.subresource
    for item in rule.get("resources") or ():
        r, _, s = str(item).partition("/")
        if (r == "*" or r == res.resource) and (s == "*" or s == sub):
            return True
    return False


def parse_selector(selector: Obj | None) -> LabelSelector:
    """A LabelSelector (None: the API's default ``{}``, everything); a bad one is kube's 500."""
    try:
        parsed = label_selector_from_spec(selector or {})
    except errors.StatusError as exc:
        raise errors.InternalError(exc.message) from None
    return parsed or LabelSelector()


def _labels(obj: Obj | None) -> dict[str, str]:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    labels = md.get("labels") if isinstance(md, dict) else None
    return labels if isinstance(labels, dict) else {}


def namespace_name(a: Attributes) -> str:
    """The namespace a request is in; a Namespace's own name for a request on a Namespace (kube
    sets the request's namespace so)."""
    if _is_namespace_resource(a.resource):
        return a.name or a.namespace or str(((a.obj or a.old or {}).get("metadata") or {}).get("name") or "")
    return a.namespace


async def namespace_labels(a: Attributes, objects: Objects) -> dict[str, str]:
    """kube's ``GetNamespaceLabels``: a Namespace being created or updated gives its new labels;
    otherwise the namespace's (informer, else storage); NotFound when it does not exist."""
    if _is_namespace_resource(a.resource) and not a.subresource and a.operation in (CREATE, UPDATE):
        return _labels(a.obj)
    name = namespace_name(a)
    ns = await objects.get("", "namespaces", "", name)
    if ns is None:
        raise errors.not_found("namespaces", "", name)
    return _labels(ns)


async def namespace_matches(selector: Obj | None, a: Attributes, objects: Objects,
                            parsed: LabelSelector | None = None) -> bool:
    """kube's ``MatchNamespaceSelector``: a cluster-scoped request (not on a Namespace) always
    matches; an empty selector matches; else the namespace's labels. Raises NotFound (404) for a
    missing namespace, InternalError for a bad selector."""
    if not a.namespace and not _is_namespace_resource(a.resource):
        return True
    sel = parsed if parsed is not None else parse_selector(selector)
    if sel.empty:
        return True
    return sel.matches(await namespace_labels(a, objects))


def object_matches(selector: Obj | None, a: Attributes, parsed: LabelSelector | None = None) -> bool:
    """kube's ``MatchObjectSelector``: an empty selector matches; else the new object's or the old
    object's labels (a missing object matches nothing)."""
    sel = parsed if parsed is not None else parse_selector(selector)
    if sel.empty:
        return True
    return any(obj is not None and sel.matches(_labels(obj)) for obj in (a.obj, a.old))


def equivalents(a: Attributes, table: ResourceTable) -> list[Resource]:
    """kube's ``EquivalentResourcesFor(resource, subresource)``: every served resource holding the same
    objects (the request's own first), that serves the request's subresource."""
    return [a.resource, *(r for r in table.sharing_storage(a.resource)
                          if not a.subresource or a.subresource in r.subresources)]


def kind_for(res: Resource, a: Attributes) -> tuple[str, str, str]:
    """kube's ``KindFor(equivalent, subresource)``: the kind the equivalent resource's (sub)resource
    takes. A subresource with its own kind (a Scale, an Eviction) keeps the request's."""
    if a.request.kind[2]:
        return a.request.kind
    return (res.group, res.version, res.kind)


def _rules_match(named_rules: Any, match_policy: str | None, a: Attributes,
                 table: ResourceTable) -> tuple[bool, Resource | None]:
    """kube's ``matchesResourceRules``: the first rule matching the request (and naming it, if the
    rule has resourceNames); then, under matchPolicy Equivalent, the first rule matching an
    equivalent resource (whose names kube does not check). Gives the resource matched."""
    for rule in named_rules or ():
        if not rule_matches(rule, a):
            continue
        names = rule.get("resourceNames") or []
        if not names or a.name in names:
            return True, a.resource
    if match_policy != "Equivalent":
        return False, None
    eq = equivalents(a, table)[1:]
    for rule in named_rules or ():
        for res in eq:
            if rule_matches(rule, a, res):
                return True, res
    return False, None


def webhook_rules_match(rules: Any, match_policy: str | None, a: Attributes,
                        table: ResourceTable) -> Resource | None:
    """A webhook's rules (kube's ``ShouldCallHook``): the resource matched (the request's own, or an
    equivalent one under matchPolicy Equivalent), None when no rule matches."""
    for rule in rules or ():
        if rule_matches(rule, a):
            return a.resource
    if match_policy == "Equivalent":
        eq = equivalents(a, table)[1:]
        for rule in rules or ():
            for res in eq:
                if rule_matches(rule, a, res):
                    return res
    return None


async def match_resources(constraints: Obj, a: Attributes, objects: Objects,
                          table: ResourceTable) -> tuple[bool, Resource | None]:
    """kube's policy ``Matcher.Matches``: a MatchResources (namespaceSelector, objectSelector,
    excludeResourceRules, resourceRules, matchPolicy) against the request. Gives whether it matches
    and the resource matched (the request's own or an equivalent one). Selector errors (a missing
    namespace, a bad selector) are raised only when the rules otherwise match, as kube does."""
    ns_err: errors.StatusError | None = None
    try:
        if not await namespace_matches(constraints.get("namespaceSelector"), a, objects):
            return False, None
    except errors.StatusError as exc:
        ns_err = exc
    obj_err: errors.StatusError | None = None
    try:
        if not object_matches(constraints.get("objectSelector"), a):
            return False, None
    except errors.StatusError as exc:
        obj_err = exc
    policy = constraints.get("matchPolicy")
    excluded, _ = _rules_match(constraints.get("excludeResourceRules"), policy, a, table)
    if excluded:
        return False, None
    rules = constraints.get("resourceRules")
    if not rules:
        matched: Resource | None = a.resource
    else:
        ok, matched = _rules_match(rules, policy, a, table)
        if not ok:
            return False, None
    if ns_err is not None:
        raise ns_err
    if obj_err is not None:
        raise obj_err
    return True, matched


def convert_to(res_from: Resource, res_to: Resource, obj: Obj) -> Obj:
    """``obj`` (an object of ``res_from``) as ``res_to`` serves it, through the strategies' storage
    conversion (a copy; ``obj`` is left alone). Conversion that is I/O (a CRD's conversion
    webhook) needs ``convert``."""
    if res_from is res_to or (res_from.group, res_from.version, res_from.resource) == (
            res_to.group, res_to.version, res_to.resource):
        return obj
    stored = res_from.strategy.to_storage(copy.deepcopy(obj))
    out = res_to.strategy.from_storage(copy.deepcopy(stored))
    api_version = res_to.group_version
    if isinstance(out, dict) and out.get("apiVersion") != api_version and out.get("kind") == res_to.kind:
        out["apiVersion"] = api_version
    return out


async def convert(res_from: Resource, res_to: Resource, obj: Obj) -> Obj:
    """``convert_to``, also for resources whose conversion is I/O (``Strategy.converts_async``)."""
    if res_from is res_to or (res_from.group, res_from.version, res_from.resource) == (
            res_to.group, res_to.version, res_to.resource):
        return obj
    if not (res_from.strategy.converts_async or res_to.strategy.converts_async):
        return convert_to(res_from, res_to, obj)
    mid = await res_from.strategy.convert_to_storage(copy.deepcopy(obj))
    stored = res_from.strategy.to_storage(mid)
    out = res_to.strategy.from_storage(copy.deepcopy(stored))
    return (await res_to.strategy.convert_from_storage([out]))[0]


async def versioned(a: Attributes, res: Resource) -> tuple[Obj | None, Obj | None]:
    """The request's (object, old object) at the matched resource ``res`` (kube's VersionedAttributes).
    A subresource with a kind of its own (a Scale) is not converted."""
    if res is a.resource or a.request.kind[2]:
        return a.obj, a.old
    new = await convert(a.resource, res, a.obj) if isinstance(a.obj, dict) else a.obj
    old = await convert(a.resource, res, a.old) if isinstance(a.old, dict) else a.old
    return new, old
