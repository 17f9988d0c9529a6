"""Pruning of unknown fields (apiextensions ``schema/pruning``): in place, every field the schema does
not declare is dropped, except under ``x-kubernetes-preserve-unknown-fields``; ``apiVersion``, ``kind``
and ``metadata`` are kept at the root and in embedded resources. The dropped fields' paths are what
``fieldValidation=Warn``/``Strict`` report (``unknown field "spec.foo"``).
"""

from __future__ import annotations

from typing import Any

from kapi.object.structural import Structural

__all__ = ["prune"]

_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def prune(obj: Any, s: Structural | None, *, root: bool = True, nulls: bool | None = None) -> list[str]:
    """Drop from ``obj`` (in place) what ``s`` does not declare; return the dropped paths, sorted
    (``spec.foo``, ``spec.items[0].bar``). ``root``: ``obj`` is a whole object (its apiVersion, kind and
    metadata are kept, as an embedded resource's). ``nulls`` (default: ``root``): then drop the nulls of
    fields neither nullable nor defaulted, as kube's decoding does after pruning (not reported)."""
    out: list[str] = []
    _prune(obj, s, "", out, root)
    if nulls if nulls is not None else root:
        from kapi.object.structural.defaulting import prune_non_nullable_nulls
        prune_non_nullable_nulls(obj, s)
    out.sort()
    return out


def _key(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _prune(x: Any, s: Structural | None, path: str, out: list[str], embedded: bool = False) -> None:
    if s is not None and s.preserve_unknown_fields:
        _skip_prune(x, s, path, out, embedded)
        return
    if isinstance(x, dict):
        if s is None:
            for k in list(x):
                out.append(_key(path, k))
            x.clear()
            return
        embedded = embedded or s.embedded_resource
        props = s.properties
        ap = s.additional_properties
        ap_node = ap if isinstance(ap, Structural) else None
        drop = None
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                continue
            p = props.get(k)
            if p is not None:
                if type(v) is dict or type(v) is list or p.preserve_unknown_fields:
                    _prune(v, p, _key(path, k), out)
            elif ap is not None:
                # a bool additionalProperties has no schema: kube prunes the value with none (an object
                # value loses all its fields, a scalar stays)
                if ap_node is not None or type(v) is dict or type(v) is list:
                    _prune(v, ap_node, _key(path, k), out)
            else:
                if k not in _META_FIELDS or path:
                    out.append(_key(path, k))
                if drop is None:
                    drop = []
                drop.append(k)
        if drop:
            for k in drop:
                del x[k]
    elif isinstance(x, list):
        items = s.items if s is not None else None
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                _prune(v, items, f"{path}[{i}]", out)


def _skip_prune(x: Any, s: Structural | None, path: str, out: list[str], embedded: bool = False) -> None:
    if s is None:
        return
    if isinstance(x, dict):
        embedded = embedded or s.embedded_resource
        ap = s.additional_properties
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                continue
            p = s.properties.get(k)
            if p is not None:
                _prune(v, p, _key(path, k), out)
            elif isinstance(ap, Structural):
                _prune(v, ap, _key(path, k), out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _skip_prune(v, s.items, f"{path}[{i}]", out)
