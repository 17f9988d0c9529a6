"""Server-side apply in the registry: a PATCH of ``application/apply-patch+yaml`` (kube's applyPatcher
inside the store's GuaranteedUpdate, with forceAllowCreate).

``apply`` runs ``kapi.object.managedfields.fieldmanager.apply_managed_fields`` on each try of the
update, with the resource's schema (a custom resource's from its CRD) and reset fields, then the
write goes on as any update: mutating admission, preparation, validation, validating admission,
compare-and-swap. On a missing object the apply creates it through ``Registry.create`` (create
admission and defaults). ``Registry.apply`` delegates here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kapi.registry.resources import Resource
    from kapi.registry.store import Registry, WriteOptions

Obj = dict[str, Any]


async def apply(registry: Registry, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions,
                *, force: bool, subresource: str = "") -> tuple[Obj, bool]:
    """Apply ``config`` (decoded, checked by the handler) by ``opts.field_manager``; returns (object, created)."""
    raise NotImplementedError
