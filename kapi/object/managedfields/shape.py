"""How structured-merge-diff sees each node of an object, read from the schema.

A ``Shape`` is scalar, atomic, struct, map, list (a list-map with keys, or a set) or deduced
(free-form); ``resolve`` turns a schema field into one (kube's OpenAPI-to-SMD conversion) and
``children`` / ``list_items`` give a node's children as Go's decoder would see them (omitempty,
value structs, the zero object a create is compared against).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kapi.object.managedfields.fieldpath import PathElement
from kapi.object.schema import GVK, FieldDef, Schema, TypeDef

__all__ = ["KEY_DEFAULTS", "MISSING", "Shape", "as_gvk", "child_shape", "children", "deduce", "has_zero_fields",
           "item_element", "item_keys", "list_groups", "list_items", "resolve",
           "root_shape"]


@dataclass(frozen=True, slots=True)
class Shape:
    """How structured-merge-diff sees one node: scalar, atomic, struct, map, list, deduced."""

    kind: str
    type: TypeDef | None = None
    elem: FieldDef | None = None
    keys: tuple[str, ...] = ()  # list-map keys; empty for a set
    key_defaults: tuple[tuple[str, Any], ...] = ()  # the keys an item may leave out, with their defaults

    def key_default(self, name: str) -> Any:
        """The default of key field ``name``, MISSING when it has none."""
        for k, v in self.key_defaults:
            if k == name:
                return v
        return MISSING


_SCALAR = Shape("scalar")
_ATOMIC = Shape("atomic")
_DEDUCED = Shape("deduced")
_CR_ROOT = Shape("cr_root")  # a kind the schema does not know: typed metadata, the rest deduced
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# Optional fields of non-pointer struct type: Go writes them out as {} even when unset, so
# they exist in the zero object kube compares a create against (no "." member for them).
# Required fields, ObjectMeta fields and a kind's spec/status are handled by rule.
_VALUE_STRUCT_FIELDS = frozenset({
    ("DeploymentSpec", "strategy"), ("DaemonSetSpec", "updateStrategy"),
    ("StatefulSetSpec", "updateStrategy"), ("ReplicaSetSpec", "template"),
    ("PodTemplate", "template"), ("PodTemplateSpec", "spec"), ("JobTemplateSpec", "spec"),
    ("Container", "resources"), ("EphemeralContainer", "resources"),
    ("ContainerStatus", "state"), ("ContainerStatus", "lastState"),
    ("Event", "source"), ("Event", "deprecatedSource"),
    ("NodeStatus", "daemonEndpoints"), ("NodeStatus", "nodeInfo"),
    ("NodeDaemonEndpoints", "kubeletEndpoint"), ("PersistentVolumeClaimSpec", "resources"),
    ("ServiceStatus", "loadBalancer"), ("IngressStatus", "loadBalancer"),
    ("LimitedPriorityLevelConfiguration", "limitResponse"),
    ("CustomResourceDefinitionStatus", "acceptedNames"),
    ("TokenReviewStatus", "user"), ("SelfSubjectReviewStatus", "userInfo"),
    ("ObjectMeta", "creationTimestamp"),
})


def root_shape(schema: Schema, gvk: GVK) -> Shape:
    t = schema.type_for(gvk.group, gvk.version, gvk.kind)
    if t is None:
        return _CR_ROOT
    return _type_shape(t, "")


def _type_shape(t: TypeDef, map_type: str) -> Shape:
    """A named type's shape; ``map_type``, the referring field's x-kubernetes-map-type, overrides the
    type's own (SMD's TypeRef.ElementRelationship: a PersistentVolume's granular claimRef is an
    ObjectReference, atomic elsewhere)."""
    if t.type == "object":
        if (map_type or t.map_type) == "atomic":
            return _ATOMIC
        return Shape("struct", type=t) if t.fields else _DEDUCED
    return _DEDUCED if t.type == "any" else _SCALAR


def resolve(schema: Schema, f: FieldDef | None) -> Shape:
    """The shape of a field, list item or map value (kube's OpenAPI-to-SMD conversion), kept per schema
    generation in ``schema.compiled`` (every walk of an object asks for the same few hundred)."""
    if f is None:
        return _DEDUCED
    cache = schema.compiled.get(_SHAPES)
    if cache is None or cache[0] != schema.generation:
        cache = schema.compiled[_SHAPES] = (schema.generation, {})
    hit = cache[1].get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]  # type: ignore[no-any-return]
    shape = _resolve(schema, f)
    cache[1][id(f)] = (f, shape)  # f is kept alive with its shape, so its id stays its own
    return shape


_SHAPES = "managedfields.shapes"


def _resolve(schema: Schema, f: FieldDef) -> Shape:
    if f.ref:
        t = schema.get(f.ref)
        return _DEDUCED if t is None else _type_shape(t, f.map_type)
    if f.type == "array":
        relation = f.list_type
        if not relation:
            # No list-type: a merge patch strategy makes it associative, anything else is atomic.
            if "merge" in f.patch_strategies:
                relation = "map" if f.merge_key else "set"
            else:
                relation = "atomic"
        if relation == "atomic" or f.items is None:
            return _ATOMIC
        if relation == "map":
            keys = f.list_map_keys or ((f.merge_key,) if f.merge_key else ())
            return Shape("list", elem=f.items, keys=keys, key_defaults=_key_defaults(schema, f.items, keys))
        return Shape("list", elem=f.items)
    if f.type == "object":
        if f.map_type == "atomic":
            return _ATOMIC
        return Shape("map", elem=f.values) if f.values is not None else _DEDUCED
    return _DEDUCED if f.type == "any" else _SCALAR


def _key_defaults(schema: Schema, items: FieldDef, keys: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """The defaults of a list-map's key fields: declared in the schema (structured-merge-diff's
    default keys), else ``KEY_DEFAULTS`` (kube's OpenAPI defaults ports' protocol)."""
    t = schema.get(items.ref) if items.ref else None
    out = []
    for k in keys:
        f = t.field(k) if t is not None else None
        default = f.default if f is not None else None
        if default is None or isinstance(default, (dict, list)):
            default = KEY_DEFAULTS.get(k)
        if default is not None:
            out.append((k, default))
    return tuple(out)


def child_shape(schema: Schema, shape: Shape, name: str) -> Shape:
    """The shape of a struct's field or a map's value named ``name`` (free-form when unknown)."""
    if shape.kind == "struct" and shape.type is not None:
        f = shape.type.field(name)
        return resolve(schema, f) if f is not None else _DEDUCED
    if shape.kind == "map":
        return resolve(schema, shape.elem)
    if shape.kind == "cr_root" and name == "metadata":
        meta = schema.get(_OBJECT_META)
        return Shape("struct", type=meta) if meta is not None else _DEDUCED
    return _DEDUCED


def _zero_present(t: TypeDef, f: FieldDef) -> bool:
    """True if Go's zero value of ``t`` still carries ``f`` (not omitempty, or a value struct)."""
    if f.required or f.ref == _OBJECT_META:
        return True
    if t.gvks and f.name in ("spec", "status") and f.ref:
        return True
    return (t.name.rsplit(".", 1)[-1], f.name) in _VALUE_STRUCT_FIELDS


# id(type) -> (type, its zero-present field names): the walks ask for every struct node they pass.
_ZERO_FIELDS: dict[int, tuple[TypeDef, tuple[str, ...]]] = {}


def _zero_fields(t: TypeDef) -> tuple[str, ...]:
    """The names of the fields Go's zero value of ``t`` carries, in the type's order."""
    found = _ZERO_FIELDS.get(id(t))
    if found is not None and found[0] is t:
        return found[1]
    if len(_ZERO_FIELDS) > 8192:  # types come and go with custom resources
        _ZERO_FIELDS.clear()
    names = tuple(f.name for f in t.fields.values() if _zero_present(t, f))
    _ZERO_FIELDS[id(t)] = (t, names)
    return names


def has_zero_fields(t: TypeDef) -> bool:
    """True if Go's zero value of ``t`` carries some field, so it never reads as empty."""
    return bool(_zero_fields(t))


def _zero(schema: Schema, f: FieldDef) -> Any:
    """Go's zero value of a field as JSON: {} for structs, "" / 0 / false, else null."""
    if f.ref:
        t = schema.get(f.ref)
        if t is not None and t.type == "object" and t.fields:
            return {}
        if t is not None and t.type == "int-or-string":
            return 0
        if t is not None and t.type == "quantity":
            return "0"
        return None  # Time and other named scalars write null
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(f.type) if f.required else None


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()  # a field or item absent on one side (unlike null)


def _field_value(schema: Schema, t: TypeDef, f: FieldDef, container: dict[str, Any] | None) -> Any:
    """A struct field's value as Go sees it: omitempty drops empties, value structs always exist."""
    if container is None:
        return MISSING
    v = container.get(f.name, MISSING)
    if not f.required:
        if v is None:
            v = MISSING
        elif isinstance(v, (list, dict)) and not v and not f.ref and f.type in ("array", "object"):
            v = MISSING
    if v is MISSING and f.name in _zero_fields(t):
        v = _zero(schema, f)
    return v


def children(schema: Schema, shape: Shape, lmap: dict[str, Any] | None,
              rmap: dict[str, Any] | None) -> Iterator[tuple[str, Shape, Any, Any]]:
    """(key, shape, left value, right value) of every child of a struct or map node."""
    names = dict.fromkeys([*(lmap or ()), *(rmap or ())])
    t = shape.type
    if shape.kind == "struct" and t is not None:
        for name in _zero_fields(t):
            names.setdefault(name)
    for name in names:
        if shape.kind == "struct" and t is not None:
            f = t.field(name)
            if f is not None:
                yield (name, resolve(schema, f), _field_value(schema, t, f, lmap),
                       _field_value(schema, t, f, rmap))
                continue
            # Undeclared field: kube's decoder would have dropped it; treat it as free-form.
            child = _DEDUCED
        elif shape.kind == "map":
            child = resolve(schema, shape.elem)
        elif shape.kind == "cr_root" and name == "metadata":
            meta = schema.get(_OBJECT_META)
            child = _type_shape(meta, "") if meta is not None else _DEDUCED
        else:
            child = _DEDUCED
        yield (name, child, (lmap or {}).get(name, MISSING), (rmap or {}).get(name, MISSING))


# Key fields with a schema default, which an item without them takes (structured-merge-diff's
# default keys): kube's OpenAPI defaults the protocol of ports (containers, services, endpoints) to TCP.
KEY_DEFAULTS = {"protocol": "TCP"}


def item_keys(shape: Shape, item: Any) -> dict[str, Any] | None:
    """A list-map item's key fields, defaulted keys filled, missing ones left out (structured-merge-diff
    v4.6); None when it has none."""
    if not isinstance(item, dict):
        return None
    keys = {}
    for k in shape.keys:
        if k in item:
            keys[k] = item[k]
        else:
            default = shape.key_default(k)
            if default is not MISSING:
                keys[k] = default
    return keys or None  # a key field without a value or default is left out; all of them, no name


def item_element(shape: Shape, item: Any) -> PathElement | None:
    """The path element of a list item, or None when the item cannot be named."""
    if shape.keys:
        keys = item_keys(shape, item)
        return None if keys is None else PathElement.of_key(keys)
    if item is None or isinstance(item, (dict, list)):
        return None
    return PathElement.of_value(item)


def list_items(shape: Shape, items: list[Any] | None) -> dict[PathElement, Any]:
    """A keyed list or set by the path element of each nameable item."""
    out: dict[PathElement, Any] = {}
    for item in items or ():
        pe = item_element(shape, item)
        if pe is not None:
            out.setdefault(pe, item)  # a repeated key keeps its first item
    return out


def list_groups(shape: Shape, items: list[Any] | None) -> dict[PathElement, list[Any]]:
    """A keyed list or set by the path element of each nameable item, with every item of a repeated
    key or value (structured-merge-diff owns a repeated item as a whole)."""
    out: dict[PathElement, list[Any]] = {}
    for item in items or ():
        pe = item_element(shape, item)
        if pe is not None:
            out.setdefault(pe, []).append(item)
    return out


def deduce(lhs: Any, rhs: Any) -> str:
    """The kind a free-form node takes: a granular map, a leaf, or both when the sides differ."""
    ldict, rdict = isinstance(lhs, dict), isinstance(rhs, dict)
    if ldict or rdict:
        other = rhs if ldict else lhs
        if ldict and rdict or other is None or other is MISSING:
            return "dmap"
        return "mixed"
    return "scalar"


def as_gvk(gvk: GVK | tuple[str, str, str]) -> GVK:
    """A GVK from a ``(group, version, kind)`` tuple."""
    return gvk if isinstance(gvk, GVK) else GVK(*gvk)
