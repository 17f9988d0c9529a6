"""apiextensions.k8s.io/v1: CustomResourceDefinitions; ``kapi.controllers.crd`` serves what they define."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_custom_resource_definition
from kapi.object.validation import validate_custom_resource_definition, validate_custom_resource_definition_update
from kapi.registry.resources import Resource
from kapi.registry.deletion import DeleteOptions
from kapi.registry.strategy import Obj, Strategy

# What the CRD controller removes once every object of the CRD is gone (kapi.controllers.crd).
CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"


def _store_storage_version(obj: Obj) -> None:
    """kube's strategy: the version marked storage is added to status.storedVersions (create and update)."""
    versions = (obj.get("spec") or {}).get("versions")
    if not isinstance(versions, list):
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    stored = status.get("storedVersions")
    stored = list(stored) if isinstance(stored, list) else []
    for v in versions:
        if isinstance(v, dict) and v.get("storage") is True and isinstance(v.get("name"), str) \
                and v["name"] not in stored:
            stored.append(v["name"])
    if stored:
        status["storedVersions"] = stored


class CustomResourceDefinitionStrategy(Strategy):
    core_finalizers = False
    tracks_generation = True
    # kube's statusStrategy resets the new metadata onto itself: a status write keeps the writer's
    status_reset_fields = (("metadata",), ("spec",))

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_custom_resource_definition(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_custom_resource_definition(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_custom_resource_definition_update(new, old)

    def prepare_for_create(self, res: Resource, obj: Obj) -> None:
        """Generation 1; unlike other kinds with a status subresource, the status given is kept."""
        obj["metadata"]["generation"] = 1
        _store_storage_version(obj)

    def prepare_for_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        """As every kind with status; and, as kube's strategy, the storage version joins storedVersions."""
        new = super().prepare_for_update(res, new, old, subresource)
        _store_storage_version(new)
        return new

    def prepare_for_delete(self, new: Obj, gc_finalizer: str | None, opts: DeleteOptions) -> Obj | None:
        """kube's CRD REST.Delete: the first DELETE adds the cleanup finalizer, so the CRD stays until the
        controller has deleted its objects."""
        md = new["metadata"]
        if not md.get("deletionTimestamp") and CLEANUP_FINALIZER not in (md.get("finalizers") or []):
            md["finalizers"] = [*(md.get("finalizers") or []), CLEANUP_FINALIZER]
        return super().prepare_for_delete(new, gc_finalizer, opts)


CUSTOM_RESOURCE_DEFINITIONS: Final = Resource(
    group="apiextensions.k8s.io", version="v1", resource="customresourcedefinitions",
    kind="CustomResourceDefinition", namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
    subresources=("status",), storage_prefix="apiextensions.k8s.io/customresourcedefinitions",
    strategy=CustomResourceDefinitionStrategy())
