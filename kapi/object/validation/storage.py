"""storage.k8s.io/v1: StorageClasses, CSIDrivers, CSINodes, VolumeAttachments and CSIStorageCapacities
(kube's ``pkg/apis/storage/validation/validation.go``)."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import (FIELD_IMMUTABLE, IS_NEGATIVE, Obj, _d, _i, _immutable, _l, _s,
    _semantic_equal, field_duplicate, field_forbidden, field_invalid, field_not_supported, field_required,
    field_too_long, unique_causes)
from kapi.object.validation.meta import _validate_label_selector
from kapi.object.validation.names import is_dns1123_subdomain, is_qualified_name
from kapi.object.validation.quantity import parse_quantity

_MAX_PARAMETERS = 512
_MAX_PARAMETERS_SIZE = 256 * 1024
_RECLAIM_POLICIES = ("Delete", "Retain")
_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES = ("Persistent", "Ephemeral")
_CSI_NODE_ID_MAX = 192
_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _qualified(path: str, value: str) -> list[Cause]:
    return [field_invalid(path, value, m) for m in is_qualified_name(value)]


def _provisioner(value: str, path: str) -> list[Cause]:
    if not value:
        return [field_required(path, "")]
    return [field_invalid(path, value.lower(), m) for m in is_qualified_name(value.lower())]


def _parameters(params: object, path: str) -> list[Cause]:
    if not isinstance(params, dict):
        return []
    if len(params) > _MAX_PARAMETERS:
        return [field_too_long(path, _MAX_PARAMETERS)]
    errs: list[Cause] = []
    size = 0
    for k, v in params.items():
        if not k:
            errs.append(field_invalid(path, k, "field can not be empty."))
        size += len(k) + len(_s(v))
    if size > _MAX_PARAMETERS_SIZE:
        errs.append(field_too_long(path, _MAX_PARAMETERS_SIZE))
    return errs


def _allowed_topologies(terms: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, term in enumerate(_l(terms)):
        exprs = _l(_d(term).get("matchLabelExpressions"))
        if not exprs:
            errs.append(field_required(f"{path}[{i}].matchLabelExpressions", "must have at least one requirement"))
        for j, expr in enumerate(exprs):
            expr, p = _d(expr), f"{path}[{i}].matchLabelExpressions[{j}]"
            errs.extend(_qualified(f"{p}.key", _s(expr.get("key"))))
            if not _l(expr.get("values")):
                errs.append(field_required(f"{p}.values", "must specify as least one value to match"))
    return errs


@unique_causes
def validate_storage_class(obj: Obj) -> list[Cause]:
    errs = _provisioner(_s(obj.get("provisioner")), "provisioner")
    errs.extend(_parameters(obj.get("parameters"), "parameters"))
    reclaim = obj.get("reclaimPolicy")
    if isinstance(reclaim, str) and reclaim and reclaim not in _RECLAIM_POLICIES:
        errs.append(field_not_supported("reclaimPolicy", reclaim, _RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(field_required("volumeBindingMode", ""))
    elif mode not in _BINDING_MODES:
        errs.append(field_not_supported("volumeBindingMode", mode, _BINDING_MODES))
    errs.extend(_allowed_topologies(obj.get("allowedTopologies"), "allowedTopologies"))
    return errs


@unique_causes
def validate_storage_class_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_storage_class(new)
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(field_forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(field_forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(field_forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    errs.extend(_immutable("volumeBindingMode", new.get("volumeBindingMode"), old.get("volumeBindingMode")))
    return errs


def csi_driver_name(name: str, path: str) -> list[Cause]:
    """ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain (lower-cased)."""
    errs: list[Cause] = []
    if not name:
        errs.append(field_required(path, ""))
    if len(name) > 63:
        errs.append(field_too_long(path, 63))
    errs.extend(field_invalid(path, name, m) for m in is_dns1123_subdomain(name.lower()))
    return errs


def _csi_driver_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for key, path in (("attachRequired", "spec.attachedRequired"), ("podInfoOnMount", "spec.podInfoOnMount"),
                      ("storageCapacity", "spec.storageCapacity"), ("requiresRepublish", "spec.requiresRepublish"),
                      ("seLinuxMount", "spec.seLinuxMount")):
        if spec.get(key) is None:
            errs.append(field_required(path, ""))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP_POLICIES:
        errs.append(field_not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
    audiences: set[str] = set()
    for i, request in enumerate(_l(spec.get("tokenRequests"))):
        request, p = _d(request), f"spec.tokenRequests[{i}]"
        audience = _s(request.get("audience"))
        if audience in audiences:
            errs.append(field_duplicate(f"{p}.audience", audience))
            continue
        audiences.add(audience)
        seconds = _i(request.get("expirationSeconds"))
        if seconds is not None and seconds < 600:
            errs.append(field_invalid(f"{p}.expirationSeconds", seconds,
                                      "may not specify a duration less than 10 minutes"))
        if seconds is not None and seconds > 1 << 32:
            errs.append(field_invalid(f"{p}.expirationSeconds", seconds,
                                      "may not specify a duration larger than 2^32 seconds"))
    for mode in _l(spec.get("volumeLifecycleModes")):
        if mode not in _LIFECYCLE_MODES:
            errs.append(field_not_supported("spec.volumeLifecycleModes", mode, _LIFECYCLE_MODES))
    period = _i(spec.get("nodeAllocatableUpdatePeriodSeconds"))
    if period is not None and period < 10:
        errs.append(field_invalid("spec.nodeAllocatableUpdatePeriodSeconds", period,
                                  "must be greater than or equal to 10 seconds"))
    return errs


@unique_causes
def validate_csi_driver(obj: Obj) -> list[Cause]:
    return _csi_driver_spec(_d(obj.get("spec")))


@unique_causes
def validate_csi_driver_update(new: Obj, old: Obj) -> list[Cause]:
    new_spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs = _csi_driver_spec(new_spec)
    errs.extend(_immutable("spec.attachedRequired", new_spec.get("attachRequired"), old_spec.get("attachRequired")))
    errs.extend(_immutable("spec.volumeLifecycleModes", new_spec.get("volumeLifecycleModes"),
                           old_spec.get("volumeLifecycleModes")))
    return errs


def _csi_node_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    names: set[str] = set()
    for i, driver in enumerate(_l(spec.get("drivers"))):
        driver, p = _d(driver), f"spec.drivers[{i}]"
        name = _s(driver.get("name"))
        errs.extend(csi_driver_name(name, f"{p}.name"))
        node_id = _s(driver.get("nodeID"))
        if not node_id:
            errs.append(field_required(f"{p}.nodeID", "nodeID cannot be empty"))
        elif len(node_id) > _CSI_NODE_ID_MAX:
            errs.append(field_invalid(f"{p}.nodeID", node_id,
                                      f"must be {_CSI_NODE_ID_MAX} characters or less"))
        count = _i(_d(driver.get("allocatable")).get("count"))
        if count is not None and count < 0:
            errs.append(field_invalid(f"{p}.allocatable.count", count, IS_NEGATIVE))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        names.add(name)
        keys: set[str] = set()
        for key in _l(driver.get("topologyKeys")):
            key = _s(key)
            if not key:
                errs.append(field_required(f"{p}.topologyKeys", key))
            if key in keys:
                errs.append(field_duplicate(f"{p}.topologyKeys", key))
            keys.add(key)
            errs.extend(_qualified(f"{p}.topologyKeys", key))
    return errs


@unique_causes
def validate_csi_node(obj: Obj) -> list[Cause]:
    return _csi_node_spec(_d(obj.get("spec")))


@unique_causes
def validate_csi_node_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _csi_node_spec(_d(new.get("spec")))
    old_drivers = {_s(_d(d).get("name")): _d(d) for d in _l(_d(old.get("spec")).get("drivers"))}
    for i, driver in enumerate(_l(_d(new.get("spec")).get("drivers"))):
        driver = _d(driver)
        before = old_drivers.get(_s(driver.get("name")))
        if before is None:
            continue
        p = f"spec.drivers[{i}]"
        errs.extend(_immutable(f"{p}.nodeID", driver.get("nodeID"), before.get("nodeID")))
        errs.extend(_immutable(f"{p}.topologyKeys", driver.get("topologyKeys"), before.get("topologyKeys")))
    return errs


def _volume_attachment(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    attacher = _s(spec.get("attacher"))
    errs: list[Cause] = [] if attacher else [field_required("spec.attacher", "")]
    source = _d(spec.get("source"))
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        errs.append(field_required("spec.source", _ONE_SOURCE))
    elif inline is not None and pv is not None:
        errs.append(field_forbidden("spec.source", _ONE_SOURCE))
    elif pv is not None and not _s(pv):
        errs.append(field_required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"))
    node = _s(spec.get("nodeName"))
    errs.extend(field_invalid("spec.nodeName", node, m) for m in is_dns1123_subdomain(node))
    status = _d(obj.get("status"))
    for key in ("attachError", "detachError"):
        message = _s(_d(status.get(key)).get("message"))
        if len(message.encode()) > 1024:
            errs.append(field_too_long(f"status.{key}.message", 1024))
    metadata = _d(status.get("attachmentMetadata"))
    if sum(len(k) + len(_s(v)) for k, v in metadata.items()) > 256 * 1024:
        errs.append(field_too_long("status.attachmentMetadata", 256 * 1024))
    # v1: the attacher is a CSI driver name, the PV name a PV name.
    if attacher:
        errs.extend(csi_driver_name(attacher, "spec.attacher"))
    if isinstance(pv, str) and pv:
        errs.extend(field_invalid("spec.source.persistentVolumeName", pv, m) for m in is_dns1123_subdomain(pv))
    return errs


@unique_causes
def validate_volume_attachment(obj: Obj) -> list[Cause]:
    return _volume_attachment(obj)


@unique_causes
def validate_volume_attachment_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _volume_attachment(new)
    if not _semantic_equal(new.get("spec"), old.get("spec")):
        errs.append(field_invalid("spec", new.get("spec"), FIELD_IMMUTABLE))
    return errs


def _csi_storage_capacity(obj: Obj) -> list[Cause]:
    errs = _validate_label_selector(obj.get("nodeTopology"), "nodeTopology")
    name = _s(obj.get("storageClassName"))
    errs.extend(field_invalid("storageClassName", name, m) for m in is_dns1123_subdomain(name))
    for key in ("capacity", "maximumVolumeSize"):
        value = obj.get(key)
        q = parse_quantity(value) if value is not None else None
        if q is not None and q < 0:
            errs.append(field_invalid(key, value, IS_NEGATIVE))
    return errs


@unique_causes
def validate_csi_storage_capacity(obj: Obj) -> list[Cause]:
    return _csi_storage_capacity(obj)


@unique_causes
def validate_csi_storage_capacity_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _csi_storage_capacity(new)
    if not _semantic_equal(new.get("nodeTopology"), old.get("nodeTopology")):
        errs.append(field_invalid("nodeTopology", new.get("nodeTopology"), FIELD_IMMUTABLE))
    if new.get("storageClassName") != old.get("storageClassName"):
        errs.append(field_invalid("storageClassName", new.get("storageClassName"), FIELD_IMMUTABLE))
    return errs

