"""DELETE and DELETECOLLECTION: preconditions, finalizers and propagation, graceful deletion,
and kube-apiserver's unsafe deletion of an object storage holds but nobody can decode.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kapi import errors
from kapi.encoding import codec
from kapi.object import meta
from kapi.object.listopts import ListOptions
from kapi.registry.listing import ListPage
from kapi.registry.resources import Resource
from kapi.storage.base import KeyValue

if TYPE_CHECKING:
    from kapi.registry.store import Registry

Obj = dict[str, Any]
log = logging.getLogger("kapi.registry")

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
_DELETE_TRIES = 16  # reads and compare-and-swaps before a 409, as an update's


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    dry_run: bool = False
    grace_period_s: int | None = None
    propagation_policy: str = ""
    orphan_dependents: bool | None = None
    precondition_uid: str = ""
    precondition_rv: str = ""
    # DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: remove an object that cannot be
    # decoded, without reading it (no preconditions, finalizers or grace period).
    ignore_store_read_error: bool = False


@dataclass(slots=True)
class DeleteResult:
    obj: Obj
    deleted: bool  # False: the object stays (finalizers or a grace period)


async def delete(reg: Registry, res: Resource, namespace: str, name: str, opts: DeleteOptions) -> DeleteResult:
    key = reg.key(res, namespace, name)
    if res.resource == "namespaces" and name in PROTECTED_NAMESPACES:
        raise errors.Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                               name=name, kind="namespaces")
    for _ in range(_DELETE_TRIES):
        kv = await reg.get_kv(res, namespace, name)
        try:
            obj = reg.decode(res, kv)
        except codec.CorruptObject as exc:
            if not opts.ignore_store_read_error:
                raise reg.corrupt_error(exc) from None
            done = await _delete_corrupt(reg, key, kv, opts)
            if done is None:
                continue
            return done
        if opts.ignore_store_read_error:
            # kube-apiserver: the option is only for objects that cannot be read.
            raise errors.invalid(res.resource, res.group, name, [errors.Cause(
                "FieldValueInvalid", "Invalid value: true: is exclusively used to delete corrupt "
                "object(s), try again by removing this option",
                "ignoreStoreReadErrorWithClusterBreakingPotential")])
        md = obj["metadata"]
        if opts.precondition_uid and opts.precondition_uid != md.get("uid"):
            raise errors.conflict(res.resource, res.group, name,
                                  f"Precondition failed: UID in precondition: {opts.precondition_uid}, "
                                  f"UID in object meta: {md.get('uid')}")
        if opts.precondition_rv and opts.precondition_rv != md.get("resourceVersion"):
            raise errors.conflict(res.resource, res.group, name,
                                  "Precondition failed: ResourceVersion in precondition: "
                                  f"{opts.precondition_rv}, ResourceVersion in object meta: "
                                  f"{md.get('resourceVersion')}")
        new = _deletion_update(res, obj, opts)
        if new is None:
            if opts.dry_run:
                return DeleteResult(obj, True)
            try:
                _, prev = await reg.storage.delete(key, kv.revision)
            except (errors.RevisionConflict, errors.KeyNotFound):
                continue
            return DeleteResult(obj, True)
        if opts.dry_run or new == obj:
            return DeleteResult(new, False)
        try:
            rev = await reg.storage.update(key, reg.encode(res, new), kv.revision)
        except (errors.RevisionConflict, errors.KeyNotFound):
            continue
        new["metadata"]["resourceVersion"] = str(rev)
        return DeleteResult(new, False)
    raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)


async def _delete_corrupt(reg: Registry, key: str, kv: KeyValue, opts: DeleteOptions) -> DeleteResult | None:
    """kube-apiserver's unsafe deletion of a corrupt object: no preconditions, no finalizers, no object back."""
    log.warning("unsafe deletion of corrupt object %s (revision %d)", key, kv.revision)
    gone = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if opts.dry_run:
        return DeleteResult(gone, True)
    try:
        await reg.storage.delete(key, kv.revision)
    except (errors.RevisionConflict, errors.KeyNotFound):
        return None  # changed or went meanwhile: read it again
    return DeleteResult(gone, True)


def _deletion_update(res: Resource, obj: Obj, opts: DeleteOptions) -> Obj | None:
    """The object as it stays after this DELETE, or None if it goes now."""
    new = copy.deepcopy(obj)
    md = new["metadata"]
    finalizers = list(md.get("finalizers") or [])
    policy = opts.propagation_policy
    if not policy and opts.orphan_dependents is not None:
        policy = "Orphan" if opts.orphan_dependents else "Background"
    if policy and policy not in ("Orphan", "Foreground", "Background"):
        raise errors.invalid("DeleteOptions", "", "", [errors.Cause(
            "FieldValueNotSupported",
            f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"',
            "propagationPolicy")])
    # The garbage collector finishes these (kapi.controllers): orphan or delete the dependents.
    gc_finalizer = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(policy)
    if gc_finalizer and res.resource != "namespaces" and not md.get("deletionTimestamp") \
            and gc_finalizer not in finalizers:
        finalizers.append(gc_finalizer)
        md["finalizers"] = finalizers
    if res.resource == "namespaces":
        if md.get("deletionTimestamp"):
            return new
        md["deletionTimestamp"] = meta.now_rfc3339()
        md["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        if not new.get("spec", {}).get("finalizers") and not finalizers:
            return None
        return new
    grace = _grace_period(res, obj, opts)
    if md.get("deletionTimestamp"):
        if finalizers:
            return new
        old_grace = md.get("deletionGracePeriodSeconds")
        if grace == 0 or (old_grace is not None and grace is not None and grace < old_grace):
            if grace == 0:
                return None
            md["deletionGracePeriodSeconds"] = grace
            md["deletionTimestamp"] = meta.rfc3339_after(grace)
        return new
    if finalizers:
        md["deletionTimestamp"] = meta.now_rfc3339()
        md["deletionGracePeriodSeconds"] = 0
        if md.get("generation"):
            md["generation"] += 1
        return new
    if grace:
        md["deletionTimestamp"] = meta.rfc3339_after(grace)
        md["deletionGracePeriodSeconds"] = grace
        if md.get("generation"):
            md["generation"] += 1
        return new
    return None



def _grace_period(res: Resource, obj: Obj, opts: DeleteOptions) -> int:
    """Graceful deletion applies to pods bound to a node that are still running."""
    if res.resource != "pods":
        return 0
    spec = obj.get("spec", {})
    grace = opts.grace_period_s
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    if grace < 0:
        grace = 1
    if not spec.get("nodeName") or obj.get("status", {}).get("phase") in ("Failed", "Succeeded"):
        return 0
    return int(grace)


async def delete_collection(reg: Registry, res: Resource, namespace: str, list_opts: ListOptions,
                            opts: DeleteOptions) -> ListPage:
    page = await reg.list(res, namespace, ListOptions(label_selector=list_opts.label_selector,
                                                        field_selector=list_opts.field_selector))
    deleted = []
    for obj in page.objects():
        md = obj["metadata"]
        try:
            result = await reg.delete(res, md.get("namespace", ""), md["name"], opts)
        except errors.NotFound:
            continue
        deleted.append(result.obj)
    return ListPage(deleted, page.resource_version)


def finalized(obj: Obj) -> bool:
    """The object is being deleted and nothing holds it any more: it goes now."""
    md = obj.get("metadata", {})
    return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
        md.get("deletionGracePeriodSeconds", 0) == 0 and obj.get("kind") != "Namespace"


def namespace_finished(ns: Obj) -> bool:
    """The namespace is being deleted and all its finalizers are done."""
    md = ns.get("metadata", {})
    return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
        not ns.get("spec", {}).get("finalizers")
