"""OwnerReferencesPermissionEnforcement (kube's plugin/pkg/admission/gc; off by default): who may set
an object's ``metadata.ownerReferences``.

An update that changes the owner references needs ``delete`` on the object itself (a create does
not: its creator could as well not have created it). Setting ``blockOwnerDeletion: true`` on a new
reference (or on one that had it unset or false) needs ``update`` of the ``finalizers`` subresource of
the owner, checked for each resource its apiVersion and kind map to, unless the user may update the
finalizers of anything. ``pods/status`` is left alone (its strategy keeps owner references). Refusals
are 403 with kube's messages (the authorizer's reason and error in them, Go's ``<nil>`` for none).
"""

from __future__ import annotations

from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, forbidden
from kapi.object.access import Attributes as AccessAttributes, Decision
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
_IGNORED: Final = frozenset((("", "pods", "status"),))


def _refs(obj: object) -> list[Obj]:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    refs = md.get("ownerReferences") if isinstance(md, dict) else None
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def changing_owner_references(new: object, old: object) -> bool:
    if old is None:
        return bool(_refs(new))
    return _refs(new) != _refs(old)


def new_blocking_refs(new: object, old: object) -> list[Obj]:
    """The references of ``new`` with blockOwnerDeletion true that were not so in ``old`` (by uid)."""
    blocking = [r for r in _refs(new) if r.get("blockOwnerDeletion") is True]
    if not blocking or old is None:
        return blocking
    before = {r.get("uid"): r for r in _refs(old)}
    return [r for r in blocking
            if r.get("uid") not in before or before[r.get("uid")].get("blockOwnerDeletion") is not True]


def _because(d: Decision) -> str:
    return f"{d.reason}, {d.error or '<nil>'}"


class OwnerReferencesPermissionEnforcement(Plugin):
    name = "OwnerReferencesPermissionEnforcement"
    operations = frozenset((CREATE, UPDATE))

    async def validate(self, a: Attributes) -> None:
        access = self.deps.access
        if access is None or (a.group, a.plural, a.subresource) in _IGNORED:
            return
        if not changing_owner_references(a.obj, a.old):
            return
        if a.operation != CREATE:
            d = await access.authorize(AccessAttributes(
                user=a.user, verb="delete", namespace=a.namespace, group=a.group, version=a.version,
                resource=a.plural, subresource=a.subresource, name=a.name))
            if not d.allowed:
                raise forbidden(a, f"cannot set an ownerRef on a resource you can't delete: {_because(d)}")
        blocking = new_blocking_refs(a.obj, a.old)
        if not blocking:
            return
        anything = await access.authorize(AccessAttributes(
            user=a.user, verb="update", group="*", version="*", resource="*", subresource="finalizers", name="*"))
        if anything.allowed:
            return
        for ref in blocking:
            api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
            group, _, version = api_version.rpartition("/")
            owners = [r for r in self.deps.registry.table.resources
                      if r.group == group and r.kind == kind and r.version == version]
            if not owners:
                raise forbidden(a, f"cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                                f"APIVersion {api_version} Kind {kind}: no matches for kind \"{kind}\" in version "
                                f"\"{api_version}\"")
            for res in owners:
                d = await access.authorize(AccessAttributes(
                    user=a.user, verb="update", namespace=a.namespace, group=group, version=version,
                    resource=res.resource, subresource="finalizers", name=str(ref.get("name") or "")))
                if not d.allowed:
                    raise forbidden(a, "cannot set blockOwnerDeletion if an ownerReference refers to a resource you "
                                    f"can't set finalizers on: {_because(d)}")


__all__ = ["OwnerReferencesPermissionEnforcement", "changing_owner_references", "new_blocking_refs"]
