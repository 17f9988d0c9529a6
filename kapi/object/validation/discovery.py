"""discovery.k8s.io/v1: EndpointSlices (kube's ``pkg/apis/discovery/validation/validation.go``)."""

from __future__ import annotations

import ipaddress

from kapi.errors import Cause
from kapi.object.validation.fields import (REASON_TOO_MANY, Obj, _d, _immutable, _l, _s, field_duplicate,
    field_invalid, field_not_supported, field_required, unique_causes)
from kapi.object.validation.names import (app_protocol_errors, is_dns1123_label, is_dns1123_subdomain,
    is_qualified_name, non_special_ip_errors)

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_MAX_ADDRESSES = 100
_MAX_PORTS = 20000
_MAX_ENDPOINTS = 1000
_MAX_ZONE_HINTS = 8


def _too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause(reason=REASON_TOO_MANY, message=f"Too many: {actual}: must have at most {limit} items", field=path)


def _address(path: str, address: str, address_type: str) -> list[Cause]:
    if address_type in ("IPv4", "IPv6"):
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            ip = None
        want = 4 if address_type == "IPv4" else 6
        if ip is None or ip.version != want:
            return [field_invalid(path, address, f"must be a valid {address_type} address")]
        return non_special_ip_errors(path, address)
    if address_type == "FQDN":
        if not address:
            return [field_required(path, "")]
        errs = [field_invalid(path, address, m) for m in is_dns1123_subdomain(address)]
        if not errs and "." not in address:
            errs.append(field_invalid(path, address, "should be a domain with at least two segments separated by dots"))
        return errs
    return []


def _endpoints(endpoints: list[object], address_type: str) -> list[Cause]:
    if len(endpoints) > _MAX_ENDPOINTS:
        return [_too_many("endpoints", len(endpoints), _MAX_ENDPOINTS)]
    errs: list[Cause] = []
    for i, endpoint in enumerate(endpoints):
        endpoint, p = _d(endpoint), f"endpoints[{i}]"
        addresses = _l(endpoint.get("addresses"))
        if not addresses:
            errs.append(field_required(f"{p}.addresses", "must contain at least 1 address"))
        elif len(addresses) > _MAX_ADDRESSES:
            errs.append(_too_many(f"{p}.addresses", len(addresses), _MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            errs.extend(_address(f"{p}.addresses[{j}]", _s(address), address_type))
        node = endpoint.get("nodeName")
        if isinstance(node, str):
            errs.extend(field_invalid(f"{p}.nodeName", node, m) for m in is_dns1123_subdomain(node))
        for key, value in _d(endpoint.get("deprecatedTopology")).items():
            errs.extend(field_invalid(f"{p}.deprecatedTopology", key, m) for m in is_qualified_name(key))
        hostname = endpoint.get("hostname")
        if isinstance(hostname, str):
            errs.extend(field_invalid(f"{p}.hostname", hostname, m) for m in is_dns1123_label(hostname))
        zones = _l(_d(endpoint.get("hints")).get("forZones"))
        if len(zones) > _MAX_ZONE_HINTS:
            errs.append(_too_many(f"{p}.hints.forZones", len(zones), _MAX_ZONE_HINTS))
        seen: set[str] = set()
        for j, zone in enumerate(zones):
            name = _s(_d(zone).get("name"))
            if name in seen:
                errs.append(field_duplicate(f"{p}.hints.forZones[{j}].name", name))
            seen.add(name)
    return errs


def _ports(ports: list[object]) -> list[Cause]:
    if len(ports) > _MAX_PORTS:
        return [_too_many("ports", len(ports), _MAX_PORTS)]
    errs: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port, p = _d(port), f"ports[{i}]"
        name = _s(port.get("name"))
        if name:
            errs.extend(field_invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            errs.append(field_required(f"{p}.protocol", ""))
        elif protocol not in _PROTOCOLS:
            errs.append(field_not_supported(f"{p}.protocol", protocol, _PROTOCOLS))
        errs.extend(app_protocol_errors(p, port.get("appProtocol")))
    return errs


@unique_causes
def validate_endpoint_slice(obj: Obj) -> list[Cause]:
    address_type = _s(obj.get("addressType"))
    errs: list[Cause] = []
    if not address_type:
        errs.append(field_required("addressType", ""))
    elif address_type not in ADDRESS_TYPES:
        errs.append(field_not_supported("addressType", address_type, ADDRESS_TYPES))
    errs.extend(_endpoints(_l(obj.get("endpoints")), address_type))
    errs.extend(_ports(_l(obj.get("ports"))))
    return errs


@unique_causes
def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_endpoint_slice(new) + _immutable("addressType", new.get("addressType"), old.get("addressType"))
