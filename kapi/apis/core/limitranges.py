"""core/v1 LimitRanges: kube's defaults (a Container item's default limit and request) and validation."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults.quota import default_limit_range
from kapi.object.validation.quota import validate_limit_range, validate_limit_range_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class LimitRangeStrategy(Strategy):
    def default(self, obj: Obj, old: Obj | None) -> None:
        default_limit_range(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_limit_range(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_limit_range_update(new, old)


LIMIT_RANGES: Final = Resource(group="", version="v1", resource="limitranges", kind="LimitRange",
                               short_names=("limits",), strategy=LimitRangeStrategy())
