"""rbac.authorization.k8s.io/v1: roles, cluster roles and their bindings."""

from __future__ import annotations

from typing import Any

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _Rendered, _d, _go_strings, _l, _s, field_invalid,
    field_not_supported, field_required, go_quote, unique_causes)
from kapi.object.validation.meta import _validate_label_selector
from kapi.object.validation.names import is_dns1123_subdomain, is_valid_path_segment_name


RBAC_GROUP = "rbac.authorization.k8s.io"


def _policy_rules(rules: list[Any], path: str, *, namespaced: bool) -> list[Cause]:
    errs: list[Cause] = []
    for i, rule in enumerate(rules):
        rule = _d(rule)
        p = f"{path}[{i}]"
        if not _l(rule.get("verbs")):
            errs.append(field_required(f"{p}.verbs", "verbs must contain at least one value"))
        urls = _l(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errs.append(field_invalid(f"{p}.nonResourceURLs", _Rendered(_go_strings(urls)),
                                          "namespaced rules cannot apply to non-resource URLs"))
            if _l(rule.get("apiGroups")) or _l(rule.get("resources")) or _l(rule.get("resourceNames")):
                errs.append(field_invalid(f"{p}.nonResourceURLs", _Rendered(_go_strings(urls)),
                                          "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not _l(rule.get("apiGroups")):
            errs.append(field_required(f"{p}.apiGroups", "resource rules must supply at least one api group"))
        if not _l(rule.get("resources")):
            errs.append(field_required(f"{p}.resources", "resource rules must supply at least one resource"))
    return errs


@unique_causes
def validate_role(obj: Obj) -> list[Cause]:
    return _policy_rules(_l(obj.get("rules")), "rules", namespaced=True)


@unique_causes
def validate_role_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_role(new)


@unique_causes
def validate_cluster_role(obj: Obj) -> list[Cause]:
    errs = _policy_rules(_l(obj.get("rules")), "rules", namespaced=False)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = _l(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(field_required("aggregationRule.clusterRoleSelectors",
                                       "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            errs.extend(_validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]"))
    return errs


@unique_causes
def validate_cluster_role_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_cluster_role(new)


def _go_role_ref(ref: Obj) -> _Rendered:
    return _Rendered(f"rbac.RoleRef{{APIGroup:{go_quote(_s(ref.get('apiGroup')))}, "
                     f"Kind:{go_quote(_s(ref.get('kind')))}, Name:{go_quote(_s(ref.get('name')))}}}")


def _binding(obj: Obj, *, namespaced: bool) -> list[Cause]:
    errs: list[Cause] = []
    ref = _d(obj.get("roleRef"))
    if _s(ref.get("apiGroup")) != RBAC_GROUP:
        errs.append(field_not_supported("roleRef.apiGroup", _s(ref.get("apiGroup")), (RBAC_GROUP,)))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if _s(ref.get("kind")) not in kinds:
        errs.append(field_not_supported("roleRef.kind", _s(ref.get("kind")), kinds))
    name = _s(ref.get("name"))
    if not name:
        errs.append(field_required("roleRef.name"))
    else:
        errs.extend(field_invalid("roleRef.name", name, m) for m in is_valid_path_segment_name(name))
    for i, subject in enumerate(_l(obj.get("subjects"))):
        subject = _d(subject)
        p = f"subjects[{i}]"
        sname, kind, group = _s(subject.get("name")), _s(subject.get("kind")), _s(subject.get("apiGroup"))
        if not sname:
            errs.append(field_required(f"{p}.name"))
        if kind == "ServiceAccount":
            if sname:
                errs.extend(field_invalid(f"{p}.name", sname, m) for m in is_dns1123_subdomain(sname))
            if group:
                errs.append(field_not_supported(f"{p}.apiGroup", group, ("",)))
            if not namespaced and not _s(subject.get("namespace")):
                errs.append(field_required(f"{p}.namespace"))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                errs.append(field_not_supported(f"{p}.apiGroup", group, (RBAC_GROUP,)))
        else:
            errs.append(field_not_supported(f"{p}.kind", kind, ("ServiceAccount", "User", "Group")))
    return errs


def _binding_update(new: Obj, old: Obj, *, namespaced: bool) -> list[Cause]:
    errs = _binding(new, namespaced=namespaced)
    ref, old_ref = _d(new.get("roleRef")), _d(old.get("roleRef"))
    if any(_s(ref.get(k)) != _s(old_ref.get(k)) for k in ("apiGroup", "kind", "name")):
        errs.append(field_invalid("roleRef", _go_role_ref(ref), "cannot change roleRef"))
    return errs


@unique_causes
def validate_role_binding(obj: Obj) -> list[Cause]:
    return _binding(obj, namespaced=True)


@unique_causes
def validate_role_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _binding_update(new, old, namespaced=True)


@unique_causes
def validate_cluster_role_binding(obj: Obj) -> list[Cause]:
    return _binding(obj, namespaced=False)


@unique_causes
def validate_cluster_role_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _binding_update(new, old, namespaced=False)
