"""structured-merge-diff's ``merge.Updater``: server-side apply and update over managed field sets.

``Updater.apply`` merges an applied configuration into the live object, prunes what the applier
applied before and no longer applies (unless another manager owns it), and moves ownership, raising
``Conflicts`` before anything is changed; ``Updater.update`` records a non-apply write. Both work on
plain JSON objects typed by the schema's shapes (``shape``), with ``compare``, ``field_set_of`` and
``merge`` as structured-merge-diff's ``Compare``, ``ToFieldSet`` and ``Merge``.

Object layer: no I/O; inputs are never changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kapi.object.managedfields.entries import ManagerKey, VersionedSet
from kapi.object.managedfields.fieldpath import FieldSet, Path
from kapi.object.schema import Schema

__all__ = ["Conflict", "Conflicts", "Converter", "Managers", "MissingVersion", "Updater", "path_string"]

Obj = dict[str, Any]
Managers = dict[ManagerKey, VersionedSet]


def path_string(path: Path) -> str:
    """structured-merge-diff's ``Path.String()``: ``.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"]``,
    ``[="a"]`` for a set item, ``[3]`` for an index."""
    raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Conflict:
    """One field another manager owns and the apply would change."""

    manager: ManagerKey
    path: Path


class Conflicts(Exception):
    """structured-merge-diff's ``merge.Conflicts``: every conflict of one apply, in a stable order
    (managers by identifier, each manager's paths in ``Set.Iterate`` order)."""

    def __init__(self, conflicts: Sequence[Conflict]) -> None:
        raise NotImplementedError

    conflicts: tuple[Conflict, ...]


class MissingVersion(Exception):
    """A converter does not know the version (structured-merge-diff drops such a manager's entry)."""


class Converter(Protocol):
    """Converts an object between the versions managers recorded their fields in."""

    def convert(self, obj: Obj, api_version: str) -> Obj:
        """``obj`` in ``api_version``; raises ``MissingVersion`` for a version it does not know."""
        ...


class Updater:
    """``merge.Updater`` for one kind: ``kind`` with the group/version of each call's ``api_version``
    looked up in ``schema``. ``ignored``: per apiVersion, the fields no manager may own (the strategy's
    reset fields). ``converter``: None treats every version as having the same paths (no conversion)."""

    def __init__(self, schema: Schema, kind: str, *, ignored: Mapping[str, FieldSet] | None = None,
                 converter: Converter | None = None) -> None:
        raise NotImplementedError

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
        raise NotImplementedError

    def update(self, live: Obj | None, new: Obj, api_version: str, managers: Managers,
               manager: ManagerKey) -> tuple[Obj, Managers]:
        """Record a non-apply write of ``new`` over ``live`` by ``manager``: what it changed leaves the
        other managers and is the writer's (an Update entry at ``api_version``)."""
        raise NotImplementedError
