"""Namespaces: DNS-label names, the Terminating phase and the ``finalize`` subresource."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Final

from kapi import errors
from kapi.encoding.tables import core as tables
from kapi.object import meta
from kapi.object.defaults import default_namespace
from kapi.object.selectors import FieldLabels, text_value
from kapi.object.validation import (RULE_DNS1123_LABEL, validate_namespace, validate_namespace_status_update,
                                   validate_namespace_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy, status_only

if TYPE_CHECKING:
    from kapi.registry.deletion import DeleteOptions

# kube-apiserver refuses to delete these; the server creates the initial ones at start-up.
INITIAL_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
# The spec finalizer every namespace is created with (FinalizerKubernetes); its controller removes it.
FINALIZER: Final = "kubernetes"


class NamespaceStrategy(Strategy):
    name_rule = RULE_DNS1123_LABEL
    delete_returns_object = True
    field_labels = FieldLabels(frozenset({"metadata.name", "status.phase"}), converts=True)
    printer = tables.NAMESPACE

    def reset_fields_of(self, has_status: bool, subresource: str) -> tuple[tuple[str, ...], ...]:
        if subresource == "finalize":
            return (("status",),)
        return super().reset_fields_of(has_status, subresource)

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_namespace(obj, old)

    def prepare_named(self, obj: Obj) -> None:
        """A created namespace gets the ``kubernetes`` finalizer (kube's PrepareForCreate), after its
        managedFields are recorded: no manager owns it unless the body named it. Not a default, since it
        may be removed during the namespace's life."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
        if FINALIZER not in finalizers:
            spec["finalizers"] = [*finalizers, FINALIZER]

    def validate(self, obj: Obj) -> list[errors.Cause]:
        return validate_namespace(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[errors.Cause]:
        return validate_namespace_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[errors.Cause]:
        return validate_namespace_status_update(new)

    def prepare_for_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        """spec.finalizers change only through /finalize (metadata too, as in kube); status (the phase) only
        through /status."""
        if subresource == "status":
            new = status_only(new, old)
            default_namespace(new, old)  # kube defaults every decoded object, a status write's too
        elif subresource == "finalize":  # the new spec (its finalizers) and metadata, the old status
            spec = new.setdefault("spec", {})
            spec["finalizers"] = spec.get("finalizers") or []
            new["status"] = copy.deepcopy(old.get("status", {}))
        else:
            new.setdefault("spec", {})["finalizers"] = old.get("spec", {}).get("finalizers", [])
            new["status"] = old.get("status", {})
        self.next_generation(new, old, subresource)
        return new

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"status.phase": text_value((obj.get("status") or {}).get("phase"))}

    def prepare_for_delete(self, new: Obj, gc_finalizer: str | None, opts: DeleteOptions) -> Obj | None:
        """A DELETE makes the namespace Terminating; its controller empties it and removes the finalizer.

        No garbage-collector finalizer: the namespace's own finalizer does that work.
        """
        md = new["metadata"]
        if md.get("deletionTimestamp"):
            return new
        md["deletionTimestamp"] = meta.now_rfc3339()
        md["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        if not new.get("spec", {}).get("finalizers") and not md.get("finalizers"):
            return None
        return new

    def finished(self, obj: Obj) -> bool:
        """Being deleted, and both its metadata and its spec finalizers are done."""
        md = obj.get("metadata", {})
        return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
            not obj.get("spec", {}).get("finalizers")


NAMESPACES: Final = Resource(
    group="", version="v1", resource="namespaces", kind="Namespace", namespaced=False, short_names=("ns",),
    subresources=("status", "finalize"), verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    strategy=NamespaceStrategy())
