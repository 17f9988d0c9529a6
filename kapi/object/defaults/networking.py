"""networking.k8s.io/v1 defaults (kube's ``pkg/apis/networking/v1/defaults.go``)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _dicts, defaulter


@defaulter
def default_network_policy(obj: Obj, old: Obj | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec.get(direction)):
            for port in _dicts(rule.get("ports")):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


@defaulter
def default_ingress_class(obj: Obj, old: Obj | None) -> None:
    spec = obj.get("spec")
    params = spec.get("parameters") if isinstance(spec, dict) else None
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"
