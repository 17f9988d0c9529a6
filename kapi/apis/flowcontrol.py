"""flowcontrol.apiserver.k8s.io/v1: FlowSchemas and PriorityLevelConfigurations, the configuration of
API Priority and Fairness (``kapi.chain.flowcontrol`` reads them through the informers).

kube's ``pkg/registry/flowcontrol/{flowschema,prioritylevelconfiguration}/strategy.go``: DNS-subdomain
names, generation tracked, status by its subresource only, no create on PUT; v1's defaults; kube's
validation, the mandatory ``exempt`` and ``catch-all`` objects held to their fixed spec (but the
exempt level's ``spec.exempt``); kube's Table columns, FlowSchemas listed in matching order.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Final

from kapi.apis import flowcontrolbootstrap as bootstrap
from kapi.encoding.tables import flowcontrol as tables
from kapi.errors import Cause
from kapi.object.defaults.flowcontrol import default_flow_schema, default_priority_level_configuration
from kapi.object.validation.flowcontrol import (validate_flow_schema, validate_flow_schema_status_update,
    validate_flow_schema_update, validate_priority_level_configuration,
    validate_priority_level_configuration_status_update, validate_priority_level_configuration_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

GROUP: Final = "flowcontrol.apiserver.k8s.io"


def _fixed_specs(objs: list[Obj], default: Callable[[Obj, Obj | None], None]) -> dict[str, Obj]:
    """The mandatory objects' specs as validation compares them: defaulted (internalbootstrap's)."""
    out = {}
    for obj in objs:
        obj = copy.deepcopy(obj)
        default(obj, None)
        out[obj["metadata"]["name"]] = obj["spec"]
    return out


_MANDATORY_FS_SPECS: Final = _fixed_specs(bootstrap.mandatory_flow_schemas(), default_flow_schema)
_MANDATORY_PL_SPECS: Final = _fixed_specs(bootstrap.mandatory_priority_level_configurations(),
                                          default_priority_level_configuration)


def _name(obj: Obj) -> str:
    md = obj.get("metadata")
    return str(md.get("name") or "") if isinstance(md, dict) else ""


class FlowSchemaStrategy(Strategy):
    tracks_generation = True
    status_keeps_metadata = None  # a status write changes none of the metadata
    printer = tables.FLOW_SCHEMA

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_flow_schema(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_flow_schema(obj, _MANDATORY_FS_SPECS.get(_name(obj)))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_flow_schema_update(new, old, _MANDATORY_FS_SPECS.get(_name(new)))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_flow_schema_status_update(new, old)


class PriorityLevelConfigurationStrategy(Strategy):
    tracks_generation = True
    status_keeps_metadata = None  # a status write changes none of the metadata
    printer = tables.PRIORITY_LEVEL_CONFIGURATION

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_priority_level_configuration(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_priority_level_configuration(obj, _MANDATORY_PL_SPECS.get(_name(obj)))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_priority_level_configuration_update(new, old, _MANDATORY_PL_SPECS.get(_name(new)))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_priority_level_configuration_status_update(new, old)


FLOW_SCHEMAS: Final = Resource(group=GROUP, version="v1", resource="flowschemas", kind="FlowSchema",
                               namespaced=False, subresources=("status",), strategy=FlowSchemaStrategy())
PRIORITY_LEVEL_CONFIGURATIONS: Final = Resource(
    group=GROUP, version="v1", resource="prioritylevelconfigurations", kind="PriorityLevelConfiguration",
    namespaced=False, subresources=("status",), strategy=PriorityLevelConfigurationStrategy())
