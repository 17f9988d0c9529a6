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


class CustomResourceDefinitionStrategy(Strategy):
    core_finalizers = False
    tracks_generation = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_custom_resource_definition(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_custom_resource_definition(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_custom_resource_definition_update(new, old)

    def prepare_for_create(self, res: Resource, obj: Obj) -> None:
        """Generation 1; unlike other kinds with a status subresource, the status given is kept."""
        obj["metadata"]["generation"] = 1

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
