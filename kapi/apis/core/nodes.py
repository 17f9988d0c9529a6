"""Nodes: cluster-scoped, stored under ``minions`` as kube-apiserver does."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.defaults import default_node
from kapi.object.selectors import FieldLabels, bool_value
from kapi.object.validation import validate_node, validate_node_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class NodeStrategy(Strategy):
    field_labels = FieldLabels(frozenset({"metadata.name", "spec.unschedulable"}), converts=True)
    printer = tables.NODE

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_node(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_node_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"spec.unschedulable": bool_value((obj.get("spec") or {}).get("unschedulable"))}


NODES: Final = Resource(group="", version="v1", resource="nodes", kind="Node", namespaced=False,
                        short_names=("no",), subresources=("status",), storage_prefix="minions",
                        strategy=NodeStrategy())
