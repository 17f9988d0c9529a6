"""``metadata.managedFields`` for non-apply writes, as kube-apiserver's field manager keeps them.

``FieldSet`` is structured-merge-diff's set of field paths with its FieldsV1 encoding;
``compare`` and ``field_set_of`` walk objects along the schema; ``update_managed_fields``
runs the Update pipeline of one create/update/patch (decode live or request entries, skip
untracked objects, compare, reset fields, strip metadata, move ownership, cap the Update
managers, encode and sort).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from kapi.object.schema import GVK, FieldDef, Schema, TypeDef

__all__ = [
    "ANCIENT_CHANGES_MANAGER",
    "FIELD_MANAGER_MAX_LENGTH",
    "MAX_UPDATE_MANAGERS",
    "Comparison",
    "FieldSet",
    "Managed",
    "ManagerKey",
    "Path",
    "PathElement",
    "VersionedSet",
    "compare",
    "decode_managed_fields",
    "encode_managed_fields",
    "field_set_of",
    "fields_v1",
    "manager_name",
    "parse_fields_v1",
    "prefix_from_user_agent",
    "reset_fields_for",
    "update_managed_fields",
]

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES_MANAGER = "ancient-changes"
FIELD_MANAGER_MAX_LENGTH = 128


# ------------------------------------------------------------ go-style JSON


def _go_numbers(v: Any) -> Any:
    """Integral floats as ints, as Go's encoder writes float64 values below 1e21."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return int(v)
    if isinstance(v, list):
        return [_go_numbers(x) for x in v]
    if isinstance(v, dict):
        return {k: _go_numbers(x) for k, x in v.items()}
    return v


def _go_json(v: Any) -> str:
    """Compact JSON with sorted keys and Go's HTML escaping (what jsoniter writes in path elements)."""
    text = json.dumps(_go_numbers(v), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    # '<', '>', '&' can only occur inside strings, so replacing them never breaks the JSON.
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _value_order(v: Any) -> tuple[Any, ...]:
    """structured-merge-diff's total order of values: numbers, strings, bools, lists, maps, null."""
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_order(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_order(v[k])) for k in sorted(v)))
    return (5,)


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


# ------------------------------------------------------------ path elements

_INDEX_RE = re.compile(r"[+-]?[0-9]+")


class PathElement(str):
    """One step of a field path: ``f:<name>``, ``k:{keys}``, ``v:<value>`` or ``i:<index>``.

    The element is its canonical FieldsV1 spelling (a ``str``: paths are tuples of these,
    hashed and compared very often, and a string does both in C with a cached hash).
    Elements sort as structured-merge-diff sorts them: fields, keys, values, indices.
    """

    order: tuple[Any, ...]

    def __new__(cls, order: tuple[Any, ...], text: str) -> PathElement:
        pe = super().__new__(cls, text)
        pe.order = order
        return pe

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"PathElement({str.__repr__(self)})"

    def __lt__(self, other: str) -> bool:
        if not isinstance(other, PathElement):
            return NotImplemented
        return (self.order, self.text) < (other.order, other.text)

    def __le__(self, other: str) -> bool:
        if not isinstance(other, PathElement):
            return NotImplemented
        return (self.order, self.text) <= (other.order, other.text)

    def __gt__(self, other: str) -> bool:
        if not isinstance(other, PathElement):
            return NotImplemented
        return (self.order, self.text) > (other.order, other.text)

    def __ge__(self, other: str) -> bool:
        if not isinstance(other, PathElement):
            return NotImplemented
        return (self.order, self.text) >= (other.order, other.text)

    __hash__ = str.__hash__
    __eq__ = str.__eq__  # type: ignore[assignment]

    @classmethod
    def of_field(cls, name: str) -> PathElement:
        """A struct field or map key."""
        return cls((0, name), "f:" + name)

    @classmethod
    def of_key(cls, keys: Mapping[str, Any]) -> PathElement:
        """An item of a list-map, named by its key fields."""
        names = sorted(keys)
        return cls((1, tuple((n, _value_order(keys[n])) for n in names)),
                   "k:" + _go_json({n: keys[n] for n in names}))

    @classmethod
    def of_value(cls, value: Any) -> PathElement:
        """An item of a set-list, named by its value."""
        return cls((2, _value_order(value)), "v:" + _go_json(value))

    @classmethod
    def of_index(cls, index: int) -> PathElement:
        """An item of a positional list."""
        return cls((3, index), f"i:{index}")

    @classmethod
    def parse(cls, text: str) -> PathElement | None:
        """Parse a FieldsV1 key; None for an unknown element type (dropped, as kube does).

        Raises:
            ValueError: the key is malformed.
        """
        if len(text) < 2:
            raise ValueError(f"key must be 2 characters long: {text!r}")
        if text[1] != ":":
            raise ValueError(f"missing colon: {text}")
        kind, body = text[0], text[2:]
        if kind == "f":
            return cls.of_field(body)
        if kind == "i":
            if not _INDEX_RE.fullmatch(body):
                raise ValueError(f"invalid index in {text!r}")
            return cls.of_index(int(body))
        if kind in ("k", "v"):
            try:
                value, _ = json.JSONDecoder().raw_decode(body)
            except json.JSONDecodeError as exc:
                raise ValueError(f"invalid JSON in {text!r}: {exc}") from None
            if kind == "v":
                return cls.of_value(value)
            if not isinstance(value, dict):
                raise ValueError(f"key of {text!r} is not an object")
            return cls.of_key(value)
        return None

    def __str__(self) -> str:
        return self.text


Path = tuple[PathElement, ...]


def _make_path(parts: Sequence[str]) -> Path:
    return tuple(PathElement.of_field(p) for p in parts)


# ------------------------------------------------------------------ field sets


class FieldSet:
    """An immutable set of field paths (structured-merge-diff's ``fieldpath.Set``)."""

    __slots__ = ("_paths",)

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        # The empty path is the whole object, which is never tracked.
        self._paths: frozenset[Path] = frozenset(p for p in paths if p)

    @classmethod
    def from_fields_v1(cls, data: Any) -> FieldSet:
        """Parse a decoded FieldsV1 object (``{"f:spec": {...}}``); None is the empty set.

        Raises:
            ValueError: the structure or a key is malformed.
        """
        out: set[Path] = set()
        if data is not None:
            _read_fields_v1(data, (), out)
        return cls(out)

    @classmethod
    def from_json(cls, text: str | bytes) -> FieldSet:
        """Parse FieldsV1 JSON text."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid FieldsV1 JSON: {exc}") from None
        return cls.from_fields_v1(data)

    def to_fields_v1(self) -> dict[str, Any]:
        """The FieldsV1 object, in kube's key order (``"."`` first, then sorted elements)."""
        root: _Node = _Node()
        for path in self._paths:
            node = root
            for pe in path:
                node = node.children.setdefault(pe, _Node())
            node.member = True
        return root.emit(include_self=False)

    def to_json(self) -> str:
        """Compact FieldsV1 JSON, byte for byte what kube stores."""
        return json.dumps(self.to_fields_v1(), ensure_ascii=False, separators=(",", ":"))

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __iter__(self) -> Iterator[Path]:
        return iter(sorted(self._paths))

    def __len__(self) -> int:
        return len(self._paths)

    def __bool__(self) -> bool:
        return bool(self._paths)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and self._paths == other._paths

    def __hash__(self) -> int:
        return hash(self._paths)

    def __repr__(self) -> str:
        return f"FieldSet({self.to_json()})"

    def __or__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths | other._paths)

    def __and__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths & other._paths)

    def __sub__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths - other._paths)

    def union(self, other: FieldSet) -> FieldSet:
        return self | other

    def intersection(self, other: FieldSet) -> FieldSet:
        return self & other

    def difference(self, other: FieldSet) -> FieldSet:
        return self - other

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Paths not in ``other`` and not below any path of ``other``."""
        excluded = other._paths
        return FieldSet(p for p in self._paths if not any(p[:i] in excluded for i in range(1, len(p) + 1)))


@dataclass(slots=True)
class _Node:
    member: bool = False
    children: dict[PathElement, _Node] = dataclass_field(default_factory=dict)

    def emit(self, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if include_self and self.member and self.children:
            out["."] = {}
        for pe in sorted(self.children):
            out[pe.text] = self.children[pe].emit(include_self=True)
        return out


def _read_fields_v1(data: Any, prefix: Path, out: set[Path]) -> bool:
    """Add the paths under ``prefix`` to ``out``; True if ``prefix`` itself is a member."""
    if data is None:
        return True
    if not isinstance(data, dict):
        raise ValueError(f"FieldsV1 node must be an object, got {type(data).__name__}")
    explicit = False
    has_children = False
    for key, sub in data.items():
        if key == ".":
            explicit = True
            continue
        pe = PathElement.parse(key)
        if pe is None:
            continue
        has_children = True
        path = prefix + (pe,)
        if _read_fields_v1(sub, path, out):
            out.add(path)
    # A node with no children is a leaf, so it is a member even without ".".
    return explicit or not has_children


def fields_v1(paths: Iterable[Path] | FieldSet) -> dict[str, Any]:
    """The FieldsV1 object of a set of paths."""
    return (paths if isinstance(paths, FieldSet) else FieldSet(paths)).to_fields_v1()


def parse_fields_v1(data: Any) -> FieldSet:
    """The FieldSet of a decoded FieldsV1 object; raises ValueError when malformed."""
    return FieldSet.from_fields_v1(data)


# ------------------------------------------------------------------ schema shapes


@dataclass(frozen=True, slots=True)
class _Shape:
    """How structured-merge-diff sees one node: scalar, atomic, struct, map, list, deduced."""

    kind: str
    type: TypeDef | None = None
    elem: FieldDef | None = None
    keys: tuple[str, ...] = ()  # list-map keys; empty for a set


_SCALAR = _Shape("scalar")
_ATOMIC = _Shape("atomic")
_DEDUCED = _Shape("deduced")
_CR_ROOT = _Shape("cr_root")  # a kind the schema does not know: typed metadata, the rest deduced
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


def _root_shape(schema: Schema, gvk: GVK) -> _Shape:
    t = schema.type_for(gvk.group, gvk.version, gvk.kind)
    if t is None:
        return _CR_ROOT
    return _type_shape(t, "")


def _type_shape(t: TypeDef, map_type: str) -> _Shape:
    if t.type == "object":
        if t.map_type == "atomic" or map_type == "atomic":
            return _ATOMIC
        return _Shape("struct", type=t) if t.fields else _DEDUCED
    return _DEDUCED if t.type == "any" else _SCALAR


def _resolve(schema: Schema, f: FieldDef | None) -> _Shape:
    """The shape of a field, list item or map value (kube's OpenAPI-to-SMD conversion)."""
    if f is None:
        return _DEDUCED
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
            return _Shape("list", elem=f.items, keys=keys)
        return _Shape("list", elem=f.items)
    if f.type == "object":
        if f.map_type == "atomic":
            return _ATOMIC
        return _Shape("map", elem=f.values) if f.values is not None else _DEDUCED
    return _DEDUCED if f.type == "any" else _SCALAR


def _zero_present(t: TypeDef, f: FieldDef) -> bool:
    """True if Go's zero value of ``t`` still carries ``f`` (not omitempty, or a value struct)."""
    if f.required or f.ref == _OBJECT_META:
        return True
    if t.gvks and f.name in ("spec", "status") and f.ref:
        return True
    return (t.name.rsplit(".", 1)[-1], f.name) in _VALUE_STRUCT_FIELDS


def _has_zero_fields(t: TypeDef) -> bool:
    return any(_zero_present(t, f) for f in t.fields.values())


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


_MISSING: Any = _Missing()


def _field_value(schema: Schema, t: TypeDef, f: FieldDef, container: dict[str, Any] | None) -> Any:
    """A struct field's value as Go sees it: omitempty drops empties, value structs always exist."""
    if container is None:
        return _MISSING
    v = container.get(f.name, _MISSING)
    if not f.required:
        if v is None:
            v = _MISSING
        elif isinstance(v, (list, dict)) and not v and not f.ref and f.type in ("array", "object"):
            v = _MISSING
    if v is _MISSING and _zero_present(t, f):
        v = _zero(schema, f)
    return v


def _children(schema: Schema, shape: _Shape, lmap: dict[str, Any] | None,
              rmap: dict[str, Any] | None) -> Iterator[tuple[str, _Shape, Any, Any]]:
    """(key, shape, left value, right value) of every child of a struct or map node."""
    names = dict.fromkeys([*(lmap or ()), *(rmap or ())])
    t = shape.type
    if shape.kind == "struct" and t is not None:
        for f in t.fields.values():
            if _zero_present(t, f):
                names.setdefault(f.name)
    for name in names:
        if shape.kind == "struct" and t is not None:
            f = t.field(name)
            if f is not None:
                yield (name, _resolve(schema, f), _field_value(schema, t, f, lmap),
                       _field_value(schema, t, f, rmap))
                continue
            # Undeclared field: kube's decoder would have dropped it; treat it as free-form.
            child = _DEDUCED
        elif shape.kind == "map":
            child = _resolve(schema, shape.elem)
        elif shape.kind == "cr_root" and name == "metadata":
            meta = schema.get(_OBJECT_META)
            child = _type_shape(meta, "") if meta is not None else _DEDUCED
        else:
            child = _DEDUCED
        yield (name, child, (lmap or {}).get(name, _MISSING), (rmap or {}).get(name, _MISSING))


def _item_element(shape: _Shape, item: Any) -> PathElement | None:
    """The path element of a list item, or None when the item cannot be named."""
    if shape.keys:
        if not isinstance(item, dict) or any(k not in item for k in shape.keys):
            return None
        return PathElement.of_key({k: item[k] for k in shape.keys})
    if item is None or isinstance(item, (dict, list)):
        return None
    return PathElement.of_value(item)


def _items(shape: _Shape, items: list[Any] | None) -> dict[PathElement, Any]:
    out: dict[PathElement, Any] = {}
    for item in items or ():
        pe = _item_element(shape, item)
        if pe is not None:
            out.setdefault(pe, item)  # a repeated key keeps its first item
    return out


def _deduce(lhs: Any, rhs: Any) -> str:
    """The kind a free-form node takes: a granular map, a leaf, or both when the sides differ."""
    ldict, rdict = isinstance(lhs, dict), isinstance(rhs, dict)
    if ldict or rdict:
        other = rhs if ldict else lhs
        if ldict and rdict or other is None or other is _MISSING:
            return "dmap"
        return "mixed"
    return "scalar"


# ------------------------------------------------------------------ compare


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
        if lhs is _MISSING:
            self.added.add(path)
        elif rhs is _MISSING:
            self.removed.add(path)
        elif not _json_equal(lhs, rhs):
            self.modified.add(path)

    def post(self, lhs: Any, rhs: Any, path: Path) -> None:
        if not path:
            return
        if lhs is _MISSING:
            self.added.add(path)
        elif rhs is _MISSING:
            self.removed.add(path)

    def walk(self, shape: _Shape, lhs: Any, rhs: Any, path: Path) -> None:
        kind = shape.kind
        if kind == "deduced":
            kind = _deduce(lhs, rhs)
            if kind == "mixed":
                # A free-form node changed between object and non-object: the object
                # side's children go, and the node itself counts as a modified leaf.
                for key, child, lv, rv in _children(self.schema, _Shape("dmap"), _as_dict(lhs), _as_dict(rhs)):
                    self.walk(child, lv, rv, path + (PathElement.of_field(key),))
                self.leaf(lhs, rhs, path)
                return
            shape = _Shape(kind) if kind == "dmap" else shape
        if kind in ("scalar", "atomic", "deduced"):
            self.leaf(lhs, rhs, path)
            return
        if kind == "list":
            llist, rlist = _as_list(lhs), _as_list(rhs)
            # Both sides empty or null: a leaf, which keeps the empty/null distinction.
            if not llist and not rlist:
                self.leaf(lhs, rhs, path)
                return
            litems, ritems = _items(shape, llist), _items(shape, rlist)
            item_shape = _resolve(self.schema, shape.elem)
            for pe in dict.fromkeys([*litems, *ritems]):
                self.walk(item_shape, litems.get(pe, _MISSING), ritems.get(pe, _MISSING), path + (pe,))
            self.post(lhs, rhs, path)
            return
        lmap, rmap = _as_dict(lhs), _as_dict(rhs)
        # Go's zero fields make an "empty" struct non-empty, so it is not promoted to a leaf.
        zeros = shape.kind == "struct" and shape.type is not None and _has_zero_fields(shape.type)
        if not (lmap or zeros and lmap is not None) and not (rmap or zeros and rmap is not None):
            self.leaf(lhs, rhs, path)
            return
        for key, child, lv, rv in _children(self.schema, shape, lmap, rmap):
            if lv is _MISSING and rv is _MISSING:
                continue
            self.walk(child, lv, rv, path + (PathElement.of_field(key),))
        self.post(lhs, rhs, path)


def _as_dict(v: Any) -> dict[str, Any] | None:
    return v if isinstance(v, dict) else None


def _as_list(v: Any) -> list[Any] | None:
    return v if isinstance(v, list) else None


def _gvk(gvk: GVK | tuple[str, str, str]) -> GVK:
    return gvk if isinstance(gvk, GVK) else GVK(*gvk)


def compare(schema: Schema, gvk: GVK | tuple[str, str, str], old: Mapping[str, Any] | None,
            new: Mapping[str, Any]) -> Comparison:
    """Compare two objects of a kind; ``old=None`` compares against the kind's zero object."""
    diff = _Diff(schema)
    diff.walk(_root_shape(schema, _gvk(gvk)), dict(old or {}), dict(new), ())
    return Comparison(FieldSet(diff.added), FieldSet(diff.modified), FieldSet(diff.removed))


def field_set_of(schema: Schema, gvk: GVK | tuple[str, str, str], obj: Mapping[str, Any]) -> FieldSet:
    """Every leaf and item an object sets (structured-merge-diff's ``ToFieldSet``)."""
    out: set[Path] = set()
    _to_set(schema, _root_shape(schema, _gvk(gvk)), dict(obj), (), out)
    return FieldSet(out)


def _to_set(schema: Schema, shape: _Shape, value: Any, path: Path, out: set[Path]) -> None:
    kind = shape.kind
    if kind == "deduced":
        kind = "dmap" if isinstance(value, dict) else "scalar"
    if kind in ("scalar", "atomic"):
        out.add(path)
        return
    if kind == "list":
        item_shape = _resolve(schema, shape.elem)
        for pe, item in _items(shape, _as_list(value)).items():
            _to_set(schema, item_shape, item, path + (pe,), out)
            out.add(path + (pe,))
        return
    m = _as_dict(value)
    if m is None:
        return
    for key, child, _, v in _children(schema, _Shape(kind, type=shape.type, elem=shape.elem), None, m):
        if v is _MISSING:
            continue
        sub = path + (PathElement.of_field(key),)
        _to_set(schema, child, v, sub, out)
        declared = kind == "struct" and shape.type is not None and shape.type.field(key) is not None
        zeros = child.kind == "struct" and child.type is not None and _has_zero_fields(child.type)
        if v is None or v == {} and not zeros or not declared:
            out.add(sub)


# ------------------------------------------------------------------ managed fields


@dataclass(frozen=True, slots=True)
class ManagerKey:
    """Who owns a set: manager, operation, apiVersion (empty for Apply) and subresource."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    @property
    def identifier(self) -> str:
        """kube's manager identifier: the Go JSON of the entry without fields and time."""
        parts = []
        if self.manager:
            parts.append('"manager":' + _go_json(self.manager))
        if self.operation:
            parts.append('"operation":' + _go_json(self.operation))
        if self.api_version:
            parts.append('"apiVersion":' + _go_json(self.api_version))
        if self.subresource:
            parts.append('"subresource":' + _go_json(self.subresource))
        return "{" + ",".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class VersionedSet:
    """A manager's fields, with the apiVersion they were recorded in."""

    fields: FieldSet
    api_version: str
    applied: bool = False


@dataclass(slots=True)
class Managed:
    """Decoded managedFields: each manager's set and the time of its last change."""

    fields: dict[ManagerKey, VersionedSet] = dataclass_field(default_factory=dict)
    times: dict[ManagerKey, str | None] = dataclass_field(default_factory=dict)


_RFC3339_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def _parse_time(value: str) -> _dt.datetime:
    if not isinstance(value, str) or not _RFC3339_RE.fullmatch(value):
        raise ValueError(f"invalid time {value!r}")
    return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _normalize_time(value: str) -> str:
    """metav1.Time as it is written back: UTC, whole seconds."""
    return _parse_time(value).astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unix(value: str | None) -> int:
    if not value:
        return 0
    return int(_parse_time(value).timestamp() // 1)


def decode_managed_fields(entries: Any) -> Managed:
    """Decode ``metadata.managedFields`` as kube's ``DecodeManagedFields`` does.

    Raises:
        ValueError: an entry is invalid (bad operation, empty apiVersion, fieldsType other
            than FieldsV1, malformed fieldsV1 or time).
    """
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion") or ""
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if fields_type != "FieldsV1":
            raise ValueError(f"missing fieldsType in managed fields entry {i}" if not fields_type
                             else f"invalid fieldsType {fields_type!r} in managed fields entry {i}")
        manager = entry.get("manager") or ""
        subresource = entry.get("subresource") or ""
        if not isinstance(manager, str) or not isinstance(subresource, str):
            raise ValueError(f"invalid managed fields entry {i}")
        time = entry.get("time")
        time = _normalize_time(time) if time is not None else None
        applied = operation == "Apply"
        key = ManagerKey(manager, operation, "" if applied else api_version, subresource)
        managed.fields[key] = VersionedSet(FieldSet.from_fields_v1(entry.get("fieldsV1")), api_version, applied)
        managed.times[key] = time
    return managed


def encode_managed_fields(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` list, sorted as kube sorts it (empty means: omit it)."""
    entries: list[dict[str, Any]] = []
    for key, vs in managed.fields.items():
        entry: dict[str, Any] = {}
        if key.manager:
            entry["manager"] = key.manager
        entry["operation"] = "Apply" if vs.applied else key.operation
        if vs.api_version:
            entry["apiVersion"] = vs.api_version
        time = managed.times.get(key)
        if time:
            entry["time"] = time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = vs.fields.to_fields_v1()
        if key.subresource:
            entry["subresource"] = key.subresource
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], _unix(e.get("time")), e.get("manager", ""),
                                e.get("apiVersion", ""), e.get("subresource", "")))
    return entries


def _is_reset(entries: Any) -> bool:
    """A request resets managedFields with ``[]`` or ``[{}]``."""
    if not isinstance(entries, list):
        return False
    if not entries:
        return True
    return len(entries) == 1 and isinstance(entries[0], dict) and all(
        v is None or v == "" for v in entries[0].values())


def _decode_or_empty(entries: Any) -> Managed:
    try:
        return decode_managed_fields(entries)
    except ValueError:
        return Managed()


def _metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    md = obj.get("metadata") if obj is not None else None
    return md if isinstance(md, dict) else {}


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    md = out.get("metadata")
    if isinstance(md, dict) and "managedFields" in md:
        out["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
    return out


# Paths no manager ever owns (stripMetaManager); only these exact paths, not their children.
_STRIPPED = FieldSet(_make_path(p) for p in (
    ("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"),
    ("metadata", "creationTimestamp"), ("metadata", "selfLink"), ("metadata", "uid"),
    ("metadata", "clusterName"), ("metadata", "generation"), ("metadata", "managedFields"),
    ("metadata", "resourceVersion"),
))


def reset_fields_for(*, has_status: bool, subresource: str = "") -> tuple[tuple[str, ...], ...]:
    """The fields a write cannot change, which kube's strategies declare (GetResetFields).

    The main resource of a kind with a status subresource resets ``status``; the status
    subresource resets ``spec``. Some kinds reset more (deployments' status also resets
    ``metadata.labels``, pods' ``metadata.deletionTimestamp`` and ``ownerReferences``).
    """
    if subresource == "status":
        return (("spec",),)
    if not subresource and has_status:
        return (("status",),)
    return ()


def _cap_update_managers(managed: Managed, maximum: int) -> None:
    """Merge the oldest Update entries into ``ancient-changes`` buckets (capManagersManager)."""
    updaters = [k for k, vs in managed.fields.items() if not vs.applied]
    if len(updaters) <= maximum:
        return
    updaters.sort(key=lambda k: (_unix(managed.times.get(k)), k.identifier))
    first_of_version: dict[str, ManagerKey] = {}
    length = len(updaters)
    for key in updaters:
        if length <= maximum:
            break
        vs = managed.fields.get(key)
        if vs is None:
            continue
        time = managed.times.get(key)
        bucket = ManagerKey(ANCIENT_CHANGES_MANAGER, "Update", vs.api_version)
        first = first_of_version.get(vs.api_version)
        if first is None:
            first_of_version[vs.api_version] = key
            continue
        if bucket not in managed.fields and first in managed.fields:
            managed.fields[bucket] = managed.fields.pop(first)
        previous = managed.fields.get(bucket)
        merged = vs.fields | previous.fields if previous is not None else vs.fields
        managed.fields[bucket] = VersionedSet(merged, vs.api_version, vs.applied)
        # As in kube, the merged entry is deleted even when it is the bucket itself.
        del managed.fields[key]
        length -= 1
        managed.times[bucket] = time


def update_managed_fields(
    schema: Schema,
    gvk: GVK | tuple[str, str, str],
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    operation: str = "Update",
    subresource: str = "",
    api_version: str = "",
    now: str,
    reset_fields: Iterable[Sequence[str]] = (),
) -> list[dict[str, Any]]:
    """The managedFields kube-apiserver records for a create/update/patch (not apply).

    ``old`` is the stored object (None on create), ``new`` the object about to be stored,
    carrying the managedFields the request sent (or the stored ones after a patch).
    ``manager`` is the fieldManager, already defaulted from the User-Agent
    (``manager_name``); ``api_version`` defaults to the gvk's. ``now`` is an RFC 3339
    time. ``reset_fields`` are paths the strategy resets (``reset_fields_for``).
    An empty result means the object carries no managedFields.
    """
    if operation != "Update":
        raise ValueError(f"unsupported operation {operation!r}: only Update is tracked here")
    gvk = _gvk(gvk)
    api_version = api_version or gvk.api_version
    manager = manager or "unknown"
    live_entries = _metadata(old).get("managedFields")

    # decodeLiveOrNew: a subresource never sets managedFields; a request may reset them
    # with [] or [{}]; undecodable or absent request entries fall back to the stored ones.
    if subresource:
        managed = _decode_or_empty(live_entries)
    elif _is_reset(_metadata(new).get("managedFields")):
        managed = Managed()
    else:
        try:
            managed = decode_managed_fields(_metadata(new).get("managedFields"))
        except ValueError:
            managed = Managed()
        if not managed.fields:
            managed = _decode_or_empty(live_entries)

    # skipNonApplied: an existing object without managedFields stays untracked.
    if not managed.fields and _metadata(old).get("uid"):
        return []

    diff = compare(schema, gvk, _without_managed_fields(old or {}), _without_managed_fields(new))
    reset = FieldSet(_make_path(p) for p in reset_fields)
    diff = diff.filtered(reset)

    # Ownership moves: whatever this write changed or removed leaves every earlier owner.
    taken = diff.modified | diff.added
    for key, vs in list(managed.fields.items()):
        remaining = vs.fields - taken - diff.removed
        if remaining:
            managed.fields[key] = VersionedSet(remaining, vs.api_version, vs.applied)
        else:
            del managed.fields[key]

    current = (diff.modified | diff.added) - diff.removed - _STRIPPED
    if current:
        key = ManagerKey(manager, "Update", api_version, subresource)
        previous = managed.fields.get(key)
        merged = current | previous.fields if previous is not None else current
        managed.fields[key] = VersionedSet(merged, api_version)
        managed.times[key] = _normalize_time(now)

    _cap_update_managers(managed, MAX_UPDATE_MANAGERS)
    return encode_managed_fields(managed)


# ------------------------------------------------------------------ manager names


def _printable(ch: str) -> bool:
    """Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def prefix_from_user_agent(user_agent: str) -> str:
    """The User-Agent before its first ``/``, printable characters only, at most 128 bytes."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not _printable(ch):
            continue
        n = len(ch.encode("utf-8", "surrogatepass"))
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


def manager_name(field_manager: str, user_agent: str) -> str:
    """The ``fieldManager`` option, or else the User-Agent prefix (managerOrUserAgent)."""
    return field_manager or prefix_from_user_agent(user_agent)
