"""Decoding is validation: a decoded body checked against the schema's JSON types, as Go's decoder does.

``check()`` walks a body (JSON or YAML, already decoded to Python values) against the built-in
schema and raises ``errors.BadRequest`` on the first value Go's ``encoding/json`` would refuse,
with its message (``json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels
of type map[string]string``). On the way it bounds nesting depth, replaces lone surrogates with
U+FFFD (as Go does for invalid UTF-16), drops ``null`` struct fields (Go leaves them zero and
omits them), and rewrites ``Time``/``MicroTime`` values in kube's canonical UTC form.
``load_yaml()`` decodes YAML to JSON-compatible values only, as sigs.k8s.io/yaml does.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import math
import re
from typing import Any

import orjson
import yaml

from kapi import errors
from kapi.object.schema import FieldDef, Schema, TypeDef

__all__ = ["MAX_DEPTH", "MAX_YAML_NODES", "canonical_time", "check", "check_depth", "json_kind", "load_json",
           "load_yaml", "load_yaml_strict"]

MAX_DEPTH = 100  # containers nested deeper than this are refused before any recursive code sees them
MAX_YAML_NODES = 100_000  # YAML aliases may expand to this many nodes in all (about a megabyte of JSON)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_OBJECT_META = _META + "ObjectMeta"
_TIME = _META + "Time"
_MICRO_TIME = _META + "MicroTime"
_FIELDS_V1 = _META + "FieldsV1"
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1), "": (-(1 << 63), (1 << 63) - 1)}
_QUANTITY_RE = re.compile(r"[+-]?[0-9.]+(?:[eE][-+]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?", re.ASCII)
QUANTITY_FORMAT_ERROR = ("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Mismatch(Exception):
    """A value Go's decoder refuses; the frames it unwinds through add the field path."""

    def __init__(self, value: str, go_type: str = "", message: str = "") -> None:
        super().__init__(value)
        self.value = value
        self.go_type = go_type
        self.message = message  # a whole message of its own (time, quantity, base64): no field context
        self.struct = ""
        self.fields: list[str] = []

    def render(self) -> str:
        if self.message:
            return self.message
        if self.struct or self.fields:
            path = ".".join(reversed(self.fields))
            return f"json: cannot unmarshal {self.value} into Go struct field {self.struct}.{path} of type {self.go_type}"
        return f"json: cannot unmarshal {self.value} into Go value of type {self.go_type}"


class _TooDeep(Exception):
    pass


# ------------------------------------------------------------------ entry points


def check(schema: Schema, root: TypeDef | str | None, obj: dict[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """Type-check ``obj`` (in place) against ``root``; ``errors.BadRequest(prefix + Go's message)`` if wrong.

    ``root`` is a type or type name; None (a kind the schema does not know) checks only
    ``metadata`` as ObjectMeta, and depth and strings everywhere.
    """
    if isinstance(root, str):
        root = schema.get(root)
    try:
        walker = _Walker(schema)
        if root is None:
            md = obj.get("metadata")
            for key, value in obj.items():
                if key != "metadata":
                    nv = walker.any(value, 1)
                    if nv is not value:
                        obj[key] = nv
            if md is not None:
                try:
                    walker.struct(schema.type(_OBJECT_META), md, 1)
                except _Mismatch as m:
                    _context(m, "", "metadata")
                    raise
            elif "metadata" in obj:
                del obj["metadata"]
        else:
            walker.struct(root, obj, 0, meta_first=True)
    except _Mismatch as m:
        raise errors.BadRequest(prefix + m.render()) from None
    except _TooDeep:
        raise errors.BadRequest(f"{prefix}the object is nested more than {MAX_DEPTH} levels deep") from None
    return obj


def load_json(data: bytes) -> Any:
    """A JSON body as Go's decoder reads it.

    orjson refuses an escaped lone surrogate (``"\\ud800"``); Go's decoder takes it as U+FFFD.
    Such a body is read again by the standard library, whose strings keep the surrogate for
    ``check`` to replace. Every other error is orjson's ``JSONDecodeError``.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        first = exc
    try:
        return json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise errors.BadRequest(f"the object is nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        raise first from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def check_depth(value: Any, *, what: str = "the object") -> None:
    """``errors.BadRequest`` if ``value`` nests deeper than MAX_DEPTH (for bodies no schema describes)."""
    try:
        _Walker(None).any(value, 0)
    except _TooDeep:
        raise errors.BadRequest(f"{what} is nested more than {MAX_DEPTH} levels deep") from None


def _context(m: _Mismatch, struct: str, name: str) -> None:
    if not m.message:
        m.fields.append(name)
        if not m.struct and struct:
            m.struct = struct.rsplit(".", 1)[-1]


def _go_name(type_name: str) -> str:
    """``io.k8s.api.core.v1.PodSpec`` -> ``v1.PodSpec`` (package and name, as Go prints a type)."""
    parts = type_name.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else type_name


def _go_type(schema: Schema | None, f: FieldDef) -> str:
    if f.ref:
        if f.ref == _TIME or f.ref == _MICRO_TIME:
            return "string"  # metav1.Time decodes its JSON string itself
        if f.type == "int-or-string":
            return "int32"
        return _go_name(f.ref)
    t = f.type
    if t == "string":
        return "[]uint8" if f.format == "byte" else "string"
    if t == "integer":
        return f.format or "int64"
    if t == "number":
        return "float32" if f.format == "float" else "float64"
    if t == "boolean":
        return "bool"
    if t == "array":
        return "[]" + (_go_type(schema, f.items) if f.items is not None else "interface {}")
    if t == "object":
        return "map[string]" + (_go_type(schema, f.values) if f.values is not None else "interface {}")
    if t == "int-or-string":
        return "int32"
    return "interface {}"


def json_kind(value: Any) -> str:
    """The JSON kind of a value as Go's UnmarshalTypeError names it (``array``, ``bool``, ``number``...).

    Values JSON has no kind for (a stored msgpack's bytes, say) are named by their Python type.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _clean(value: str) -> str:
    """``value`` with lone surrogates replaced by U+FFFD, as Go decodes invalid UTF-16 escapes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", value)
    return value


# ------------------------------------------------------------------ the walk


def _plain_string(f: FieldDef) -> bool:
    return f.type == "string" and not f.ref and not f.format


class _Walker:
    __slots__ = ("schema",)

    def __init__(self, schema: Schema | None) -> None:
        self.schema = schema

    def struct(self, t: TypeDef, value: Any, depth: int, meta_first: bool = False) -> None:
        if type(value) is not dict:
            raise _Mismatch(json_kind(value), _go_name(t.name))
        if depth > MAX_DEPTH:
            raise _TooDeep
        fields = t.fields
        nulls: list[str] | None = None
        if meta_first and "metadata" in value and "metadata" in fields:
            # Metadata first: every consumer reads it, so its types are settled before anything else.
            md = value["metadata"]
            if md is not None:
                try:
                    self.shape(fields["metadata"], md, depth + 1)
                except _Mismatch as m:
                    _context(m, t.name, "metadata")
                    raise
        for key, sub in value.items():
            f = fields.get(key)
            ts = type(sub)
            if f is not None:
                # The common scalars are settled here, without a call.
                ft = f.type
                if ts is str:
                    if ft == "string" and not f.ref and not f.format and sub.isascii():
                        continue
                elif ts is bool:
                    if ft == "boolean":
                        continue
                elif ts is int:
                    if ft == "integer" and -2147483648 <= sub <= 2147483647:
                        continue
                elif sub is None:
                    # Go leaves a null field at its zero value, which it omits, except a zero
                    # Time, which it writes as null again.
                    if f.ref != _TIME and f.ref != _MICRO_TIME:
                        if nulls is None:
                            nulls = []
                        nulls.append(key)
                    continue
                elif meta_first and key == "metadata":
                    continue
                try:
                    if ts is dict and ft == "object" and f.ref:
                        sub_t = self.schema.get(f.ref) if self.schema is not None else None
                        if sub_t is not None and sub_t.type == "object" and not sub_t.preserve_unknown:
                            self.struct(sub_t, sub, depth + 1)  # the usual nested struct, one call
                            continue
                    nv = self.shape(f, sub, depth + 1)
                except _Mismatch as m:
                    _context(m, t.name, key)
                    raise
            elif ts is dict or ts is list or ts is str:
                nv = self.any(sub, depth + 1)  # unknown (pruned or refused later) or preserved: bounded all the same
            else:
                continue
            if nv is not sub:
                value[key] = nv
        if nulls is not None:
            for key in nulls:
                del value[key]

    def shape(self, f: FieldDef, value: Any, depth: int) -> Any:
        """``value`` checked against ``f``: the value itself, or its replacement (canonical time, clean string)."""
        kind = f.type
        if kind == "string":
            if type(value) is not str:
                raise _Mismatch(json_kind(value), _go_type(self.schema, f))
            if f.ref:
                if f.ref == _TIME:
                    return canonical_time(value, micro=False)
                if f.ref == _MICRO_TIME:
                    return canonical_time(value, micro=True)
            if not value.isascii():
                value = _clean(value)
            if f.format == "byte" and value:
                _check_base64(value)
            return value
        if kind == "object":
            if f.ref:
                t = self.schema.get(f.ref) if self.schema is not None else None
                if t is not None and t.type == "object" and not t.preserve_unknown:
                    self.struct(t, value, depth)
                    return value
                if f.ref == _FIELDS_V1 and type(value) is not dict:
                    raise _Mismatch(json_kind(value), _go_name(f.ref))
                return self.any(value, depth)
            if type(value) is not dict:
                raise _Mismatch(json_kind(value), _go_type(self.schema, f))
            if depth > MAX_DEPTH:
                raise _TooDeep
            values = f.values
            if values is None:
                return self.any(value, depth)
            plain = _plain_string(values)
            rebuild = False
            for key, sub in value.items():
                if not key.isascii() and _clean(key) is not key:
                    rebuild = True
                if plain and type(sub) is str and sub.isascii():
                    continue
                if sub is None:
                    value[key] = _zero(values)
                    continue
                nv = self.shape(values, sub, depth + 1)
                if nv is not sub:
                    value[key] = nv
            if rebuild:
                return {_clean(k): v for k, v in value.items()}
            return value
        if kind == "array":
            if type(value) is not list:
                raise _Mismatch(json_kind(value), _go_type(self.schema, f))
            if depth > MAX_DEPTH:
                raise _TooDeep
            items = f.items
            if items is None:
                return self.any(value, depth)
            if items.type == "object" and items.ref and self.schema is not None:
                item_t = self.schema.get(items.ref)
                if item_t is not None and item_t.type == "object" and not item_t.preserve_unknown:
                    for i, sub in enumerate(value):  # a list of structs: each item one call
                        if sub is None:
                            value[i] = {}
                        else:
                            self.struct(item_t, sub, depth + 1)
                    return value
            plain = _plain_string(items)
            for i, sub in enumerate(value):
                if plain and type(sub) is str and sub.isascii():
                    continue
                if sub is None:
                    value[i] = _zero(items)
                    continue
                nv = self.shape(items, sub, depth + 1)
                if nv is not sub:
                    value[i] = nv
            return value
        if kind == "integer":
            tv = type(value)
            if tv is int:
                low, high = _INT_RANGE.get(f.format, _INT_RANGE[""])
                if low <= value <= high:
                    return value
                raise _Mismatch(f"number {value}", _go_type(self.schema, f))
            if tv is float:
                raise _Mismatch(f"number {value!r}", _go_type(self.schema, f))
            raise _Mismatch(json_kind(value), _go_type(self.schema, f))
        if kind == "boolean":
            if type(value) is not bool:
                raise _Mismatch(json_kind(value), "bool")
            return value
        if kind == "number":
            tv = type(value)
            if tv is not int and tv is not float:
                raise _Mismatch(json_kind(value), _go_type(self.schema, f))
            return value
        if kind == "int-or-string":
            tv = type(value)
            if tv is str:
                return value if value.isascii() else _clean(value)
            if tv is int:
                if -(1 << 31) <= value < (1 << 31):
                    return value
                raise _Mismatch(f"number {value}", "int32")
            if tv is float:
                raise _Mismatch(f"number {value!r}", "int32")
            raise _Mismatch(json_kind(value), "int32")
        if kind == "quantity":
            tv = type(value)
            if tv is str:
                if not _QUANTITY_RE.fullmatch(value.strip()):
                    raise _Mismatch("", message=QUANTITY_FORMAT_ERROR)
                return value
            if (tv is int or tv is float) and math.isfinite(value):
                return value
            raise _Mismatch("", message=QUANTITY_FORMAT_ERROR)
        return self.any(value, depth)

    def any(self, value: Any, depth: int) -> Any:
        """Any JSON value: depth bounded, strings cleaned; the value or its cleaned copy."""
        tv = type(value)
        if tv is str:
            return value if value.isascii() else _clean(value)
        if tv is dict:
            if depth > MAX_DEPTH:
                raise _TooDeep
            rebuild = False
            for key, sub in value.items():
                if not key.isascii() and _clean(key) is not key:
                    rebuild = True
                t = type(sub)
                if t is dict or t is list or t is str:
                    nv = self.any(sub, depth + 1)
                    if nv is not sub:
                        value[key] = nv
            if rebuild:
                return {_clean(k): v for k, v in value.items()}
            return value
        if tv is list:
            if depth > MAX_DEPTH:
                raise _TooDeep
            for i, sub in enumerate(value):
                t = type(sub)
                if t is dict or t is list or t is str:
                    nv = self.any(sub, depth + 1)
                    if nv is not sub:
                        value[i] = nv
            return value
        return value


def _zero(f: FieldDef) -> Any:
    """What Go stores for a ``null`` map value or list item of this shape."""
    kind = f.type
    if kind == "string":
        return None if f.ref else ""
    if kind == "integer" or kind == "number" or kind == "int-or-string":
        return 0
    if kind == "boolean":
        return False
    if kind == "quantity":
        return "0"
    if kind == "object" and f.ref:
        return {}
    return None


def _check_base64(value: str) -> None:
    """Go's base64.StdEncoding (newlines ignored): ``illegal base64 data at input byte N``."""
    data = value.replace("\r", "").replace("\n", "")
    try:
        base64.b64decode(data, validate=True)
        if len(data) % 4 == 0:
            return
    except (binascii.Error, ValueError):
        pass
    bad = len(data)
    for i, ch in enumerate(data):
        if not (ch.isascii() and (ch.isalnum() or ch in "+/=")):
            bad = i
            break
    else:
        if "=" in data:
            bad = data.index("=")
    raise _Mismatch("", message=f"illegal base64 data at input byte {bad}")


# ------------------------------------------------------------------ times

_TIME_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
                      r"(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})", re.ASCII)
_CANONICAL = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z",
                        re.ASCII)
_CANONICAL_MICRO = re.compile(_CANONICAL.pattern[:-1] + r"\.[0-9]{6}Z", re.ASCII)
RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
_LAYOUT = (("2006", r"[0-9]{4}"), ("-", "-"), ("01", "[0-9]{2}"), ("-", "-"), ("02", "[0-9]{2}"), ("T", "T"),
           ("15", "[0-9]{1,2}"), (":", ":"), ("04", "[0-9]{2}"), (":", ":"), ("05", "[0-9]{2}"))


def canonical_time(value: str, *, micro: bool) -> str:
    """A metav1.Time (or MicroTime) string parsed as Go does, in kube's canonical UTC form.

    Time: RFC 3339 with any offset and optional fraction, written ``2006-01-02T15:04:05Z``
    (the fraction dropped, as Time's encoders do); MicroTime: exactly six fraction digits,
    written ``2006-01-02T15:04:05.000000Z``. ``_Mismatch`` with Go's ``time.Parse`` message otherwise.
    """
    if (_CANONICAL_MICRO if micro else _CANONICAL).fullmatch(value):
        return value  # the usual case: already UTC, in canonical form, and a valid date whatever the month
    m = _TIME_RE.fullmatch(value)
    frac = m.group(7) if m is not None else None
    if m is None or micro and (frac is None or len(frac) != 6):
        raise _Mismatch("", message=_time_error(value, micro))
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    zone = m.group(8)
    for what, number, high in (("month", month, 12), ("hour", hour, 23), ("minute", minute, 59),
                               ("second", second, 59)):
        if number > high or what == "month" and number < 1:
            raise _Mismatch("", message=f"parsing time {_quote(value)}: {what} out of range")
    canonical = zone == "Z" and (value[19] == "." if micro else frac is None)  # only the day to check
    try:
        t = _dt.datetime(year, month, day, hour, minute, second, int(frac[:6].ljust(6, "0")) if frac else 0)
    except ValueError:
        raise _Mismatch("", message=f"parsing time {_quote(value)}: day out of range") from None
    if canonical:
        return value
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        hh, mm = int(zone[1:3]), int(zone[4:6])
        if hh > 24 or mm > 60:
            what = "hour" if hh > 24 else "minute"
            raise _Mismatch("", message=f"parsing time {_quote(value)}: time zone offset {what} out of range")
        try:
            t -= _dt.timedelta(hours=hh, minutes=mm) * sign
        except OverflowError:
            raise _Mismatch("", message=f"parsing time {_quote(value)}: year outside of range [0,9999]") from None
    # Formatted by hand: strftime's %Y does not pad years before 1000 to four digits.
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return f"{text}.{t.microsecond:06d}Z" if micro else f"{text}Z"


def _time_error(value: str, micro: bool) -> str:
    """Go's time.ParseError text for a value that does not follow the layout."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value
    elems = list(_LAYOUT) + ([(".000000", r"[.,][0-9]{6}")] if micro else [])
    for elem, pattern in elems:
        m = re.match(pattern, rest, re.ASCII)
        if m is None:
            return f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse {_quote(rest)} as {_quote(elem)}"
        rest = rest[m.end():]
    if not micro:
        m = re.match(r"[.,][0-9]+", rest, re.ASCII)
        if m:
            rest = rest[m.end():]
    m = re.match(r"Z|[+-][0-9]{2}:[0-9]{2}", rest, re.ASCII)
    if m is None:
        return f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse {_quote(rest)} as \"Z07:00\""
    rest = rest[m.end():]
    return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"


def _quote(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    out.append('"')
    return "".join(out)


# ------------------------------------------------------------------ YAML


class _YamlError(Exception):
    pass


_BOOL_VALUES = {v: True for v in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")}
_BOOL_VALUES.update({v: False for v in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")})
_YAML_FLOAT = re.compile(r"[-+]?[0-9]*\.?[0-9]+(?:[eE][-+][0-9]+)?", re.ASCII)  # go-yaml v2's yamlStyleFloat
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)", re.ASCII)
_STR = "tag:yaml.org,2002:str"
_NUMBER = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as go-yaml v2 reads it into ``interface{}``, then made JSON-compatible as sigs.k8s.io/yaml does."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # expanded node count by id(node), of the nodes in _kept
        self._kept: list[Any] = []  # every sized node stays alive, so its id stays its own
        self._total = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            # An alias gives the anchored node again: count what it expands to, so a small
            # document cannot stand for a huge value, and refuse one that contains itself.
            anchored = self.anchors.get(self.peek_event().anchor)
            if anchored is not None:
                size = self._sizes.get(id(anchored))
                if size is None:
                    raise _YamlError(f"yaml: anchor '{self.peek_event().anchor}' value contains itself")
                self._total += size
                if self._total > MAX_YAML_NODES:
                    raise _YamlError("yaml: document contains excessive aliasing")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH + 1:
            raise _TooDeep
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        sizes = self._sizes
        if isinstance(node, yaml.ScalarNode):
            size = 1
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(sizes[id(n)] for n in node.value)
        else:
            size = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in node.value)
        sizes[id(node)] = size
        self._kept.append(node)
        return node

    def construct_scalar(self, node: Any) -> Any:
        value = super().construct_scalar(node)
        # Input that is not UTF-8 never gets this far, so a surrogate here came from a "\\u" escape:
        # go-yaml refuses those (libyaml's scanner check).
        if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
            raise _YamlError("yaml: found invalid Unicode character escape code")
        return value

    def construct_undefined(self, node: Any) -> Any:
        # Unknown tags (``!foo``, ``!!python/...``): go-yaml keeps the value as what it is.
        if isinstance(node, yaml.ScalarNode):
            return self.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_yaml_seq_plain(node)
        return self.construct_yaml_map_plain(node)

    def construct_yaml_seq_plain(self, node: Any) -> list[Any]:
        return [self.construct_object(n, deep=True) for n in node.value]

    def construct_yaml_map_plain(self, node: Any) -> dict[str, Any]:
        self.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            out[_json_key(self.construct_object(key_node, deep=True))] = self.construct_object(value_node, deep=True)
        return out

    def construct_bool(self, node: Any) -> Any:
        value = self.construct_scalar(node)
        if value in _BOOL_VALUES:
            return _BOOL_VALUES[value]
        raise _YamlError(f"yaml: cannot decode !!str `{value}` as a !!bool")

    def construct_number(self, node: Any) -> Any:
        """go-yaml v2's resolution of a plain scalar that may be a number: int, uint, float, else a string."""
        text = self.construct_scalar(node)
        if text[:1] == ".":
            try:
                return _json_number(float(text))
            except ValueError:
                return self._not_a_number(node, text)
        plain = text.replace("_", "")
        if _GO_INT.fullmatch(plain):
            body = plain.lstrip("+-")
            sign = -1 if plain[:1] == "-" else 1
            prefix = body[:2].lower()
            try:
                if prefix in ("0x", "0b", "0o"):
                    value = sign * int(body[2:], {"0x": 16, "0b": 2, "0o": 8}[prefix])
                elif len(body) > 1 and body[0] == "0":
                    value = sign * int(body, 8)
                else:
                    value = sign * int(body)
                if -(1 << 63) <= value < (1 << 64):  # int64, then uint64
                    return value
            except ValueError:
                pass
        if _YAML_FLOAT.fullmatch(plain):
            number = float(plain)
            if math.isfinite(number):  # Go's ParseFloat refuses what overflows: the scalar stays a string
                return _json_number(number)
        return self._not_a_number(node, text)

    def _not_a_number(self, node: Any, text: str) -> str:
        if node.tag == _NUMBER and self.resolve(yaml.ScalarNode, text, (True, False)) != _NUMBER:
            raise _YamlError(f"yaml: cannot decode !!str `{text}` as a !!int")
        return text  # looked like a number to the resolver but is none (``1e3``, ``2024-01-01``): a string

    def construct_float(self, node: Any) -> Any:
        text = self.construct_scalar(node)
        plain = text.replace("_", "")
        lowered = plain.lower()
        if lowered in (".nan",):
            raise _YamlError("json: unsupported value: NaN")
        if lowered in (".inf", "+.inf"):
            raise _YamlError("json: unsupported value: +Inf")
        if lowered == "-.inf":
            raise _YamlError("json: unsupported value: -Inf")
        if _YAML_FLOAT.fullmatch(plain) or _GO_INT.fullmatch(plain):
            try:
                return _json_number(float(plain))
            except ValueError:
                pass
        raise _YamlError(f"yaml: cannot decode !!str `{text}` as a !!float")

    def construct_null(self, node: Any) -> None:
        self.construct_scalar(node)
        return None

    def construct_string(self, node: Any) -> str:
        return str(self.construct_scalar(node))

    def construct_binary(self, node: Any) -> str:
        # go-yaml decodes !!binary to the bytes as a string; JSON then replaces invalid UTF-8 with U+FFFD.
        text = self.construct_scalar(node)
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise _YamlError("yaml: !!binary value contains invalid base64 data") from None
        return data.decode("utf-8", "replace")

    def construct_set(self, node: Any) -> dict[str, Any]:
        return {_json_key(self.construct_object(k, deep=True)): None for k, _ in node.value}

    def construct_sequence_as_list(self, node: Any) -> list[Any]:
        if isinstance(node, yaml.SequenceNode):
            return self.construct_yaml_seq_plain(node)
        return self.construct_undefined(node)  # type: ignore[no-any-return]


def _json_key(key: Any) -> str:
    """A YAML mapping key as sigs.k8s.io/yaml writes it in JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return f"{key:g}" if not key.is_integer() or abs(key) >= 1e21 else str(int(key))
    raise _YamlError(f"unsupported map key of type: {type(key).__name__}, key: {key!r}")


def _json_number(value: float) -> int | float:
    """A YAML float as JSON carries it: integral values are written without a fraction."""
    if not math.isfinite(value):
        raise _YamlError("json: unsupported value: " + ("NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"))
    if value.is_integer() and -(2**63) <= value < 2**63:
        return int(value)
    return value


_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"), list("yYnNtTfFoO"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_Loader.add_implicit_resolver(_FLOAT, re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+."))
_Loader.add_implicit_resolver(_NUMBER, re.compile(r"^[-+.0-9][-+.0-9a-zA-Z_]*$"), list("-+.0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
_Loader.yaml_constructors = dict(yaml.SafeLoader.yaml_constructors)
for _tag, _fn in (("tag:yaml.org,2002:null", _Loader.construct_null), ("tag:yaml.org,2002:bool", _Loader.construct_bool),
                  (_NUMBER, _Loader.construct_number), (_FLOAT, _Loader.construct_float),
                  ("tag:yaml.org,2002:binary", _Loader.construct_binary),
                  ("tag:yaml.org,2002:timestamp", _Loader.construct_string), (_STR, _Loader.construct_string),
                  ("tag:yaml.org,2002:set", _Loader.construct_set),
                  ("tag:yaml.org,2002:omap", _Loader.construct_sequence_as_list),
                  ("tag:yaml.org,2002:pairs", _Loader.construct_sequence_as_list),
                  ("tag:yaml.org,2002:seq", _Loader.construct_yaml_seq_plain),
                  ("tag:yaml.org,2002:map", _Loader.construct_yaml_map_plain),
                  (None, _Loader.construct_undefined)):
    _Loader.add_constructor(_tag, _fn)


class _NotPlainJson(Exception):
    """The JSON reading of a document might differ from its YAML reading: read it as YAML."""


# What a YAML reader treats otherwise than a JSON one inside a JSON document: characters YAML refuses
# (PyYAML's and libyaml's NON_PRINTABLE), line breaks other than \n and \r (NEL, LS, PS: folded in a
# quoted scalar), the BOM, tabs (whitespace only in some YAML places) and \u escapes (go-yaml refuses
# an escaped surrogate, even a pair).
_NOT_PLAIN_JSON = re.compile("[^\x0A\x0D\x20-\x7E\xA0-\uD7FF\uE000-\uFEFE\uFF00-\uFFFD\U00010000-\U0010FFFF]"
                             "|\u2028|\u2029" r"|\\u")


def _json_as_yaml_float(text: str) -> int | float | str:
    """A JSON number with a fraction or exponent as go-yaml v2 resolves the same plain scalar."""
    if _YAML_FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):
            return _json_number(number)
    raise _NotPlainJson  # a string to go-yaml (``1e5``) or out of range: the YAML path decides


def _json_as_yaml_int(text: str) -> int:
    value = int(text)
    if not -(1 << 63) <= value < (1 << 64):
        raise _NotPlainJson  # a float to go-yaml
    return value


def _no_json_constant(name: str) -> Any:
    raise _NotPlainJson


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotPlainJson  # a repeated key: the YAML path reads it (last one wins) and can say where
    return out


def _shallow_enough(value: Any, depth: int) -> bool:
    if isinstance(value, dict):
        return depth < MAX_DEPTH and all(_shallow_enough(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return depth < MAX_DEPTH and all(_shallow_enough(v, depth + 1) for v in value)
    return True


def _load_plain_json(data: bytes | str) -> Any:
    """``data`` read as JSON when it is a JSON object that YAML reads the same way (most apply bodies:
    clients send JSON), ten to a hundred times faster than the YAML reader; raises ``_NotPlainJson``
    when it is not (the caller reads it as YAML, errors included)."""
    try:
        text = data.decode() if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise _NotPlainJson from None
    if not text.lstrip(" \r\n").startswith("{") or _NOT_PLAIN_JSON.search(text):
        raise _NotPlainJson
    try:
        value = json.loads(text, parse_float=_json_as_yaml_float, parse_int=_json_as_yaml_int,
                           parse_constant=_no_json_constant, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        raise _NotPlainJson from None
    if not _shallow_enough(value, 1):
        raise _NotPlainJson
    return value


def load_yaml(data: bytes | str) -> Any:
    """The first YAML document of ``data`` as JSON-compatible values (str, int, float, bool, None, list, dict).

    Raises ``errors.BadRequest`` (``error converting YAML to JSON: ...``) for syntax errors, values
    JSON cannot carry (``.nan``, ``.inf``, keys that are null, lists or maps), aliases expanding
    past MAX_YAML_NODES or into themselves, and nesting deeper than MAX_DEPTH. A JSON object that
    YAML reads the same way is read by the JSON reader (``_load_plain_json``). A key repeated in a
    mapping takes its last value, as go-yaml's (non-strict) decoder.
    """
    return _load_yaml(data, None)


def load_yaml_strict(data: bytes | str) -> tuple[Any, list[str]]:
    """``load_yaml``, and what go-yaml v2's strict decoder refuses in ``data``: each key repeated in a
    mapping, as ``line 3: key "a" already set in map`` (sigs.k8s.io/yaml's UnmarshalStrict)."""
    duplicates: list[str] = []
    return _load_yaml(data, duplicates), duplicates


def _load_yaml(data: bytes | str, duplicates: list[str] | None) -> Any:
    try:
        return _load_plain_json(data)
    except _NotPlainJson:
        pass
    loader: _Loader | None = None
    try:
        loader = _Loader(data)  # its reader already refuses bytes that are not UTF-8
        node = loader.get_node() if loader.check_node() else None
        if node is None:
            return None
        value = loader.construct_document(node)
        if duplicates is not None:
            duplicates.extend(_repeated_keys(loader, node))
        return value
    except _TooDeep:
        raise errors.BadRequest(f"error converting YAML to JSON: the document is nested more than {MAX_DEPTH} "
                                "levels deep") from None
    except _YamlError as exc:
        raise errors.BadRequest(f"error converting YAML to JSON: {exc}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise errors.BadRequest(f"error converting YAML to JSON: {exc}") from None
    except RecursionError:
        raise errors.BadRequest("error converting YAML to JSON: the document is nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def _repeated_keys(loader: _Loader, root: Any) -> list[str]:
    """go-yaml's strict errors for the keys a mapping of ``root`` repeats, in document order (a merge
    key ``<<`` is not a key; a node shared through an alias is looked at once)."""
    out: list[tuple[tuple[int, int], str]] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
            continue
        keys: set[tuple[str, Any]] = set()
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = loader.construct_object(key_node, deep=True)
                identity = (type(key).__name__, key)
                if identity in keys:
                    mark = key_node.start_mark
                    out.append(((mark.line, mark.column), f"line {mark.line + 1}: key {_go_value(key)} "
                                "already set in map"))
                keys.add(identity)
        stack.extend(reversed([v for _, v in node.value]))
    return [text for _, text in sorted(out, key=lambda t: t[0])]


def _go_value(key: Any) -> str:
    """A decoded YAML key as Go's %#v writes it."""
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "<nil>"
    return str(key)
