"""node.k8s.io/v1: RuntimeClasses."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import node as tables
from kapi.errors import Cause
from kapi.object.validation.node import validate_runtime_class, validate_runtime_class_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class RuntimeClassStrategy(Strategy):
    printer = tables.RUNTIME_CLASS

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_runtime_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_runtime_class_update(new, old)


RUNTIME_CLASSES: Final = Resource(group="node.k8s.io", version="v1", resource="runtimeclasses", kind="RuntimeClass",
                                  namespaced=False, strategy=RuntimeClassStrategy())
