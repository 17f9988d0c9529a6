"""DELETE and DELETECOLLECTION: preconditions, finalizers and propagation, graceful deletion,
and kube-apiserver's unsafe deletion of an object storage holds but nobody can decode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kapi import errors
from kapi._fast import copy_tree
from kapi.encoding import codec, listitems
from kapi.object.listopts import ListOptions
from kapi.registry.admit import DELETE, Admission, AdmissionRequest
from kapi.registry.resources import Resource
from kapi.storage.base import KeyValue, ListResult

if TYPE_CHECKING:
    from kapi.registry.store import Registry

Obj = dict[str, Any]
log = logging.getLogger("kapi.registry")

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
    # The request's admission (see WriteOptions.admission): mutating once before the object is read
    # (with no objects, as kube's DELETE handler), validating with the object on each try.
    admission: Admission | None = None


@dataclass(slots=True)
class DeleteResult:
    obj: Obj
    deleted: bool  # False: the object stays (finalizers or a grace period)


async def delete(reg: Registry, res: Resource, namespace: str, name: str, opts: DeleteOptions,
                 mutate: bool = True) -> DeleteResult:
    """DELETE; ``mutate`` False: the request's mutating admission ran already (a DELETECOLLECTION's)."""
    key = reg.key(res, namespace, name)
    res.strategy.check_delete(name)
    if opts.admission is not None and mutate:
        await opts.admission.mutate(AdmissionRequest(DELETE, res, "", namespace, name, None, None, opts.dry_run))
    kv: KeyValue | None = None
    for _ in range(_DELETE_TRIES):
        # A retry starts from the value the failed compare-and-swap returned, and checks the
        # preconditions and admission again against it (kube's conditionalDelete).
        if kv is None:
            kv = await reg.get_kv(res, namespace, name)
        try:
            obj = reg.decode(res, kv)
        except codec.CorruptObject as exc:
            if not opts.ignore_store_read_error:
                raise reg.corrupt_error(exc) from None
            done = await _delete_corrupt(reg, key, kv, opts)
            if done is None:
                kv = None
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
        if opts.admission is not None:
            await opts.admission.validate(AdmissionRequest(DELETE, res, "", namespace, name, None, obj, opts.dry_run))
        new = _deletion_update(res, obj, opts)
        if new is None:
            if opts.dry_run:
                return DeleteResult(obj, True)
            try:
                rev, _ = await reg.storage.delete(key, kv.revision)
            except (errors.RevisionConflict, errors.KeyNotFound) as exc:
                kv = _current(exc)
                continue
            reg.wrote(res, rev)
            return DeleteResult(obj, True)
        if opts.dry_run or new == obj:
            return DeleteResult(new, False)
        try:
            rev = await reg.storage.update(key, reg.encode(res, new), kv.revision)
        except (errors.RevisionConflict, errors.KeyNotFound) as exc:
            kv = _current(exc)
            continue
        reg.wrote(res, rev)
        new["metadata"]["resourceVersion"] = str(rev)
        return DeleteResult(new, False)
    raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)


def _current(exc: errors.StorageError) -> KeyValue | None:
    """The key's value a failed compare-and-swap returned (None: read it again)."""
    return exc.current if isinstance(exc, errors.RevisionConflict) else None


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
    """The object as it stays after this DELETE, or None if it goes now (the strategy's graceful deletion)."""
    new = copy_tree(obj)
    policy = opts.propagation_policy
    if not policy and opts.orphan_dependents is not None:
        policy = "Orphan" if opts.orphan_dependents else "Background"
    if policy and policy not in ("Orphan", "Foreground", "Background"):
        raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [errors.Cause(
            "FieldValueNotSupported",
            f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"',
            "propagationPolicy")])
    # The garbage collector finishes these (kapi.controllers): orphan or delete the dependents.
    gc_finalizer = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(policy)
    return res.strategy.prepare_for_delete(new, gc_finalizer, opts)


async def delete_collection(reg: Registry, res: Resource, namespace: str, list_opts: ListOptions,
                            opts: DeleteOptions) -> ListResult[Obj]:
    page = await reg.list(res, namespace, ListOptions(label_selector=list_opts.label_selector,
                                                        field_selector=list_opts.field_selector))
    if opts.admission is not None:  # once for the collection, with no name (kube's DELETECOLLECTION handler)
        await opts.admission.mutate(AdmissionRequest(DELETE, res, "", namespace, "", None, None, opts.dry_run))
    deleted = []
    for obj in listitems.objects(page.items):
        md = obj["metadata"]
        try:
            result = await reg.delete(res, md.get("namespace", ""), md["name"], opts, mutate=False)
        except errors.NotFound:
            continue
        deleted.append(result.obj)
    return ListResult(deleted, page.revision)
