"""networking.k8s.io/v1: Ingresses, IngressClasses and NetworkPolicies (kube's
``pkg/apis/networking/validation/validation.go``)."""

from __future__ import annotations

import ipaddress

from kapi.errors import Cause
from kapi.object.validation.fields import (FIELD_IMMUTABLE, Obj, _d, _i, _l, _Rendered, _s,
    field_forbidden, field_invalid, field_not_supported, field_required, unique_causes)
from kapi.object.validation.meta import _validate_label_selector
from kapi.object.validation.names import (_is_valid_ip, is_dns1035_label, is_dns1123_subdomain, is_valid_port_name,
    is_valid_port_num)

_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_POLICY_TYPES = ("Ingress", "Egress")
_WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
                 "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
                 "alphanumeric character (e.g. '*.example.com', regex used for validation is "
                 "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def _is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > 253:
        errs.append("must be no more than 253 bytes")
    if not value.startswith("*.") or is_dns1123_subdomain(value[2:]):
        errs.append(_WILDCARD_MSG)
    return errs


def _host_errors(path: str, host: str) -> list[Cause]:
    errs: list[Cause] = []
    if _is_valid_ip(host):
        errs.append(field_invalid(path, host, "must be a DNS name, not an IP address"))
    check = _is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    errs.extend(field_invalid(path, host, m) for m in check(host))
    return errs


def _typed_local_object_ref(ref: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    group = ref.get("apiGroup")
    if isinstance(group, str) and group:
        errs.extend(field_invalid(f"{path}.apiGroup", group, m) for m in is_dns1123_subdomain(group))
    if not _s(ref.get("kind")):
        errs.append(field_required(f"{path}.kind", ""))
    if not _s(ref.get("name")):
        errs.append(field_required(f"{path}.name", ""))
    return errs


def _backend(backend: Obj, path: str) -> list[Cause]:
    resource, service = backend.get("resource"), backend.get("service")
    if isinstance(resource, dict) and isinstance(service, dict):
        return [field_invalid(path, "", "cannot set both resource and service backends")]
    if isinstance(resource, dict):
        return _typed_local_object_ref(resource, f"{path}.resource")
    if not isinstance(service, dict):
        return [field_invalid(path, "", "resource or service backend is required")]
    errs: list[Cause] = []
    name = _s(service.get("name"))
    if not name:
        errs.append(field_required(f"{path}.service.name", ""))
    else:
        errs.extend(field_invalid(f"{path}.service.name", name, m) for m in is_dns1035_label(name))
    port = _d(service.get("port"))
    port_name, number = _s(port.get("name")), _i(port.get("number")) or 0
    if port_name and number:
        errs.append(field_invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(field_invalid(f"{path}.service.port.name", port_name, m) for m in is_valid_port_name(port_name))
    elif number:
        errs.extend(field_invalid(f"{path}.service.port.number", number, m) for m in is_valid_port_num(number))
    else:
        errs.append(field_required(path, "port name or number is required"))
    return errs


def _http_path(item: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    value, kind = _s(item.get("path")), item.get("pathType")
    if not isinstance(kind, str):
        errs.append(field_required(f"{path}.pathType", "pathType must be specified"))
    elif kind in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(field_invalid(f"{path}.path", value, "must be an absolute path"))
        if value:
            errs.extend(field_invalid(f"{path}.path", value, f"must not contain '{seq}'")
                        for seq in _INVALID_PATH_SEQUENCES if seq in value)
            errs.extend(field_invalid(f"{path}.path", value, f"cannot end with '{suffix}'")
                        for suffix in _INVALID_PATH_SUFFIXES if value.endswith(suffix))
    elif kind == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(field_invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(field_not_supported(f"{path}.pathType", kind, _PATH_TYPES))
    errs.extend(_backend(_d(item.get("backend")), f"{path}.backend"))
    return errs


def _ingress_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    rules, default = _l(spec.get("rules")), spec.get("defaultBackend")
    if not rules and not isinstance(default, dict):
        rendered = _Rendered("[]networking.IngressRule(nil)" if not rules else "[]networking.IngressRule{}")
        errs.append(field_invalid("spec", rendered, "either `defaultBackend` or `rules` must be specified"))
    if isinstance(default, dict):
        errs.extend(_backend(default, "spec.defaultBackend"))
    for i, rule in enumerate(rules):
        rule, p = _d(rule), f"spec.rules[{i}]"
        host = _s(rule.get("host"))
        if host:
            errs.extend(_host_errors(f"{p}.host", host))
        http = rule.get("http")
        if isinstance(http, dict):
            paths = _l(http.get("paths"))
            if not paths:
                errs.append(field_required(f"{p}.http.paths", ""))
            for j, item in enumerate(paths):
                errs.extend(_http_path(_d(item), f"{p}.http.paths[{j}]"))
    for i, tls in enumerate(_l(spec.get("tls"))):
        for j, host in enumerate(_l(_d(tls).get("hosts"))):
            host = _s(host)
            if "*" in host:
                errs.extend(field_invalid(f"spec.tls[{i}].hosts[{j}]", host, m)
                            for m in _is_wildcard_dns1123_subdomain(host))
            else:
                errs.extend(field_invalid(f"spec.tls[{i}].hosts[{j}]", host, m) for m in is_dns1123_subdomain(host))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        errs.extend(field_invalid("spec.ingressClassName", class_name, m) for m in is_dns1123_subdomain(class_name))
    return errs


def _load_balancer_status(status: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, ingress in enumerate(_l(status.get("ingress"))):
        ingress, p = _d(ingress), f"{path}.ingress[{i}]"
        ip, hostname = _s(ingress.get("ip")), _s(ingress.get("hostname"))
        if ip and not _is_valid_ip(ip):
            errs.append(field_invalid(f"{p}.ip", ip, "must be a valid IP address"))
        if hostname:
            errs.extend(field_invalid(f"{p}.hostname", hostname, m) for m in is_dns1123_subdomain(hostname))
            if _is_valid_ip(hostname):
                errs.append(field_invalid(f"{p}.hostname", hostname, "must be a DNS name, not an IP address"))
        for j, port in enumerate(_l(ingress.get("ports"))):
            port = _d(port)
            number = _i(port.get("port"))
            if number is not None:
                errs.extend(field_invalid(f"{p}.ports[{j}].port", number, m) for m in is_valid_port_num(number))
            protocol = port.get("protocol")
            if protocol not in _PROTOCOLS:
                errs.append(field_not_supported(f"{p}.ports[{j}].protocol", protocol, _PROTOCOLS))
    return errs


@unique_causes
def validate_ingress(obj: Obj) -> list[Cause]:
    return _ingress_spec(_d(obj.get("spec")))


@unique_causes
def validate_ingress_update(new: Obj, old: Obj) -> list[Cause]:
    return _ingress_spec(_d(new.get("spec")))


@unique_causes
def validate_ingress_status_update(new: Obj, old: Obj) -> list[Cause]:
    return _load_balancer_status(_d(_d(new.get("status")).get("loadBalancer")), "status.loadBalancer")


def _ingress_class_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    controller = _s(spec.get("controller"))
    if not controller:
        errs.append(field_required("spec.controller", ""))
    elif len(controller) > 250:
        errs.append(field_invalid("spec.controller", controller, "must be no more than 250 characters"))
    else:
        errs.extend(field_invalid("spec.controller", controller, m) for m in is_domain_prefixed_path(controller))
    params = spec.get("parameters")
    if isinstance(params, dict):
        p = "spec.parameters"
        errs.extend(_typed_local_object_ref(params, p))
        scope, namespace = params.get("scope"), params.get("namespace")
        if scope is None:
            errs.append(field_required(f"{p}.scope", ""))
        elif scope == "Cluster":
            if namespace is not None:
                errs.append(field_forbidden(f"{p}.namespace", "`parameters.scope` is set to 'Cluster'"))
        elif scope == "Namespace":
            if namespace is None:
                errs.append(field_required(f"{p}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            errs.append(field_not_supported(f"{p}.scope", scope, ("Cluster", "Namespace")))
    return errs


def is_domain_prefixed_path(value: str) -> list[str]:
    """IsDomainPrefixedPath: ``example.com/path``."""
    if not value:
        return ["must be non-empty"]
    domain, sep, path = value.partition("/")
    if not sep or not path:
        return ["must be a domain-prefixed path (such as \"acme.io/foo\")"]
    return list(is_dns1123_subdomain(domain))


@unique_causes
def validate_ingress_class(obj: Obj) -> list[Cause]:
    return _ingress_class_spec(_d(obj.get("spec")))


@unique_causes
def validate_ingress_class_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _ingress_class_spec(_d(new.get("spec")))
    new_c, old_c = _d(new.get("spec")).get("controller"), _d(old.get("spec")).get("controller")
    if new_c != old_c:
        errs.append(field_invalid("spec.controller", new_c, FIELD_IMMUTABLE))
    return errs


def _cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def _peer(peer: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    peers = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), dict):
            peers += 1
            errs.extend(_validate_label_selector(peer[key], f"{path}.{key}"))
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        if peers:
            return errs + [field_forbidden(path, "may not specify both ipBlock and another peer")]
        peers += 1
        cidr_text = _s(block.get("cidr"))
        if not cidr_text:
            errs.append(field_required(f"{path}.ipBlock.cidr", ""))
            return errs
        cidr = _cidr(cidr_text) if "/" in cidr_text else None
        if cidr is None:
            errs.append(field_invalid(f"{path}.ipBlock.cidr", cidr_text,
                                      "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
            return errs
        for i, except_text in enumerate(_l(block.get("except"))):
            except_text = _s(except_text)
            sub = _cidr(except_text) if "/" in except_text else None
            ep = f"{path}.ipBlock.except[{i}]"
            if sub is None:
                errs.append(field_invalid(ep, except_text,
                                          "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
            elif (sub.version != cidr.version or sub.prefixlen <= cidr.prefixlen
                  or not sub.subnet_of(cidr)):  # type: ignore[arg-type]
                errs.append(field_invalid(ep, except_text, "must be a strict subset of `cidr`"))
    if peers == 0:
        errs.append(field_required(path, "must specify a peer"))
    return errs


def _np_port(port: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    protocol = port.get("protocol")
    if isinstance(protocol, str) and protocol not in _PROTOCOLS:
        errs.append(field_not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    value, end = port.get("port"), _i(port.get("endPort"))
    if value is None:
        if end is not None:
            errs.append(field_invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(value, str):
        if end is not None:
            errs.append(field_invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs.extend(field_invalid(f"{path}.port", value, m) for m in is_valid_port_name(value))
    else:
        number = _i(value) or 0
        errs.extend(field_invalid(f"{path}.port", number, m) for m in is_valid_port_num(number))
        if end is not None:
            if end < number:
                errs.append(field_invalid(f"{path}.endPort", end, "must be greater than or equal to `port`"))
            errs.extend(field_invalid(f"{path}.endPort", end, m) for m in is_valid_port_num(end))
    return errs


def _network_policy_spec(spec: Obj) -> list[Cause]:
    errs = _validate_label_selector(spec.get("podSelector"), "spec.podSelector")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_l(spec.get(direction))):
            rule, p = _d(rule), f"spec.{direction}[{i}]"
            for j, port in enumerate(_l(rule.get("ports"))):
                errs.extend(_np_port(_d(port), f"{p}.ports[{j}]"))
            for j, peer in enumerate(_l(rule.get(peers_key))):
                errs.extend(_peer(_d(peer), f"{p}.{peers_key}[{j}]"))
    types = _l(spec.get("policyTypes"))
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errs.append(field_not_supported(f"spec.policyTypes[{i}]", kind, _POLICY_TYPES))
    if len(types) > 2:
        errs.append(field_invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
    return errs


@unique_causes
def validate_network_policy(obj: Obj) -> list[Cause]:
    return _network_policy_spec(_d(obj.get("spec")))


@unique_causes
def validate_network_policy_update(new: Obj, old: Obj) -> list[Cause]:
    return _network_policy_spec(_d(new.get("spec")))

