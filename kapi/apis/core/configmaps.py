"""ConfigMaps."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.validation import validate_config_map, validate_config_map_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class ConfigMapStrategy(Strategy):
    printer = tables.CONFIG_MAP

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_config_map(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_config_map_update(new, old)


CONFIG_MAPS: Final = Resource(group="", version="v1", resource="configmaps", kind="ConfigMap",
                              short_names=("cm",), strategy=ConfigMapStrategy())
