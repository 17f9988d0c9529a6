"""Field errors as kube's ``field.ErrorList`` reports them: reasons, ``Cause`` builders, Go value rendering.

A cause's message is ``ErrorBody()`` (``Invalid value: "Foo": ...``), its field the path
(``spec.containers[0].name``), its reason the error type; values are printed as Go's
``%#v``/``%v`` would. Also the safe accessors every rule uses: a field of the wrong JSON type
is treated as absent.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

from kapi.errors import Cause


Obj = dict[str, Any]
_P = ParamSpec("_P")


REASON_REQUIRED = "FieldValueRequired"
REASON_INVALID = "FieldValueInvalid"
REASON_FORBIDDEN = "FieldValueForbidden"
REASON_DUPLICATE = "FieldValueDuplicate"
REASON_NOT_SUPPORTED = "FieldValueNotSupported"
REASON_NOT_FOUND = "FieldValueNotFound"
REASON_TOO_LONG = "FieldValueTooLong"
REASON_TOO_MANY = "FieldValueTooMany"

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(value: str) -> str:
    """``value`` quoted as Go's ``strconv.Quote`` (``%q``) does."""
    out = ['"']
    for ch in value:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            cp = ord(ch)
            out.append(f"\\x{cp:02x}" if cp < 0x20 or cp == 0x7F else
                       f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)


def go_quote_list(values: Sequence[str]) -> str:
    """A ``[]string`` as Go's ``%q`` prints it: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A value already printed the way Go's ``%#v`` or ``String()`` prints it."""

    text: str


def _go_float(value: float) -> str:
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    # Go writes exponents with a sign and at least two digits (1e+21, 1e-07).
    return re.sub(r"e([+-]?)(\d+)$", lambda m: f"e{m.group(1) or '+'}{int(m.group(2)):02d}", text)


def _render(value: object) -> str:
    if isinstance(value, _Rendered):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    # Go prints structs with %#v; JSON is the readable stand-in for composite values.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _cause(reason: str, path: str, body: str, detail: str) -> Cause:
    return Cause(reason=reason, message=f"{body}: {detail}" if detail else body, field=path)


def field_required(path: str, detail: str = "") -> Cause:
    """``Required value``."""
    return _cause(REASON_REQUIRED, path, "Required value", detail)


def field_invalid(path: str, value: object, detail: str = "") -> Cause:
    """``Invalid value: <value>``."""
    return _cause(REASON_INVALID, path, f"Invalid value: {_render(value)}", detail)


def field_not_supported(path: str, value: object, valid: Iterable[str]) -> Cause:
    """``Unsupported value: <value>: supported values: "A", "B"``."""
    quoted = [go_quote(v) for v in valid]
    detail = "supported values: " + ", ".join(quoted) if quoted else ""
    return _cause(REASON_NOT_SUPPORTED, path, f"Unsupported value: {_render(value)}", detail)


def field_forbidden(path: str, detail: str = "") -> Cause:
    """``Forbidden``."""
    return _cause(REASON_FORBIDDEN, path, "Forbidden", detail)


def field_duplicate(path: str, value: object) -> Cause:
    """``Duplicate value: <value>``."""
    return _cause(REASON_DUPLICATE, path, f"Duplicate value: {_render(value)}", "")


def field_not_found(path: str, value: object) -> Cause:
    """``Not found: <value>``."""
    return _cause(REASON_NOT_FOUND, path, f"Not found: {_render(value)}", "")


def field_too_long(path: str, max_bytes: int) -> Cause:
    """``Too long: may not be more than N bytes`` (the value is never printed)."""
    unit = "byte" if max_bytes == 1 else "bytes"
    return _cause(REASON_TOO_LONG, path, "Too long", f"may not be more than {max_bytes} {unit}")


def _immutable(path: str, new: object, old: object, rendered: object | None = None) -> list[Cause]:
    if _semantic_equal(new, old):
        return []
    return [field_invalid(path, new if rendered is None else rendered, FIELD_IMMUTABLE)]


def _nonnegative(path: str, value: object) -> list[Cause]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [field_invalid(path, value, IS_NEGATIVE)]
    return []


def unique_causes(check: Callable[_P, list[Cause]]) -> Callable[_P, list[Cause]]:
    """``check`` reporting each identical cause once, in first-seen order.

    Every public per-kind validator (``validate_<kind>``, ``validate_<kind>_update``)
    wears this, so callers get the causes as a Status reports them.
    """
    @functools.wraps(check)
    def once(*args: _P.args, **kwargs: _P.kwargs) -> list[Cause]:
        return list(dict.fromkeys(check(*args, **kwargs)))
    return once


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: object) -> str:
    return value if isinstance(value, str) else ""


def _i(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _str_map(value: object) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v if isinstance(v, str) else _render(v) for k, v in value.items()}


def _prune(value: object) -> object:
    """``value`` without Go zero values, so that absent, null, "" and [] compare equal."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", 0, False, [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _semantic_equal(a: object, b: object) -> bool:
    # apiequality.Semantic treats nil and empty slices/maps alike; JSON adds absent == zero.
    # Equal values prune alike, so the walk is only needed where they differ.
    return a == b or _prune(a) == _prune(b)


def _go_strings(values: object) -> str:
    if not isinstance(values, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(_s(v)) for v in values) + "}"


def _go_map(value: object) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    items = sorted((str(k), _s(v)) for k, v in value.items())
    return "map[string]string{" + ", ".join(f"{go_quote(k)}:{go_quote(v)}" for k, v in items) + "}"


def _int_or_string(value: object) -> _Rendered:
    # intstr.IntOrString has String(), which prints the bare int or string.
    return _Rendered(str(value) if not isinstance(value, bool) else "0")
