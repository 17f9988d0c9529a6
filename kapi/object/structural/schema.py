"""The rules a CRD version's ``openAPIV3Schema`` must pass, with kube's causes and field paths
(``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``):

- structural (apiextensions ``schema/validation.go`` and ``complete.go``, ``ValidateStructural``): a
  ``type`` at every level (unless int-or-string / preserve-unknown-fields), nothing but value
  validations inside allOf/anyOf/oneOf/not, metadata at the root restricted to name/generateName,
  embedded resources' rules; sorted as kube sorts them;
- defaults (``defaulting.ValidateDefaults``): each default valid against its node and pruned;
- the OpenAPI subset CRDs may use (``ValidateCustomResourceDefinitionOpenAPISchema``): no uniqueItems,
  additionalProperties xor properties, list-type/map-type/list-map-keys consistency, the
  ``x-kubernetes-validations`` fields (CEL compilation and cost are kapi.object.cel's).
"""

from __future__ import annotations

from typing import Any

from kapi.errors import Cause
from kapi.object.structural import from_props
from kapi.object.structural._gofmt import go_body_value
from kapi.object.structural.formats import compile_pattern
from kapi.object.validation.fields import go_quote

__all__ = ["validate_schema", "validate_structural", "validate_defaults", "validate_openapi_subset"]

_OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_SUPPORTED_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_META_FIELDS = ("metadata", "kind", "apiVersion")


def _required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), field)


def _forbidden(field: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {go_body_value(value)}: {detail}", field)


def _not_supported(field: str, value: Any, valid: tuple[str, ...]) -> Cause:
    return Cause("FieldValueNotSupported", f"Unsupported value: {go_body_value(value)}: supported values: "
                 + ", ".join(go_quote(v) for v in valid), field)


def _err_text(c: Cause) -> str:
    # field.Error.Error(): "<field>: <body>", what kube sorts structural errors by
    return f"{c.field}: {c.message}"


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _props(p: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _d(p.get("properties")).items() if isinstance(v, dict)}


def _items(p: dict[str, Any]) -> dict[str, Any] | None:
    it = p.get("items")
    return it if isinstance(it, dict) else None


def _ap_schema(p: dict[str, Any]) -> dict[str, Any] | None:
    ap = p.get("additionalProperties")
    return ap if isinstance(ap, dict) else None


# ------------------------------------------------------------------ structural

_ROOT, _ITEM, _FIELD = range(3)

_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _is_int_or_string_any_of(p: dict[str, Any]) -> bool:
    return p.get("anyOf") == _INT_OR_STRING_ANY_OF


def _is_int_or_string_all_of(p: dict[str, Any]) -> bool:
    all_of = p.get("allOf")
    return isinstance(all_of, list) and len(all_of) >= 1 and isinstance(all_of[0], dict) and \
        all_of[0].get("anyOf") == _INT_OR_STRING_ANY_OF


def _invariants(p: dict[str, Any], lvl: int, path: str, errs: list[Cause]) -> None:
    typ = p.get("type") or ""
    items = _items(p)
    if typ == "array" and items is None:
        errs.append(_required(f"{path}.items", "must be specified"))
    if items is not None:
        _invariants(items, _ITEM, f"{path}.items", errs)
    props = _props(p)
    for k, v in props.items():
        _invariants(v, _FIELD, f"{path}.properties[{k}]", errs)
    has_ap = p.get("additionalProperties") is not None
    if has_ap:
        if lvl == _ROOT:
            errs.append(_forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        ap = _ap_schema(p)
        if ap is not None:
            _invariants(ap, _FIELD, f"{path}.additionalProperties", errs)
    int_or_string = bool(p.get("x-kubernetes-int-or-string"))
    preserve = bool(p.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(p.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        errs.append(_invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True,
                             "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(_invalid(f"{path}.x-kubernetes-embedded-resource", True,
                             "must be false if x-kubernetes-int-or-string is true"))
    _value_validation(p, _is_int_or_string_any_of(p), _is_int_or_string_all_of(p), lvl, path, errs)
    check_metadata = lvl == _ROOT or embedded
    if embedded and typ != "object":
        if not typ:
            errs.append(_required(f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(_invalid(f"{path}.type", typ, "must be object if x-kubernetes-embedded-resource is true"))
    elif not typ and not int_or_string and not preserve:
        detail = {_ROOT: "must not be empty at the root", _ITEM: "must not be empty for specified array items",
                  _FIELD: "must not be empty for specified object fields"}[lvl]
        errs.append(_required(f"{path}.type", detail))
    if embedded and has_ap:
        errs.append(_forbidden(f"{path}.additionalProperties",
                               "must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == _ROOT and typ and typ != "object":
        errs.append(_invalid(f"{path}.type", typ, "must be object at the root"))
    if check_metadata:
        for name in ("kind", "apiVersion"):
            if name in props and props[name].get("type") != "string":
                errs.append(_invalid(f"{path}.properties[{name}].type", props[name].get("type") or "", "must be string"))
    if "metadata" in props:
        _metadata_invariants(props["metadata"], check_metadata, lvl, f"{path}.properties[metadata]", errs)
    if embedded and not preserve and not props:
        errs.append(_required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is true "
                                                   "without x-kubernetes-preserve-unknown-fields"))


# the keys a Structural keeps (what reflect.DeepEqual compares in the root metadata rule)
_STRUCTURAL_KEYS = ("items", "properties", "additionalProperties", "type", "title", "description", "nullable",
                    "default", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
                    "x-kubernetes-map-type", "x-kubernetes-validations", "format", "maximum", "exclusiveMaximum",
                    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                    "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties", "required", "allOf",
                    "oneOf", "anyOf", "not")


def _empty(v: Any) -> bool:
    return v is None or v is False or v == "" or v == [] or v == {} or v == 0 and not isinstance(v, bool)


def _metadata_invariants(p: dict[str, Any], check_metadata: bool, lvl: int, path: str, errs: list[Cause]) -> None:
    typ = p.get("type") or ""
    if check_metadata and typ != "object":
        errs.append(_invalid(f"{path}.type", typ, "must be object"))
    if lvl == _ROOT:
        rest = dict(p)
        props = _props(p)
        names = set(props)
        if names and names <= {"name", "generateName"}:
            rest.pop("properties", None)
        rest.pop("type", None)
        rest.pop("default", None)
        if any(k in _STRUCTURAL_KEYS and not _empty(v) for k, v in rest.items()):
            errs.append(_forbidden(path, "must not specify anything other than name and generateName, but metadata "
                                         "is implicitly specified"))


def _value_validation(p: dict[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: int, path: str,
                      errs: list[Cause]) -> None:
    if not skip_any_of:
        for i, x in enumerate(p.get("anyOf") or ()):
            if isinstance(x, dict):
                _nested(x, False, lvl, f"{path}.anyOf[{i}]", errs)
    for i, x in enumerate(p.get("allOf") or ()):
        if isinstance(x, dict):
            _nested(x, skip_first_all_of_any_of and i == 0, lvl, f"{path}.allOf[{i}]", errs)
    for i, x in enumerate(p.get("oneOf") or ()):
        if isinstance(x, dict):
            _nested(x, False, lvl, f"{path}.oneOf[{i}]", errs)
    if isinstance(p.get("not"), dict):
        _nested(p["not"], False, lvl, f"{path}.not", errs)
    pattern = p.get("pattern")
    if isinstance(pattern, str) and pattern:
        compiled = compile_pattern(pattern)
        if compiled.search is None:
            errs.append(_invalid(f"{path}.pattern", pattern,
                                 f"must be a valid regular expression, but isn't: {compiled.error}"))


def _nested(p: dict[str, Any], skip_any_of: bool, lvl: int, path: str, errs: list[Cause]) -> None:
    _value_validation(p, skip_any_of, False, lvl, path, errs)
    items = _items(p)
    if items is not None:
        _nested(items, False, lvl, f"{path}.items", errs)
    props = _props(p)
    for k, v in props.items():
        _nested(v, False, _FIELD, f"{path}.properties[{k}]", errs)
    if p.get("type"):
        errs.append(_forbidden(f"{path}.type", "must be empty to be structural"))
    if p.get("additionalProperties") is not None:
        errs.append(_forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    if p.get("default") is not None:
        errs.append(_forbidden(f"{path}.default", "must be undefined to be structural"))
    if p.get("title"):
        errs.append(_forbidden(f"{path}.title", "must be empty to be structural"))
    if p.get("description"):
        errs.append(_forbidden(f"{path}.description", "must be empty to be structural"))
    if p.get("nullable"):
        errs.append(_forbidden(f"{path}.nullable", "must be false to be structural"))
    for ext in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"):
        if p.get(ext):
            errs.append(_forbidden(f"{path}.{ext}", "must be false to be structural"))
    if p.get("x-kubernetes-list-map-keys"):
        errs.append(_forbidden(f"{path}.x-kubernetes-list-map-keys", "must be empty to be structural"))
    for ext in ("x-kubernetes-list-type", "x-kubernetes-map-type"):
        if p.get(ext) is not None:
            errs.append(_forbidden(f"{path}.{ext}", "must be undefined to be structural"))
    if p.get("x-kubernetes-validations"):
        errs.append(_forbidden(f"{path}.x-kubernetes-validations", "must be empty to be structural"))
    if "metadata" in props:
        errs.append(_forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))


def _completeness(p: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """complete.go: every field a value validation mentions is declared in the structure."""
    _vv_complete(p, p, path, path, errs)


def _vv_complete(v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str, errs: list[Cause]) -> None:
    if s is None:
        errs.append(_required(s_path, f"because it is defined in {v_path}"))
        return
    if isinstance(v.get("not"), dict):
        _nested_complete(v["not"], s, s_path, f"{v_path}.not", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, x in enumerate(v.get(key) or ()):
            if isinstance(x, dict):
                _nested_complete(x, s, s_path, f"{v_path}.{key}[{i}]", errs)


def _nested_complete(v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str, errs: list[Cause]) -> None:
    if s is None:
        errs.append(_required(s_path, f"because it is defined in {v_path}"))
        return
    _vv_complete(v, s, s_path, v_path, errs)
    vi = _items(v)
    if vi is not None:
        _nested_complete(vi, _items(s), f"{s_path}.items", f"{v_path}.items", errs)
    s_props = _props(s)
    for k, vf in _props(v).items():
        sf = s_props.get(k)
        if sf is None:
            errs.append(_required(f"{s_path}.properties[{k}]", f"because it is defined in {v_path}.properties[{k}]"))
        else:
            _nested_complete(vf, sf, f"{s_path}.properties[{k}]", f"{v_path}.properties[{k}]", errs)


def validate_structural(props: Any, path: str) -> list[Cause]:
    """``ValidateStructural``: the causes that make ``props`` not a structural schema, sorted as kube."""
    if not isinstance(props, dict):
        return []
    errs: list[Cause] = []
    _invariants(props, _ROOT, path, errs)
    _completeness(props, path, errs)
    errs.sort(key=_err_text)
    return errs


# ------------------------------------------------------------------ defaults

def validate_defaults(props: Any, path: str) -> list[Cause]:
    """``ValidateDefaults`` (with pruned defaults required): each ``default`` must be pruned already, and
    valid against its own node (objectmeta coercion and validation too for embedded resources)."""
    from kapi.object.structural.objectmeta import coerce
    from kapi.object.structural.pruning import prune
    from kapi.object.structural.validation import validate, validate_embedded_meta

    errs: list[Cause] = []
    if not isinstance(props, dict):
        return errs

    def walk(p: dict[str, Any], pth: str, inside_meta: bool) -> None:
        if p.get("x-kubernetes-embedded-resource"):
            inside_meta = False
        if p.get("default") is not None:
            s = from_props(p)
            dflt = p["default"]
            dpath = f"{pth}.default"
            if inside_meta:
                pass  # defaults inside metadata are forbidden by the API validation (top-level metadata)
            else:
                import copy
                pruned = copy.deepcopy(dflt)
                prune(pruned, s, root=s.embedded_resource, nulls=False)
                if pruned != dflt:
                    errs.append(_invalid(dpath, dflt, "must not have unknown fields"))
                probe = copy.deepcopy(dflt)
                err, _ = coerce(probe, s, root=s.embedded_resource, path=dpath)
                if err is not None:
                    errs.append(err)
                else:
                    meta = validate_embedded_meta(s, dflt, dpath, root=s.embedded_resource)
                    if meta:
                        errs.extend(meta)
                    else:
                        errs.extend(validate(s, dflt, dpath))
        items = _items(p)
        if items is not None:
            walk(items, f"{pth}.items", inside_meta)
        for k, v in _props(p).items():
            walk(v, f"{pth}.properties[{k}]", inside_meta or (pth == path and k == "metadata"))
        ap = _ap_schema(p)
        if ap is not None:
            walk(ap, f"{pth}.additionalProperties", inside_meta)

    walk(props, path, False)
    return errs


# ------------------------------------------------------------------ the OpenAPI subset

def _openapi(p: dict[str, Any], path: str, *, is_root: bool, allow_defaults: bool, defaults_reason: str,
             inside_meta: bool, errs: list[Cause]) -> None:
    typ = p.get("type") or ""
    # specStandardValidatorV3
    if typ and typ not in _OPENAPI_V3_TYPES and typ != "null":
        errs.append(_not_supported(f"{path}.type", typ, _OPENAPI_V3_TYPES))
    if p.get("default") is not None and not allow_defaults:
        detail = "must not be set" + (f" {defaults_reason}" if defaults_reason else "")
        errs.append(_forbidden(f"{path}.default", detail))
    if p.get("id"):
        errs.append(_forbidden(f"{path}.id", "id is not supported"))
    if p.get("additionalItems") is not None:
        errs.append(_forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if p.get("patternProperties"):
        errs.append(_forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if p.get("definitions"):
        errs.append(_forbidden(f"{path}.definitions", "definitions is not supported"))
    if p.get("dependencies") is not None:
        errs.append(_forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if p.get("$ref") is not None:
        errs.append(_forbidden(f"{path}.$ref", "$ref is not supported"))
    if typ == "null":
        errs.append(_forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(p.get("items"), list) and p["items"]:
        errs.append(_forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if inside_meta and p.get("x-kubernetes-embedded-resource"):
        errs.append(_forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"))

    if p.get("uniqueItems"):
        errs.append(_forbidden(f"{path}.uniqueItems",
                               "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    props = _props(p)
    ap = p.get("additionalProperties")
    if ap is not None:
        if props and (ap is False or isinstance(ap, dict)):
            errs.append(_forbidden(f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"))
        if isinstance(ap, dict):
            sub_allow, sub_reason = allow_defaults, defaults_reason
            if inside_meta:
                sub_allow, sub_reason = False, "inside additionalProperties applying to object metadata"
            _openapi(ap, f"{path}.additionalProperties", is_root=False, allow_defaults=sub_allow,
                     defaults_reason=sub_reason, inside_meta=inside_meta, errs=errs)
    embedded = bool(p.get("x-kubernetes-embedded-resource"))
    for k, v in props.items():
        sub_meta, sub_allow, sub_reason = inside_meta, allow_defaults, defaults_reason
        if (is_root or embedded) and k in _META_FIELDS:
            sub_meta = True
            if is_root:
                sub_allow, sub_reason = False, f"in top-level {k}"
        _openapi(v, f"{path}.properties[{k}]", is_root=False, allow_defaults=sub_allow, defaults_reason=sub_reason,
                 inside_meta=sub_meta, errs=errs)
    if isinstance(p.get("not"), dict):
        _openapi(p["not"], f"{path}.not", is_root=False, allow_defaults=allow_defaults,
                 defaults_reason=defaults_reason, inside_meta=inside_meta, errs=errs)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, x in enumerate(p.get(key) or ()):
            if isinstance(x, dict):
                _openapi(x, f"{path}.{key}[{i}]", is_root=False, allow_defaults=allow_defaults,
                         defaults_reason=defaults_reason, inside_meta=inside_meta, errs=errs)
    items = _items(p)
    if items is not None:
        _openapi(items, f"{path}.items", is_root=False, allow_defaults=allow_defaults,
                 defaults_reason=defaults_reason, inside_meta=inside_meta, errs=errs)
    if p.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(_invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"))
    map_type = p.get("x-kubernetes-map-type")
    if map_type is not None and typ != "object":
        if not typ:
            errs.append(_required(f"{path}.type", "must be object if x-kubernetes-map-type is specified"))
        else:
            errs.append(_invalid(f"{path}.type", typ, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(_not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular")))
    list_type = p.get("x-kubernetes-list-type")
    if list_type is not None and typ != "array":
        if not typ:
            errs.append(_required(f"{path}.type", "must be array if x-kubernetes-list-type is specified"))
        else:
            errs.append(_invalid(f"{path}.type", typ, "must be array if x-kubernetes-list-type is specified"))
    elif list_type == "set" and items is not None:
        it = items.get("type")
        if it == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errs.append(_invalid(f"{path}.items.x-kubernetes-list-type", items.get("x-kubernetes-list-type"),
                                 "must be atomic as item of a list with x-kubernetes-list-type=set"))
        elif it == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errs.append(_invalid(f"{path}.items.x-kubernetes-map-type", list_type,
                                 "must be atomic as item of a list with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(_not_supported(f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")))
    keys = [k for k in p.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
    if keys:
        if list_type is None:
            errs.append(_required(f"{path}.x-kubernetes-list-type", "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif list_type != "map":
            errs.append(_invalid(f"{path}.x-kubernetes-list-type", list_type,
                                 "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        if not keys:
            errs.append(_required(f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map"))
        if p.get("items") is None:
            errs.append(_required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        if items is not None and items.get("type") != "object":
            errs.append(_invalid(f"{path}.items.type", items.get("type") or "",
                                 "must be object if parent array's x-kubernetes-list-type is map"))
        if items is not None and items.get("type") == "object":
            seen: set[str] = set()
            item_props = _props(items)
            for k in keys:
                if k in item_props:
                    if item_props[k].get("type") in ("array", "object"):
                        errs.append(_invalid(f"{path}.items.properties[{k}].type", items.get("type"),
                                             "must be a scalar type if parent array's x-kubernetes-list-type is map"))
                else:
                    errs.append(_invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                         "entries must all be names of item properties"))
                if k in seen:
                    errs.append(_invalid(f"{path}.x-kubernetes-list-map-keys", keys, "must not contain duplicate entries"))
                seen.add(k)
    # validateMapListKeysMapSet
    if items is not None and list_type in ("set", "map"):
        if items.get("nullable"):
            errs.append(_forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {list_type}"))
        if list_type == "map":
            required = set(x for x in items.get("required") or () if isinstance(x, str))
            item_props = _props(items)
            for k in keys:
                obj = item_props.get(k)
                if obj is None:
                    continue
                if k not in required and obj.get("default") is None:
                    errs.append(_required(f"{path}.items.properties[{k}].default", "this property is in "
                                          "x-kubernetes-list-map-keys, so it must have a default or be a required property"))
                if obj.get("nullable"):
                    errs.append(_forbidden(f"{path}.items.properties[{k}].nullable",
                                           "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    for i, rule in enumerate(p.get("x-kubernetes-validations") or ()):
        if not isinstance(rule, dict):
            continue
        rp = f"{path}.x-kubernetes-validations[{i}]"
        text = str(rule.get("rule") or "").strip()
        message = str(rule.get("message") or "")
        if not text:
            errs.append(_required(f"{rp}.rule", "rule is not specified"))
        elif message and not message.strip():
            errs.append(_invalid(f"{rp}.message", message, "must be non-empty if specified"))
        elif "\n" in message.strip() or "\r" in message.strip():
            errs.append(_invalid(f"{rp}.message", message, "must not contain line breaks"))
        elif ("\n" in text or "\r" in text) and not message.strip():
            errs.append(_required(f"{rp}.message", "message must be specified if rule contains line breaks"))
        mexpr = str(rule.get("messageExpression") or "")
        if mexpr and not mexpr.strip():
            errs.append(_required(f"{rp}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in _SUPPORTED_REASONS:
            errs.append(_not_supported(f"{rp}.reason", reason, _SUPPORTED_REASONS))
        fp = str(rule.get("fieldPath") or "")
        if fp and not fp.strip():
            errs.append(_invalid(f"{rp}.fieldPath", fp, "must be non-empty if specified"))
        if "\n" in fp or "\r" in fp:
            errs.append(_invalid(f"{rp}.fieldPath", fp, "must not contain line breaks"))


def validate_openapi_subset(props: Any, path: str, *, allow_defaults: bool = True) -> list[Cause]:
    """``ValidateCustomResourceDefinitionOpenAPISchema`` (its schema part; CEL is kapi.object.cel's)."""
    errs: list[Cause] = []
    if isinstance(props, dict):
        _openapi(props, path, is_root=True, allow_defaults=allow_defaults, defaults_reason="", inside_meta=False,
                 errs=errs)
    return errs


def validate_schema(props: Any, path: str) -> list[Cause]:
    """The causes of a CRD version's ``openAPIV3Schema`` at ``path`` (e.g.
    ``spec.versions[0].schema.openAPIV3Schema``), in kube's order: structural errors (else the
    defaults' errors), then the OpenAPI subset's."""
    errs = validate_structural(props, path)
    if not errs:
        errs = validate_defaults(props, path)
    errs.extend(validate_openapi_subset(props, path))
    return errs
