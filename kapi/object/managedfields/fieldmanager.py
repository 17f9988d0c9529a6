"""kube-apiserver's field manager for server-side apply: the pipeline around ``Updater.apply``.

``apply_managed_fields`` is ``FieldManager.Apply`` with kube's default managers, outermost first:
the version check, the last-applied updater and manager (client-side apply's annotation kept in
step, and its fields taken over without conflict by ``kubectl``), the cap on Update managers, the
manager's identity (an Apply entry per manager and subresource), metadata stripping, the timestamps,
and the structured merge itself. Object layer: no I/O; raises ``kapi.errors`` StatusErrors.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from kapi import errors
from kapi.object.managedfields.compare import compare, field_set_of
from kapi.object.managedfields.entries import (Managed, ManagerKey, VersionedSet, decode_managed_fields,
                                               encode_managed_fields, normalize_time)
from kapi.object.managedfields.fieldpath import FieldSet, go_json, make_path
from kapi.object.managedfields.merge import MergeError, type_errors
from kapi.object.managedfields.shape import as_gvk
from kapi.object.managedfields.update import (MAX_UPDATE_MANAGERS, STRIPPED_PATHS, cap_update_managers,
                                              update_managed_fields)
from kapi.object.managedfields.updater import Conflict, Conflicts, Converter, Updater, path_string
from kapi.object.schema import GVK, Schema

__all__ = ["LAST_APPLIED_ANNOTATION", "apply_managed_fields", "conflict_error"]

Obj = dict[str, Any]
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
_BEFORE_FIRST_APPLY = "before-first-apply"
_KUBECTL = "kubectl"  # the one manager whose apply takes over client-side apply's fields


def _metadata(obj: Obj | None) -> Obj:
    md = obj.get("metadata") if obj is not None else None
    return md if isinstance(md, dict) else {}


def _gvknn(gvk: GVK, config: Obj) -> str:
    """kube's objectGVKNN: ``namespace/name; group/version, Kind=kind``."""
    md = _metadata(config)
    return f"{md.get('namespace') or ''}/{md.get('name') or ''}; {gvk.group}/{gvk.version}, Kind={gvk.kind}"


def apply_managed_fields(
    schema: Schema,
    gvk: GVK | tuple[str, str, str],
    live: Obj | None,
    config: Obj,
    *,
    manager: str,
    force: bool,
    now: str,
    subresource: str = "",
    reset_fields: Iterable[Sequence[str]] = (),
    converter: Converter | None = None,
) -> Obj:
    """The object a server-side apply of ``config`` by ``manager`` makes of ``live`` (None on create),
    ``metadata.managedFields`` included, as kube's ``FieldManager.Apply`` returns it. When the apply
    changes nothing but managedFields, the result is ``live``'s copy with the new managedFields (equal
    to ``live`` when they did not change either: no write). ``now``: RFC 3339, the applier's new time.

    Raises:
        errors.BadRequest: ``config``'s apiVersion is not the gvk's ("Incorrect version specified in
            apply patch. ..."), it carries ``metadata.managedFields``, or does not fit the schema
            ("failed to create typed patch object (...): ...").
        errors.Conflict: the apply changes fields others own and ``force`` is False (``conflict_error``).
    """
    gvk = as_gvk(gvk)
    version = config.get("apiVersion")
    if version != gvk.api_version:
        raise errors.BadRequest("Incorrect version specified in apply patch. Specified patch version: "
                                f"{version or ''}, expected: {gvk.api_version}")
    if _metadata(config).get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    try:
        managed = decode_managed_fields(_metadata(live).get("managedFields"))
    except ValueError:
        managed = Managed()
    base = None
    if live is not None:  # the live object without its managedFields (a shallow copy: nothing changes it)
        base = {**live, "metadata": {k: v for k, v in _metadata(live).items() if k != "managedFields"}}
        if not managed.fields:
            # skipNonApplied: an object nobody tracked yet first gets its fields recorded as an Update
            # of the kind's empty object by "before-first-apply", so the applier conflicts with them.
            before = update_managed_fields(schema, gvk, {"apiVersion": gvk.api_version, "kind": gvk.kind}, base,
                                           manager=_BEFORE_FIRST_APPLY, now=now, reset_fields=reset_fields)
            managed = decode_managed_fields(before)
    ignored = FieldSet(make_path(p) for p in reset_fields)
    updater = Updater(schema, gvk.kind, ignored={gvk.api_version: ignored} if ignored else None,
                      converter=converter)
    key = ManagerKey(manager, "Apply", "", subresource)
    try:
        new, fields = _apply(updater, base, config, gvk, managed, key, force, manager)
    except MergeError as exc:
        raise errors.BadRequest(f"failed to create typed patch object ({_gvknn(gvk, config)}): {exc}") from None
    except Conflicts as exc:
        raise conflict_error(exc) from None
    applied = fields.get(key)
    if applied is not None:  # stripMeta: no manager owns the object's identity and system metadata
        kept = applied.fields - STRIPPED_PATHS
        if kept:
            fields[key] = VersionedSet(kept, applied.api_version, True)
        else:
            del fields[key]
    result = Managed(fields, dict(managed.times))
    if new is not None:
        result.times[key] = normalize_time(now)
        out = new
    else:  # nothing changed: the live object, its managedFields in their place
        out = copy.deepcopy(live) if live is not None else {}
    cap_update_managers(result, MAX_UPDATE_MANAGERS)
    annotations = _metadata(out).get("annotations") or {}
    if manager == _KUBECTL and live is not None and LAST_APPLIED_ANNOTATION in annotations:
        out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = _last_applied(config)
    entries = encode_managed_fields(result)
    md = out.setdefault("metadata", {})
    if entries:
        md["managedFields"] = entries
    else:
        md.pop("managedFields", None)
    return out


def _apply(updater: Updater, live: Obj | None, config: Obj, gvk: GVK, managed: Managed, key: ManagerKey,
           force: bool, manager: str) -> tuple[Obj | None, dict[ManagerKey, VersionedSet]]:
    """The structured merge, with kube's lastAppliedManager: ``kubectl``'s conflicts on fields its
    client-side apply set (the last-applied annotation, where it still matches) are no conflicts."""
    try:
        return updater.apply(live, config, gvk.api_version, managed.fields, key, force)
    except Conflicts as exc:
        if manager != _KUBECTL or live is None:
            raise
        allowed = _allowed_from_last_applied(updater.schema, gvk, live)
        if allowed is None:
            raise
        left = [c for c in exc.conflicts if c.path not in allowed]
        if left:
            raise Conflicts(left) from None
        return updater.apply(live, config, gvk.api_version, managed.fields, key, True)


def _allowed_from_last_applied(schema: Schema, gvk: GVK, live: Obj) -> FieldSet | None:
    """The fields of the last-applied annotation whose values the live object still has."""
    text = (_metadata(live).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION)
    if not isinstance(text, str) or not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != gvk.api_version or type_errors(schema, gvk, last):
        return None
    fields = field_set_of(schema, gvk, last, go_typed=False)
    diff = compare(schema, gvk, last, live)
    return fields - diff.modified - diff.added - diff.removed


def _last_applied(config: Obj) -> str:
    """kube's buildLastApplied: the applied configuration without its own last-applied annotation."""
    out = copy.deepcopy(config)
    annotations = _metadata(out).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED_ANNOTATION, None)
    # runtime.Encode with the unstructured JSON scheme: Go's encoder (sorted keys, HTML escaped) and
    # its trailing newline.
    return go_json(out) + "\n"


def _print_manager(key: ManagerKey) -> str:
    """kube's printManager: ``"name"``, its subresource, and an Update manager's apiVersion."""
    out = orjson.dumps(key.manager).decode()
    if key.subresource:
        out += f" with subresource {orjson.dumps(key.subresource).decode()}"
    if key.operation == "Update":
        out += f" using {key.api_version}"
    return out


def conflict_error(conflicts: Conflicts) -> errors.Conflict:
    """kube's ``NewConflictError``: 409 with "Apply failed with N conflicts: ..." and one
    FieldManagerConflict cause per conflicting field."""
    items: tuple[Conflict, ...] = conflicts.conflicts
    causes = [errors.Cause("FieldManagerConflict", f"conflict with {_print_manager(c.manager)}", path_string(c.path))
              for c in items]
    if len(items) == 1:
        c = items[0]
        message = f"Apply failed with 1 conflict: conflict with {_print_manager(c.manager)}: {path_string(c.path)}"
    else:
        by: dict[str, list[str]] = {}
        for c in items:
            by.setdefault(_print_manager(c.manager), []).append(path_string(c.path))
        lines: list[str] = []
        for name in sorted(by):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {p}" for p in by[name])
        message = f"Apply failed with {len(items)} conflicts: " + "\n".join(lines)
    return errors.Conflict(message, causes=causes)
