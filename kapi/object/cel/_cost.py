"""An estimate of kube's CEL cost (cel-go's checker.Cost with kube's library costs), on the rule text.

cel-cpp exposes neither an AST nor a cost tracker to Python, so the cost is estimated from the
rule's text and the schema: one unit per operator/identifier, a comprehension macro (all, exists,
exists_one, map, filter) costs its receiver's size × (its body's cost + 1), and string functions
(matches, contains, startsWith, endsWith, find, findAll, split, ...) and equality of lists/strings
cost 0.1 per character/element, as kube's. A collection's size is its schema's maxItems /
maxProperties / maxLength, or, when unbounded, what fits in a request (kube's 3 MiB
``maxRequestSizeBytes`` ÷ the element's smallest serialized size). At run time the same estimate is
made with the object's actual sizes (kube's runtime tracker counts the same way).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from kapi.object.structural import Structural

MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
_MACROS = ("all", "exists", "exists_one", "map", "filter")
_STRFN = ("matches", "contains", "startsWith", "endsWith", "find", "findAll", "split", "replace", "indexOf",
          "lastIndexOf", "lowerAscii", "upperAscii", "trim", "substring", "join", "size")
_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|==|!=|<=|>=|&&|\|\||\S")
MAX = (1 << 64) - 1


def saturating_add(a: int, b: int) -> int:
    return min(MAX, a + b)


def saturating_mul(a: int, b: int) -> int:
    return min(MAX, a * b)


def cost_error_message(name: str, cost: int, limit: int) -> str:
    f = cost / limit
    if f > 100.0:
        factor = "more than 100x"
    elif f < 1.5:
        factor = f"{f:f}x"
    else:
        factor = f"{f:.1f}x"
    return (f"{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


def _min_size(s: Structural | None) -> int:
    if s is None:
        return 1
    if s.type == "string":
        return 2 + (s.value.min_length or 0)
    if s.type in ("object", "array"):
        return 2
    return 1


def root_cardinality() -> int:
    return 1


def max_cardinality(s: Structural) -> int:
    """How many times the items / additionalProperties of ``s`` may occur (kube's maxCardinality)."""
    if s.type == "array":
        if s.value.max_items is not None:
            return s.value.max_items
        return (MAX_REQUEST_SIZE_BYTES - 2) // (_min_size(s.items) + 1)
    if isinstance(s.additional_properties, Structural):
        if s.value.max_properties is not None:
            return s.value.max_properties
        return (MAX_REQUEST_SIZE_BYTES - 2) // (_min_size(s.additional_properties) + 4)
    return 1


def _max_length(s: Structural) -> int:
    if s.type == "string":
        if s.value.max_length is not None:
            return s.value.max_length
        return MAX_REQUEST_SIZE_BYTES - 2
    if s.type in ("array", "object"):
        return max_cardinality(s)
    return 1


# A "shape" is either a Structural (static estimate) or ("value", v) (runtime).
def _size(shape: Any) -> int:
    if isinstance(shape, Structural):
        return _max_length(shape)
    v = shape[1]
    return len(v) if isinstance(v, (str, list, dict)) else 1


def _elem(shape: Any) -> Any:
    if isinstance(shape, Structural):
        if shape.type == "array":
            return shape.items or Structural()
        if isinstance(shape.additional_properties, Structural):
            return Structural(type="string")  # map macros iterate keys
        return Structural()
    v = shape[1]
    if isinstance(v, list) and v:
        return ("value", max(v, key=lambda x: len(x) if isinstance(x, (str, list, dict)) else 1))
    if isinstance(v, dict) and v:
        return ("value", max(v, key=len))
    return ("value", None)


def _child(shape: Any, name: str) -> Any:
    if isinstance(shape, Structural):
        if name in shape.properties:
            return shape.properties[name]
        if isinstance(shape.additional_properties, Structural):
            return shape.additional_properties
        return Structural()
    v = shape[1]
    return ("value", v.get(name) if isinstance(v, dict) else None)


def _match(tokens: list[str], i: int) -> int:
    """Index of the ")" closing tokens[i] == "("."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] in ("(", "[", "{"):
            depth += 1
        elif tokens[j] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def _cost(tokens: list[str], env: dict[str, Any]) -> int:
    total = 0
    i = 0
    n = len(tokens)
    while i < n:
        t = tokens[i]
        if t in env:  # a path: ident(.ident)*
            shape = env[t]
            j = i + 1
            while j + 1 < n and tokens[j] == "." and re.match(r"[A-Za-z_]", tokens[j + 1]) and \
                    not (j + 2 < n and tokens[j + 2] == "("):
                shape = _child(shape, tokens[j + 1])
                j += 2
                total += 1
            total += 1
            if j + 2 < n and tokens[j] == "." and tokens[j + 2] == "(":
                fn = tokens[j + 1]
                close = _match(tokens, j + 2)
                args = tokens[j + 3:close]
                if fn in _MACROS and len(args) >= 2 and args[1] == ",":
                    body = _cost(args[2:], {**env, args[0]: _elem(shape)})
                    total = saturating_add(total, saturating_mul(_size(shape), body + 1))
                    i = close + 1
                    continue
                if fn in _STRFN:
                    total = saturating_add(total, math.ceil(_size(shape) * 0.1) + 1)
                total = saturating_add(total, _cost(args, env))
                i = close + 1
                continue
            if j + 1 < n and tokens[j] in ("==", "!=") and tokens[j + 1] in env:
                total = saturating_add(total, math.ceil(_size(shape) * 0.1))
            i = j
            continue
        total += 1
        i += 1
    return total


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(text))


@functools.lru_cache(maxsize=4096)
def _dynamic(text: str) -> bool:
    toks = set(_tokens(text))
    return bool(toks & set(_MACROS) or toks & set(_STRFN) or "==" in toks or "!=" in toks)


def estimate(text: str, s: Structural) -> int:
    """The static estimated cost of ``text`` with ``self``/``oldSelf`` of schema ``s``."""
    return _cost(list(_tokens(text)), {"self": s, "oldSelf": s})


def runtime(text: str, value: Any, old: Any) -> int:
    """The cost of one evaluation of ``text`` on ``value`` (and ``old``)."""
    toks = _tokens(text)
    if not _dynamic(text):
        return len(toks)
    return _cost(list(toks), {"self": ("value", value), "oldSelf": ("value", old)})
