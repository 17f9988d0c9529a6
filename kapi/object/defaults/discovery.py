"""discovery.k8s.io/v1 defaults (kube's ``pkg/apis/discovery/v1/defaults.go``)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _dicts, defaulter


@defaulter
def default_endpoint_slice(obj: Obj, old: Obj | None) -> None:
    for port in _dicts(obj.get("ports")):
        if port.get("name") is None:
            port["name"] = ""
        if port.get("protocol") is None:
            port["protocol"] = "TCP"
