"""Field paths and sets: structured-merge-diff's ``fieldpath`` with its FieldsV1 encoding.

``PathElement`` is one step (``f:``, ``k:``, ``v:``, ``i:``), a ``Path`` a tuple of them,
``FieldSet`` an immutable set of paths that reads and writes FieldsV1 byte for byte as kube.
Nothing here knows the schema; ``shape`` and ``compare`` walk objects to make these sets.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import orjson

__all__ = ["FieldSet", "Path", "PathElement", "fields_v1", "go_json", "make_path", "parse_fields_v1"]


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


def go_json(v: Any) -> str:
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
        if cls is PathElement and type(name) is str:
            return _field_element(name)
        return cls((0, name), "f:" + name)

    @classmethod
    def of_key(cls, keys: Mapping[str, Any]) -> PathElement:
        """An item of a list-map, named by its key fields."""
        if all(type(v) in _SCALARS for v in keys.values()):  # the usual keys: names, ports, protocols
            return _scalar_key(tuple(sorted((n, type(v), v) for n, v in keys.items())))
        names = sorted(keys)
        return cls((1, tuple((n, _value_order(keys[n])) for n in names)),
                   "k:" + go_json({n: keys[n] for n in names}))

    @classmethod
    def of_value(cls, value: Any) -> PathElement:
        """An item of a set-list, named by its value."""
        return cls((2, _value_order(value)), "v:" + go_json(value))

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
        return _parse(text) if cls is PathElement else cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> PathElement | None:
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


_SCALARS = frozenset({str, int, bool, float, type(None)})


@functools.lru_cache(maxsize=16384)
def _scalar_key(items: tuple[tuple[str, type, Any], ...]) -> PathElement:
    """``of_key`` for scalar key values (their type is part of the cache key: ``True == 1``)."""
    keys = {n: v for n, _, v in items}
    return PathElement((1, tuple((n, _value_order(v)) for n, v in keys.items())), "k:" + go_json(keys))


@functools.lru_cache(maxsize=16384)
def _field_element(name: str) -> PathElement:
    """``of_field``, kept: every walk of an object names the same fields."""
    return PathElement((0, name), "f:" + name)


@functools.lru_cache(maxsize=65536)
def _parse(text: str) -> PathElement | None:
    """``PathElement.parse``, kept: managedFields are decoded on every write of an object."""
    return PathElement._parse(text)


Path = tuple[PathElement, ...]


def make_path(parts: Sequence[str]) -> Path:
    """The path of nested struct fields, e.g. ``("metadata", "labels")``."""
    return tuple(PathElement.of_field(p) for p in parts)


# ------------------------------------------------------------------ field sets


class FieldSet:
    """An immutable set of field paths (structured-merge-diff's ``fieldpath.Set``)."""

    __slots__ = ("_paths", "_v1")

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        # The empty path is the whole object, which is never tracked.
        self._paths: frozenset[Path] = frozenset(p for p in paths if p)
        self._v1: bytes | None = None  # to_fields_v1's JSON, once asked for

    @classmethod
    def _of(cls, paths: frozenset[Path]) -> FieldSet:
        """A set of ``paths`` already free of the empty path."""
        out = cls.__new__(cls)
        out._paths, out._v1 = paths, None
        return out

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
    def from_fields_v1_kept(cls, data: Any) -> FieldSet:
        """``from_fields_v1`` through a cache of recently decoded sets (by their JSON): an object's
        entries are decoded again at each of its writes, and mostly unchanged."""
        try:
            text = orjson.dumps(data)
        except TypeError:
            return cls.from_fields_v1(data)
        return _decoded(text)

    @classmethod
    def from_json(cls, text: str | bytes) -> FieldSet:
        """Parse FieldsV1 JSON text."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid FieldsV1 JSON: {exc}") from None
        return cls.from_fields_v1(data)

    def to_fields_v1(self) -> dict[str, Any]:
        """The FieldsV1 object, in kube's key order (``"."`` first, then sorted elements); a fresh
        object at each call, built once per set (a set read back from an unchanged entry is shared)."""
        if self._v1 is None:
            self._v1 = _encoded(self._paths)
        return orjson.loads(self._v1)  # type: ignore[no-any-return]

    def _fields_v1(self) -> dict[str, Any]:
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

    @property
    def paths(self) -> frozenset[Path]:
        """The paths, unordered (iterating the set sorts them)."""
        return self._paths

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

    # The set operations give back an operand when the result equals it (sets are immutable), so an
    # entry a write leaves as it was keeps its encoding.
    def __or__(self, other: FieldSet) -> FieldSet:
        if other._paths <= self._paths:
            return self
        if self._paths <= other._paths:
            return other
        return FieldSet._of(self._paths | other._paths)

    def __and__(self, other: FieldSet) -> FieldSet:
        return FieldSet._of(self._paths & other._paths)

    def __sub__(self, other: FieldSet) -> FieldSet:
        if not other._paths or self._paths.isdisjoint(other._paths):
            return self
        return FieldSet._of(self._paths - other._paths)

    def union(self, other: FieldSet) -> FieldSet:
        return self | other

    def intersection(self, other: FieldSet) -> FieldSet:
        return self & other

    def difference(self, other: FieldSet) -> FieldSet:
        return self - other

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Paths not in ``other`` and not below any path of ``other``."""
        excluded = other._paths
        if not excluded:
            return self
        lengths = sorted({len(e) for e in excluded})  # only prefixes of these lengths can be excluded
        kept = frozenset(p for p in self._paths if not any(p[:i] in excluded for i in lengths if i <= len(p)))
        return self if len(kept) == len(self._paths) else FieldSet._of(kept)


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


@functools.lru_cache(maxsize=1024)
def _encoded(paths: frozenset[Path]) -> bytes:
    """The FieldsV1 JSON of a set's paths, kept: the objects one client creates mostly share their sets."""
    return orjson.dumps(FieldSet._of(paths)._fields_v1())


@functools.lru_cache(maxsize=4096)
def _decoded(text: bytes) -> FieldSet:
    return FieldSet.from_fields_v1(orjson.loads(text))


def fields_v1(paths: Iterable[Path] | FieldSet) -> dict[str, Any]:
    """The FieldsV1 object of a set of paths."""
    return (paths if isinstance(paths, FieldSet) else FieldSet(paths)).to_fields_v1()


def parse_fields_v1(data: Any) -> FieldSet:
    """The FieldSet of a decoded FieldsV1 object; raises ValueError when malformed."""
    return FieldSet.from_fields_v1(data)
