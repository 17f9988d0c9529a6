"""Defaulting (apiextensions ``schema/defaulting``): in place, a property's ``default`` fills it when it
is absent (or a null that is not nullable); defaults of ``items`` and ``additionalProperties`` fill null
entries; the defaults are deep-copied, then what defaulting put in is pruned as kube prunes it
(defaults are validated and pruned when the CRD is written, so only nulls remain to clean:
``PruneNonNullableNullsWithoutDefaults``).
"""

from __future__ import annotations

import copy
from typing import Any

from kapi.object.structural import Structural

__all__ = ["default", "prune_non_nullable_nulls", "has_defaults"]


def _copy(v: Any) -> Any:
    t = type(v)
    if t is dict or t is list:
        return copy.deepcopy(v)
    return v


def has_defaults(s: Structural) -> bool:
    """Whether any node of ``s`` has a default (memoized: defaulting a tree without any is skipped)."""
    c = s.cache.get("has_default")
    if c is None:
        c = s.has_default or any(has_defaults(p) for p in s.properties.values()) or (
            s.items is not None and has_defaults(s.items)) or (
            isinstance(s.additional_properties, Structural) and has_defaults(s.additional_properties))
        s.cache["has_default"] = c
    return c


def _non_nullable_null(x: Any, s: Structural | None) -> bool:
    return x is None and s is not None and not s.nullable


def default(obj: Any, s: Structural | None) -> None:
    """Apply the defaults of ``s`` to ``obj`` in place (kube's ``structuraldefaulting.Default``)."""
    if s is None or not has_defaults(s):
        return
    _default(obj, s)


def _default(x: Any, s: Structural) -> None:
    if isinstance(x, dict):
        for k, p in s.properties.items():
            if not p.has_default or p.default is None:
                continue
            if k not in x or _non_nullable_null(x[k], p):
                x[k] = _copy(p.default)
        ap = s.additional_properties
        for k in x:
            p = s.properties.get(k)
            if p is not None:
                if has_defaults(p):
                    _default(x[k], p)
            elif isinstance(ap, Structural):
                if _non_nullable_null(x[k], ap) and ap.has_default and ap.default is not None:
                    x[k] = _copy(ap.default)
                if has_defaults(ap):
                    _default(x[k], ap)
    elif isinstance(x, list):
        items = s.items
        if items is None:
            return
        for i in range(len(x)):
            if _non_nullable_null(x[i], items) and items.has_default and items.default is not None:
                x[i] = _copy(items.default)
            if has_defaults(items):
                _default(x[i], items)


def prune_non_nullable_nulls(x: Any, s: Structural | None) -> None:
    """``PruneNonNullableNullsWithoutDefaults``: drop null fields that are neither nullable nor defaulted
    (kube does this after defaulting, on create, update and read)."""
    if isinstance(x, dict):
        for k in list(x):
            v = x[k]
            sub = None
            if s is not None:
                sub = s.properties.get(k)
                if sub is None and isinstance(s.additional_properties, Structural):
                    sub = s.additional_properties
            if v is None and sub is not None and not sub.nullable and not (sub.has_default and sub.default is not None):
                del x[k]
            elif type(v) is dict or type(v) is list:
                prune_non_nullable_nulls(v, sub)
    elif isinstance(x, list):
        items = s.items if s is not None else None
        for v in x:
            if type(v) is dict or type(v) is list:
                prune_non_nullable_nulls(v, items)
