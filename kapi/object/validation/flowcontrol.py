"""flowcontrol.apiserver.k8s.io/v1: FlowSchemas and PriorityLevelConfigurations
(kube's ``pkg/apis/flowcontrol/validation``, as the v1 API of 1.30+ runs it: a Limited level's
nominalConcurrencyShares may be 0).

The mandatory objects (``exempt`` and ``catch-all``) may not change: the caller passes the fixed
(defaulted) spec of the object's name, if it is one of them, as ``mandatory``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _go_strings, _i, _l, _Rendered, _s, _semantic_equal,
    field_duplicate, field_forbidden, field_invalid, field_not_supported, field_required, go_quote,
    unique_causes)
from kapi.object.validation.names import is_dns1123_label, is_dns1123_subdomain

FS_EXEMPT = "exempt"
PL_EXEMPT = "exempt"
MAX_MATCHING_PRECEDENCE = 10000
MAX_QUEUES = 10 * 1000 * 1000
MAX_HASH_BITS = 60  # shufflesharding.MaxHashBits
PRESERVE_ZERO_SHARES_ANNOTATION = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"

SUPPORTED_DISTINGUISHERS = ("ByNamespace", "ByUser")
SUPPORTED_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")
SUPPORTED_SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
SUPPORTED_PL_TYPES = ("Exempt", "Limited")
SUPPORTED_LIMIT_RESPONSES = ("Queue", "Reject")
_NS_ERR_INTRO = "each member of this list must be '*' or a DNS-1123 label; "


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """shufflesharding.RequiredEntropyBits: the hash bits a hand of ``hand_size`` from ``deck_size`` needs."""
    return math.ceil(math.log2(deck_size) * hand_size)


def _has_wildcard(values: list[Any]) -> bool:
    return "*" in values


# ------------------------------------------------------------------------------ FlowSchema

def _subject(subject: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    kind = subject.get("kind")
    user, group, sa = subject.get("user"), subject.get("group"), subject.get("serviceAccount")
    forbidden_user = field_forbidden(f"{path}.user", "user is forbidden when subject kind is not 'User'")
    forbidden_group = field_forbidden(f"{path}.group", "group is forbidden when subject kind is not 'Group'")
    forbidden_sa = field_forbidden(f"{path}.serviceAccount",
                                   "serviceAccount is forbidden when subject kind is not 'ServiceAccount'")
    if kind == "ServiceAccount":
        if not isinstance(sa, dict):
            errs.append(field_required(f"{path}.serviceAccount",
                                       "serviceAccount is required when subject kind is 'ServiceAccount'"))
        else:
            name, namespace = _s(sa.get("name")), _s(sa.get("namespace"))
            if not name:
                errs.append(field_required(f"{path}.serviceAccount.name"))
            elif name != "*":
                errs.extend(field_invalid(f"{path}.serviceAccount.name", name, m) for m in is_dns1123_subdomain(name))
            if namespace:
                errs.extend(field_invalid(f"{path}.serviceAccount.namespace", namespace, m)
                            for m in is_dns1123_label(namespace))
            else:
                errs.append(field_required(f"{path}.serviceAccount.namespace",
                                           "must specify namespace for service account"))
        if user is not None:
            errs.append(forbidden_user)
        if group is not None:
            errs.append(forbidden_group)
    elif kind in ("User", "Group"):
        own, key = (user, "user") if kind == "User" else (group, "group")
        if not isinstance(own, dict):
            errs.append(field_required(f"{path}.{key}", f"{key} is required when subject kind is '{kind}'"))
        elif not _s(own.get("name")):
            errs.append(field_required(f"{path}.{key}.name"))
        if sa is not None:
            errs.append(forbidden_sa)
        if kind == "User" and group is not None:
            errs.append(forbidden_group)
        if kind == "Group" and user is not None:
            errs.append(forbidden_user)
    else:
        errs.append(field_not_supported(f"{path}.kind", _s(kind), SUPPORTED_SUBJECT_KINDS))
    return errs


def _verbs(verbs: list[Any], path: str) -> list[Cause]:
    if not verbs:
        return [field_required(path, "verbs must contain at least one value")]
    if _has_wildcard(verbs):
        if len(verbs) > 1:
            return [field_invalid(path, _Rendered(_go_strings(verbs)), "if '*' is present, must not specify other verbs")]
        return []
    if not set(verbs) <= set(SUPPORTED_VERBS):
        return [field_not_supported(path, _Rendered(_go_strings(verbs)), SUPPORTED_VERBS)]
    return []


def _wildcard_only(values: list[Any], path: str, what: str, missing: str) -> list[Cause]:
    if not values:
        return [field_required(path, missing)]
    if len(values) > 1 and _has_wildcard(values):
        return [field_invalid(path, _Rendered(_go_strings(values)), f"if '*' is present, must not specify other {what}")]
    return []


def _resource_rule(rule: Obj, path: str) -> list[Cause]:
    errs = _verbs(_l(rule.get("verbs")), f"{path}.verbs")
    errs += _wildcard_only(_l(rule.get("apiGroups")), f"{path}.apiGroups", "api groups",
                           "resource rules must supply at least one api group")
    errs += _wildcard_only(_l(rule.get("resources")), f"{path}.resources", "resources",
                           "resource rules must supply at least one resource")
    namespaces = _l(rule.get("namespaces"))
    if not namespaces and rule.get("clusterScope") is not True:
        errs.append(field_required(f"{path}.namespaces",
                                   "resource rules that are not cluster scoped must supply at least one namespace"))
    elif _has_wildcard(namespaces):
        if len(namespaces) > 1:
            errs.append(field_invalid(f"{path}.namespaces", _Rendered(_go_strings(namespaces)),
                                      "if '*' is present, must not specify other namespaces"))
    else:
        for i, ns in enumerate(namespaces):
            errs.extend(field_invalid(f"{path}.namespaces[{i}]", _s(ns), _NS_ERR_INTRO + m)
                        for m in is_dns1123_label(_s(ns)))
    return errs


def _non_resource_url(url: str, path: str) -> Cause | None:
    """ValidateNonResourceURLPath: a leading slash, no white-space nor '//', '*' only as a '/*' suffix."""
    if not url:
        return field_invalid(path, url, "must not be empty")
    if url == "/":
        return None
    if not url.startswith("/"):
        return field_invalid(path, url, "must start with slash")
    if " " in url:
        return field_invalid(path, url, "must not contain white-space")
    if "//" in url:
        return field_invalid(path, url, "must not contain double slash")
    stars = url.count("*")
    if stars > 1 or (stars == 1 and url[-2:] != "/*"):
        return field_invalid(path, url, "wildcard can only do suffix matching")
    return None


def _non_resource_rule(rule: Obj, path: str) -> list[Cause]:
    errs = _verbs(_l(rule.get("verbs")), f"{path}.verbs")
    urls = _l(rule.get("nonResourceURLs"))
    if not urls:
        errs.append(field_required(f"{path}.nonResourceURLs", "nonResourceURLs must contain at least one value"))
    elif _has_wildcard(urls):
        if len(urls) > 1:
            errs.append(field_invalid(f"{path}.nonResourceURLs", _Rendered(_go_strings(urls)),
                                      "if '*' is present, must not specify other non-resource URLs"))
    else:
        for i, url in enumerate(urls):
            err = _non_resource_url(_s(url), f"{path}.nonResourceURLs[{i}]")
            if err is not None:
                errs.append(err)
    return errs


def _policy_rules_with_subjects(rule: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    subjects = _l(rule.get("subjects"))
    if not subjects:
        errs.append(field_required(f"{path}.subjects", "subjects must contain at least one value"))
    for i, subject in enumerate(subjects):
        errs += _subject(_d(subject), f"{path}.subjects[{i}]")
    resource_rules, non_resource_rules = _l(rule.get("resourceRules")), _l(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errs.append(field_required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, r in enumerate(resource_rules):
        errs += _resource_rule(_d(r), f"{path}.resourceRules[{i}]")
    for i, r in enumerate(non_resource_rules):
        errs += _non_resource_rule(_d(r), f"{path}.nonResourceRules[{i}]")
    return errs


def _flow_schema_spec(name: str, spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    precedence = _i(spec.get("matchingPrecedence")) or 0
    if precedence <= 0:
        errs.append(field_invalid("spec.matchingPrecedence", precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        errs.append(field_invalid("spec.matchingPrecedence", precedence,
                                  f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != FS_EXEMPT:
        errs.append(field_invalid("spec.matchingPrecedence", precedence,
                                  "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in SUPPORTED_DISTINGUISHERS:
        rendered = _Rendered(f"flowcontrol.FlowDistinguisherMethod{{Type:{go_quote(_s(method.get('type')))}}}")
        errs.append(field_not_supported("spec.distinguisherMethod.type", rendered, SUPPORTED_DISTINGUISHERS))
    pl_name = _s(_d(spec.get("priorityLevelConfiguration")).get("name"))
    if pl_name:
        errs.extend(field_invalid("spec.priorityLevelConfiguration.name", pl_name, m)
                    for m in is_dns1123_subdomain(pl_name))
    else:
        errs.append(field_required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in enumerate(_l(spec.get("rules"))):
        errs += _policy_rules_with_subjects(_d(rule), f"spec.rules[{i}]")
    return errs


def _conditions(status: Obj) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, condition in enumerate(_l(status.get("conditions"))):
        type_ = _s(_d(condition).get("type"))
        if type_ in seen:
            errs.append(field_duplicate(f"status.conditions[{i}].type", type_))
        seen.add(type_)
        if not type_:
            errs.append(field_required(f"status.conditions[{i}].type", "must not be empty"))
    return errs


@unique_causes
def validate_flow_schema(obj: Obj, mandatory: Obj | None = None) -> list[Cause]:
    """ValidateFlowSchema (metadata aside: the registry checks it)."""
    name = _s(_d(obj.get("metadata")).get("name"))
    spec = _d(obj.get("spec"))
    errs = _flow_schema_spec(name, spec)
    if mandatory is not None and not _semantic_equal(spec, mandatory):
        errs.append(field_invalid("spec", spec, f"spec of '{name}' must equal the fixed value"))
    return errs + _conditions(_d(obj.get("status")))


@unique_causes
def validate_flow_schema_update(new: Obj, old: Obj, mandatory: Obj | None = None) -> list[Cause]:
    return validate_flow_schema(new, mandatory)


@unique_causes
def validate_flow_schema_status_update(new: Obj, old: Obj) -> list[Cause]:
    return _conditions(_d(new.get("status")))


# -------------------------------------------------------------- PriorityLevelConfiguration

def _queuing(queuing: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    qll, queues, hand = (_i(queuing.get(k)) or 0 for k in ("queueLengthLimit", "queues", "handSize"))
    if qll <= 0:
        errs.append(field_invalid(f"{path}.queueLengthLimit", qll, "must be positive"))
    if queues <= 0:
        errs.append(field_invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > MAX_QUEUES:
        errs.append(field_invalid(f"{path}.queues", queues, f"must not be greater than {MAX_QUEUES}"))
    if hand <= 0:
        errs.append(field_invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errs.append(field_invalid(f"{path}.handSize", hand, f"should not be greater than queues ({queues})"))
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        errs.append(field_invalid(f"{path}.handSize", hand, f"required entropy bits of deckSize {queues} and "
                                  f"handSize {hand} should not be greater than {MAX_HASH_BITS}"))
    return errs


def _limit_response(response: Obj, path: str) -> list[Cause]:
    type_ = response.get("type")
    queuing = response.get("queuing")
    if type_ == "Reject":
        if queuing is not None:
            return [field_forbidden(f"{path}.queuing", "must be nil if limited.limitResponse.type is not Limited")]
        return []
    if type_ == "Queue":
        if not isinstance(queuing, dict):
            return [field_required(f"{path}.queuing", "must not be empty if limited.limitResponse.type is Limited")]
        return _queuing(queuing, f"{path}.queuing")
    return [field_not_supported(f"{path}.type", _s(type_), SUPPORTED_LIMIT_RESPONSES)]


def _percent(value: object, path: str) -> list[Cause]:
    percent = _i(value)
    if percent is not None and not 0 <= percent <= 100:
        return [field_invalid(path, percent, "must be between 0 and 100, inclusive")]
    return []


def _limited(limited: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    shares = _i(limited.get("nominalConcurrencyShares")) or 0
    if shares < 0:
        errs.append(field_invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    errs += _limit_response(_d(limited.get("limitResponse")), f"{path}.limitResponse")
    errs += _percent(limited.get("lendablePercent"), f"{path}.lendablePercent")
    borrowing = _i(limited.get("borrowingLimitPercent"))
    if borrowing is not None and borrowing < 0:
        errs.append(field_invalid(f"{path}.borrowingLimitPercent", borrowing,
                                  "if specified, must be a non-negative integer"))
    return errs


def _exempt(exempt: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    shares = _i(exempt.get("nominalConcurrencyShares"))
    if shares is not None and shares < 0:
        errs.append(field_invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    return errs + _percent(exempt.get("lendablePercent"), f"{path}.lendablePercent")


def _priority_level_spec(name: str, spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    type_ = spec.get("type")
    if (name == PL_EXEMPT) != (type_ == "Exempt"):
        errs.append(field_invalid("spec.type", _s(type_), "type must be 'Exempt' if and only if name is 'exempt'"))
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if type_ == "Exempt":
        if limited is not None:
            errs.append(field_forbidden("spec.limited", "must be nil if the type is not Limited"))
        if isinstance(exempt, dict):
            errs += _exempt(exempt, "spec.exempt")
    elif type_ == "Limited":
        if exempt is not None:
            errs.append(field_forbidden("spec.exempt", "must be nil if the type is Limited"))
        if not isinstance(limited, dict):
            errs.append(field_required("spec.limited", "must not be empty when type is Limited"))
        else:
            errs += _limited(limited, "spec.limited")
    else:
        errs.append(field_not_supported("spec.type", _s(type_), SUPPORTED_PL_TYPES))
    return errs


def _mandatory_priority_level(name: str, spec: Obj, mandatory: Obj) -> list[Cause]:
    """ValidateIfMandatoryPriorityLevelConfigurationObject: the exempt level's ``spec.exempt`` may change."""
    if name == PL_EXEMPT:
        have = copy.deepcopy(spec)
        have["exempt"] = copy.deepcopy(mandatory.get("exempt"))
        if not _semantic_equal(have, mandatory):
            return [field_invalid("spec", spec, f"spec of '{name}' except the 'spec.exempt' field must equal "
                                  "the fixed value")]
        return []
    if not _semantic_equal(spec, mandatory):
        return [field_invalid("spec", spec, f"spec of '{name}' must equal the fixed value")]
    return []


@unique_causes
def validate_priority_level_configuration(obj: Obj, mandatory: Obj | None = None) -> list[Cause]:
    """ValidatePriorityLevelConfiguration (metadata aside: the registry checks it)."""
    md = _d(obj.get("metadata"))
    name = _s(md.get("name"))
    errs: list[Cause] = []
    if PRESERVE_ZERO_SHARES_ANNOTATION in _d(md.get("annotations")):
        # v1beta3's round-trip marker: never on a stored object
        errs.append(field_forbidden("metadata.annotations",
                                    f"annotation '{PRESERVE_ZERO_SHARES_ANNOTATION}' is forbidden"))
    spec = _d(obj.get("spec"))
    errs += _priority_level_spec(name, spec)
    if mandatory is not None:
        errs += _mandatory_priority_level(name, spec, mandatory)
    return errs + _conditions(_d(obj.get("status")))


@unique_causes
def validate_priority_level_configuration_update(new: Obj, old: Obj, mandatory: Obj | None = None) -> list[Cause]:
    return validate_priority_level_configuration(new, mandatory)


@unique_causes
def validate_priority_level_configuration_status_update(new: Obj, old: Obj) -> list[Cause]:
    return _conditions(_d(new.get("status")))
