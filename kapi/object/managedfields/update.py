"""The managedFields of a create, update or patch (kube's field manager for non-apply writes).

``update_managed_fields`` runs the Update pipeline: decode live or request entries, skip
untracked objects, compare, reset fields, strip metadata, move ownership, cap the Update
managers, encode and sort.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kapi.object.managedfields.compare import compare
from kapi.object.managedfields.entries import (Managed, ManagerKey, VersionedSet, decode_managed_fields,
                                               encode_managed_fields, normalize_time, unix_seconds)
from kapi.object.managedfields.fieldpath import FieldSet, make_path
from kapi.object.managedfields.shape import as_gvk
from kapi.object.managedfields.updater import Converter, MissingVersion, reconcile_with_schema
from kapi.object.schema import GVK, Schema

__all__ = ["ANCIENT_CHANGES_MANAGER", "MAX_UPDATE_MANAGERS", "STRIPPED_PATHS", "cap_update_managers", "is_reset",
           "update_managed_fields"]

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES_MANAGER = "ancient-changes"


def is_reset(entries: Any) -> bool:
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
STRIPPED_PATHS = FieldSet(make_path(p) for p in (
    ("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"),
    ("metadata", "creationTimestamp"), ("metadata", "selfLink"), ("metadata", "uid"),
    ("metadata", "clusterName"), ("metadata", "generation"), ("metadata", "managedFields"),
    ("metadata", "resourceVersion"),
))


_RECONCILED = "managedfields.reconciled"  # in Schema.compiled: (generation, apiVersion, kind, set) -> set
_RECONCILED_MAX = 4096


def _reconciled(schema: Schema, api_version: str, kind: str, fields: FieldSet) -> FieldSet:
    """``reconcile_with_schema`` of an entry's set, kept per schema generation: an object's entries come
    back unchanged at each of its writes, and their sets are shared (``FieldSet.from_fields_v1_kept``)."""
    cache = schema.compiled.get(_RECONCILED)
    if cache is None or len(cache) > _RECONCILED_MAX:
        cache = schema.compiled[_RECONCILED] = {}
    key = (schema.generation, api_version, kind, fields)
    found = cache.get(key)
    if found is None:
        group, _, version = api_version.rpartition("/")
        found = cache[key] = reconcile_with_schema(schema, GVK(group, version, kind), fields)
    return found  # type: ignore[no-any-return]


def cap_update_managers(managed: Managed, maximum: int) -> None:
    """Merge the oldest Update entries into ``ancient-changes`` buckets (capManagersManager)."""
    updaters = [k for k, vs in managed.fields.items() if not vs.applied]
    if len(updaters) <= maximum:
        return
    updaters.sort(key=lambda k: (unix_seconds(managed.times.get(k)), k.identifier))
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
    converter: Converter | None = None,
) -> list[dict[str, Any]]:
    """The managedFields kube-apiserver records for a create/update/patch (not apply).

    ``old`` is the stored object (None on create), ``new`` the object about to be stored,
    carrying the managedFields the request sent (or the stored ones after a patch).
    ``manager`` is the fieldManager, already defaulted from the User-Agent
    (``manager_name``); ``api_version`` defaults to the gvk's. ``now`` is an RFC 3339
    time. ``reset_fields`` are paths the strategy resets (its ``reset_fields_of``).
    An empty result means the object carries no managedFields.
    """
    if operation != "Update":
        raise ValueError(f"unsupported operation {operation!r}: only Update is tracked here")
    gvk = as_gvk(gvk)
    api_version = api_version or gvk.api_version
    manager = manager or "unknown"
    live_entries = _metadata(old).get("managedFields")

    # decodeLiveOrNew: a subresource never sets managedFields; a request may reset them
    # with [] or [{}]; undecodable or absent request entries fall back to the stored ones.
    if subresource:
        managed = _decode_or_empty(live_entries)
    elif is_reset(_metadata(new).get("managedFields")):
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

    for key, vs in list(managed.fields.items()):  # sets written before a node became atomic own the node
        fields = _reconciled(schema, vs.api_version, gvk.kind, vs.fields)
        if fields is not vs.fields:
            managed.fields[key] = VersionedSet(fields, vs.api_version, vs.applied)

    before, after = _without_managed_fields(old or {}), _without_managed_fields(new)
    reset = FieldSet(make_path(p) for p in reset_fields)
    diff = compare(schema, gvk, before, after).filtered(reset)

    # Ownership moves: whatever this write changed or removed leaves every earlier owner, judged in
    # the owner's version (both objects converted; an owner of a version no longer served goes).
    diffs = {api_version: diff}
    for key, vs in list(managed.fields.items()):
        d = diffs.get(vs.api_version, diff if converter is None else None)
        if d is None:
            group, _, version = vs.api_version.rpartition("/")
            try:
                d = compare(schema, GVK(group, version, gvk.kind), converter.convert(before, vs.api_version)
                            if old is not None else None, converter.convert(after, vs.api_version)).filtered(reset)
            except MissingVersion:
                del managed.fields[key]
                continue
            diffs[vs.api_version] = d
        remaining = vs.fields - (d.modified | d.added) - d.removed
        if remaining:
            managed.fields[key] = VersionedSet(remaining, vs.api_version, vs.applied)
        else:
            del managed.fields[key]

    current = (diff.modified | diff.added) - diff.removed - STRIPPED_PATHS
    if current:
        key = ManagerKey(manager, "Update", api_version, subresource)
        previous = managed.fields.get(key)
        merged = current | previous.fields if previous is not None else current
        managed.fields[key] = VersionedSet(merged, api_version)
        managed.times[key] = normalize_time(now)

    cap_update_managers(managed, MAX_UPDATE_MANAGERS)
    return encode_managed_fields(managed)
