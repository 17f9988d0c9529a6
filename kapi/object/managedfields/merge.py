"""structured-merge-diff's ``Merge``: a partial object (an apply configuration) merged into an object
with the schema's list and map types, as server-side apply and MutatingAdmissionPolicy's
ApplyConfiguration merge.

- a struct or a granular map merges key by key; a key only one side has is kept as it is;
- an atomic node (``x-kubernetes-list-type: atomic``, ``x-kubernetes-map-type: atomic``, a list
  without a list type or a merge strategy) and a scalar are replaced by the patch's value;
- a list-map (``x-kubernetes-list-map-keys``) merges items by key, a set by value: items both sides
  have are merged in place, in the patch's relative order, the object's other items keep their places
  and the patch's new ones follow (structured-merge-diff's ordering);
- free-form nodes (a custom resource's body, ``x-kubernetes-preserve-unknown-fields``) merge maps
  key by key and replace anything else.

``atomic_paths`` lists the atomic nodes a patch sets (kube refuses such an apply configuration in a
mutating policy: "may not mutate atomic arrays, maps or structs"). Object layer: no I/O; inputs are
never changed.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from kapi.object.managedfields.shape import Shape, as_gvk, child_shape, item_keys, resolve, root_shape
from kapi.object.schema import GVK, Schema

__all__ = ["MergeError", "atomic_paths", "merge", "structural_types", "type_errors"]

Obj = dict[str, Any]
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DEDUCED = Shape("deduced")


class MergeError(ValueError):
    """The patch does not fit the object's schema (a list-map item without its keys, two items with one key)."""


def merge(schema: Schema, gvk: GVK | tuple[str, str, str], live: Obj, patch: Obj) -> Obj:
    """``live`` with ``patch`` merged in (a new object)."""
    out = _merge(schema, root_shape(schema, as_gvk(gvk)), live, patch, "")
    return out if isinstance(out, dict) else {}


def atomic_paths(schema: Schema, gvk: GVK | tuple[str, str, str], patch: Any) -> list[str]:
    """The paths (``.spec.containers[0].args``) of the atomic lists, maps and structs ``patch`` sets."""
    out: list[str] = []
    _atomics(schema, root_shape(schema, as_gvk(gvk)), patch, "", out)
    return out


def type_errors(schema: Schema, gvk: GVK | tuple[str, str, str], value: Any) -> list[str]:
    """What structured-merge-diff's ObjectToTyped refuses in ``value`` (``.spec.bogus: field not
    declared in schema``, a map where a list belongs, ...); free-form nodes take anything."""
    out: list[str] = []
    _types(schema, root_shape(schema, as_gvk(gvk)), value, "", out)
    return out


def _types(schema: Schema, shape: Shape, value: Any, path: str, out: list[str]) -> None:
    if value is None or shape.kind in ("deduced", "atomic", "scalar"):
        return
    if shape.kind in ("struct", "map", "cr_root"):
        if not isinstance(value, dict):
            out.append(f"{path or '.'}: expected map, got {_kind(value)}")
            return
        for key, child in value.items():
            if shape.kind == "struct" and shape.type is not None and shape.type.field(key) is None \
                    and not shape.type.preserve_unknown and key not in ("apiVersion", "kind"):
                out.append(f"{path}.{key}: field not declared in schema")
                continue
            _types(schema, child_shape(schema, shape, key), child, f"{path}.{key}", out)
    elif shape.kind == "list":
        if not isinstance(value, list):
            out.append(f"{path}: expected list, got {_kind(value)}")
            return
        elem = resolve(schema, shape.elem)
        for i, item in enumerate(value):
            _types(schema, elem, item, f"{path}[{i}]", out)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


# ------------------------------------------------------------------ walking


def _merge(schema: Schema, shape: Shape, lhs: Any, rhs: Any, path: str) -> Any:
    if rhs is None:  # a null patch keeps a granular map, struct or list (a free-form node: a map only)
        keep = isinstance(lhs, (dict, list)) and shape.kind in ("struct", "map", "list", "cr_root") or \
            isinstance(lhs, dict) and shape.kind == "deduced"
        return _copy(lhs) if keep else None
    if shape.kind in ("struct", "map", "cr_root", "deduced") and isinstance(rhs, dict):
        if not isinstance(lhs, dict):
            lhs = {}
        out = {k: v if k in rhs else _copy(v) for k, v in lhs.items()}  # what rhs has is merged below
        for key, value in rhs.items():
            out[key] = _merge(schema, child_shape(schema, shape, key), lhs.get(key), value, f"{path}.{key}")
        return out
    if shape.kind == "list" and isinstance(rhs, list):
        return _merge_list(schema, shape, lhs if isinstance(lhs, list) else [], rhs, path)
    # atomic, scalar, a free-form leaf, or a value of another type than the schema's: the patch's wins
    return _copy(rhs)


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value (an orjson round trip for containers: several times faster than deepcopy)."""
    if type(value) is dict or type(value) is list:
        try:
            return orjson.loads(orjson.dumps(value))
        except TypeError:  # an integer orjson cannot carry, a value nested past its limit
            return copy.deepcopy(value)
    return value


def _key(shape: Shape, item: Any, path: str) -> Any:
    """An item's identity in its list: its key fields (list-map) or its value (set)."""
    if shape.keys:
        if not isinstance(item, dict):
            raise MergeError(f"{path}: expected a map item in an associative list, got {_show(item)}")
        keys = item_keys(shape, item)
        if keys is None:
            names = " ".join(orjson.dumps(k).decode() for k in shape.keys)
            raise MergeError(f"{path}: associative list with keys has an element that omits all key fields "
                             f"[{names}] (and doesn't have default values for any key fields)")
        return tuple((k, _value_text(v)) for k, v in keys.items())
    return _value_text(item)


def _value_text(v: Any) -> bytes:
    """A value's identity as text: numbers as values (``2.0`` is ``2``), maps with sorted keys."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS)


def _show(v: Any) -> str:
    return orjson.dumps(v).decode()


_REPEATED = object()  # the item of a key the object repeats: not merged with the patch's


def _index(shape: Shape, items: list[Any], path: str, repeats: bool) -> tuple[list[Any], dict[Any, Any]]:
    """Each item's identity in order, and the item of each identity (``_REPEATED`` when ``repeats``
    lets the object repeat one; a patch may not)."""
    keys: list[Any] = []
    by: dict[Any, Any] = {}
    for i, item in enumerate(items):
        k = _key(shape, item, f"{path}[{i}]")
        if k in by:
            if not repeats:
                what = "key" if shape.keys else "value"
                raise MergeError(f"{path}: duplicate entries for {what} {_describe(shape, item)}")
            by[k] = _REPEATED
        else:
            by[k] = item
        keys.append(k)
    return keys, by


def _describe(shape: Shape, item: Any) -> str:
    if shape.keys and isinstance(item, dict):
        return "[" + ",".join(f"{k}={_show(item.get(k))}" for k in shape.keys) + "]"
    return _show(item)


def _merge_list(schema: Schema, shape: Shape, lhs: list[Any], rhs: list[Any], path: str) -> list[Any]:
    """structured-merge-diff's ``visitListItems`` of the merging walker: the patch's items in its order,
    the object's others in their places; every item of a key the object repeats is kept unless the
    patch names the key, which then has the patch's one item."""
    elem = resolve(schema, shape.elem)
    rkeys, rby = _index(shape, rhs, path, False)
    lkeys, lby = _index(shape, lhs, path, True)
    shared = [k for k in rkeys if k in lby]
    next_shared = shared.pop(0) if shared else None
    merged: set[Any] = set()
    out: list[Any] = []

    def merged_item(k: Any) -> Any:
        merged.add(k)
        live = lby.get(k)
        return _merge(schema, elem, None if live is _REPEATED else live, rby[k], path) if shape.keys \
            else _copy(rby[k])

    li = ri = 0
    while li < len(lkeys) or ri < len(rkeys):
        if li < len(lkeys) and ri < len(rkeys):
            lk = lkeys[li]
            if lk == rkeys[ri]:
                out.append(merged_item(lk))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if lk in rby and next_shared is not None and next_shared != lk:
                li += 1  # a shared item, not the one of this round
                continue
        if li < len(lkeys):
            lk = lkeys[li]
            if lk not in rby:
                out.append(_copy(lhs[li]))
                li += 1
                continue
            if lk in merged:
                li += 1
        if ri < len(rkeys):
            rk = rkeys[ri]
            out.append(merged_item(rk))
            ri += 1
            if next_shared is not None and next_shared == rk:
                next_shared = shared.pop(0) if shared else None
    return out


def _atomics(schema: Schema, shape: Shape, value: Any, path: str, out: list[str]) -> None:
    if shape.kind == "atomic" and isinstance(value, (dict, list)):
        out.append(path)
    if isinstance(value, dict) and shape.kind in ("struct", "map", "cr_root", "atomic"):
        for key, child in value.items():
            if shape.kind == "atomic":
                continue
            _atomics(schema, child_shape(schema, shape, key), child, f"{path}.{key}", out)
    elif isinstance(value, list) and shape.kind in ("list", "atomic"):
        if shape.kind == "list":
            elem = resolve(schema, shape.elem)
            for i, item in enumerate(value):
                _atomics(schema, elem, item, f"{path}[{i}]", out)


# ------------------------------------------------------------------ custom resources


def structural_types(group: str, version: str, kind: str, root: Any) -> list[Any]:
    """The named types of a custom resource's structural schema (a ``Structural``), as kube's CRD
    type converter makes them: objects with properties are structs, additionalProperties maps,
    lists take their x-kubernetes-list-type (atomic when unset), x-kubernetes-map-type is kept,
    x-kubernetes-preserve-unknown-fields is free-form."""
    from kapi.object.schema import FieldDef, TypeDef

    prefix = f"{group}/{version}/{kind}"
    out: list[TypeDef] = []

    def shape(name: str, s: Any, path: str) -> FieldDef:
        if s is None:
            return FieldDef(name=name, type="any")
        if s.type == "object" or (not s.type and (s.properties or s.additional_properties)):
            if s.properties:
                ref = f"{prefix}#{path}"
                struct(ref, s, path)
                return FieldDef(name=name, type="object", ref=ref, map_type=s.map_type)
            extra = s.additional_properties
            if extra is not None and not isinstance(extra, bool):
                return FieldDef(name=name, type="object", values=shape("", extra, f"{path}{{}}"), map_type=s.map_type)
            return FieldDef(name=name, type="any")
        if s.type == "array":
            return FieldDef(name=name, type="array", items=shape("", s.items, f"{path}[]"),
                            list_type=s.list_type or "atomic", list_map_keys=tuple(s.list_map_keys))
        if s.int_or_string or not s.type:
            return FieldDef(name=name, type="any" if not s.int_or_string else "string")
        return FieldDef(name=name, type=s.type, default=s.default if s.has_default else None)

    def struct(ref: str, s: Any, path: str, gvk: Any = None) -> None:
        fields = {n: shape(n, child, f"{path}.{n}") for n, child in s.properties.items()}
        if gvk is not None:
            fields.setdefault("apiVersion", FieldDef(name="apiVersion", type="string"))
            fields.setdefault("kind", FieldDef(name="kind", type="string"))
            fields["metadata"] = FieldDef(name="metadata", type="object", ref=_OBJECT_META)
        out.append(TypeDef(name=ref, type="object", fields=fields, map_type=s.map_type,
                           preserve_unknown=bool(s.preserve_unknown_fields),
                           gvks=(gvk,) if gvk is not None else (), published=False))

    struct(prefix, root, "", GVK(group, version, kind))
    return out
