"""``metadata`` on create and update (kube's ``ValidateObjectMeta`` / ``ValidateObjectMetaUpdate``),
labels, annotations, finalizers, owner references, and label selectors (``metav1`` validation).
"""

from __future__ import annotations

import re

from kapi.errors import Cause
from kapi.object.meta import parse_time_or_none
from kapi.object.validation.fields import (FIELD_IMMUTABLE, Obj, _Rendered, _d, _go_map, _go_strings, _l,
    _nonnegative, _s, field_forbidden, field_invalid, field_required, field_too_long, go_quote)
from kapi.object.validation.names import (RULE_DNS1123_SUBDOMAIN, _blen, is_dns1123_label, is_qualified_name,
    is_valid_label_value, validate_name)


TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_labels(labels: object, path: str) -> list[Cause]:
    """Label keys must be qualified names, values valid label values."""
    errs: list[Cause] = []
    for key, value in _d(labels).items():
        errs.extend(field_invalid(path, key, m) for m in is_qualified_name(str(key)))
        text = value if isinstance(value, str) else ""
        errs.extend(field_invalid(path, text, m) for m in is_valid_label_value(text))
    return errs


def validate_annotations(annotations: object, path: str) -> list[Cause]:
    """Annotation keys are qualified names in any case; all together at most 256 KiB."""
    errs: list[Cause] = []
    total = 0
    for key, value in _d(annotations).items():
        errs.extend(field_invalid(path, key, m) for m in is_qualified_name(str(key).lower()))
        total += _blen(str(key)) + _blen(value if isinstance(value, str) else "")
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field_too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _validate_owner_references(refs: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    first_controller = ""
    for ref in _l(refs):
        ref = _d(ref)
        api_version, kind = _s(ref.get("apiVersion")), _s(ref.get("kind"))
        version = api_version.rsplit("/", 1)[-1] if api_version.count("/") <= 1 else ""
        if not version:
            errs.append(field_invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            errs.append(field_invalid(f"{path}.kind", kind, "kind must not be empty"))
        if not _s(ref.get("name")):
            errs.append(field_invalid(f"{path}.name", _s(ref.get("name")), "name must not be empty"))
        if not _s(ref.get("uid")):
            errs.append(field_invalid(f"{path}.uid", _s(ref.get("uid")), "uid must not be empty"))
        if ref.get("controller") is True:
            current = f"{kind}/{_s(ref.get('name'))}"
            if first_controller:
                errs.append(field_invalid(
                    path, refs, "Only one reference can have Controller set to true. Found \"true\" in "
                    f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return errs


def _validate_managed_fields(entries: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, entry in enumerate(_l(entries)):
        entry = _d(entry)
        p = f"{path}[{i}]"
        if entry.get("operation") not in ("Apply", "Update"):
            errs.append(field_invalid(f"{p}.operation", _s(entry.get("operation")),
                                      "must be `Apply` or `Update`"))
        if entry.get("fieldsType") not in (None, "", "FieldsV1"):
            errs.append(field_invalid(f"{p}.fieldsType", entry.get("fieldsType"), "must be `FieldsV1`"))
    return errs


def _validate_kube_finalizer(value: str, path: str) -> list[Cause]:
    if "/" not in value and value not in _STANDARD_FINALIZERS:
        return [field_invalid(path, value, "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def _validate_finalizers(finalizers: object, path: str, *, kube: bool) -> list[Cause]:
    errs: list[Cause] = []
    names = [f if isinstance(f, str) else "" for f in _l(finalizers)]
    for name in names:
        errs.extend(field_invalid(path, name, m) for m in is_qualified_name(name))
    if "orphan" in names and "foregroundDeletion" in names:
        errs.append(field_invalid(path, _Rendered(_go_strings(names)),
                                  "finalizer orphan and foregroundDeletion cannot be both set"))
    if kube:
        for i, name in enumerate(names):
            errs.extend(_validate_kube_finalizer(name, f"{path}[{i}]"))
    return errs


def validate_object_meta(obj: Obj, *, namespaced: bool, name_rule: str = RULE_DNS1123_SUBDOMAIN,
                         core_finalizers: bool = False) -> list[Cause]:
    """``metadata`` of an object on create, as ``ValidateObjectMeta``.

    ``name_rule`` (a ``RULE_*``) is how ``metadata.name`` is checked; ``core_finalizers``
    is kube's core rule that unqualified finalizers must be standard ones (core kinds;
    not custom resources). A kind's strategy knows both.
    """
    md = _d(obj.get("metadata"))
    errs: list[Cause] = []
    generate_name = _s(md.get("generateName"))
    if generate_name:
        errs.extend(field_invalid("metadata.generateName", generate_name, m)
                    for m in validate_name(name_rule, generate_name, prefix=True))
    name = _s(md.get("name"))
    if not name:
        errs.append(field_required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(field_invalid("metadata.name", name, m) for m in validate_name(name_rule, name))
    namespace = _s(md.get("namespace"))
    if namespaced:
        if not namespace:
            errs.append(field_required("metadata.namespace"))
        else:
            errs.extend(field_invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace))
    elif namespace:
        errs.append(field_forbidden("metadata.namespace", "not allowed on this type"))
    errs.extend(_nonnegative("metadata.generation", md.get("generation")))
    errs.extend(validate_labels(md.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(md.get("annotations"), "metadata.annotations"))
    errs.extend(_validate_owner_references(md.get("ownerReferences"), "metadata.ownerReferences"))
    errs.extend(_validate_finalizers(md.get("finalizers"), "metadata.finalizers", kube=core_finalizers))
    errs.extend(_validate_managed_fields(md.get("managedFields"), "metadata.managedFields"))
    return errs


_GO_TIME_RE = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def _go_time(value: object) -> _Rendered:
    """An RFC 3339 timestamp as Go's ``time.Time.String()`` prints it."""
    text = _s(value)
    m = _GO_TIME_RE.fullmatch(text)
    if not m:
        return _Rendered("0001-01-01 00:00:00 +0000 UTC")
    date, clock, frac, zone = m.groups()
    frac = (frac or "").rstrip("0").rstrip(".")
    tz = "+0000 UTC" if zone == "Z" else zone.replace(":", "") + " " + zone.replace(":", "")
    return _Rendered(f"{date} {clock}{frac} {tz}")


def _same_time(a: object, b: object) -> bool:
    """Two metav1.Time values compared as times, whatever their offsets (Semantic.DeepEqual's rule)."""
    if a == b:
        return True
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    ta, tb = parse_time_or_none(a), parse_time_or_none(b)
    return ta is not None and ta == tb


def validate_update_meta(new: Obj, old: Obj) -> list[Cause]:
    """``metadata`` of an update, as ``ValidateObjectMetaAccessorUpdate``.

    name, namespace, uid and creationTimestamp are immutable (an absent uid or
    creationTimestamp in ``new`` means "keep the old one"); labels, annotations,
    owner references and managed fields are validated again. deletionTimestamp,
    finalizers and resourceVersion are the registry's.
    """
    md, old_md = _d(new.get("metadata")), _d(old.get("metadata"))
    errs: list[Cause] = []
    errs.extend(_nonnegative("metadata.generation", md.get("generation")))
    for key in ("name", "namespace", "uid"):
        value, before = _s(md.get(key)), _s(old_md.get(key))
        if key == "uid" and not value:
            continue
        if value != before:
            errs.append(field_invalid(f"metadata.{key}", value, FIELD_IMMUTABLE))
    created, before = md.get("creationTimestamp"), old_md.get("creationTimestamp")
    if created and not _same_time(created, before):
        errs.append(field_invalid("metadata.creationTimestamp", _go_time(created), FIELD_IMMUTABLE))
    errs.extend(validate_labels(md.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(md.get("annotations"), "metadata.annotations"))
    errs.extend(_validate_owner_references(md.get("ownerReferences"), "metadata.ownerReferences"))
    errs.extend(_validate_managed_fields(md.get("managedFields"), "metadata.managedFields"))
    return errs


def _go_selector(selector: object) -> _Rendered:
    """A LabelSelector as ``%#v`` prints ``v1.LabelSelector``."""
    if not isinstance(selector, dict):
        return _Rendered("null")
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        items = [f"v1.LabelSelectorRequirement{{Key:{go_quote(_s(_d(e).get('key')))}, "
                 f"Operator:{go_quote(_s(_d(e).get('operator')))}, Values:{_go_strings(_d(e).get('values'))}}}"
                 for e in exprs]
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return _Rendered(f"v1.LabelSelector{{MatchLabels:{_go_map(selector.get('matchLabels'))}, "
                     f"MatchExpressions:{rendered}}}")


_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def _validate_label_selector(selector: object, path: str, *, strict_values: bool = True) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_l(selector.get("matchExpressions"))):
        expr = _d(expr)
        p = f"{path}.matchExpressions[{i}]"
        op, values = _s(expr.get("operator")), _l(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field_required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field_forbidden(
                    f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(field_invalid(f"{p}.operator", op, "not a valid selector operator"))
        key = _s(expr.get("key"))
        errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        if strict_values:
            for j, value in enumerate(values):
                errs.extend(field_invalid(f"{p}.values[{j}]", _s(value), m) for m in is_valid_label_value(_s(value)))
    return errs


def _selector_parses(selector: object) -> bool:
    """Whether ``LabelSelectorAsSelector`` accepts the selector."""
    if selector is None:
        return True
    if not isinstance(selector, dict):
        return False
    for key, value in _d(selector.get("matchLabels")).items():
        if is_qualified_name(str(key)) or is_valid_label_value(_s(value)):
            return False
    for expr in _l(selector.get("matchExpressions")):
        expr = _d(expr)
        op, values = _s(expr.get("operator")), _l(expr.get("values"))
        if op not in _SELECTOR_OPS or is_qualified_name(_s(expr.get("key"))):
            return False
        if (op in ("In", "NotIn")) != bool(values):
            return False
        if any(is_valid_label_value(_s(v)) for v in values):
            return False
    return True


def _selector_is_empty(selector: object) -> bool:
    """``labels.Selector.Empty()``: an empty selector (matches all), not a nil one."""
    sel = _d(selector)
    return isinstance(selector, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions")


def _selector_matches(selector: object, labels: object) -> bool:
    """Whether a LabelSelector selects ``labels``; a nil selector selects nothing."""
    if not isinstance(selector, dict):
        return False
    have = _d(labels)
    for key, value in _d(selector.get("matchLabels")).items():
        if have.get(key) != value:
            return False
    for expr in _l(selector.get("matchExpressions")):
        expr = _d(expr)
        key, op, values = _s(expr.get("key")), expr.get("operator"), _l(expr.get("values"))
        present = key in have
        if op == "In" and not (present and have[key] in values):
            return False
        if op == "NotIn" and present and have[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
