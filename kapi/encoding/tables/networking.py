"""Table printers of the networking.k8s.io group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import (AGE, NAME, Obj, Printer, as_list, as_map, as_str, column,
    format_label_selector, since)

_INGRESS_COLUMNS: Final = (
    NAME,
    column("Class", "string", "The name of the IngressClass resource that should be used to serve this Ingress."),
    column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    column("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
)
_INGRESS_CLASS_COLUMNS: Final = (
    NAME,
    column("Controller", "string", "Controller that is responsible for handling this class"),
    column("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE,
)
_NETWORK_POLICY_COLUMNS: Final = (
    NAME,
    column("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies. "
           "The array of rules is applied to any pods selected by this field. An empty selector matches all pods "
           "in the policy's namespace. Multiple network policies can select the same set of pods. In this case, "
           "the ingress rules for each are combined additively. This field is optional. If it is not specified, "
           "it defaults to an empty selector."),
    AGE,
)


def _hosts(rules: list[Any]) -> str:
    """formatHosts: at most three hosts, ``*`` when none."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        host = as_str(as_map(rule).get("host"))
        if not more and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


def _load_balancer(status: Any) -> str:
    """ingressLoadBalancerStatusStringer, wide: IPs and hostnames joined by commas."""
    out = []
    for ingress in as_list(as_map(status).get("ingress")):
        ingress = as_map(ingress)
        if as_str(ingress.get("ip")):
            out.append(ingress["ip"])
        elif as_str(ingress.get("hostname")):
            out.append(ingress["hostname"])
    return ",".join(out)


def _ingress_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    class_name = spec.get("ingressClassName")
    return [as_str(meta.get("name")), class_name if isinstance(class_name, str) else "<none>",
            _hosts(as_list(spec.get("rules"))),
            _load_balancer(as_map(obj.get("status")).get("loadBalancer")),
            "80, 443" if as_list(spec.get("tls")) else "80",
            since(meta.get("creationTimestamp"), now)]


def _ingress_class_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    params = spec.get("parameters")
    parameters = "<none>"
    if isinstance(params, dict):
        parameters = as_str(params.get("kind"))
        if isinstance(params.get("apiGroup"), str):
            parameters += "." + params["apiGroup"]
        parameters += "/" + as_str(params.get("name"))
    return [as_str(meta.get("name")), as_str(spec.get("controller")), parameters,
            since(meta.get("creationTimestamp"), now)]


def _network_policy_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    return [as_str(meta.get("name")), format_label_selector(spec.get("podSelector") or {}),
            since(meta.get("creationTimestamp"), now)]


INGRESS: Final = Printer(_INGRESS_COLUMNS, _ingress_row)
INGRESS_CLASS: Final = Printer(_INGRESS_CLASS_COLUMNS, _ingress_class_row)
NETWORK_POLICY: Final = Printer(_NETWORK_POLICY_COLUMNS, _network_policy_row)
