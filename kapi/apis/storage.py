"""storage.k8s.io/v1: StorageClasses, CSIDrivers, CSINodes, VolumeAttachments (with status) and
CSIStorageCapacities."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import storage as tables
from kapi.errors import Cause
from kapi.object.defaults.storage import default_csi_driver, default_storage_class
from kapi.object.validation import storage as v
from kapi.registry.resources import Resource
from kapi.registry.strategy import RESET_META_FOR_STATUS, Obj, Strategy

GROUP: Final = "storage.k8s.io"


class StorageClassStrategy(Strategy):
    printer = tables.STORAGE_CLASS

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_storage_class(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_storage_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_storage_class_update(new, old)


class CSIDriverStrategy(Strategy):
    printer = tables.CSI_DRIVER

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_csi_driver(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_csi_driver(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_csi_driver_update(new, old)


class CSINodeStrategy(Strategy):
    printer = tables.CSI_NODE

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_csi_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_csi_node_update(new, old)


class VolumeAttachmentStrategy(Strategy):
    printer = tables.VOLUME_ATTACHMENT
    status_keeps_metadata = RESET_META_FOR_STATUS
    status_reset_fields = (("metadata",), ("spec",))

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_volume_attachment(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_volume_attachment_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_volume_attachment_update(new, old)


class CSIStorageCapacityStrategy(Strategy):
    printer = tables.CSI_STORAGE_CAPACITY

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_csi_storage_capacity(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_csi_storage_capacity_update(new, old)


STORAGE_CLASSES: Final = Resource(group=GROUP, version="v1", resource="storageclasses", kind="StorageClass",
                                  namespaced=False, short_names=("sc",), strategy=StorageClassStrategy())
CSI_DRIVERS: Final = Resource(group=GROUP, version="v1", resource="csidrivers", kind="CSIDriver", namespaced=False,
                              strategy=CSIDriverStrategy())
CSI_NODES: Final = Resource(group=GROUP, version="v1", resource="csinodes", kind="CSINode", namespaced=False,
                            strategy=CSINodeStrategy())
VOLUME_ATTACHMENTS: Final = Resource(group=GROUP, version="v1", resource="volumeattachments", kind="VolumeAttachment",
                                     namespaced=False, subresources=("status",), strategy=VolumeAttachmentStrategy())
CSI_STORAGE_CAPACITIES: Final = Resource(group=GROUP, version="v1", resource="csistoragecapacities",
                                         kind="CSIStorageCapacity", strategy=CSIStorageCapacityStrategy())
