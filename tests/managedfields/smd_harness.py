"""structured-merge-diff's test fixture for kapi's Updater: its YAML schemas as kapi types, its path
functions (``_P``, ``_NS``, ``_KBF``, ``_V``) and its TestCase (a sequence of Apply / ForceApply /
Update operations, then the expected object and managers).

A schema is the ``typed.YAMLObject`` parser format: ``types: [{name, map: {fields, elementType,
elementRelationship}}, {name, list: ...}, {name, scalar: ...}]``. The root type is registered as kind
``Root`` (group "", every version a case uses), so one type answers every version, as the Go
tests' ``SameVersionParser``. Managers are strings there; here each is ``ManagerKey(name, "Apply")``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml

from kapi.object.managedfields.entries import ManagerKey
from kapi.object.managedfields.fieldpath import FieldSet, Path, PathElement
from kapi.object.managedfields.updater import Conflicts, Converter, Managers, Updater
from kapi.object.schema import GVK, FieldDef, Schema, TypeDef

KIND = "Root"
VERSIONS = ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v1beta1", "v1alpha1")
UNTYPED_ATOMIC = "__untyped_atomic_"
UNTYPED_DEDUCED = "__untyped_deduced_"
DEDUCED = "deduced"  # the schema text of the Go tests' DeducedParser


# ------------------------------------------------------------------ paths


@dataclass(frozen=True)
class _Value:
    value: Any


@dataclass(frozen=True)
class _Keys:
    keys: tuple[tuple[str, Any], ...]


def _V(value: Any) -> _Value:
    """A set item's value (``value.NewValueInterface``)."""
    return _Value(value)


def _KBF(*pairs: Any) -> _Keys:
    """A list-map item's keys: name, value, name, value, ..."""
    return _Keys(tuple((pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)))


def _P(*parts: Any) -> Path:
    """``fieldpath.MakePathOrDie``: a string is a field, an int an index, ``_V`` a value, ``_KBF`` keys."""
    out: list[PathElement] = []
    for p in parts:
        if isinstance(p, str):
            out.append(PathElement.of_field(p))
        elif isinstance(p, bool):
            raise TypeError(p)
        elif isinstance(p, int):
            out.append(PathElement.of_index(p))
        elif isinstance(p, _Value):
            out.append(PathElement.of_value(p.value))
        elif isinstance(p, _Keys):
            out.append(PathElement.of_key(dict(p.keys)))
        else:
            raise TypeError(f"not a path part: {p!r}")
    return tuple(out)


def _NS(*paths: Path) -> FieldSet:
    """``fieldpath.NewSet``."""
    return FieldSet(paths)


# ------------------------------------------------------------------ schemas


def _scalar(name: str, kind: str) -> FieldDef:
    return FieldDef(name=name, type={"numeric": "number", "boolean": "boolean"}.get(kind, "string")
                    if kind != "untyped" else "any")


class _SchemaBuilder:
    def __init__(self, text: str) -> None:
        if text == DEDUCED:
            self.raw: dict[str, Any] = {}
        else:
            self.raw = {t["name"]: t for t in yaml.safe_load(text)["types"]}
        self.types: list[TypeDef] = []
        self.done: set[str] = set()
        self.inlining: set[str] = set()

    def named(self, name: str) -> None:
        if name in self.done:
            return
        self.done.add(name)
        t = self.raw[name]
        if "map" in t:
            self.types.append(self.struct(name, t["map"], name))

    def struct(self, name: str, m: Mapping[str, Any], where: str) -> TypeDef:
        fields = {f["name"]: dataclasses.replace(self.atom(f["name"], f["type"], f"{where}.{f['name']}"),
                                                 default=f.get("default")) for f in m.get("fields") or ()}
        atomic = m.get("elementRelationship") == "atomic"
        if not fields:
            # A map without fields: kapi's types have no granular map of its own, so the root type is
            # free-form (a named type refers to it only through a field, which carries values).
            return TypeDef(name=name, type="any" if not atomic else "object", map_type="atomic" if atomic else "")
        # Fields and an elementType: other keys are kept (x-kubernetes-preserve-unknown-fields).
        return TypeDef(name=name, type="object", fields=MappingProxyType(fields),
                       map_type="atomic" if atomic else "", preserve_unknown="elementType" in m)

    def atom(self, name: str, atom: Mapping[str, Any], where: str) -> FieldDef:
        if "namedType" in atom:
            ref = atom["namedType"]
            if ref == UNTYPED_ATOMIC:
                return FieldDef(name=name, type="object", map_type="atomic")
            if ref == UNTYPED_DEDUCED or ref not in self.raw:
                return FieldDef(name=name, type="any")
            t = self.raw[ref]
            if "map" in t:
                m = t["map"]
                if m.get("fields"):
                    self.named(ref)
                    return FieldDef(name=name, type="object", ref=ref,
                                    map_type="atomic" if m.get("elementRelationship") == "atomic" else "")
            # Named lists, scalars and field-less maps are written in place (kapi refers only to structs);
            # one that contains itself cannot be, and is free-form below its first level.
            if ref in self.inlining:
                return FieldDef(name=name, type="any")
            self.inlining.add(ref)
            try:
                return self.atom(name, {k: v for k, v in t.items() if k != "name"}, where)
            finally:
                self.inlining.discard(ref)
        if "scalar" in atom:
            return _scalar(name, atom["scalar"])
        if "list" in atom:
            lst = atom["list"]
            rel = lst.get("elementRelationship", "atomic")
            keys = tuple(lst.get("keys") or ())
            items = self.atom("", lst["elementType"], where + "[]")
            list_type = "atomic" if rel == "atomic" else ("map" if keys else "set")
            return FieldDef(name=name, type="array", items=items, list_type=list_type, list_map_keys=keys)
        if "map" in atom:
            m = atom["map"]
            atomic = m.get("elementRelationship") == "atomic"
            if m.get("fields"):
                ref = f"{where}#inline"
                self.types.append(self.struct(ref, m, ref))
                self.done.add(ref)
                return FieldDef(name=name, type="object", ref=ref, map_type="atomic" if atomic else "")
            if "elementType" in m:
                return FieldDef(name=name, type="object", values=self.atom("", m["elementType"], where + "{}"),
                                map_type="atomic" if atomic else "")
            return FieldDef(name=name, type="object", map_type="atomic") if atomic else FieldDef(name=name, type="any")
        if "untyped" in atom or not atom:
            return FieldDef(name=name, type="any")
        raise ValueError(f"unknown atom {atom!r}")


def build_schema(text: str, root: str) -> Schema:
    """kapi's Schema of an SMD schema text, with ``root`` registered as kind Root in every version."""
    b = _SchemaBuilder(text)
    gvks = tuple(GVK("", v, KIND) for v in VERSIONS)
    if text == DEDUCED or root in (UNTYPED_DEDUCED,):
        root_type = TypeDef(name=KIND, type="any", gvks=gvks)
        return Schema([root_type])
    t = b.raw[root]
    if "map" not in t:
        raise ValueError(f"root {root!r} is not a map")
    rt = b.struct(root, t["map"], root)
    b.done.add(root)
    types = [TypeDef(name=rt.name, type=rt.type, fields=rt.fields, map_type=rt.map_type,
                     preserve_unknown=rt.preserve_unknown, gvks=gvks), *b.types]
    return Schema(types)


@dataclass(frozen=True)
class Parser:
    """A schema text and the name of its root type (SMD's ``parser.Type(name)``)."""

    text: str
    root: str = ""

    def schema(self) -> Schema:
        return build_schema(self.text, self.root)


DeducedParser = Parser(DEDUCED)


# ------------------------------------------------------------------ objects


def dedent_tabs(text: str) -> str:
    """``FixTabsOrDie``: the leading tabs of the first line removed from every line."""
    lines = text.split("\n")
    if not lines[0] and len(lines) > 1:
        lines = lines[1:]
    prefix = lines[0][: len(lines[0]) - len(lines[0].lstrip("\t"))]
    out = []
    for i, line in enumerate(lines):
        if i == len(lines) - 1 and not line.strip():
            out.append("")
            break
        if not line.startswith(prefix):
            raise ValueError(f"line {i} lacks the first line's tabs: {line!r}")
        out.append(line[len(prefix):])
    return "\n".join(out).replace("\t", "  ")


def load(text: str) -> Any:
    """A YAML object of a test (tab-indented), None when empty."""
    if not text.strip():
        return None
    return yaml.safe_load(dedent_tabs(text))


# ------------------------------------------------------------------ operations


@dataclass(frozen=True)
class Conflict:
    """An expected conflict: a manager name and a path."""

    manager: str
    path: Path


@dataclass(frozen=True)
class Apply:
    manager: str
    api_version: str
    object: str
    conflicts: Sequence[Conflict] | None = None


@dataclass(frozen=True)
class ForceApply:
    manager: str
    api_version: str
    object: str


@dataclass(frozen=True)
class Update:
    manager: str
    api_version: str
    object: str


@dataclass(frozen=True)
class ChangeParser:
    parser: Parser


Operation = Apply | ForceApply | Update | ChangeParser


def V(fields: FieldSet, api_version: str, applied: bool = False) -> tuple[FieldSet, str]:
    """``fieldpath.NewVersionedSet``; the applied flag is not compared (as ``ManagedFields.Difference``)."""
    return (fields, api_version)


def _key(manager: str) -> ManagerKey:
    return ManagerKey(manager, "Apply")


@dataclass
class State:
    parser: Parser
    converter: Converter | None = None
    ignored: Mapping[str, FieldSet] | None = None
    live: Any = None
    managers: Managers = field(default_factory=dict)
    schema: Schema | None = None

    def updater(self) -> Updater:
        if self.schema is None:
            self.schema = self.parser.schema()
        return Updater(self.schema, KIND, ignored=self.ignored, converter=self.converter)

    def _convert(self, version: str) -> None:
        if self.live is not None and self.converter is not None:
            self.live = self.converter.convert(self.live, version)

    def run(self, op: Operation) -> None:
        if isinstance(op, ChangeParser):
            self.parser = op.parser
            self.schema = None
            return
        self._convert(op.api_version)
        config = load(op.object)
        if isinstance(op, Update):
            new, self.managers = self.updater().update(self.live, config if config is not None else {},
                                                       op.api_version, self.managers, _key(op.manager))
            self.live = new
            return
        force = isinstance(op, ForceApply)
        try:
            new, managers = self.updater().apply(self.live, config if config is not None else {}, op.api_version,
                                                 self.managers, _key(op.manager), force)
        except Conflicts as exc:
            expected = op.conflicts if isinstance(op, Apply) else None
            if expected is None:
                raise
            got = {(c.manager.manager, c.path) for c in exc.conflicts}
            want = {(c.manager, c.path) for c in expected}
            assert got == want, f"conflicts: expected {sorted(want)}, got {sorted(got)}"
            return
        if isinstance(op, Apply) and op.conflicts is not None:
            assert not op.conflicts, f"expected conflicts {list(op.conflicts)}, the apply succeeded"
        self.managers = managers
        if new is not None:
            self.live = new


@dataclass(frozen=True)
class TestCase:
    """SMD's ``TestCase``: operations, then the expected object (if any) and managers (if not None)."""

    __test__ = False

    ops: Sequence[Operation]
    object: str = ""
    api_version: str = ""
    managed: Mapping[str, tuple[FieldSet, str]] | None = None
    ignored: Mapping[str, FieldSet] | None = None

    def run(self, parser: Parser, converter: Converter | None = None) -> State:
        state = State(parser, converter=converter, ignored=self.ignored)
        for i, op in enumerate(self.ops):
            try:
                state.run(op)
            except AssertionError as exc:
                raise AssertionError(f"operation {i} ({type(op).__name__} by {getattr(op, 'manager', '')}): {exc}")
        if self.object:
            live = state.live
            if live is not None and state.converter is not None:
                live = state.converter.convert(live, self.api_version)
            want = load(self.object)
            assert (live if live is not None else None) == want or (not live and not want), \
                f"object:\nexpected {want!r}\ngot      {live!r}"
        if self.managed is not None:
            got = {k.manager: (vs.fields, vs.api_version) for k, vs in state.managers.items() if vs.fields}
            want_m = {m: v for m, v in self.managed.items() if v[0]}
            assert got == want_m, f"managers:\nexpected {want_m!r}\ngot      {got!r}"
        for k, vs in state.managers.items():
            assert vs.fields, f"manager {k.manager} has an empty set"
        return state


def run_case(case: TestCase, parser: Parser, converter: Converter | None = None) -> None:
    case.run(parser, converter)


Check = Callable[[TestCase, Parser], None]
