"""structured-merge-diff's ``merge.Updater``: server-side apply and update over managed field sets.

``Updater.apply`` merges an applied configuration into the live object, prunes what the applier
applied before and no longer applies (unless another manager owns it), and moves ownership, raising
``Conflicts`` before anything is changed; ``Updater.update`` records a non-apply write. Both work on
plain JSON objects typed by the schema's shapes (``shape``), with ``compare``, ``field_set_of`` and
``merge`` as structured-merge-diff's ``Compare``, ``ToFieldSet`` and ``Merge``.

Object layer: no I/O; inputs are never changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kapi.object.managedfields.compare import Comparison, compare, field_set_of
from kapi.object.managedfields.entries import ManagerKey, VersionedSet
from kapi.object.managedfields.fieldpath import FieldSet, Path, PathElement
from kapi.object.managedfields.merge import MergeError, merge, type_errors
from kapi.object.managedfields.shape import Shape, child_shape, item_element, resolve, root_shape
from kapi.object.schema import GVK, Schema

__all__ = ["Conflict", "Conflicts", "Converter", "Managers", "MissingVersion", "Updater", "path_string",
           "remove_items"]

Obj = dict[str, Any]
Managers = dict[ManagerKey, VersionedSet]


# ------------------------------------------------------------ paths as text


def _go_value(v: Any) -> str:
    """structured-merge-diff's ``value.ToString``: strings Go-quoted, numbers and bools as %v."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(_go_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={_go_value(v[k])}" for k in sorted(v)) + "}"
    return str(v)


def _element_string(pe: PathElement) -> str:
    text = pe.text
    kind, body = text[0], text[2:]
    if kind == "f":
        return "." + body
    if kind == "i":
        return f"[{body}]"
    value = json.loads(body)
    if kind == "k":
        return "[" + ",".join(f"{k}={_go_value(value[k])}" for k in sorted(value)) + "]"
    return f"[={_go_value(value)}]"


def path_string(path: Path) -> str:
    """structured-merge-diff's ``Path.String()``: ``.spec.containers[name="nginx"].image``, keys as
    ``[containerPort=80,protocol="TCP"]``, ``[="a"]`` for a set item, ``[3]`` for an index."""
    return "".join(_element_string(pe) for pe in path)


def _iterate_order(paths: Sequence[Path]) -> list[Path]:
    """``Set.Iterate``'s order: at each level the members first, then the children, each sorted."""
    members = sorted({p[0] for p in paths if len(p) == 1})
    deeper: dict[PathElement, list[Path]] = {}
    for p in paths:
        if len(p) > 1:
            deeper.setdefault(p[0], []).append(p[1:])
    out: list[Path] = [(pe,) for pe in members]
    for pe in sorted(deeper):
        out.extend((pe, *rest) for rest in _iterate_order(deeper[pe]))
    return out


# ------------------------------------------------------------ conflicts


@dataclass(frozen=True, slots=True)
class Conflict:
    """One field another manager owns and the apply would change."""

    manager: ManagerKey
    path: Path


class Conflicts(Exception):
    """structured-merge-diff's ``merge.Conflicts``: every conflict of one apply, in a stable order
    (managers by identifier, each manager's paths in ``Set.Iterate`` order)."""

    def __init__(self, conflicts: Sequence[Conflict]) -> None:
        by: dict[ManagerKey, list[Path]] = {}
        for c in conflicts:
            by.setdefault(c.manager, []).append(c.path)
        ordered: list[Conflict] = []
        for key in sorted(by, key=lambda k: k.identifier):
            ordered.extend(Conflict(key, p) for p in _iterate_order(by[key]))
        self.conflicts: tuple[Conflict, ...] = tuple(ordered)
        super().__init__(str(self))

    def __str__(self) -> str:
        if len(self.conflicts) == 1:
            c = self.conflicts[0]
            return f"conflict: {c.manager.identifier}: {path_string(c.path)}"
        lines = [f"{c.manager.identifier}: {path_string(c.path)}" for c in self.conflicts]
        return "conflicts:\n" + "\n".join(lines)


class MissingVersion(Exception):
    """A converter does not know the version (structured-merge-diff drops such a manager's entry)."""


class Converter(Protocol):
    """Converts an object between the versions managers recorded their fields in."""

    def convert(self, obj: Obj, api_version: str) -> Obj:
        """``obj`` in ``api_version``; raises ``MissingVersion`` for a version it does not know."""
        ...


# ------------------------------------------------------------ removing items


def _tree(paths: FieldSet) -> dict[PathElement, Any]:
    """A set as nested dicts: element -> (member?, children)."""
    root: dict[PathElement, Any] = {}
    for path in paths.paths:
        node = root
        for i, pe in enumerate(path):
            entry = node.setdefault(pe, [False, {}])
            if i == len(path) - 1:
                entry[0] = True
            node = entry[1]
    return root


def _remove(schema: Schema, shape: Shape, value: Any, tree: dict[PathElement, Any]) -> Any:
    if not tree:
        return value
    if isinstance(value, dict) and shape.kind in ("struct", "map", "cr_root", "deduced"):
        out = {}
        for key, v in value.items():
            entry = tree.get(PathElement.of_field(key))
            if entry is None:
                out[key] = v
            elif entry[0]:
                continue
            else:
                out[key] = _remove(schema, child_shape(schema, shape, key), v, entry[1])
        return out or None  # emptied, it is null (SMD's removing walker); the parent keeps the key
    if isinstance(value, list) and shape.kind == "list":
        elem = resolve(schema, shape.elem)
        items = []
        for item in value:
            pe = item_element(shape, item)
            entry = tree.get(pe) if pe is not None else None
            if entry is None:
                items.append(item)
            elif not entry[0]:
                items.append(_remove(schema, elem, item, entry[1]))
        return items or None
    return value


def remove_items(schema: Schema, gvk: GVK, obj: Obj, paths: FieldSet) -> Obj:
    """structured-merge-diff's ``RemoveItems``: ``obj`` without the fields and items ``paths`` has as
    members (a member's whole subtree goes); a new object."""
    out = _remove(schema, root_shape(schema, gvk), obj, _tree(paths))
    return out if isinstance(out, dict) else {}


def ensure_named_fields_are_members(schema: Schema, gvk: GVK, paths: FieldSet) -> FieldSet:
    """``Set.EnsureNamedFieldsAreMembers``: every struct field with children in the set is a member too
    (not map keys nor list items)."""
    out: set[Path] = set(paths.paths)
    _named(schema, root_shape(schema, gvk), _tree(paths), (), out)
    return FieldSet(out)


def _named(schema: Schema, shape: Shape, tree: dict[PathElement, Any], prefix: Path, out: set[Path]) -> None:
    for pe, (_, below) in tree.items():
        if not below:
            continue
        path = (*prefix, pe)
        text = pe.text
        if text.startswith("f:") and (
                shape.kind == "struct" and shape.type is not None and shape.type.field(text[2:]) is not None
                or shape.kind == "cr_root" and text in ("f:metadata", "f:apiVersion", "f:kind")):
            out.add(path)
        child = resolve(schema, shape.elem) if shape.kind == "list" else child_shape(schema, shape, text[2:])
        _named(schema, child, below, path, out)


# ------------------------------------------------------------ schema changes


def reconcile_with_schema(schema: Schema, gvk: GVK, paths: FieldSet) -> FieldSet:
    """structured-merge-diff's ``ReconcileFieldSetWithSchema``: a set written when a node was granular,
    where the schema now makes it atomic, owns the node itself instead of its children (a change the
    other way is taken as if the node had always been granular). Free-form maps are left as they are."""
    remove: set[Path] = set()
    _reconcile(schema, root_shape(schema, gvk), _tree(paths), (), False, remove)
    if not remove:
        return paths
    atomic = FieldSet(remove)
    return paths.recursive_difference(atomic) | atomic


def _reconcile(schema: Schema, shape: Shape, tree: dict[PathElement, Any], path: Path, atomic: bool,
               out: set[Path]) -> None:
    if shape.kind == "atomic":
        if not atomic and tree:
            out.add(path)
        return
    if shape.kind not in ("struct", "map", "list"):
        return
    for pe, (member, below) in tree.items():
        if shape.kind == "list":
            child = resolve(schema, shape.elem)
        elif shape.kind == "map":
            child = resolve(schema, shape.elem) if shape.elem is not None else child_shape(schema, shape, pe.text[2:])
        else:
            if shape.type is None or not pe.text.startswith("f:") or shape.type.field(pe.text[2:]) is None:
                continue  # a field the schema does not declare
            child = child_shape(schema, shape, pe.text[2:])
        _reconcile(schema, child, below, (*path, pe), member and not below, out)


# ------------------------------------------------------------ the updater


def _without_empty(v: Any) -> Any:
    """A value with null, {} and [] members of maps left out (what omitempty makes of them), order kept."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = _without_empty(x)
            if x is not None and x != {} and x != []:
                out[k] = x
        return out
    if isinstance(v, list):
        return [_without_empty(x) for x in v]
    return v


class Updater:
    """``merge.Updater`` for one kind: ``kind`` with the group/version of each call's ``api_version``
    looked up in ``schema``. ``ignored``: per apiVersion, the fields no manager may own (the strategy's
    reset fields). ``converter``: None treats every version as having the same paths (no conversion)."""

    def __init__(self, schema: Schema, kind: str, *, ignored: Mapping[str, FieldSet] | None = None,
                 converter: Converter | None = None) -> None:
        self.schema = schema
        self.kind = kind
        self.ignored = dict(ignored or {})
        self.converter = converter

    def _gvk(self, api_version: str) -> GVK:
        group, _, version = api_version.rpartition("/")
        return GVK(group, version, self.kind)

    def _ignore(self, fields: FieldSet, api_version: str) -> FieldSet:
        ignored = self.ignored.get(api_version)
        return fields.recursive_difference(ignored) if ignored else fields

    def apply(self, live: Obj | None, config: Obj, api_version: str, managers: Managers, manager: ManagerKey,
              force: bool) -> tuple[Obj | None, Managers]:
        """Apply ``config`` (an applied configuration) by ``manager`` to ``live`` (None: the kind's zero
        object, a create). Returns the new object, or None when the object would not change, and the new
        managers (a new dict; the applier's entry is ``applied`` at ``api_version``).

        Raises:
            Conflicts: ``force`` is False and the apply would change fields other managers own.
            MergeError: ``config`` does not fit the schema (an item without its keys, duplicate items,
                a field not declared, a map where a list belongs).
        """
        gvk = self._gvk(api_version)
        managers = self._reconciled(managers)
        problems = type_errors(self.schema, gvk, config)
        if problems:
            raise MergeError(problems[0])
        merged = merge(self.schema, gvk, live or {}, config)  # refuses duplicates and items without keys
        managers = dict(managers)
        last = managers.get(manager)
        applied = self._ignore(field_set_of(self.schema, gvk, config, go_typed=False), api_version)
        managers[manager] = VersionedSet(applied, api_version, True)
        if last is not None and last.fields:
            merged = self._prune(merged, managers, api_version, last)
        managers, diff = self._update(live, merged, api_version, managers, manager, force)
        if live is not None and not (diff.added or diff.modified or diff.removed) and \
                _without_empty(live) == _without_empty(merged):
            return None, managers  # nothing changed as Go's decoder sees it ({} and null fields are absent)
        return merged, managers

    def _prune(self, merged: Obj, managers: Managers, api_version: str, last: VersionedSet) -> Obj:
        """SMD's ``prune``: what the applier applied last time (``last``) and not now goes, unless a
        manager (the applier's new set included) owns it. In one version that is a set difference;
        across versions, SMD's conversions: remove in ``last``'s version, add back in each manager's
        version what it owns, then keep what ``last`` did not own (addBackOwnedItems, addBackDanglingItems)."""
        versions = {vs.api_version for vs in managers.values()} | {last.api_version}
        if self.converter is None or versions == {api_version}:
            gvk = self._gvk(api_version)
            owned = FieldSet()
            for vs in managers.values():
                owned = owned | vs.fields
            gone = ensure_named_fields_are_members(self.schema, gvk, last.fields) - \
                ensure_named_fields_are_members(self.schema, gvk, owned)
            return remove_items(self.schema, gvk, merged, gone) if gone else merged
        convert = self.converter.convert
        version = last.api_version
        try:
            at_last = convert(merged, version)
        except MissingVersion:
            return merged  # recorded in a version no longer known: nothing of it is pruned
        pruned = remove_items(self.schema, self._gvk(version), at_last, self._members(version, last.fields))
        owned: dict[str, FieldSet] = {}
        for vs in managers.values():
            owned[vs.api_version] = owned.get(vs.api_version, FieldSet()) | vs.fields
        whole = at_last
        for v in sorted(owned, key=lambda v: v != version):  # the pruned version first, as SMD
            try:
                whole, pruned = convert(whole, v), convert(pruned, v)
            except MissingVersion:
                continue
            kept = self._members(v, self._object_set(v, pruned)) | self._members(v, owned[v])
            pruned = remove_items(self.schema, self._gvk(v), whole, self._members(v, self._object_set(v, whole)) - kept)
        try:
            pruned = convert(pruned, version)
        except MissingVersion:
            return convert(at_last, api_version)
        gone = (self._members(version, self._object_set(version, at_last)) -
                self._members(version, self._object_set(version, pruned))) & self._members(version, last.fields)
        return convert(remove_items(self.schema, self._gvk(version), at_last, gone), api_version)

    def _members(self, api_version: str, fields: FieldSet) -> FieldSet:
        return ensure_named_fields_are_members(self.schema, self._gvk(api_version), fields)

    def _object_set(self, api_version: str, obj: Obj) -> FieldSet:
        return field_set_of(self.schema, self._gvk(api_version), obj, go_typed=False)

    def _reconciled(self, managers: Managers) -> Managers:
        """Each manager's set reconciled with the schema of its version (``reconcile_with_schema``)."""
        out: Managers = {}
        for key, vs in managers.items():
            fields = reconcile_with_schema(self.schema, self._gvk(vs.api_version), vs.fields)
            out[key] = vs if fields is vs.fields else VersionedSet(fields, vs.api_version, vs.applied)
        return out

    def _update(self, live: Obj | None, new: Obj, api_version: str, managers: Managers, writer: ManagerKey,
                force: bool) -> tuple[Managers, Comparison]:
        """structured-merge-diff's ``update``: conflicts with every other manager, then ownership moves;
        also returns the comparison of ``live`` and ``new``. Each manager is judged by the comparison
        in its own version (both objects converted); one recorded in a version the converter no
        longer knows is dropped."""
        diff = self._compare(live, new, api_version)
        diffs = {api_version: diff}
        conflicts: dict[ManagerKey, FieldSet] = {}
        removed: dict[ManagerKey, FieldSet] = {}
        known: Managers = {}
        for key, vs in managers.items():
            if key != writer:
                d = diffs.get(vs.api_version)
                if d is None:
                    if self.converter is None:
                        d = diff  # no converter: every version has the same paths
                    else:
                        try:
                            d = self._compare(self._convert(live, vs.api_version),
                                              self.converter.convert(new, vs.api_version), vs.api_version)
                        except MissingVersion:
                            continue
                    diffs[vs.api_version] = d
                clash = vs.fields & (d.modified | d.added)
                if clash:
                    conflicts[key] = clash
                removed[key] = d.removed
            known[key] = vs
        if conflicts and not force:
            raise Conflicts([Conflict(k, p) for k, s in conflicts.items() for p in s])
        out: Managers = {}
        for key, vs in known.items():
            fields = vs.fields
            if key != writer:
                fields = fields - conflicts.get(key, FieldSet()) - removed[key]
            if fields:
                out[key] = VersionedSet(fields, vs.api_version, vs.applied)
        return out, diff

    def _compare(self, live: Obj | None, new: Obj, api_version: str) -> Comparison:
        diff = compare(self.schema, self._gvk(api_version), live, new)
        ignored = self.ignored.get(api_version)
        return diff.filtered(ignored) if ignored else diff

    def _convert(self, obj: Obj | None, api_version: str) -> Obj | None:
        return None if obj is None or self.converter is None else self.converter.convert(obj, api_version)

    def update(self, live: Obj | None, new: Obj, api_version: str, managers: Managers,
               manager: ManagerKey) -> tuple[Obj, Managers]:
        """Record a non-apply write of ``new`` over ``live`` by ``manager``: what it changed leaves the
        other managers and is the writer's (an Update entry at ``api_version``)."""
        out, diff = self._update(live, new, api_version, self._reconciled(managers), manager, True)
        previous = out.get(manager)
        fields = (previous.fields if previous is not None else FieldSet()) - diff.removed | diff.modified | diff.added
        if fields:
            out[manager] = VersionedSet(fields, api_version, False)
        else:
            out.pop(manager, None)
        return new, out
