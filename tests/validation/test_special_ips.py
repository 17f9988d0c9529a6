"""Issue 30: kube's ValidateNonSpecialIP, shared by Endpoints, EndpointSlices and Services' externalIPs.

Endpoints took loopback and link-local addresses that kube's validateEndpointAddress refuses (and
EndpointSlices already refused): no unspecified, loopback, link-local unicast or link-local
multicast address, with kube's field paths and messages.
"""

from __future__ import annotations

from typing import Any

import pytest

from kapi.errors import Cause
from kapi.object.defaults import default_service
from kapi.object.validation import validate_endpoints, validate_endpoints_update, validate_service
from kapi.object.validation.discovery import validate_endpoint_slice

LOOPBACK = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
LINK_LOCAL = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
LL_MULTICAST = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"

# (address, kube's refusals of it): the detail after 'Invalid value: "<address>": '
SPECIAL = [
    ("127.0.0.1", [LOOPBACK]),
    ("127.255.0.9", [LOOPBACK]),
    ("127.000.000.001", [LOOPBACK]),  # kube's sloppy parser reads leading zeros
    ("::1", [LOOPBACK]),
    ("::ffff:127.0.0.1", [LOOPBACK]),  # Go sees an IPv4-mapped address as its IPv4
    ("0.0.0.0", ["may not be unspecified (0.0.0.0)"]),
    ("::", ["may not be unspecified (::)"]),
    ("169.254.169.254", [LINK_LOCAL]),
    ("fe80::1", [LINK_LOCAL]),
    ("febf::1", [LINK_LOCAL]),
    ("224.0.0.251", [LL_MULTICAST]),
    ("ff02::fb", [LL_MULTICAST]),
    ("ff12::1", [LL_MULTICAST]),  # Go's IsLinkLocalMulticast ignores the flags nibble
]
ORDINARY = ["10.0.0.1", "192.168.1.20", "2001:db8::1", "224.0.1.1", "ff05::1", "fec0::1", "010.000.000.001",
            "128.0.0.1"]


def _endpoints(*addresses: dict[str, Any], not_ready: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    subset: dict[str, Any] = {"addresses": list(addresses), "ports": [{"port": 80, "protocol": "TCP"}]}
    if not_ready:
        subset["notReadyAddresses"] = not_ready
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ep", "namespace": "default"},
            "subsets": [subset]}


def _invalid(field: str, value: str, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "{value}": {detail}', field)


@pytest.mark.parametrize(("ip", "details"), SPECIAL)
def test_endpoints_refuse_special_addresses(ip: str, details: list[str]) -> None:
    obj = _endpoints({"ip": "10.1.2.3"}, {"ip": ip}, not_ready=[{"ip": ip}])
    want = [_invalid("subsets[0].addresses[1].ip", ip, d) for d in details]
    want += [_invalid("subsets[0].notReadyAddresses[0].ip", ip, d) for d in details]
    assert validate_endpoints(obj) == want
    assert validate_endpoints_update(obj, _endpoints({"ip": "10.1.2.3"})) == want


@pytest.mark.parametrize("ip", ORDINARY)
def test_endpoints_take_ordinary_addresses(ip: str) -> None:
    assert validate_endpoints(_endpoints({"ip": ip}, not_ready=[{"ip": ip}])) == []


@pytest.mark.parametrize("ip", ["", "foo", "10.0.0", "1.2.3.256", "fe80::1%eth0", "2001:db8::g"])
def test_endpoints_address_of_no_ip_form_is_refused_twice_as_kube_does(ip: str) -> None:
    """kube's validateEndpointAddress checks the form, then the special ranges, whose parse fails too."""
    path = "subsets[0].addresses[0].ip"
    assert validate_endpoints(_endpoints({"ip": ip})) == [
        _invalid(path, ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
        _invalid(path, ip, "must be a valid IP address"),
    ]


def test_endpoints_address_hostname_and_node_name() -> None:
    errs = validate_endpoints(_endpoints({"ip": "127.0.0.1", "hostname": "Web_1", "nodeName": "node_a"}))
    path = "subsets[0].addresses[0]"
    assert [(c.field, c.message.split(": ", 2)[-1]) for c in errs] == [
        (f"{path}.hostname", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        (f"{path}.nodeName", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                             "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                             "'example.com', regex used for validation is "
                             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        (f"{path}.ip", LOOPBACK),
    ]
    ok = {"ip": "10.0.0.9", "hostname": "web-1", "nodeName": "node-a.example"}
    assert validate_endpoints(_endpoints(ok)) == []


# The sloppy forms (an IPv4-mapped IPv6 address, leading zeros) are not addresses of their family's form
# for an EndpointSlice, which refuses them for that before any range check.
@pytest.mark.parametrize(("ip", "details"), [(ip, details) for ip, details in SPECIAL
                                             if not ip.startswith("::ffff:") and ip != "127.000.000.001"])
def test_endpoint_slices_refuse_the_same_addresses(ip: str, details: list[str]) -> None:
    family = "IPv6" if ":" in ip else "IPv4"
    obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": family,
           "metadata": {"name": "s", "namespace": "default"}, "endpoints": [{"addresses": [ip]}]}
    assert validate_endpoint_slice(obj) == [_invalid("endpoints[0].addresses[0]", ip, d) for d in details]


@pytest.mark.parametrize(("ip", "details"), SPECIAL)
def test_service_external_ips_refuse_the_same_addresses(ip: str, details: list[str]) -> None:
    svc = _service([ip])
    assert [c for c in validate_service(svc) if c.field.startswith("spec.externalIPs")] == [
        _invalid("spec.externalIPs[0]", ip, d) for d in details]


def test_service_external_ip_of_no_ip_form_is_refused_once() -> None:
    """Unlike Endpoints, kube checks an external IP's special ranges only when its form is valid."""
    assert [c for c in validate_service(_service(["foo"])) if c.field.startswith("spec.externalIPs")] == [
        _invalid("spec.externalIPs[0]", "foo", "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    assert [c for c in validate_service(_service(ORDINARY)) if c.field.startswith("spec.externalIPs")] == []


def _service(external_ips: list[str]) -> dict[str, Any]:
    svc: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                           "spec": {"ports": [{"port": 80}], "selector": {"app": "s"}, "externalIPs": external_ips}}
    default_service(svc, None)
    return svc
