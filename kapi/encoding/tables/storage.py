"""Table printers of the storage.k8s.io group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_list, as_map, as_str, column, since

_DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                     "storageclass.beta.kubernetes.io/is-default-class")

_STORAGE_CLASS_COLUMNS: Final = (
    NAME,
    column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    column("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
           "PersistentVolumes of this storage class. Defaults to Delete."),
    column("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be "
           "provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by "
           "servers that enable the VolumeScheduling feature."),
    column("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume "
           "expand."),
    AGE,
)
_CSI_DRIVER_COLUMNS: Final = (
    NAME,
    column("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach "
           "operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes "
           "attach detach controller should call the attach volume interface which checks the volumeattachment "
           "status and waits until the volume is attached before proceeding to mounting."),
    column("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod "
           "information (like podName, podUID, etc.) during mount operations, if set to true."),
    column("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod "
           "scheduling to consider the storage capacity that the driver deployment will report by creating "
           "CSIStorageCapacity objects with capacity information, if set to true."),
    column("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' service account tokens "
           "it is mounting volume for to do necessary authentication."),
    column("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` "
           "being periodically called to reflect any possible change in the mounted volume."),
    column("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."),
    AGE,
)
_CSI_NODE_COLUMNS: Final = (
    NAME,
    column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
    AGE,
)
_VOLUME_ATTACHMENT_COLUMNS: Final = (
    NAME,
    column("Attacher", "string", "attacher indicates the name of the volume driver that MUST handle this request. "
           "This is the name returned by GetPluginName().", fmt="name"),
    column("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach."),
    column("Node", "string", "nodeName represents the node that the volume should be attached to."),
    column("Attached", "boolean", "attached indicates the volume is successfully attached. This field must only "
           "be set by the entity completing the attach operation, i.e. the external-attacher."),
    AGE,
)
_CSI_STORAGE_CAPACITY_COLUMNS: Final = (
    NAME,
    column("StorageClassName", "string", "storageClassName represents the name of the StorageClass that the "
           "reported capacity applies to."),
    column("Capacity", "string", "capacity is the value reported by the CSI driver in its GetCapacityResponse "
           "for a GetCapacityRequest with topology and parameters that match the previous fields."),
)


def _bool(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _storage_class_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    name = as_str(meta.get("name"))
    annotations = as_map(meta.get("annotations"))
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [name, as_str(obj.get("provisioner")), as_str(obj.get("reclaimPolicy")) or "Delete",
            as_str(obj.get("volumeBindingMode")) or "Immediate", _bool(obj.get("allowVolumeExpansion"), False),
            since(meta.get("creationTimestamp"), now)]


def _csi_driver_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    requests = as_list(spec.get("tokenRequests"))
    tokens = "<unset>"
    if requests:
        tokens = ",".join(as_str(as_map(r).get("audience")) or "<api-server-audience>" for r in requests)
    modes = ",".join(as_str(m) for m in as_list(spec.get("volumeLifecycleModes"))) or "<none>"
    return [as_str(meta.get("name")), _bool(spec.get("attachRequired"), True),
            _bool(spec.get("podInfoOnMount"), False), _bool(spec.get("storageCapacity"), False), tokens,
            _bool(spec.get("requiresRepublish"), False), modes, since(meta.get("creationTimestamp"), now)]


def _csi_node_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), len(as_list(as_map(obj.get("spec")).get("drivers"))),
            since(meta.get("creationTimestamp"), now)]


def _volume_attachment_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    pv = as_str(as_map(spec.get("source")).get("persistentVolumeName"))
    return [as_str(meta.get("name")), as_str(spec.get("attacher")), pv, as_str(spec.get("nodeName")),
            _bool(as_map(obj.get("status")).get("attached"), False), since(meta.get("creationTimestamp"), now)]


def _csi_storage_capacity_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    capacity = obj.get("capacity")
    return [as_str(meta.get("name")), as_str(obj.get("storageClassName")),
            str(capacity) if capacity is not None else "<unset>"]


STORAGE_CLASS: Final = Printer(_STORAGE_CLASS_COLUMNS, _storage_class_row)
CSI_DRIVER: Final = Printer(_CSI_DRIVER_COLUMNS, _csi_driver_row)
CSI_NODE: Final = Printer(_CSI_NODE_COLUMNS, _csi_node_row)
VOLUME_ATTACHMENT: Final = Printer(_VOLUME_ATTACHMENT_COLUMNS, _volume_attachment_row)
CSI_STORAGE_CAPACITY: Final = Printer(_CSI_STORAGE_CAPACITY_COLUMNS, _csi_storage_capacity_row)
