"""Endpoints: stored under ``services/endpoints``; PUT creates."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_endpoints
from kapi.object.validation import validate_endpoints, validate_endpoints_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class EndpointsStrategy(Strategy):
    create_on_update = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_endpoints(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_endpoints(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_endpoints_update(new, old)


ENDPOINTS: Final = Resource(group="", version="v1", resource="endpoints", kind="Endpoints", short_names=("ep",),
                            storage_prefix="services/endpoints", strategy=EndpointsStrategy())
