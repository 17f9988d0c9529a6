"""discovery.k8s.io/v1: EndpointSlices."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import discovery as tables
from kapi.errors import Cause
from kapi.object.defaults.discovery import default_endpoint_slice
from kapi.object.validation.discovery import validate_endpoint_slice, validate_endpoint_slice_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class EndpointSliceStrategy(Strategy):
    tracks_generation = True
    printer = tables.ENDPOINT_SLICE

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_endpoint_slice(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_endpoint_slice(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_endpoint_slice_update(new, old)


ENDPOINT_SLICES: Final = Resource(group="discovery.k8s.io", version="v1", resource="endpointslices",
                                  kind="EndpointSlice", strategy=EndpointSliceStrategy())
