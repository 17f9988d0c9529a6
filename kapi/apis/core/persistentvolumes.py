"""PersistentVolumes and PersistentVolumeClaims."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_persistent_volume, default_persistent_volume_claim
from kapi.object.validation import (validate_persistent_volume, validate_persistent_volume_claim,
    validate_persistent_volume_claim_update, validate_persistent_volume_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class PersistentVolumeClaimStrategy(Strategy):
    tracks_generation = True
    delete_returns_object = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_persistent_volume_claim(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_persistent_volume_claim(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_persistent_volume_claim_update(new, old)


class PersistentVolumeStrategy(Strategy):
    delete_returns_object = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_persistent_volume(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_persistent_volume(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_persistent_volume_update(new, old)


PERSISTENT_VOLUME_CLAIMS: Final = Resource(
    group="", version="v1", resource="persistentvolumeclaims", kind="PersistentVolumeClaim", short_names=("pvc",),
    subresources=("status",), strategy=PersistentVolumeClaimStrategy())
PERSISTENT_VOLUMES: Final = Resource(
    group="", version="v1", resource="persistentvolumes", kind="PersistentVolume", namespaced=False,
    short_names=("pv",), subresources=("status",), strategy=PersistentVolumeStrategy())
