"""managedFields across the ``scale`` subresource, as kube's ``managedfields.ScaleHandler`` maps them.

A write to ``/scale`` works on an ``autoscaling/v1`` Scale, whose only owned field is ``.spec.replicas``;
the parent (a Deployment, a custom resource) keeps its replicas at a path of its own. Call it so::

    handler = ScaleHandler(parent_entries, "apps/v1", {"apps/v1": ("spec", "replicas")})
    scale_entries = handler.to_subresource()       # managedFields for the Scale a write starts from
    ... the write (update or apply) on the Scale, giving new_scale_entries ...
    parent_entries = handler.to_parent(new_scale_entries)   # the parent's managedFields to store

``parent_entries``: the parent's stored ``metadata.managedFields`` (a list, or None). ``group_version``:
the parent's version that the write is stored in. ``mappings``: per apiVersion the managers may have
recorded, the replicas path in that version (a tuple of field names: ``("spec", "replicas")`` for the
built-ins, a CRD version's ``scale.specReplicasPath`` split on dots without its leading dot); None for a
version without one. Entries of versions not in ``mappings`` are dropped, as kube drops them.
Raises ValueError when the entries do not decode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kapi.object.managedfields.entries import Managed, VersionedSet, decode_managed_fields, encode_managed_fields
from kapi.object.managedfields.fieldpath import FieldSet, Path, make_path

__all__ = ["SCALE_API_VERSION", "ScaleHandler", "replicas_path"]

SCALE_API_VERSION = "autoscaling/v1"
_REPLICAS_IN_SCALE = make_path(("spec", "replicas"))


def replicas_path(spec_replicas_path: str) -> tuple[str, ...]:
    """A CRD's ``specReplicasPath`` (``.spec.replicas``) as the field names ``ScaleHandler`` takes."""
    return tuple(p for p in spec_replicas_path.split(".") if p)


class ScaleHandler:
    """kube's ScaleHandler: the parent's managedFields seen from its Scale, and merged back."""

    def __init__(self, parent_entries: Any, group_version: str,
                 mappings: Mapping[str, Sequence[str] | None]) -> None:
        self._parent_entries = parent_entries
        self._group_version = group_version
        self._mappings: dict[str, Path | None] = {
            v: (make_path(tuple(p)) if p else None) for v, p in mappings.items()}

    def to_subresource(self) -> list[dict[str, Any]]:
        """The Scale's managedFields: each manager owning the parent's replicas owns ``.spec.replicas``
        at autoscaling/v1 (Apply or Update as before, same time); other managers are left out."""
        parent = decode_managed_fields(self._parent_entries)
        out = Managed()
        for key, vs in parent.fields.items():
            path = self._mappings.get(vs.api_version)
            if path is None or path not in vs.fields:
                continue
            out.fields[key] = VersionedSet(FieldSet([_REPLICAS_IN_SCALE]), SCALE_API_VERSION, vs.applied)
            out.times[key] = parent.times.get(key)
        return encode_managed_fields(out)

    def to_parent(self, scale_entries: Any) -> list[dict[str, Any]]:
        """The parent's managedFields after a write of the Scale whose result is ``scale_entries``: a
        manager that lost the replicas loses them in the parent too; a new owner of ``.spec.replicas``
        owns the parent's replicas path at ``group_version`` (with the parent's time for it, if any)."""
        parent = decode_managed_fields(self._parent_entries)
        scale = dict(decode_managed_fields(scale_entries).fields)
        out = Managed()
        for key, vs in parent.fields.items():
            if vs.api_version not in self._mappings:
                continue
            path = self._mappings[vs.api_version]
            if path is None or path not in vs.fields:
                out.fields[key] = vs
                out.times[key] = parent.times.get(key)
                continue
            if key in scale:
                out.fields[key] = vs
                out.times[key] = parent.times.get(key)
                del scale[key]
                continue
            rest = vs.fields - FieldSet([path])
            if rest:
                out.fields[key] = VersionedSet(rest, vs.api_version, vs.applied)
                out.times[key] = parent.times.get(key)
        target = self._mappings.get(self._group_version)
        for key, vs in scale.items():
            if _REPLICAS_IN_SCALE not in vs.fields or target is None:
                continue
            out.fields[key] = VersionedSet(FieldSet([target]), self._group_version, vs.applied)
            # As kube: the time comes from the parent's entries, so a manager new to the parent has none.
            out.times[key] = parent.times.get(key)
        return encode_managed_fields(out)
