"""A port's appProtocol, as kube checks it on Endpoints, EndpointSlices and Services.

kube's validateEndpointPort (like the EndpointSlice's and the Service's port checks) runs
ValidateQualifiedName on appProtocol when it is set, the empty string included; Endpoints took any
value before.
"""

from __future__ import annotations

from typing import Any

import pytest

from kapi.errors import Cause
from kapi.object.defaults import default_service
from kapi.object.validation import validate_endpoints, validate_endpoints_update, validate_service
from kapi.object.validation.discovery import validate_endpoint_slice

NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")

# (appProtocol, kube's refusals of it): the detail after 'Invalid value: "<value>": '
REFUSED = [
    ("bad proto", [NAME_PART]),
    ("-h2c", [NAME_PART]),
    ("", ["name part must be non-empty", NAME_PART]),
    ("kubernetes.io/", ["name part must be non-empty", NAME_PART]),
    ("a/b/c", ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
               "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
               "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
               "and '/' (e.g. 'example.com/MyName')"]),
]
TAKEN = ["http", "HTTP", "kubernetes.io/h2c", "kubernetes.io/ws", "example.com/my_proto.v2"]


def _invalid(field: str, value: str, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "{value}": {detail}', field)


def _endpoints(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ep", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": list(ports)}]}


@pytest.mark.parametrize(("app", "details"), REFUSED)
def test_endpoints_refuse_an_app_protocol_that_is_no_qualified_name(app: str, details: list[str]) -> None:
    obj = _endpoints({"name": "a", "port": 80, "protocol": "TCP"},
                     {"name": "b", "port": 81, "protocol": "TCP", "appProtocol": app})
    want = [_invalid("subsets[0].ports[1].appProtocol", app, d) for d in details]
    assert validate_endpoints(obj) == want
    assert validate_endpoints_update(obj, _endpoints({"port": 80, "protocol": "TCP"})) == want


@pytest.mark.parametrize("app", TAKEN)
def test_endpoints_take_a_qualified_app_protocol(app: str) -> None:
    assert validate_endpoints(_endpoints({"port": 80, "protocol": "TCP", "appProtocol": app})) == []


def test_endpoints_app_protocol_comes_after_the_ports_other_refusals() -> None:
    """kube's order within a port: name, port, protocol, then appProtocol."""
    obj = _endpoints({"name": "a", "port": 80, "protocol": "TCP"}, {"port": 0, "protocol": "TCP", "appProtocol": "x y"})
    assert [c.field for c in validate_endpoints(obj)] == [
        "subsets[0].ports[1].name", "subsets[0].ports[1].port", "subsets[0].ports[1].appProtocol"]


@pytest.mark.parametrize(("app", "details"), REFUSED)
def test_endpoint_slices_and_services_refuse_the_same_values(app: str, details: list[str]) -> None:
    slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
              "metadata": {"name": "s", "namespace": "default"},
              "ports": [{"name": "a", "port": 80, "protocol": "TCP", "appProtocol": app}]}
    assert validate_endpoint_slice(slice_) == [_invalid("ports[0].appProtocol", app, d) for d in details]
    svc: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                           "spec": {"ports": [{"port": 80, "appProtocol": app}], "selector": {"app": "s"}}}
    default_service(svc, None)
    assert [c for c in validate_service(svc) if c.field.endswith("appProtocol")] == [
        _invalid("spec.ports[0].appProtocol", app, d) for d in details]
