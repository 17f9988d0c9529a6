"""apiextensions.k8s.io/v1: CustomResourceDefinitions (stored only, for now)."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_custom_resource_definition
from kapi.object.validation import validate_custom_resource_definition, validate_custom_resource_definition_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


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


CUSTOM_RESOURCE_DEFINITIONS: Final = Resource(
    group="apiextensions.k8s.io", version="v1", resource="customresourcedefinitions",
    kind="CustomResourceDefinition", namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
    subresources=("status",), storage_prefix="apiextensions.k8s.io/customresourcedefinitions",
    strategy=CustomResourceDefinitionStrategy())
