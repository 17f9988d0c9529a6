"""scheduling.k8s.io/v1: PriorityClasses (the system ones are kept by ``kapi.server.bootstrap``)."""

from __future__ import annotations

from typing import Final

from kapi import errors
from kapi.encoding.tables import scheduling as tables
from kapi.errors import Cause
from kapi.object.defaults.scheduling import default_priority_class
from kapi.object.validation.scheduling import (SYSTEM_PRIORITY_CLASSES, validate_priority_class,
    validate_priority_class_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class PriorityClassStrategy(Strategy):
    printer = tables.PRIORITY_CLASS

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_priority_class(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_priority_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_priority_class_update(new, old)

    def check_delete(self, name: str) -> None:
        # kube's priorityclass REST Delete: the system classes stay.
        if any(name == known for known, *_ in SYSTEM_PRIORITY_CLASSES):
            raise errors.Forbidden(f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system '
                                   "priority class and cannot be deleted", name=name, group="scheduling.k8s.io",
                                   kind="priorityclasses")


PRIORITY_CLASSES: Final = Resource(group="scheduling.k8s.io", version="v1", resource="priorityclasses",
                                   kind="PriorityClass", namespaced=False, short_names=("pc",),
                                   strategy=PriorityClassStrategy())


def system_priority_classes() -> list[Obj]:
    """The PriorityClasses kube-apiserver creates at start-up (its scheduling post-start hook)."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value, "globalDefault": default, "description": description}
            for name, value, default, description in SYSTEM_PRIORITY_CLASSES]
