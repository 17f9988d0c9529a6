"""Validation of a custom object against its structural schema, as kube-apiserver reports it.

kube runs kube-openapi's ``validate.SchemaValidator`` over the CRD's schema and turns its result into
``field.ErrorList`` (apiextensions ``kubeOpenAPIResultToFieldErrors``); then the embedded resources'
``objectmeta.Validate`` and ``listtype.ValidateListSetsAndMaps``. This module does the three in that
order with the same messages, field paths (``spec.items[0].name``; map entries as ``spec.labels.foo``
in schema errors, ``spec.labels[foo]`` in list-type errors) and Go value printing.

Each node is compiled once into a ``_V`` (kept in the node's ``cache``): the kept format and its
checker, the compiled pattern, the sub-validators of allOf/anyOf/oneOf/not.
"""

from __future__ import annotations

import json
import math
from typing import Any

from kapi.errors import Cause
from kapi.object.structural import Structural, from_props
from kapi.object.structural._gofmt import go_body_value, go_float, go_number, go_v
from kapi.object.structural.formats import compile_pattern, format_checker, supported_format
from kapi.object.validation.fields import go_quote

__all__ = ["validate", "validate_update", "validate_list_sets_and_maps", "validate_embedded_meta"]

# error kinds, as kubeOpenAPIResultToFieldErrors switches on the openapi error code
_REQUIRED, _ENUM, _TOO_LONG, _TOO_MANY, _TYPE, _INVALID, _PLAIN = range(7)


class _E:
    """One kube-openapi error: its code, name (the openapi path), value and message (``Error()``)."""

    __slots__ = ("code", "name", "value", "msg", "extra")

    def __init__(self, code: int, name: str, value: Any, msg: str, extra: Any = None) -> None:
        self.code = code
        self.name = name
        self.value = value
        self.msg = msg
        self.extra = extra


class _V:
    """A node compiled for validation."""

    __slots__ = ("types", "type_str", "nullable", "format", "fmt_check", "num_type", "num_format",
                 "enum", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "multiple_of",
                 "max_length", "min_length", "pattern", "pattern_src", "max_items", "min_items",
                 "unique_items", "items", "properties", "additional", "required", "max_properties",
                 "min_properties", "all_of", "any_of", "one_of", "not_", "has_props_validator",
                 "applies_type", "fast_types", "map_keys")


def _compiled(s: Structural) -> _V:
    v = s.cache.get("v")
    if v is None:
        v = _compile(s)
        s.cache["v"] = v
    return v


def _sub(p: dict[str, Any]) -> _V:
    return _compile(from_props(p))


def _compile(s: Structural) -> _V:
    v = _V()
    val = s.value
    if s.int_or_string:
        v.types = ("integer", "string")
    elif s.type:
        v.types = (s.type,)
    else:
        v.types = ()
    v.type_str = ",".join(v.types)
    v.nullable = s.nullable
    v.format = supported_format(s.type, val.format, s.int_or_string)
    v.fmt_check = format_checker(v.format)
    v.num_type = ""
    v.num_format = ""
    if len(v.types) == 1 and v.types[0] in ("integer", "number"):
        v.num_type = v.types[0]
        if (v.num_type == "integer" and v.format in ("int32", "int64")) or (
                v.num_type == "number" and v.format in ("float", "double")):
            v.num_format = v.format
    v.applies_type = bool(v.types) or bool(v.format)
    v.enum = val.enum if val.enum else None
    v.maximum, v.exclusive_maximum = val.maximum, val.exclusive_maximum
    v.minimum, v.exclusive_minimum = val.minimum, val.exclusive_minimum
    v.multiple_of = val.multiple_of
    v.max_length, v.min_length = val.max_length, val.min_length
    v.pattern_src = val.pattern
    v.pattern = compile_pattern(val.pattern) if val.pattern else None
    v.max_items, v.min_items, v.unique_items = val.max_items, val.min_items, val.unique_items
    v.items = _compiled(s.items) if s.items is not None else None
    v.properties = {k: _compiled(p) for k, p in s.properties.items()}
    ap = s.additional_properties
    v.additional = _compiled(ap) if isinstance(ap, Structural) else ap
    v.required = val.required
    v.max_properties, v.min_properties = val.max_properties, val.min_properties
    v.all_of = tuple(_sub(p) for p in val.all_of)
    v.any_of = tuple(_sub(p) for p in val.any_of)
    v.one_of = tuple(_sub(p) for p in val.one_of)
    v.not_ = _sub(val.not_) if val.not_ is not None else None
    v.has_props_validator = bool(v.all_of or v.any_of or v.one_of or v.not_ is not None)
    # list-type map items correlate with the old object's by their keys (ratcheting)
    v.map_keys = s.list_map_keys if s.list_type == "map" else None
    # a scalar node that only checks its type: the Python types that pass it without a walk
    v.fast_types = None
    if len(v.types) == 1 and not v.format and v.enum is None and not v.has_props_validator and \
            v.maximum is None and v.minimum is None and v.multiple_of is None and v.max_length is None and \
            v.min_length is None and v.pattern is None:
        v.fast_types = {"string": frozenset({str}), "boolean": frozenset({bool}), "integer": frozenset({int}),
                        "number": frozenset({int, float})}.get(v.types[0])
    return v


# ------------------------------------------------------------------ helpers

def _is_json_integer(f: float) -> bool:
    # swag.IsFloat64AJSONInteger
    if math.isnan(f) or math.isinf(f) or f < -(1 << 53) or f > (1 << 53):
        return False
    if f == int(f):
        return True
    g = float(math.trunc(f)) if f >= 0 else 0.0
    diff = abs(f - g)
    if f == 0 or g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _type_msg(name: str, type_name: str, value: str) -> str:
    return f"{name} in body must be of type {type_name}: {go_quote(value)}"


def _kind(data: Any) -> str:
    t = type(data)
    if t is str:
        return "string"
    if t is dict:
        return "map"
    if t is list:
        return "slice"
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is float:
        return "float"
    if isinstance(data, bool):
        return "bool"
    if isinstance(data, int):
        return "int"
    if isinstance(data, float):
        return "float"
    if isinstance(data, str):
        return "string"
    if isinstance(data, dict):
        return "map"
    if isinstance(data, (list, tuple)):
        return "slice"
    return "other"


_SCH = {"bool": ("boolean", ""), "string": ("string", ""), "int": ("integer", "int64"),
        "float": ("number", "float64"), "slice": ("array", ""), "map": ("object", ""), "other": ("", "")}


def _check_type(v: _V, data: Any, kind: str, path: str) -> _E | None:
    types = v.types
    if data is None:
        if types and not v.nullable:
            return _E(_TYPE, path, "null", _type_msg(path, v.type_str, "null"))
        return None
    sch, fmt = _SCH[kind]
    is_float_int = kind == "float" and "integer" in types and _is_json_integer(data)
    is_int_float = kind == "int" and "number" in types
    if kind not in ("string", "slice") and v.format and not (
            sch in types or fmt == v.format or is_float_int or is_int_float):
        return _E(_TYPE, path, fmt, _type_msg(path, v.format, fmt))
    if v.format and kind in ("string", "slice") and not ("number" in types or "integer" in types):
        return None
    if not (sch in types or is_float_int or is_int_float):
        return _E(_TYPE, path, sch, _type_msg(path, v.type_str, sch))
    return None


def _go_format_float_f(f: float) -> str:
    # strconv.FormatFloat(f, 'f', -1, 64)
    r = repr(f)
    if "e" in r or "E" in r:
        from decimal import Decimal
        r = format(Decimal(r), "f")
    if r.endswith(".0"):
        r = r[:-2]
    return r


def _range_error(val: int | float, type_name: str, fmt: str, prefix: str, path: str) -> str:
    """``IsValueValidAgainstRange``'s message, "" when the value fits the type and format."""
    if type_name == "integer":
        rep = str(val) if isinstance(val, int) else _go_format_float_f(val)
        bad = False
        try:
            n = int(rep, 10)
        except ValueError:
            bad = True
        else:
            bits = 32 if fmt == "int32" else 64
            bad = not (-(1 << (bits - 1)) <= n < (1 << (bits - 1)))
    elif fmt == "float":
        fv = float(val)
        bad = math.isfinite(fv) and abs(fv) > 3.4028234663852886e38 * (1 + 2 ** -24)
    else:
        return ""
    if not bad:
        return ""
    if fmt:
        return f"{prefix} value must be of type {type_name} with format {fmt} in {path}"
    return f"{prefix} value must be of type {type_name} (default format) in {path}"


def _not_multiple(path: str, factor: Any, data: Any) -> _E:
    return _E(_INVALID, path, data, f"{path} in body should be a multiple of {go_number(factor)}")


def _must_be_positive(path: str, factor: Any) -> _E:
    return _E(_INVALID, path, factor,
              f"factor MultipleOf declared for {path} must be positive: {go_number(factor)}")


def _multiple_of_float(path: str, data: float, factor: float) -> _E | None:
    if factor <= 0:
        return _must_be_positive(path, float(factor))
    mult = (1 / factor * data) if factor < 1 else data / factor
    if not _is_json_integer(mult):
        return _not_multiple(path, float(factor), float(data))
    return None


def _bound(path: str, data: Any, bound: Any, exclusive: bool, upper: bool) -> _E | None:
    if upper:
        bad = data >= bound if exclusive else data > bound
        word = "less than" if exclusive else "less than or equal to"
    else:
        bad = data <= bound if exclusive else data < bound
        word = "greater than" if exclusive else "greater than or equal to"
    if bad:
        return _E(_INVALID, path, data, f"{path} in body should be {word} {go_number(bound)}")
    return None


def _check_number(v: _V, data: int | float, kind: str, path: str, out: list[_E]) -> None:
    nt, nf = v.num_type, v.num_format
    if nt:
        msg = _range_error(data, nt, nf, "Checked", path)
        if msg:
            out.append(_E(_PLAIN, path, None, msg))
    res_mult: list[_E] = []
    if v.multiple_of is not None:
        f = v.multiple_of
        msg = _range_error(f, nt, nf, "MultipleOf", path) if nt else ""
        if not msg:
            if kind == "int":
                fi = int(f)
                if fi <= 0:
                    res_mult.append(_must_be_positive(path, fi))
                elif abs(data) % fi != 0:
                    res_mult.append(_not_multiple(path, fi, data))
            else:
                e = _multiple_of_float(path, float(data), float(f))
                if e:
                    res_mult.append(e)
        else:
            res_mult.append(_E(_PLAIN, path, None, msg))
            e = _multiple_of_float(path, float(data), float(f))
            if e:
                res_mult.append(e)
    out.extend(res_mult)
    for bound, exclusive, is_max, label in ((v.minimum, v.exclusive_minimum, False, "Minimum boundary"),
                                            (v.maximum, v.exclusive_maximum, True, "Maximum boundary")):
        if bound is None:
            continue
        msg = _range_error(bound, nt, nf, label, path) if nt else ""
        if not msg:
            e = _bound(path, data, int(bound), exclusive, is_max) if kind == "int" else \
                _bound(path, float(data), float(bound), exclusive, is_max)
        else:
            out.append(_E(_PLAIN, path, None, msg))
            e = _bound(path, float(data), float(bound), exclusive, is_max)
        if e:
            out.append(e)


def _deep_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual of two unstructured values (int64 and float64 differ)."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return a is None and b is None
    if ka == "map":
        return len(a) == len(b) and all(k in b and _deep_equal(x, b[k]) for k, x in a.items())
    if ka == "slice":
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _enum_matches(data: Any, enum_value: Any) -> bool:
    # basicCommonValidator: the value converted to the enum value's type, then DeepEqual
    if enum_value is None or data is None:
        return False
    kd, ke = _kind(data), _kind(enum_value)
    if kd == ke:
        return _deep_equal(data, enum_value)
    if kd in ("int", "float") and ke in ("int", "float"):
        return (int(data) if ke == "int" else float(data)) == enum_value
    if kd == "int" and ke == "string":  # Go converts an integer to the string of its rune
        return (chr(data) if 0 <= data <= 0x10FFFF and not 0xD800 <= data <= 0xDFFF else "\ufffd") == enum_value
    return False


def go_json(value: Any) -> str:
    """``json.Marshal`` of an unstructured value (as Go writes it)."""
    if isinstance(value, float) and math.isfinite(value):
        a = abs(value)
        if a != 0 and (a < 1e-6 or a >= 1e21):
            s = go_float(value)
            return s.replace("e-0", "e-").replace("e+0", "e+")
        return _go_format_float_f(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{go_json(value[k])}"
                              for k in sorted(value, key=str)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(x) for x in value) + "]"
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# ------------------------------------------------------------------ the walk

_MISSING: Any = object()


def _old_item(old: Any, keys: tuple[str, ...] | None, x: Any) -> Any:
    """The old list-map entry with ``x``'s keys (ratcheting's correlation), else _MISSING."""
    if not keys or type(old) is not list or type(x) is not dict:
        return _MISSING
    want = [x.get(k, _MISSING) for k in keys]
    for o in old:
        if type(o) is dict and all((k not in o) if w is _MISSING else (k in o and _deep_equal(o[k], w))
                                   for k, w in zip(keys, want)):
            return o
    return _MISSING


def _run(v: _V, data: Any, path: str, out: list[_E], old: Any = _MISSING) -> int:
    """Validate ``data`` at openapi path ``path``, appending errors; returns the match count
    (kube-openapi's ``MatchCount``, which picks the best failing anyOf/oneOf alternative). ``old``: the
    correlated value of the object being updated; a value equal to it is not validated (kube's
    ratcheting: an update may keep what a newer schema would refuse)."""
    if old is not _MISSING and _deep_equal(data, old):
        return 1
    matches = 0
    if data is None:
        if v.applies_type:
            e = _check_type(v, None, "other", path)
            if e:
                out.append(e)
            else:
                matches += 1
        if v.enum is not None:
            out.append(_E(_ENUM, path, None, f"{path} in body should be one of {go_v(list(v.enum))}", v.enum))
        return matches
    kind = _kind(data)
    # 1. type
    if v.applies_type:
        e = _check_type(v, data, kind, path)
        if e:
            out.append(e)
        else:
            matches += 1
        matches += 1
    # 2. allOf, anyOf, oneOf, not
    if v.has_props_validator:
        matches += _schema_props(v, data, path, out, old) + 1
    matches += 1
    # 3. string
    if kind == "string":
        n = len(data)
        if v.max_length is not None and n > v.max_length:
            out.append(_E(_TOO_LONG, path, data, f"{path} in body should be at most {v.max_length} chars long",
                          v.max_length))
        elif v.min_length is not None and n < v.min_length:
            out.append(_E(_INVALID, path, data, f"{path} in body should be at least {v.min_length} chars long"))
        elif v.pattern is not None:
            p = v.pattern
            if p.search is None:
                out.append(_E(_INVALID, path, data, f"{path} in body should match '{v.pattern_src}, but pattern is "
                                                    f"invalid: {p.error}'"))
            elif not p.search(data):
                out.append(_E(_INVALID, path, data, f"{path} in body should match '{v.pattern_src}'"))
        matches += 1
        # 4. format
        if v.fmt_check is not None:
            if not v.fmt_check(data):
                out.append(_E(_TYPE, path, data, _type_msg(path, v.format, data)))
            matches += 1
    elif kind in ("int", "float"):
        # 5. number
        _check_number(v, data, kind, path, out)
        matches += 2
    elif kind == "slice":
        # 6. slice
        items = v.items
        if items is not None:
            ft = items.fast_types
            keys = v.map_keys if old is not _MISSING else None
            for i, x in enumerate(data):
                if ft is not None and type(x) in ft:
                    matches += 5
                else:
                    matches += _run(items, x, f"{path}[{i}]", out, _old_item(old, keys, x) if keys else _MISSING)
        size = len(data)
        if v.min_items is not None and size < v.min_items:
            out.append(_E(_INVALID, path, size, f"{path} in body should have at least {v.min_items} items"))
        if v.max_items is not None and size > v.max_items:
            out.append(_E(_TOO_MANY, path, size, f"{path} in body should have at most {v.max_items} items",
                          v.max_items))
        if v.unique_items:
            seen: list[Any] = []
            for x in data:
                if any(_deep_equal(x, u) for u in seen):
                    out.append(_E(_INVALID, path, None, f"{path} in body shouldn't contain duplicates"))
                    break
                seen.append(x)
        matches += 2
    # 7. enum
    if v.enum is not None:
        if not any(_enum_matches(data, e) for e in v.enum):
            out.append(_E(_ENUM, path, data, f"{path} in body should be one of {go_v(list(v.enum))}", v.enum))
    matches += 1
    # 8. object
    if kind == "map":
        n = len(data)
        if v.min_properties is not None and n < v.min_properties:
            out.append(_E(_INVALID, path, n, f"{path} in body should have at least {v.min_properties} properties"))
        if v.max_properties is not None and n > v.max_properties:
            out.append(_E(_TOO_MANY, path, n, f"{path} in body should have at most {v.max_properties} properties",
                          v.max_properties))
        props = v.properties
        additional = v.additional
        if additional is False:
            for k in data:
                if k not in props:
                    out.append(_E(_INVALID, path, k, f"{path}.{k} in body is a forbidden property"))
        elif isinstance(additional, _V):
            ft = additional.fast_types
            for k, x in data.items():
                if k not in props:
                    if ft is not None and type(x) in ft:
                        matches += 5
                    else:
                        matches += _run(additional, x, f"{path}.{k}", out,
                                        old.get(k, _MISSING) if type(old) is dict else _MISSING)
        if props:
            prefix = path + "." if path else ""
            for k, x in data.items():
                p = props.get(k)
                if p is not None:
                    ft = p.fast_types
                    if ft is not None and type(x) in ft:
                        matches += 5
                    else:
                        matches += _run(p, x, prefix + k, out, old.get(k, _MISSING) if type(old) is dict else _MISSING)
        for k in v.required:
            if k not in data:
                out.append(_E(_REQUIRED, f"{path}.{k}", None, f"{path}.{k} in body is required"))
        matches += 1
    return matches + 1


def _schema_props(v: _V, data: Any, path: str, out: list[_E], old: Any = _MISSING) -> int:
    matches = 0
    if v.any_of:
        best: tuple[int, list[_E]] | None = None
        success: int | None = None
        for alt in v.any_of:
            errs: list[_E] = []
            mc = _run(alt, data, path, errs, old)
            if not errs:
                success = mc
                best = None
                break
            if best is None or mc > best[0]:
                best = (mc, errs)
        if success is None:
            out.append(_E(_PLAIN, path, None, f"{go_quote(path)} must validate at least one schema (anyOf)"))
        if best is not None:
            out.extend(best[1])
            matches += best[0]
        elif success is not None:
            matches += success
    if v.one_of:
        best = None
        first: int | None = None
        validated = 0
        for alt in v.one_of:
            errs = []
            mc = _run(alt, data, path, errs, old)
            if not errs:
                validated += 1
                best = None
                if first is None:
                    first = mc
                continue
            if validated == 0 and (best is None or mc > best[0]):
                best = (mc, errs)
        if validated != 1:
            extra = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            out.append(_E(_PLAIN, path, None,
                          f"{go_quote(path)} must validate one and only one schema (oneOf). {extra}"))
            if best is not None:
                out.extend(best[1])
                matches += best[0]
        elif first is not None:
            matches += first
    if v.all_of:
        validated = 0
        for alt in v.all_of:
            errs = []
            matches += _run(alt, data, path, errs, old)
            if not errs:
                validated += 1
            out.extend(errs)
        if validated != len(v.all_of):
            extra = ". None validated" if validated == 0 else ""
            out.append(_E(_PLAIN, path, None, f"{go_quote(path)} must validate all the schemas (allOf){extra}"))
    if v.not_ is not None:
        errs = []
        _run(v.not_, data, path, errs, old)
        if not errs:
            out.append(_E(_PLAIN, path, None, f"{go_quote(path)} must not validate the schema (not)"))
    return matches


def _child(prefix: str, name: str) -> str:
    if not prefix:
        return name
    if name.startswith("["):
        return prefix + name
    return f"{prefix}.{name}"


def _to_cause(e: _E, prefix: str) -> Cause:
    if e.code == _PLAIN:
        return Cause("FieldValueInvalid", f'Invalid value: "": {e.msg}', prefix or "<nil>")
    name = e.name
    if name and name != ".":
        name = name[1:] if name.startswith(".") else name
        field = _child(prefix, name)
    else:
        field = prefix or "<nil>"
    if e.code == _REQUIRED:
        return Cause("FieldValueRequired", "Required value", field)
    if e.code == _ENUM:
        values = [x if isinstance(x, str) else go_json(x) for x in e.extra]
        detail = ": supported values: " + ", ".join(go_quote(x) for x in values) if values else ""
        return Cause("FieldValueNotSupported", f"Unsupported value: {go_body_value(e.value)}{detail}", field)
    if e.code == _TOO_LONG:
        unit = "byte" if e.extra == 1 else "bytes"
        return Cause("FieldValueTooLong", f"Too long: may not be more than {e.extra} {unit}", field)
    if e.code == _TOO_MANY:
        unit = "item" if e.extra == 1 else "items"
        return Cause("FieldValueTooMany", f"Too many: {e.value}: must have at most {e.extra} {unit}", field)
    value = "" if e.value is None else e.value
    reason = "FieldValueTypeInvalid" if e.code == _TYPE else "FieldValueInvalid"
    return Cause(reason, f"Invalid value: {go_body_value(value)}: {e.msg}", field)


def validate_schema_only(s: Structural, obj: Any, path: str = "", old: Any = _MISSING) -> list[Cause]:
    """Only the OpenAPI schema part (kube's ``ValidateCustomResource``; with ``old``,
    ``ValidateCustomResourceUpdate`` with ratcheting)."""
    errs: list[_E] = []
    _run(_compiled(s), obj, "", errs, old)
    if not errs:
        return []
    seen: set[str] = set()
    out = []
    for e in errs:
        if e.msg in seen:
            continue
        seen.add(e.msg)
        out.append(_to_cause(e, path))
    return out


def validate(s: Structural, obj: Any, path: str = "") -> list[Cause]:
    """The causes of ``obj`` (a whole custom object, or the value at field path ``path``) against ``s``:
    the OpenAPI schema, then embedded resources' apiVersion/kind/metadata, then list-type set/map
    uniqueness. The root's own metadata and CEL rules are the caller's."""
    out = validate_schema_only(s, obj, path)
    if _subtree_has(s, "embedded"):
        out.extend(validate_embedded_meta(s, obj, path))
    if _subtree_has(s, "lists"):
        out.extend(validate_list_sets_and_maps(s, obj, path))
    return out


def validate_update(s: Structural, obj: Any, old: Any, path: str = "") -> list[Cause]:
    """``validate`` of an update (kube 1.30+'s CRDValidationRatcheting, on by default): a field whose
    value is the old object's (list-map entries correlated by their keys, other lists only whole) is not
    checked against the schema again, so a stricter schema does not refuse an update that leaves the
    old invalid value alone. Embedded metadata and list-type uniqueness are checked as on create."""
    out = validate_schema_only(s, obj, path, old if old is not None else _MISSING)
    if _subtree_has(s, "embedded"):
        out.extend(validate_embedded_meta(s, obj, path))
    if _subtree_has(s, "lists"):
        out.extend(validate_list_sets_and_maps(s, obj, path))
    return out


def _subtree_has(s: Structural, what: str) -> bool:
    """Whether any node under ``s`` (itself included) is an embedded resource ("embedded") or a set/map
    list ("lists"); memoized, so that the walks are skipped for schemas without them."""
    key = "has_" + what
    c = s.cache.get(key)
    if c is None:
        own = s.embedded_resource if what == "embedded" else s.list_type in ("set", "map")
        ap = s.additional_properties
        c = own or any(_subtree_has(p, what) for p in s.properties.values()) or (
            s.items is not None and _subtree_has(s.items, what)) or (
            isinstance(ap, Structural) and _subtree_has(ap, what))
        s.cache[key] = c
    return c


# ------------------------------------------------------------------ list types

def _set_key(x: Any) -> Any:
    if isinstance(x, (dict, list)):
        return ("c", go_json(x))
    if isinstance(x, bool):
        return ("b", x)
    if isinstance(x, float):
        return ("f", x)
    if isinstance(x, int):
        return ("i", x)
    return ("s", x) if isinstance(x, str) else ("n", None)


def _non_unique(values: list[Any]) -> list[int]:
    if len(values) <= 1:
        return []
    seen: dict[Any, int] = {}
    out = []
    for i, x in enumerate(values):
        k = _set_key(x)
        times = seen.get(k, 0)
        seen[k] = times + 1
        if times == 1:
            out.append(i)
    return out


def _dup(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_body_value(value)}", path)


def validate_list_sets_and_maps(s: Structural, obj: Any, path: str = "") -> list[Cause]:
    """``listtype.ValidateListSetsAndMaps``: duplicates in ``x-kubernetes-list-type: set`` lists and
    duplicate keys in ``map`` lists (map entries here are ``[key]``)."""
    if not isinstance(obj, dict):
        return []
    errs: list[Cause] = []
    _lists_object(s, obj, path, errs)
    return errs


def _lists_object(s: Structural, obj: dict[str, Any], path: str, errs: list[Cause]) -> None:
    ap = s.additional_properties
    if isinstance(ap, Structural) and _subtree_has(ap, "lists"):
        for k, x in obj.items():
            _lists_value(ap, x, f"{path}[{k}]", errs)
    if s.properties:
        for k, x in obj.items():
            sub = s.properties.get(k)
            if sub is not None and _subtree_has(sub, "lists"):
                _lists_value(sub, x, _child(path, k), errs)


def _lists_value(s: Structural, x: Any, path: str, errs: list[Cause]) -> None:
    if isinstance(x, list):
        if s.list_type == "set":
            for i in _non_unique(x):
                errs.append(_dup(f"{path}[{i}]", x[i]))
        elif s.list_type == "map":
            errs.extend(_list_map(s, x, path))
        if s.items is not None and _subtree_has(s.items, "lists"):
            for i, y in enumerate(x):
                _lists_value(s.items, y, f"{path}[{i}]", errs)
    elif isinstance(x, dict):
        _lists_object(s, x, path, errs)


_UNSPECIFIED = object()


def _list_map(s: Structural, xs: list[Any], path: str) -> list[Cause]:
    for i, x in enumerate(xs):
        if x is not None and not isinstance(x, dict):
            return [Cause("FieldValueInvalid", f"Invalid value: {go_body_value(x)}: must be an object for an array "
                                               "of list-type map", f"{path}[{i}]")]
    if len(xs) <= 1:
        return []
    keys_fields = s.list_map_keys
    if len(keys_fields) == 1:
        kf = keys_fields[0]
        keys: list[Any] = [x[kf] if isinstance(x, dict) and kf in x else _UNSPECIFIED for x in xs]
        seen: dict[Any, int] = {}
        out = []
        for i, k in enumerate(keys):
            sk = ("u", None) if k is _UNSPECIFIED else _set_key(k)
            times = seen.get(sk, 0)
            seen[sk] = times + 1
            if times == 1:
                out.append(_dup(f"{path}[{i}]", {} if k is _UNSPECIFIED else {kf: k}))
        return out
    mkeys = [{kf: x[kf] for kf in keys_fields if kf in x} if isinstance(x, dict) else {} for x in xs]
    return [_dup(f"{path}[{i}]", mkeys[i]) for i in _non_unique(mkeys)]


# ------------------------------------------------------------------ embedded resources

def validate_embedded_meta(s: Structural, obj: Any, path: str = "", *, root: bool = False) -> list[Cause]:
    """``objectmeta.Validate``: each ``x-kubernetes-embedded-resource`` object needs apiVersion and kind
    (strings, a group/version, a DNS-1035 kind) and a valid ObjectMeta (``root``: the object itself too)."""
    from kapi.object.structural.objectmeta import embedded_resource_causes

    errs: list[Cause] = []

    def walk(x: Any, node: Structural | None, pth: str, is_root: bool) -> None:
        if node is None or not (is_root or _subtree_has(node, "embedded")):
            return
        if isinstance(x, dict):
            if node.embedded_resource or is_root:
                errs.extend(embedded_resource_causes(x, pth))
            for k, y in x.items():
                p = node.properties.get(k)
                if p is not None:
                    walk(y, p, _child(pth, k), False)
                elif isinstance(node.additional_properties, Structural):
                    walk(y, node.additional_properties, f"{pth}[{k}]", False)
        elif isinstance(x, list):
            for i, y in enumerate(x):
                walk(y, node.items, f"{pth}[{i}]", False)

    walk(obj, s, path, root)
    return errs
