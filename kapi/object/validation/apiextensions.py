"""apiextensions.k8s.io/v1: custom resource definitions, with kube's messages
(apiextensions-apiserver pkg/apis/apiextensions/validation).

The schema itself is judged by the structural-schema rules (``kapi.object.structural.validate_schema``)
and its ``x-kubernetes-validations`` by the CEL compiler (``kapi.object.cel.rule_errors``), when
those modules are there; paths are kube's internal ones (``spec.conversion.webhookClientConfig``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _immutable, _l, _s, field_duplicate, field_forbidden,
    field_invalid, field_not_supported, field_required, unique_causes)
from kapi.object.validation.names import is_dns1035_label, is_dns1123_subdomain

APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
MAX_SELECTABLE_FIELDS = 8
PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")
_URL_FORM = "; desired format: https://host[/path]"


def _too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause(reason="FieldValueTooMany", message=f"Too many: {actual}: must have at most {limit} items",
                 field=path)


def _names(names: Obj, path: str) -> list[Cause]:
    """kube's ValidateCustomResourceDefinitionNames (spec.names and status.acceptedNames)."""
    errs: list[Cause] = []
    for key in ("plural", "singular"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value):
            errs.append(field_invalid(f"{path}.{key}", value, ",".join(is_dns1035_label(value))))
    for key in ("kind", "listKind"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value.lower()):
            errs.append(field_invalid(f"{path}.{key}", value, "may have mixed case, but should otherwise match: "
                                      + ",".join(is_dns1035_label(value.lower()))))
    for i, value in enumerate(_l(names.get("shortNames"))):
        if is_dns1035_label(_s(value)):
            errs.append(field_invalid(f"{path}.shortNames[{i}]", _s(value), ",".join(is_dns1035_label(_s(value)))))
    if _s(names.get("kind")) and names.get("kind") == names.get("listKind"):
        errs.append(field_invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    for i, value in enumerate(_l(names.get("categories"))):
        if is_dns1035_label(_s(value)):
            errs.append(field_invalid(f"{path}.categories[{i}]", _s(value), ",".join(is_dns1035_label(_s(value)))))
    return errs


def _simple_json_path(s: str, path: str) -> list[Cause]:
    if not s:
        return [field_invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [field_invalid(path, s, "must be a simple json path starting with .")]
    return []


def _subresources(subs: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not isinstance(subs.get("scale"), dict):
        return errs
    scale = subs["scale"]
    for key, prefix, where in (("specReplicasPath", ".spec.", ".spec"), ("statusReplicasPath", ".status.", ".status")):
        value = _s(scale.get(key))
        p = f"{path}.scale.{key}"
        if not value:
            errs.append(field_required(p))
        elif bad := _simple_json_path(value, p):
            errs.extend(bad)
        elif not value.startswith(prefix):
            errs.append(field_invalid(p, value, f"should be a json path under {where}"))
    selector = _s(scale.get("labelSelectorPath"))
    if selector:
        p = f"{path}.scale.labelSelectorPath"
        if bad := _simple_json_path(selector, p):
            errs.extend(bad)
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(field_invalid(p, selector, "should be a json path under either .spec or .status"))
    return errs


def _printer_column(col: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not _s(col.get("name")):
        errs.append(field_required(f"{path}.name"))
    ctype = _s(col.get("type"))
    one_of = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not ctype:
        errs.append(field_required(f"{path}.type", one_of))
    elif ctype not in PRINTER_COLUMN_TYPES:
        errs.append(field_invalid(f"{path}.type", ctype, one_of))
    fmt = _s(col.get("format"))
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errs.append(field_invalid(f"{path}.format", fmt, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = _s(col.get("jsonPath"))
    if not json_path:
        errs.append(field_required(f"{path}.JSONPath"))
    else:
        errs.extend(_simple_json_path(json_path, f"{path}.JSONPath"))
    return errs


def _lookup(schema: Obj, json_path: str) -> tuple[Obj | None, str]:
    """The schema a dotted path names (kube's cel.ValidFieldPath without array notation), or an error."""
    if not json_path.startswith(".") or json_path == ".":
        return None, "expected [[ or . at position 0" if not json_path.startswith(".") else "unexpected end"
    node: Obj | None = schema
    for part in json_path[1:].split("."):
        props = _d(_d(node).get("properties"))
        if part not in props:
            return None, "does not refer to a valid field"
        node = _d(props[part])
    return node, ""


def _selectable_fields(fields: list[Any], schema: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    unique: set[str] = set()
    for i, sf in enumerate(fields):
        p = f"{path}[{i}].jsonPath"
        json_path = _s(_d(sf).get("jsonPath"))
        if not json_path:
            errs.append(field_required(p))
            continue
        if json_path == ".metadata" or json_path.startswith(".metadata."):
            errs.append(field_invalid(p, json_path, "must not point to fields in metadata"))
            continue
        found, problem = _lookup(schema, json_path)
        if found is None:
            errs.append(field_invalid(p, json_path, f"is an invalid path: {problem}"))
            continue
        if _s(found.get("type")) not in ("string", "boolean", "integer"):
            errs.append(field_invalid(p, json_path, "must point to a field of type string, boolean or integer. "
                                      "Enum string fields and strings with formats are allowed."))
        if json_path in unique:
            errs.append(field_duplicate(p, json_path))
        unique.add(json_path)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        errs.append(_too_many(path, len(unique), MAX_SELECTABLE_FIELDS))
    return errs


def _deprecation_warning(version: Obj, path: str) -> list[Cause]:
    if "deprecationWarning" not in version or version.get("deprecationWarning") is None:
        return []
    warning = _s(version.get("deprecationWarning"))
    if version.get("deprecated") is not True:
        return [field_invalid(path, warning, "can only be set for deprecated versions")]
    errs = []
    if len(warning) > 256:
        errs.append(field_invalid(path, warning, "must be <= 256 characters long"))
    if not warning:
        errs.append(field_invalid(path, warning, "must not be an empty string"))
    for i, ch in enumerate(warning.encode("utf-8").decode("utf-8")):
        if not ch.isprintable():
            index = len(warning[:i].encode("utf-8"))
            kind = "control" if ord(ch) < 32 or 127 <= ord(ch) < 160 else "non-printable"
            errs.append(field_invalid(path, warning, "must only contain printable UTF-8 characters; "
                                      f"{kind} character found at index {index}"))
            break
    return errs


def _schema_causes(schema: Obj, path: str, status_enabled: bool) -> list[Cause]:
    """The root rules, then the structural-schema rules, then the CEL rules' compile and cost errors."""
    errs: list[Cause] = []
    if status_enabled and _s(schema.get("type")) and schema.get("type") != "object":
        errs.append(field_invalid(f"{path}.type", schema["type"],
                                  'only "object" is allowed as the type at the root of the schema if the status '
                                  "subresource is enabled"))
    if schema.get("nullable") is True:
        errs.append(field_forbidden(f"{path}.nullable", "nullable cannot be true at the root"))
    # imported here: kapi.object.structural and kapi.object.cel use this package's field helpers
    from kapi.object.cel import rule_errors
    from kapi.object.structural import from_props, validate_schema
    structural_errs = list(validate_schema(schema, path))
    errs.extend(structural_errs)
    if structural_errs:
        return errs  # CEL rules are compiled against a structural schema only
    errs.extend(rule_errors(from_props(schema), path))
    return errs


def _webhook_url(url: str, path: str) -> list[Cause]:
    try:
        u = urlsplit(url)
    except ValueError as exc:
        return [field_required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errs = []
    if u.scheme != "https":
        errs.append(field_invalid(path, u.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not u.netloc or not (u.hostname or ""):
        errs.append(field_invalid(path, u.netloc, "host must be specified" + _URL_FORM))
    if "@" in u.netloc:
        errs.append(field_invalid(path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if u.fragment:
        errs.append(field_invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(field_invalid(path, u.query, "query parameters are not permitted in the URL"))
    return errs


def _webhook_service(service: Obj, path: str) -> list[Cause]:
    # kube passes (name, namespace) to ValidateWebhookService(namespace, name): its messages are crossed.
    errs = []
    if not _s(service.get("name")):
        errs.append(field_required(f"{path}.namespace", "service namespace is required"))
    if not _s(service.get("namespace")):
        errs.append(field_required(f"{path}.name", "service name is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(field_invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    svc_path = service.get("path")
    if isinstance(svc_path, str) and svc_path not in ("", "/") and not svc_path.startswith("/"):
        errs.append(field_invalid(f"{path}.path", svc_path, "must start with a '/'"))
    return errs


def _conversion(conversion: Any, path: str) -> list[Cause]:
    if not isinstance(conversion, dict):
        return []
    errs: list[Cause] = []
    strategy = _s(conversion.get("strategy"))
    if not strategy:
        errs.append(field_required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(field_not_supported(f"{path}.strategy", strategy, ("None", "Webhook")))
    webhook = conversion.get("webhook")
    client_config = _d(webhook).get("clientConfig") if isinstance(webhook, dict) else None
    review_versions = _l(_d(webhook).get("conversionReviewVersions"))
    if strategy == "Webhook":
        cc_path = f"{path}.webhookClientConfig"
        if not isinstance(client_config, dict):
            errs.append(field_required(cc_path, "required when strategy is set to Webhook"))
        elif ("url" in client_config and client_config["url"] is not None) == isinstance(client_config.get("service"),
                                                                                          dict):
            errs.append(field_required(cc_path, "exactly one of url or service is required"))
        elif client_config.get("url") is not None:
            errs.extend(_webhook_url(_s(client_config["url"]), f"{cc_path}.url"))
        else:
            errs.extend(_webhook_service(client_config["service"], f"{cc_path}.service"))
        rv_path = f"{path}.conversionReviewVersions"
        if not review_versions:
            errs.append(field_required(rv_path))
        else:
            seen: set[str] = set()
            for i, v in enumerate(review_versions):
                v = _s(v)
                if v in seen:
                    errs.append(field_invalid(f"{rv_path}[{i}]", v, "duplicate version"))
                    continue
                seen.add(v)
                for msg in is_dns1035_label(v):
                    errs.append(field_invalid(f"{rv_path}[{i}]", v, msg))
            if not seen & set(CONVERSION_REVIEW_VERSIONS):
                errs.append(field_invalid(rv_path, [_s(v) for v in review_versions],
                                          "must include at least one of " + ", ".join(CONVERSION_REVIEW_VERSIONS)))
    else:
        if client_config is not None:
            errs.append(field_forbidden(f"{path}.webhookClientConfig",
                                        "should not be set when strategy is not set to Webhook"))
        if review_versions:
            errs.append(field_forbidden(f"{path}.conversionReviewVersions",
                                        "should not be set when strategy is not set to Webhook"))
    return errs


def _api_approval(obj: Obj, old: Obj | None) -> list[Cause]:
    """kube's validateAPIApproval: *.k8s.io and *.kubernetes.io groups need the approval annotation."""
    group = _s(_d(obj.get("spec")).get("group"))
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))):
        return []

    def state(o: Obj) -> tuple[str, str]:
        value = _s(_d(_d(o.get("metadata")).get("annotations")).get(APPROVAL_ANNOTATION))
        if not value:
            return "missing", (f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", '
                               "see https://github.com/kubernetes/enhancements/pull/1111")
        if value.startswith("unapproved"):
            return "bypassed", ""
        u = urlsplit(value)
        if u.scheme and u.netloc:
            return "approved", ""
        return "invalid", (f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a '
                           'URL or a reason starting with "unapproved", '
                           "see https://github.com/kubernetes/enhancements/pull/1111")

    new_state, reason = state(obj)
    if old is not None and state(old)[0] == new_state:
        return []
    path = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
    if new_state == "missing":
        return [field_required(path, reason)]
    if new_state == "invalid":
        return [field_invalid(path, _d(obj["metadata"]["annotations"])[APPROVAL_ANNOTATION], reason)]
    return []


def _spec(obj: Obj) -> list[Cause]:
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
    for i, version in enumerate(versions):
        if not isinstance(_d(version.get("schema")).get("openAPIV3Schema"), dict):
            errs.append(field_required(f"spec.versions[{i}].schema.openAPIV3Schema"))
    storage = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        vpath = f"spec.versions[{i}]"
        vname = _s(version.get("name"))
        storage += version.get("storage") is True
        if vname in seen:
            unique = False
        seen.add(vname)
        msgs = is_dns1035_label(vname)
        if msgs:
            errs.append(field_invalid(f"{vpath}.name", vname, ",".join(msgs)))
        errs.extend(_deprecation_warning(version, f"{vpath}.deprecationWarning"))
        subs = _d(version.get("subresources"))
        schema = _d(version.get("schema")).get("openAPIV3Schema")
        if isinstance(schema, dict):
            errs.extend(_schema_causes(schema, f"{vpath}.schema.openAPIV3Schema", isinstance(subs.get("status"), dict)))
        errs.extend(_subresources(subs, f"{vpath}.subresources"))
        for j, col in enumerate(_l(version.get("additionalPrinterColumns"))):
            errs.extend(_printer_column(_d(col), f"{vpath}.additionalPrinterColumns[{j}]"))
        selectable = _l(version.get("selectableFields"))
        if selectable:
            if not isinstance(schema, dict):
                errs.append(field_invalid(f"{vpath}.selectableFields", "",
                                          "may only be set when `version.schema.openAPIV3Schema` is not included"))
            else:
                errs.extend(_selectable_fields(selectable, schema, f"{vpath}.selectableFields"))
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
    errs.extend(_names(names, "spec.names"))
    if spec.get("preserveUnknownFields") is True and _s(_d(spec.get("conversion")).get("strategy")) not in ("", "None"):
        errs.append(field_invalid("spec.conversion.strategy", _d(spec.get("conversion")).get("strategy"),
                                  "must be None if spec.preserveUnknownFields is true"))
    errs.extend(_conversion(spec.get("conversion"), "spec.conversion"))
    return errs


@unique_causes
def validate_custom_resource_definition(obj: Obj) -> list[Cause]:
    errs = _spec(obj)
    errs.extend(_names(_d(_d(obj.get("status")).get("acceptedNames")), "status.acceptedNames"))
    errs.extend(_api_approval(obj, None))
    return errs


def _stored_versions(obj: Obj) -> list[Cause]:
    """kube's ValidateCustomResourceDefinitionStoredVersions (an update: the status holds them by then)."""
    status = _d(obj.get("status"))
    stored = [_s(v) for v in _l(status.get("storedVersions"))]
    path = "status.storedVersions"
    if not stored:
        return []  # kapi: a CRD the controller has not yet seen (kube's strategy sets them on create)
    errs: list[Cause] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for version in (_d(v) for v in _l(_d(obj.get("spec")).get("versions"))):
        vname = _s(version.get("name"))
        if version.get("storage") is True and vname not in remaining and vname not in stored:
            errs.append(field_invalid(path, stored, "must have the storage version " + vname))
        remaining.pop(vname, None)
    for v, i in sorted(remaining.items(), key=lambda kv: kv[1]):
        errs.append(field_invalid(f"{path}[{i}]", v, (
            f"missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions "
            f"until a storage migration ensures no data remains persisted in {v} and removes {v} from "
            "status.storedVersions")))
    return errs


def _established(obj: Obj) -> bool:
    return any(_d(c).get("type") == "Established" and _d(c).get("status") == "True"
               for c in _l(_d(obj.get("status")).get("conditions")))


@unique_causes
def validate_custom_resource_definition_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _spec(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    if _established(old):
        errs.extend(_immutable("spec.scope", _s(spec.get("scope")), _s(old_spec.get("scope"))))
        errs.extend(_immutable("spec.names.kind", _s(_d(spec.get("names")).get("kind")),
                               _s(_d(old_spec.get("names")).get("kind"))))
    errs.extend(_immutable("spec.group", _s(spec.get("group")), _s(old_spec.get("group"))))
    errs.extend(_immutable("spec.names.plural", _s(_d(spec.get("names")).get("plural")),
                           _s(_d(old_spec.get("names")).get("plural"))))
    errs.extend(_names(_d(_d(new.get("status")).get("acceptedNames")), "status.acceptedNames"))
    errs.extend(_stored_versions(new))
    errs.extend(_api_approval(new, old))
    if old_spec.get("preserveUnknownFields") is not True and spec.get("preserveUnknownFields") is True:
        errs.append(field_invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                                  "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return errs
