"""flowcontrol.apiserver.k8s.io/v1: FlowSchemas and PriorityLevelConfigurations (stored only, for now)."""

from __future__ import annotations

from typing import Final

from kapi.object.validation import RULE_PATH_SEGMENT
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy

GROUP: Final = "flowcontrol.apiserver.k8s.io"


class FlowSchemaStrategy(Strategy):
    name_rule = RULE_PATH_SEGMENT
    tracks_generation = True
    create_on_update = True


class PriorityLevelConfigurationStrategy(Strategy):
    name_rule = RULE_PATH_SEGMENT
    tracks_generation = True
    create_on_update = True


FLOW_SCHEMAS: Final = Resource(group=GROUP, version="v1", resource="flowschemas", kind="FlowSchema",
                               namespaced=False, subresources=("status",), strategy=FlowSchemaStrategy())
PRIORITY_LEVEL_CONFIGURATIONS: Final = Resource(
    group=GROUP, version="v1", resource="prioritylevelconfigurations", kind="PriorityLevelConfiguration",
    namespaced=False, subresources=("status",), strategy=PriorityLevelConfigurationStrategy())
