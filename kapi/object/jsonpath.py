"""kubectl-style JSONPath (``k8s.io/client-go/util/jsonpath``), the subset CRDs use.

``additionalPrinterColumns[].jsonPath`` and ``selectableFields[].jsonPath`` are simple paths:
``.spec.foo``, ``.spec['a.b']``, ``.items[0]``, ``.items[*].name``, ``.status.conditions[?(@.type=="Ready")].status``
(filters compare with ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=`` against a string, number or boolean
literal, or test that a path exists). ``compile_path(text)`` parses once; ``Path.find(obj)`` gives
every value it reaches (missing keys are allowed: no values), ``print_value`` formats one as kubectl's
``PrintResults`` writes it (Go's ``fmt.Fprint`` of a scalar, ``json.Marshal`` of a map or list).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from kapi.object.structural.validation import go_json

__all__ = ["JSONPathError", "Path", "compile_path", "print_value"]


class JSONPathError(ValueError):
    pass


Step = Callable[[Any], list[Any]]


def _field(name: str) -> Step:
    def step(v: Any) -> list[Any]:
        if isinstance(v, dict) and name in v:
            return [v[name]]
        return []
    return step


def _wild(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return [v[k] for k in sorted(v)]
    if isinstance(v, list):
        return list(v)
    return []


def _index(i: int) -> Step:
    def step(v: Any) -> list[Any]:
        if isinstance(v, list) and -len(v) <= i < len(v):
            return [v[i]]
        return []
    return step


def _slice(start: int | None, end: int | None, stride: int | None) -> Step:
    def step(v: Any) -> list[Any]:
        return list(v[start:end:stride]) if isinstance(v, list) else []
    return step


def _recursive(v: Any) -> list[Any]:
    out = [v]
    if isinstance(v, dict):
        for k in sorted(v):
            out.extend(_recursive(v[k]))
    elif isinstance(v, list):
        for x in v:
            out.extend(_recursive(x))
    return out


_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}
_FILTER = re.compile(r"^\s*@((?:\.[\w-]+|\[[^\]]*\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")


def _literal(text: str) -> Any:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        raise JSONPathError(f"unrecognized filter value {t!r}") from None


def _filter(expr: str) -> Step:
    m = _FILTER.match(expr)
    if m is None:
        raise JSONPathError(f"unrecognized filter {expr!r}")
    sub = compile_path(m.group(1) or "")
    op = m.group(2)
    right = _literal(m.group(3)) if op else None

    def keep(item: Any) -> bool:
        found = sub.find(item)
        if not op:
            return bool(found)
        for left in found:
            try:
                if isinstance(left, bool) != isinstance(right, bool):
                    continue
                if _OPS[op](left, right):
                    return True
            except TypeError:
                continue
        return False

    def step(v: Any) -> list[Any]:
        items = v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
        return [x for x in items if keep(x)]
    return step


def _bracket(inner: str) -> Step:
    s = inner.strip()
    if s == "*":
        return _wild
    if s.startswith("?(") and s.endswith(")"):
        return _filter(s[2:-1])
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return _field(s[1:-1])
    if ":" in s:
        parts = [p.strip() for p in s.split(":")]
        if len(parts) > 3:
            raise JSONPathError(f"invalid array slice [{inner}]")
        try:
            nums = [int(p) if p else None for p in parts] + [None] * (3 - len(parts))
        except ValueError:
            raise JSONPathError(f"invalid array index [{inner}]") from None
        return _slice(*nums)
    try:
        return _index(int(s))
    except ValueError:
        raise JSONPathError(f"invalid array index [{inner}]") from None


@dataclass(frozen=True, slots=True)
class Path:
    text: str
    steps: tuple[Step, ...]

    def find(self, obj: Any) -> list[Any]:
        values = [obj]
        for step in self.steps:
            nxt: list[Any] = []
            for v in values:
                nxt.extend(step(v))
            values = nxt
            if not values:
                break
        return values

    def first(self, obj: Any) -> tuple[bool, Any]:
        """(found, the first value reached)."""
        found = self.find(obj)
        return (True, found[0]) if found else (False, None)


def compile_path(text: str) -> Path:
    """A JSONPath as kubectl reads ``{<text>}``; the braces may be given too. JSONPathError if malformed."""
    t = text.strip()
    if t.startswith("{") and t.endswith("}"):
        t = t[1:-1].strip()
    if t.startswith("$"):
        t = t[1:]
    steps: list[Step] = []
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if t.startswith("..", i):
            steps.append(_recursive)
            i += 2
            if i >= n or t[i] == ".":
                raise JSONPathError(f"invalid recursive descent in {text!r}")
            if i < n and t[i] not in ".[":
                j = i
                while j < n and t[j] not in ".[":
                    j += 1
                steps.append(_wild if t[i:j] == "*" else _field(t[i:j]))
                i = j
        elif c == ".":
            j = i + 1
            while j < n and t[j] not in ".[":
                j += 1
            name = t[i + 1:j]
            if not name:
                raise JSONPathError(f"invalid path {text!r}")
            steps.append(_wild if name == "*" else _field(name))
            i = j
        elif c == "[":
            depth, j, quote = 0, i, ""
            while j < n:
                ch = t[j]
                if quote:
                    if ch == quote:
                        quote = ""
                elif ch in "'\"":
                    quote = ch
                elif ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                raise JSONPathError(f"unterminated array in {text!r}")
            steps.append(_bracket(t[i + 1:j]))
            i = j + 1
        else:
            # kubectl allows a leading field name without the dot ("spec.foo")
            if steps or i:
                raise JSONPathError(f"unrecognized character in action: {c!r} in {text!r}")
            j = i
            while j < n and t[j] not in ".[":
                j += 1
            steps.append(_field(t[i:j]))
            i = j
    return Path(text, tuple(steps))


def _go_float(f: float) -> str:
    """Go's %v of a float64 (strconv 'g' with the shortest repr, exponent when < 1e-4 or >= 1e21)."""
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    if f == int(f) and abs(f) < 1e21:
        return str(int(f))
    r = repr(f)
    if "e" in r:
        mant, exp = r.split("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        return f"{mant}e{sign}{digits}"
    return r


def print_value(v: Any) -> str:
    """One value as kubectl's jsonpath PrintResults writes it: a scalar as Go's fmt.Fprint, a map or
    list as compact JSON (Go's json.Marshal: keys sorted)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, (list, dict)):
        return go_json(v)  # PrintResults writes maps and slices as JSON
    return str(v)
