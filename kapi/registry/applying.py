"""Server-side apply in the registry: a PATCH of ``application/apply-patch+yaml`` (kube's applyPatcher
inside the store's GuaranteedUpdate, with forceAllowCreate).

``apply`` runs ``kapi.object.managedfields.fieldmanager.apply_managed_fields`` on each try of the
update, with the resource's schema (a custom resource's from its CRD) and reset fields, then the
write goes on as any update: mutating admission, preparation, validation, validating admission,
compare-and-swap. On a missing object the apply creates it through ``Registry.create`` (create
admission and defaults). On ``scale`` the apply is of an autoscaling/v1 Scale, its managedFields
the parent's seen through ``ScaleHandler`` (the owners of the parent's replicas own the Scale's
``.spec.replicas``), and mapped back to the parent's. ``Registry.apply`` delegates here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from kapi import errors
from kapi.object import meta
from kapi.object.managedfields.fieldmanager import apply_managed_fields
from kapi.object.managedfields.scale import SCALE_API_VERSION, ScaleHandler, replicas_path
from kapi.registry import scale
from kapi.registry.resources import VersionConverter

if TYPE_CHECKING:
    from kapi.registry.resources import Resource
    from kapi.registry.store import Registry, WriteOptions

Obj = dict[str, Any]


async def apply(registry: Registry, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions,
                *, force: bool, subresource: str = "", merged: Callable[[], None] = lambda: None) -> tuple[Obj, bool]:
    """Apply ``config`` (decoded, checked by the handler) by ``opts.field_manager``; returns (object, created).

    ``merged`` runs on each try once the merge found no conflict, before anything else: kube's strict
    decoding of the patch comes there (a conflict is reported first)."""
    if subresource == "scale":
        return await _apply_scale(registry, res, namespace, name, config, dataclasses.replace(opts, apply=True),
                                  force=force, merged=merged), False
    schema = res.strategy.managed_fields_schema(registry.schema)
    gvk = (res.group, res.version, res.kind)
    reset = res.strategy.reset_fields_of(res.has_status, subresource)
    opts = dataclasses.replace(opts, apply=True)
    converter = VersionConverter(registry.table, res)

    def applied(live: Obj | None) -> Obj:
        new = apply_managed_fields(schema, gvk, live, config, manager=opts.field_manager or "", force=force,
                                   now=meta.now_rfc3339(), subresource=subresource, reset_fields=reset,
                                   converter=converter)
        merged()
        md = new.setdefault("metadata", {})
        if md.get("name", name) != name:
            raise errors.BadRequest(f"the name of the object ({md.get('name')}) does not match the name on "
                                    f"the URL ({name})")
        if live is not None:
            wanted = md.get("resourceVersion")
            if wanted and wanted != live["metadata"].get("resourceVersion"):
                raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
        return new

    try:
        kv = await registry.get_kv(res, namespace, name)
    except errors.NotFound:
        if subresource:
            raise
        kv = None
    if kv is not None:
        return await registry.guaranteed_update(res, namespace, name, applied, opts, subresource, first=kv), False
    uid = (config.get("metadata") or {}).get("uid") if isinstance(config.get("metadata"), dict) else None
    if uid:  # kube's create on update checks the uid as a precondition the new object cannot meet
        raise errors.conflict(res.resource, res.group, name, f"Precondition failed: UID in precondition: {uid}, "
                                                             "UID in object meta: ")
    new = applied(None)
    new["metadata"]["name"] = name
    return await registry.create(res, namespace, new, opts), True


_SCALE_GVK = ("autoscaling", "v1", "Scale")


async def _apply_scale(registry: Registry, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions,
                       *, force: bool, merged: Callable[[], None]) -> Obj:
    """An apply of a Scale on ``res``'s scale subresource (kube's scale REST with its ScaleHandler); the
    Scale after it. The object must exist (404 otherwise, as kube's scale subresource)."""
    path = replicas_path(res.strategy.spec_replicas_path or ".spec.replicas")
    md = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    if md.get("name", name) != name:
        raise errors.BadRequest(f"the name of the object ({md.get('name')}) does not match the name on "
                                f"the URL ({name})")

    def applied(obj: Obj) -> Obj:
        handler = ScaleHandler(obj["metadata"].get("managedFields"), res.group_version, {res.group_version: path})
        try:
            live = scale.to_scale(res, obj)
            live["metadata"]["managedFields"] = handler.to_subresource()
        except ValueError:
            live["metadata"].pop("managedFields", None)  # entries that do not decode start over, as kube
        new = apply_managed_fields(registry.schema, _SCALE_GVK, live, config, manager=opts.field_manager or "",
                                   force=force, now=meta.now_rfc3339(), subresource="scale",
                                   reset_fields=(("status",),))
        merged()
        wanted = new["metadata"].get("resourceVersion")
        if wanted and wanted != obj["metadata"].get("resourceVersion"):
            raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
        res.strategy.set_replicas(obj, scale.replicas_of(new, name))
        entries = handler.to_parent(new["metadata"].get("managedFields"))
        if entries:
            obj["metadata"]["managedFields"] = entries
        else:
            obj["metadata"].pop("managedFields", None)
        return obj

    if config.get("apiVersion") != SCALE_API_VERSION or config.get("kind") not in (None, "Scale"):
        raise errors.BadRequest("Incorrect version specified in apply patch. Specified patch version: "
                                f"{config.get('apiVersion') or ''}, expected: {SCALE_API_VERSION}")
    return scale.to_scale(res, await registry.guaranteed_update(res, namespace, name, applied, opts, "scale"))
