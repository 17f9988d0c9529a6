"""apiextensions.k8s.io/v1: custom resource definitions."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _immutable, _l, _s, field_invalid, field_not_supported,
    field_required, unique_causes)
from kapi.object.validation.names import is_dns1035_label, is_dns1123_subdomain


@unique_causes
def validate_custom_resource_definition(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    names = _d(spec.get("names"))
    errs: list[Cause] = []
    name = _s(_d(obj.get("metadata")).get("name"))
    if name and name != f"{_s(names.get('plural'))}.{_s(spec.get('group'))}":
        errs.append(field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    group = _s(spec.get("group"))
    if not group:
        errs.append(field_required("spec.group"))
    elif is_dns1123_subdomain(group):
        errs.append(field_invalid("spec.group", group, ",".join(is_dns1123_subdomain(group))))
    elif "." not in group:
        errs.append(field_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = _s(spec.get("scope"))
    if not scope:
        errs.append(field_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(field_not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = [_d(v) for v in _l(spec.get("versions"))]
    storage = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        vname = _s(version.get("name"))
        storage += version.get("storage") is True
        if vname in seen:
            unique = False
        seen.add(vname)
        msgs = is_dns1035_label(vname)
        if msgs:
            errs.append(field_invalid(f"spec.versions[{i}].name", vname, ",".join(msgs)))
        schema = _d(version.get("schema")).get("openAPIV3Schema")
        spath = f"spec.versions[{i}].schema.openAPIV3Schema"
        if not isinstance(schema, dict):
            errs.append(field_required(spath, "schemas are required"))
        elif not _s(schema.get("type")):
            errs.append(field_required(f"{spath}.type", "must not be empty at the root"))
    rendered = [v.get("name") for v in versions]
    if not versions:
        errs.append(field_required("spec.versions", "must have at least one version"))
    else:
        if not unique:
            errs.append(field_invalid("spec.versions", rendered, "must contain unique version names"))
        if storage != 1:
            errs.append(field_invalid("spec.versions", rendered,
                    "must have exactly one version marked as storage version"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not _s(names.get(key)):
            errs.append(field_required(f"spec.names.{key}"))
    for key in ("plural", "singular"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value):
            errs.append(field_invalid(f"spec.names.{key}", value, ",".join(is_dns1035_label(value))))
    for key in ("kind", "listKind"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value.lower()):
            errs.append(field_invalid(f"spec.names.{key}", value, "may have mixed case, but should otherwise match: "
                                      + ",".join(is_dns1035_label(value.lower()))))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(_l(names.get(key))):
            if is_dns1035_label(_s(value)):
                errs.append(field_invalid(f"spec.names.{key}[{i}]", _s(value), ",".join(is_dns1035_label(_s(value)))))
    if _s(names.get("kind")) and names.get("kind") == names.get("listKind"):
        errs.append(field_invalid("spec.names.listKind", names["listKind"], "kind and listKind may not be the same"))
    return errs


@unique_causes
def validate_custom_resource_definition_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_custom_resource_definition(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs.extend(_immutable("spec.group", _s(spec.get("group")), _s(old_spec.get("group"))))
    errs.extend(_immutable("spec.names.plural", _s(_d(spec.get("names")).get("plural")),
                           _s(_d(old_spec.get("names")).get("plural"))))
    return errs
