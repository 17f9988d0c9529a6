"""Server-side apply in the registry: a PATCH of ``application/apply-patch+yaml`` (kube's applyPatcher
inside the store's GuaranteedUpdate, with forceAllowCreate).

``apply`` runs ``kapi.object.managedfields.fieldmanager.apply_managed_fields`` on each try of the
update, with the resource's schema (a custom resource's from its CRD) and reset fields, then the
write goes on as any update: mutating admission, preparation, validation, validating admission,
compare-and-swap. On a missing object the apply creates it through ``Registry.create`` (create
admission and defaults). ``Registry.apply`` delegates here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kapi import errors
from kapi.object import meta
from kapi.object.managedfields.fieldmanager import apply_managed_fields
from kapi.object.managedfields.update import reset_fields_for

if TYPE_CHECKING:
    from kapi.registry.resources import Resource
    from kapi.registry.store import Registry, WriteOptions

Obj = dict[str, Any]


async def apply(registry: Registry, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions,
                *, force: bool, subresource: str = "") -> tuple[Obj, bool]:
    """Apply ``config`` (decoded, checked by the handler) by ``opts.field_manager``; returns (object, created)."""
    schema = res.strategy.managed_fields_schema(registry.schema)
    gvk = (res.group, res.version, res.kind)
    reset = reset_fields_for(has_status=res.has_status, subresource=subresource)
    opts = dataclasses.replace(opts, apply=True)

    def applied(live: Obj | None) -> Obj:
        new = apply_managed_fields(schema, gvk, live, config, manager=opts.field_manager, force=force,
                                   now=meta.now_rfc3339(), subresource=subresource, reset_fields=reset)
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
