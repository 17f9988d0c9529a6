"""The other core/v1 kinds: services, endpoints, config maps, secrets, namespaces, nodes,
persistent volumes and claims.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from kapi.errors import Cause
from kapi.object.validation.containers import _validate_port_num_or_name, _validate_protocol
from kapi.object.validation.fields import (FIELD_IMMUTABLE, Obj, REASON_DUPLICATE, _Rendered, _d, _go_strings,
    _i, _immutable, _l, _render, _s, _semantic_equal, field_duplicate, field_forbidden, field_invalid,
    field_not_supported, field_required, field_too_long, go_quote, unique_causes)
from kapi.object.validation.meta import _validate_kube_finalizer, _validate_label_selector, validate_labels
from kapi.object.validation.names import (_blen, _ip_errors, _is_ipv6, app_protocol_errors, is_config_map_key,
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value, is_valid_port_num,
    non_special_ip_errors)
from kapi.object.validation.pods import _spec_diff
from kapi.object.validation.quantity import QUANTITY_FORMAT_ERROR, _quantity_text, parse_quantity


def _normalized_service_spec(obj: Obj) -> Obj:
    spec = dict(_d(obj.get("spec")))
    cluster_ip, cluster_ips = _s(spec.get("clusterIP")), _l(spec.get("clusterIPs"))
    # The strategy keeps clusterIP and clusterIPs in step before validation.
    if cluster_ip and not cluster_ips:
        spec["clusterIPs"] = [cluster_ip]
    elif cluster_ips and not cluster_ip and isinstance(cluster_ips[0], str):
        spec["clusterIP"] = cluster_ips[0]
    return spec


def _is_headless(spec: Obj) -> bool:
    ips = _l(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


def _externally_accessible(spec: Obj) -> bool:
    stype = spec.get("type")
    return stype in ("LoadBalancer", "NodePort") or stype == "ClusterIP" and bool(_l(spec.get("externalIPs")))


def _go_service_port_key(port: Obj) -> _Rendered:
    return _Rendered(f'core.ServicePort{{Name:"", Protocol:{go_quote(_s(port.get("protocol")))}, '
                     f'AppProtocol:(*string)(nil), Port:{_i(port.get("port")) or 0}, '
                     f'TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, NodePort:0}}')


def _service_cluster_ips(spec: Obj) -> list[Cause]:
    if spec.get("type") == "ExternalName":
        return []
    errs: list[Cause] = []
    cluster_ip, ips = _s(spec.get("clusterIP")), [_s(ip) for ip in _l(spec.get("clusterIPs"))]
    rendered_ips = _Rendered(_go_strings(ips))
    if cluster_ip:
        if not ips:
            errs.append(field_required("spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            errs.append(field_invalid("spec.clusterIPs", rendered_ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(field_invalid("spec.clusterIPs", rendered_ips, "must be empty when `clusterIP` is not specified"))
    families = [_s(f) for f in _l(spec.get("ipFamilies"))]
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            errs.append(field_not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
        if family in seen:
            errs.append(field_duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        errs.append(field_not_supported("spec.ipFamilyPolicy", policy, ("PreferDualStack", "RequireDualStack",
                "SingleStack")))
    bad = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad = True
                errs.append(field_invalid("spec.clusterIPs", rendered_ips, "'None' must be the first and only value"))
            continue
        found = _ip_errors(f"spec.clusterIPs[{i}]", ip)
        bad = bad or bool(found)
        errs.extend(found)
    if len(ips) > 2:
        errs.append(field_invalid("spec.clusterIPs", rendered_ips, "may only hold up to 2 values"))
    if bad:
        return errs
    if len(ips) > 1 and _is_ipv6(ips[0]) == _is_ipv6(ips[1]):
        errs.append(field_invalid("spec.clusterIPs", rendered_ips,
                "may specify no more than one IP for each IP family"))
    if not _is_headless(spec):
        for i, ip in enumerate(ips[:len(families)]):
            if families[i] == "IPv4" and _is_ipv6(ip):
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", ip,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and not _is_ipv6(ip):
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", ip,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _service_spec(obj: Obj) -> list[Cause]:
    spec = _normalized_service_spec(obj)
    errs: list[Cause] = []
    stype = _s(spec.get("type"))
    ports = [_d(p) for p in _l(spec.get("ports"))]
    headless = _is_headless(spec)
    if not ports and not headless and stype != "ExternalName":
        errs.append(field_required("spec.ports"))
    if stype in ("LoadBalancer", "NodePort") and headless:
        errs.append(field_invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
    elif stype == "ExternalName":
        if _l(spec.get("clusterIPs")):
            errs.append(field_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if _l(spec.get("ipFamilies")):
            errs.append(field_forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(field_forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = _s(spec.get("externalName")).removesuffix(".")
        if cname:
            errs.extend(field_invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(field_required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"spec.ports[{i}]"
        name = _s(port.get("name"))
        if len(ports) > 1 and not name:
            errs.append(field_required(f"{p}.name"))
        elif name:
            errs.extend(field_invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
            if name in names:
                errs.append(field_duplicate(f"{p}.name", name))
            names.add(name)
        number = _i(port.get("port")) or 0
        errs.extend(field_invalid(f"{p}.port", number, m) for m in is_valid_port_num(number))
        errs.extend(_validate_protocol(port.get("protocol"), f"{p}.protocol"))
        errs.extend(_validate_port_num_or_name(port.get("targetPort", 0), f"{p}.targetPort"))
        errs.extend(app_protocol_errors(p, port.get("appProtocol")))
    if spec.get("selector") is not None:
        errs.extend(validate_labels(spec.get("selector"), "spec.selector"))
    affinity = _s(spec.get("sessionAffinity"))
    if not affinity:
        errs.append(field_required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        errs.append(field_not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    if affinity == "ClientIP":
        timeout = _i(_d(_d(spec.get("sessionAffinityConfig")).get("clientIP")).get("timeoutSeconds"))
        if timeout is None or not 0 < timeout <= 86400:
            errs.append(field_invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout or 0,
                                      "must be greater than 0 and less than 86400"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(field_forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    errs.extend(_service_cluster_ips(spec))
    for i, ip in enumerate(_l(spec.get("externalIPs"))):
        # kube: the special ranges are checked only on an IP of valid form.
        errs.extend(_ip_errors(f"spec.externalIPs[{i}]", _s(ip)) or non_special_ip_errors(f"spec.externalIPs[{i}]",
                                                                                      _s(ip)))
    if not stype:
        errs.append(field_required("spec.type"))
    elif stype not in _SERVICE_TYPES:
        errs.append(field_not_supported("spec.type", stype, _SERVICE_TYPES))
    if stype == "ClusterIP":
        for i, port in enumerate(ports):
            if _i(port.get("nodePort")):
                errs.append(field_forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = _i(port.get("nodePort")) or 0
        if not node_port:
            continue
        key = (_s(port.get("protocol")), node_port)
        if key in node_ports:
            errs.append(field_duplicate(f"spec.ports[{i}].nodePort", node_port))
        node_ports.add(key)
    seen_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (_s(port.get("protocol")), _i(port.get("port")) or 0)
        if key in seen_ports:
            errs.append(field_duplicate(f"spec.ports[{i}]", _go_service_port_key(port)))
        seen_ports.add(key)
    if spec.get("allocateLoadBalancerNodePorts") is not None and stype != "LoadBalancer":
        errs.append(field_forbidden("spec.allocateLoadBalancerNodePorts",
                "may only be used when `type` is 'LoadBalancer'"))
    if stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        # kube-apiserver reports this one without the spec. prefix
        errs.append(field_required("allocateLoadBalancerNodePorts"))
    etp = _s(spec.get("externalTrafficPolicy"))
    if not _externally_accessible(spec):
        if etp:
            errs.append(field_invalid("spec.externalTrafficPolicy", etp,
                    "may only be set for externally-accessible services"))
    elif not etp:
        errs.append(field_required("spec.externalTrafficPolicy"))
    elif etp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.externalTrafficPolicy", etp, ("Cluster", "Local")))
    itp = spec.get("internalTrafficPolicy")
    if itp is None and stype in ("ClusterIP", "NodePort", "LoadBalancer"):
        errs.append(field_required("spec.internalTrafficPolicy"))
    elif itp is not None and itp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.internalTrafficPolicy", itp, ("Cluster", "Local")))
    return errs


@unique_causes
def validate_service(obj: Obj) -> list[Cause]:
    return _service_spec(obj)


@unique_causes
def validate_service_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _normalized_service_spec(new), _normalized_service_spec(old)
    errs: list[Cause] = []
    external = "ExternalName" in (spec.get("type"), old_spec.get("type"))
    ips, old_ips = [_s(x) for x in _l(spec.get("clusterIPs"))], [_s(x) for x in _l(old_spec.get("clusterIPs"))]
    rendered = _Rendered(_go_strings(ips))
    if not external and not (_is_headless(spec) and _is_headless(old_spec)):
        if len(ips) == len(old_ips):
            errs.extend(field_invalid(f"spec.clusterIPs[{i}]", rendered, "may not change once set")
                        for i, ip in enumerate(old_ips) if ip != ips[i])
        elif len(old_ips) > len(ips):
            if not ips:
                errs.append(field_invalid("spec.clusterIPs[0]", rendered, "primary clusterIP can not be unset"))
            elif ips[0] != old_ips[0]:
                errs.append(field_invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
            if len(ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
                errs.append(field_invalid("spec.clusterIPs[0]", rendered,
                                          "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the "
                                          "secondary clusterIP"))
        elif old_ips and ips[0] != old_ips[0]:
            errs.append(field_invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
        families, old_families = _l(spec.get("ipFamilies")), _l(old_spec.get("ipFamilies"))
        if families and old_families and families[0] != old_families[0]:
            errs.append(field_invalid("spec.ipFamilies[0]", _Rendered(_go_strings(families)),
                    "may not change once set"))
    needs_health_check = [sp.get("type") == "LoadBalancer" and sp.get("externalTrafficPolicy") == "Local"
                          for sp in (spec, old_spec)]
    if all(needs_health_check) and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(field_forbidden("spec.healthCheckNodePort", FIELD_IMMUTABLE))
    return errs + _service_spec(new)


@unique_causes
def validate_endpoints(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for i, subset in enumerate(_l(obj.get("subsets"))):
        subset = _d(subset)
        p = f"subsets[{i}]"
        if not _l(subset.get("addresses")) and not _l(subset.get("notReadyAddresses")):
            errs.append(field_required(p, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(_l(subset.get(key))):
                errs.extend(_endpoint_address(f"{p}.{key}[{j}]", _d(addr)))
        ports = _l(subset.get("ports"))
        for j, port in enumerate(ports):
            port = _d(port)
            pp = f"{p}.ports[{j}]"
            if len(ports) > 1 and not _s(port.get("name")):
                errs.append(field_required(f"{pp}.name"))
            elif _s(port.get("name")):
                errs.extend(field_invalid(f"{pp}.name", port["name"], m) for m in is_dns1123_label(port["name"]))
            number = _i(port.get("port")) or 0
            errs.extend(field_invalid(f"{pp}.port", number, m) for m in is_valid_port_num(number))
            errs.extend(_validate_protocol(port.get("protocol"), f"{pp}.protocol"))
            errs.extend(app_protocol_errors(pp, port.get("appProtocol")))
    return errs


def _endpoint_address(path: str, address: Obj) -> list[Cause]:
    """kube's validateEndpointAddress: the IP's form, hostname, nodeName, then no special IP (even after a bad form)."""
    ip = _s(address.get("ip"))
    errs = _ip_errors(f"{path}.ip", ip)
    hostname = _s(address.get("hostname"))
    if hostname:
        errs.extend(field_invalid(f"{path}.hostname", hostname, m) for m in is_dns1123_label(hostname))
    node = address.get("nodeName")
    if isinstance(node, str):
        errs.extend(field_invalid(f"{path}.nodeName", node, m) for m in is_dns1123_subdomain(node))
    return errs + non_special_ip_errors(f"{path}.ip", ip)


@unique_causes
def validate_endpoints_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_endpoints(new)


MAX_SECRET_SIZE = 1024 * 1024


def _b64_len(value: object) -> int:
    text = _s(value)
    return len(text) * 3 // 4 - text.count("=") if text else 0


@unique_causes
def validate_config_map(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    data, binary = _d(obj.get("data")), _d(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs.extend(field_invalid(f"data[{key}]", key, m) for m in is_config_map_key(str(key)))
        if key in binary:
            errs.append(field_invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += _blen(_s(value))
    for key, value in binary.items():
        errs.extend(field_invalid(f"binaryData[{key}]", key, m) for m in is_config_map_key(str(key)))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("", MAX_SECRET_SIZE))
    return errs


def _immutable_data(new: Obj, old: Obj, keys: Sequence[str]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    msg = "field is immutable when `immutable` is set"
    errs = [] if new.get("immutable") is True else [field_forbidden("immutable", msg)]
    errs.extend(field_forbidden(key, msg) for key in keys if _d(new.get(key)) != _d(old.get(key)))
    return errs


@unique_causes
def validate_config_map_update(new: Obj, old: Obj) -> list[Cause]:
    return _immutable_data(new, old, ("data", "binaryData")) + validate_config_map(new)


@unique_causes
def validate_secret(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    data = _d(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs.extend(field_invalid(f"data[{key}]", key, m) for m in is_config_map_key(str(key)))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("data", MAX_SECRET_SIZE))
    stype = _s(obj.get("type"))
    annotations = _d(_d(obj.get("metadata")).get("annotations"))
    if stype == "kubernetes.io/service-account-token":
        if not _s(annotations.get("kubernetes.io/service-account.name")):
            errs.append(field_required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if stype == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(field_required(f"data[{key}]"))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.extend((field_required("data[username]"), field_required("data[password]")))
    elif stype == "kubernetes.io/ssh-auth":
        if not _s(data.get("ssh-privatekey")):
            errs.append(field_required("data[ssh-privatekey]"))
    elif stype == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(field_required(f"data[{key}]"))
    return errs


@unique_causes
def validate_secret_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _immutable("type", _s(new.get("type")), _s(old.get("type")))
    return errs + _immutable_data(new, old, ("data",)) + validate_secret(new)


def _namespace_finalizers(obj: Obj, *, indexed: bool) -> list[Cause]:
    errs: list[Cause] = []
    for i, name in enumerate(_l(_d(obj.get("spec")).get("finalizers"))):
        name, path = _s(name), f"spec.finalizers[{i}]" if indexed else "spec.finalizers"
        errs.extend(field_invalid(path, name, m) for m in is_qualified_name(name))
        errs.extend(_validate_kube_finalizer(name, path))
    return errs


@unique_causes
def validate_namespace(obj: Obj) -> list[Cause]:
    return _namespace_finalizers(obj, indexed=False)


@unique_causes
def validate_namespace_update(new: Obj, old: Obj) -> list[Cause]:
    """kube's ValidateNamespaceFinalizeUpdate (an update of the main resource keeps the old finalizers,
    so only a write of /finalize can fail here), each finalizer on its index."""
    return _namespace_finalizers(new, indexed=True)


@unique_causes
def validate_namespace_status_update(new: Obj) -> list[Cause]:
    """The phase is Active until the namespace is being deleted, Terminating after (kube's
    ValidateNamespaceStatusUpdate, its path spelled as kube spells it)."""
    phase = _d(new.get("status")).get("phase")
    if not _d(new.get("metadata")).get("deletionTimestamp"):
        if phase != "Active":
            return [field_invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [field_invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


def _node_taints(taints: list[Any]) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        taint = _d(taint)
        # kube-apiserver reports node taints under metadata.taints
        p = f"metadata.taints[{i}]"
        key, value, effect = _s(taint.get("key")), _s(taint.get("value")), _s(taint.get("effect"))
        errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(field_invalid(f"{p}.value", value, ";".join(msgs)))
        if not effect:
            errs.append(field_required(f"{p}.effect"))
        elif effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(field_not_supported(f"{p}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute")))
        if (effect, key) in seen:
            errs.append(Cause(REASON_DUPLICATE, f"Duplicate value: {_render(taint)}: taints must be unique by key "
                                                f"and effect pair", p))
            continue
        seen.add((effect, key))
    return errs


@unique_causes
def validate_node(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs = _node_taints(_l(spec.get("taints")))
    cidrs = [_s(c) for c in _l(spec.get("podCIDRs"))]
    for i, cidr in enumerate(cidrs):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            errs.append(field_invalid(f"spec.podCIDRs[{i}]", cidr,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
    return errs


@unique_causes
def validate_node_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs: list[Cause] = []
    old_cidrs = _l(old_spec.get("podCIDRs"))
    if old_cidrs and old_cidrs != _l(spec.get("podCIDRs")):
        errs.append(field_forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"))
    old_provider = _s(old_spec.get("providerID"))
    if old_provider and old_provider != _s(spec.get("providerID")):
        errs.append(field_forbidden("spec.providerID",
                "node updates may not change providerID except from \"\" to valid"))
    errs.extend(_node_taints(_l(spec.get("taints"))))
    if _s(spec.get("externalID")) != _s(old_spec.get("externalID")):
        errs.append(field_forbidden("spec.externalID", "may not be updated"))
    return errs


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_PV_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "quobyte",
               "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
               "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi",
               "flocker")


def _pvc_spec(spec: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(field_required(f"{path}.accessModes", "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs.extend(_validate_label_selector(spec.get("selector"), f"{path}.selector"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(field_not_supported(f"{path}.accessModes", mode, _ACCESS_MODES))
    if "ReadWriteOncePod" in modes and any(m != "ReadWriteOncePod" and m in _ACCESS_MODES for m in modes):
        errs.append(field_forbidden(f"{path}.accessModes", "may not use ReadWriteOncePod with other access modes"))
    requests = _d(_d(spec.get("resources")).get("requests"))
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(field_required(storage_path))
    else:
        qty = parse_quantity(requests["storage"])
        if qty is None:
            errs.append(field_invalid(storage_path, _quantity_text(requests["storage"]), QUANTITY_FORMAT_ERROR))
        elif qty <= 0:
            errs.append(field_invalid(storage_path, _quantity_text(requests["storage"]), "must be greater than zero"))
    class_name = _s(spec.get("storageClassName"))
    if class_name:
        errs.extend(field_invalid(f"{path}.storageClassName", class_name, m) for m in is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(field_not_supported(f"{path}.volumeMode", mode, ("Block", "Filesystem")))
    return errs


@unique_causes
def validate_persistent_volume_claim(obj: Obj) -> list[Cause]:
    return _pvc_spec(_d(obj.get("spec")), "spec")


@unique_causes
def validate_persistent_volume_claim_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_persistent_volume_claim(new)
    spec, old_spec = dict(_d(new.get("spec"))), dict(_d(old.get("spec")))
    if not _s(old_spec.get("volumeName")):
        old_spec["volumeName"] = spec.get("volumeName")
    if _d(new.get("status")).get("phase") == "Bound" and isinstance(_d(spec.get("resources")).get("requests"), dict):
        resources = dict(_d(spec.get("resources")))
        requests = dict(_d(resources.get("requests")))
        requests["storage"] = _d(_d(old_spec.get("resources")).get("requests")).get("storage")
        resources["requests"] = requests
        spec["resources"] = resources
        spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")
    if not _semantic_equal(spec, old_spec):
        errs.append(field_forbidden("spec", "spec is immutable after creation except resources.requests and "
                                            "volumeAttributesClassName for bound claims\n"
                                            + _spec_diff(old_spec, spec, "core.PersistentVolumeClaimSpec")))
    new_size = parse_quantity(_d(_d(_d(new.get("spec")).get("resources")).get("requests")).get("storage"))
    old_size = parse_quantity(_d(_d(_d(old.get("spec")).get("resources")).get("requests")).get("storage"))
    if new_size is not None and old_size is not None and new_size < old_size:
        capacity = parse_quantity(_d(_d(old.get("status")).get("capacity")).get("storage"))
        if capacity is not None and new_size <= capacity:
            errs.append(field_forbidden("spec.resources.requests.storage",
                    "field can not be less than status.capacity"))
    errs.extend(_immutable("volumeMode", _d(new.get("spec")).get("volumeMode"), _d(old.get("spec")).get("volumeMode")))
    return errs


@unique_causes
def validate_persistent_volume(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs: list[Cause] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(field_required("spec.accessModes"))
    errs.extend(field_not_supported("spec.accessModes", m, _ACCESS_MODES) for m in modes if m not in _ACCESS_MODES)
    capacity = _d(spec.get("capacity"))
    if not capacity:
        errs.append(field_required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(field_not_supported("spec.capacity", capacity, ("storage",)))
    for name, value in capacity.items():
        qty = parse_quantity(value)
        if qty is None:
            errs.append(field_invalid(f"spec.capacity[{name}]", _quantity_text(value), QUANTITY_FORMAT_ERROR))
        elif qty <= 0:
            errs.append(field_invalid(f"spec.capacity[{name}]", _quantity_text(value), "must be greater than zero"))
    policy = _s(spec.get("persistentVolumeReclaimPolicy"))
    if policy and policy not in ("Delete", "Recycle", "Retain"):
        errs.append(field_not_supported("spec.persistentVolumeReclaimPolicy", policy, ("Delete", "Recycle", "Retain")))
    count = 0
    for key in _PV_SOURCES:
        if spec.get(key) is None:
            continue
        if count:
            errs.append(field_forbidden(f"spec.{key}", "may not specify more than 1 volume type"))
        count += 1
    if count == 0:
        errs.append(field_required("spec", "must specify a volume type"))
    if isinstance(spec.get("local"), dict) and spec.get("nodeAffinity") is None:
        errs.append(field_required("spec.nodeAffinity", "Local volume requires node affinity"))
    class_name = _s(spec.get("storageClassName"))
    if class_name:
        errs.extend(field_invalid("spec.storageClassName", class_name, m) for m in is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(field_not_supported("spec.volumeMode", mode, ("Block", "Filesystem")))
    return errs


@unique_causes
def validate_persistent_volume_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_persistent_volume(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    source = {k: spec.get(k) for k in _PV_SOURCES}
    old_source = {k: old_spec.get(k) for k in _PV_SOURCES}
    if isinstance(source.get("csi"), dict) and isinstance(old_source.get("csi"), dict) \
            and old_source["csi"].get("controllerExpandSecretRef") is None:
        source["csi"] = {k: v for k, v in source["csi"].items() if k != "controllerExpandSecretRef"}
    if not _semantic_equal(source, old_source):
        errs.append(field_forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after "
                                    "creation\n" + _spec_diff(old_source, source, "core.PersistentVolumeSource")))
    errs.extend(_immutable("volumeMode", spec.get("volumeMode"), old_spec.get("volumeMode")))
    return errs
