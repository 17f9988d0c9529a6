"""What a write changed: the added, modified and removed fields between two objects.

``compare`` is structured-merge-diff's ``typed.Compare`` and ``field_set_of`` its
``ToFieldSet``, both walking objects along the schema's shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import orjson

from kapi.object.managedfields.fieldpath import FieldSet, Path, PathElement
from kapi.object.managedfields.shape import (MISSING, Shape, as_gvk, child_shape, children, deduce,
                                             has_zero_fields, list_groups, list_items, resolve,
                                             root_shape)
from kapi.object.schema import GVK, Schema

__all__ = ["Comparison", "compare", "field_set_of"]


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare numerically, but a bool never equals a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and a == b
    return type(a) is type(b) and a == b


def _same(a: Any, b: Any) -> bool:
    """True if two objects or lists are the same JSON, types and key order included: such subtrees
    compare as unchanged without walking them (a write mostly leaves most of an object as it was)."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b) or t is not dict and t is not list:
        return False
    try:
        # ``==`` fails fast where they differ; the bytes tell true from 1 and 1.0 from 1, as JSON does.
        return bool(a == b) and orjson.dumps(a) == orjson.dumps(b)
    except (TypeError, orjson.JSONEncodeError):
        return False


@dataclass(frozen=True, slots=True)
class Comparison:
    """What changed between two objects (structured-merge-diff's ``typed.Comparison``)."""

    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    def filtered(self, excluded: FieldSet) -> Comparison:
        """Drop the paths at or below ``excluded`` (an ignore filter of reset fields)."""
        if not excluded:
            return self
        return Comparison(self.added.recursive_difference(excluded),
                          self.modified.recursive_difference(excluded),
                          self.removed.recursive_difference(excluded))


@dataclass(slots=True)
class _Diff:
    schema: Schema
    added: set[Path] = dataclass_field(default_factory=set)
    modified: set[Path] = dataclass_field(default_factory=set)
    removed: set[Path] = dataclass_field(default_factory=set)

    def leaf(self, lhs: Any, rhs: Any, path: Path) -> None:
        if not path:
            return
        if lhs is MISSING:
            self.added.add(path)
        elif rhs is MISSING:
            self.removed.add(path)
        elif not _json_equal(lhs, rhs):
            self.modified.add(path)

    def post(self, lhs: Any, rhs: Any, path: Path) -> None:
        if not path:
            return
        if lhs is MISSING:
            self.added.add(path)
        elif rhs is MISSING:
            self.removed.add(path)

    def items(self, shape: Shape, lhs: Sequence[Any], rhs: Sequence[Any], path: Path) -> None:
        """The items of one key (or set value) on each side; a repeated key is one atomic item
        (structured-merge-diff's compare of duplicates)."""
        if len(lhs) <= 1 and len(rhs) <= 1:
            self.walk(shape, lhs[0] if lhs else MISSING, rhs[0] if rhs else MISSING, path)
        elif len(lhs) >= 2 and len(rhs) >= 2:
            if not _json_equal(list(lhs), list(rhs)):
                self.modified.add(path)
        elif len(lhs) >= 2:  # no longer repeated: the new item's fields are added, the marker goes
            if rhs:
                self.walk(shape, MISSING, rhs[0], path)
            self.removed.add(path)
        else:  # newly repeated: the old item's fields go, the marker is added
            if lhs:
                self.walk(shape, lhs[0], MISSING, path)
            self.added.add(path)

    def walk(self, shape: Shape, lhs: Any, rhs: Any, path: Path) -> None:
        if lhs is not MISSING and _same(lhs, rhs):
            return  # equal values: nothing added, modified or removed below
        kind = shape.kind
        if kind == "deduced":
            kind = deduce(lhs, rhs)
            if kind == "mixed":
                # A free-form node changed between object and non-object: the object
                # side's children go, and the node itself counts as a modified leaf.
                for key, child, lv, rv in children(self.schema, Shape("dmap"), _as_dict(lhs), _as_dict(rhs)):
                    self.walk(child, lv, rv, path + (PathElement.of_field(key),))
                self.leaf(lhs, rhs, path)
                return
            shape = Shape(kind) if kind == "dmap" else shape
        if kind in ("scalar", "atomic", "deduced"):
            self.leaf(lhs, rhs, path)
            return
        if kind == "list":
            llist, rlist = _as_list(lhs), _as_list(rhs)
            # Both sides empty or null: a leaf, which keeps the empty/null distinction.
            if not llist and not rlist:
                self.leaf(lhs, rhs, path)
                return
            litems, ritems = list_groups(shape, llist), list_groups(shape, rlist)
            item_shape = resolve(self.schema, shape.elem)
            for pe in dict.fromkeys([*litems, *ritems]):
                self.items(item_shape, litems.get(pe, ()), ritems.get(pe, ()), path + (pe,))
            self.post(lhs, rhs, path)
            return
        lmap, rmap = _as_dict(lhs), _as_dict(rhs)
        # Go's zero fields make an "empty" struct non-empty, so it is not promoted to a leaf.
        zeros = shape.kind == "struct" and shape.type is not None and has_zero_fields(shape.type)
        if not (lmap or zeros and lmap is not None) and not (rmap or zeros and rmap is not None):
            self.leaf(lhs, rhs, path)
            return
        for key, child, lv, rv in children(self.schema, shape, lmap, rmap):
            if lv is MISSING and rv is MISSING:
                continue
            self.walk(child, lv, rv, path + (PathElement.of_field(key),))
        self.post(lhs, rhs, path)


def _as_dict(v: Any) -> dict[str, Any] | None:
    return v if isinstance(v, dict) else None


def _as_list(v: Any) -> list[Any] | None:
    return v if isinstance(v, list) else None



def compare(schema: Schema, gvk: GVK | tuple[str, str, str], old: Mapping[str, Any] | None,
            new: Mapping[str, Any]) -> Comparison:
    """Compare two objects of a kind; ``old=None`` compares against the kind's zero object."""
    diff = _Diff(schema)
    diff.walk(root_shape(schema, as_gvk(gvk)), dict(old or {}), dict(new), ())
    # The walk records no empty path (the whole object): the sets are made as they are.
    return Comparison(FieldSet._of(frozenset(diff.added)), FieldSet._of(frozenset(diff.modified)),
                      FieldSet._of(frozenset(diff.removed)))


def field_set_of(schema: Schema, gvk: GVK | tuple[str, str, str], obj: Mapping[str, Any], *,
                 go_typed: bool = True) -> FieldSet:
    """Every leaf and item an object sets (structured-merge-diff's ``ToFieldSet``).

    ``go_typed``: the object is seen as Go's decoder would hold it (omitempty, zero value structs);
    False reads it as sent (an applied configuration, which kube keeps unstructured).
    """
    out: set[Path] = set()
    if go_typed:
        _to_set(schema, root_shape(schema, as_gvk(gvk)), dict(obj), (), out)
    else:
        _raw_set(schema, root_shape(schema, as_gvk(gvk)), obj, (), out)
    return FieldSet(out)


def _raw_set(schema: Schema, shape: Shape, value: Any, path: Path, out: set[Path]) -> None:
    kind = shape.kind
    if kind == "deduced":
        kind = "dmap" if isinstance(value, dict) and value else "scalar"
    if kind == "list" and isinstance(value, list) and value:
        item_shape = resolve(schema, shape.elem)
        for pe, item in list_items(shape, value).items():
            out.add(path + (pe,))
            _raw_set(schema, item_shape, item, path + (pe,), out)
        return
    if kind in ("struct", "map", "cr_root", "dmap") and isinstance(value, dict) and value:
        fields = shape.type if kind == "struct" else None
        for key, v in value.items():
            sub = path + (PathElement.of_field(key),)
            _raw_set(schema, child_shape(schema, shape, key), v, sub, out)
            if fields is None or fields.field(key) is None:
                out.add(sub)  # a map's entry is a member even with children (SMD's visitMapItems)
        return
    if path:
        out.add(path)


def _to_set(schema: Schema, shape: Shape, value: Any, path: Path, out: set[Path]) -> None:
    kind = shape.kind
    if kind == "deduced":
        kind = "dmap" if isinstance(value, dict) else "scalar"
    if kind in ("scalar", "atomic"):
        out.add(path)
        return
    if kind == "list":
        item_shape = resolve(schema, shape.elem)
        for pe, items in list_groups(shape, _as_list(value)).items():
            if len(items) == 1:  # a repeated key or value is a member without its fields
                _to_set(schema, item_shape, items[0], path + (pe,), out)
            out.add(path + (pe,))
        return
    m = _as_dict(value)
    if m is None:
        return
    for key, child, _, v in children(schema, Shape(kind, type=shape.type, elem=shape.elem), None, m):
        if v is MISSING:
            continue
        sub = path + (PathElement.of_field(key),)
        _to_set(schema, child, v, sub, out)
        declared = kind == "struct" and shape.type is not None and shape.type.field(key) is not None
        zeros = child.kind == "struct" and child.type is not None and has_zero_fields(child.type)
        if v is None or v == {} and not zeros or not declared:
            out.add(sub)
