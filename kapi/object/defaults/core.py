"""The other core/v1 kinds: services (and the allocated values an update keeps), secrets,
namespaces (the name label and the phase), nodes, persistent volumes and claims, endpoints.
"""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _dicts, _obj, _unset, defaulter


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _patch_allocated_values(spec: Obj, old_spec: Obj) -> None:
    """An update that leaves out allocated values keeps the old ones (the service REST does this)."""
    if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
        if _unset(spec, "clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
        if not spec.get("ipFamilies") and old_spec.get("ipFamilies"):
            spec["ipFamilies"] = list(old_spec["ipFamilies"])
        if spec.get("ipFamilyPolicy") is None and old_spec.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
    if spec.get("type") in ("NodePort", "LoadBalancer") and old_spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = _dicts(old_spec.get("ports"))
        new_ports = _dicts(spec.get("ports"))
        used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_ports}
        for port in new_ports:
            if not port.get("nodePort"):
                previous = by_name.get(port.get("name", ""))
                if previous and previous not in used:
                    port["nodePort"] = previous
    if spec.get("healthCheckNodePort") in (None, 0) and old_spec.get("healthCheckNodePort"):
        if spec.get("type") == old_spec.get("type") == "LoadBalancer" and \
                spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy") == "Local":
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


@defaulter
def default_service(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if old is not None and isinstance(old.get("spec"), dict):
        _patch_allocated_values(spec, old["spec"])
    if _unset(spec, "sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = spec.get("sessionAffinityConfig", {}).get("clientIP") if isinstance(
            spec.get("sessionAffinityConfig"), dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if _unset(spec, "type"):
        spec["type"] = "ClusterIP"
    for port in _dicts(spec.get("ports")):
        if _unset(port, "protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    stype = spec["type"]
    accessible = stype in ("LoadBalancer", "NodePort") or stype == "ClusterIP" and bool(spec.get("externalIPs"))
    if accessible and _unset(spec, "externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and stype in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    if stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if stype == "LoadBalancer":
        for ingress in _dicts(_obj(_obj(obj, "status"), "loadBalancer").get("ingress")):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"
    if old is not None and _needs_cluster_ip(spec):
        _default_service_ips(spec)  # a create's come after its managedFields: fill_service_ip_families
    status = _obj(obj, "status")
    if not isinstance(status.get("loadBalancer"), dict):
        status["loadBalancer"] = {}


def fill_service_ip_families(obj: Obj) -> None:
    """A created service's clusterIPs, ipFamilyPolicy and ipFamilies: not v1 defaults but kube's service
    REST on create (normalizeClusterIPs, the allocator's initIPFamilyFields), after the field manager has
    recorded the body's fields, so no manager owns them unless the body named them. An update's are
    filled with its defaults (``default_service``)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return
    if _needs_cluster_ip(obj["spec"]):
        _default_service_ips(obj["spec"])


def _default_service_ips(spec: Obj) -> None:
    cluster_ip, cluster_ips = spec.get("clusterIP"), spec.get("clusterIPs")
    if isinstance(cluster_ip, str) and cluster_ip and not cluster_ips:
        spec["clusterIPs"] = [cluster_ip]
    elif isinstance(cluster_ips, list) and cluster_ips and _unset(spec, "clusterIP"):
        spec["clusterIP"] = cluster_ips[0]
    headless = spec.get("clusterIP") == "None"
    if spec.get("ipFamilyPolicy") is None:
        # headless without a selector gets all of the cluster's families
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless and not spec.get("selector") else "SingleStack"
    if not spec.get("ipFamilies"):
        ips = [ip for ip in spec.get("clusterIPs") or () if isinstance(ip, str) and ip != "None"]
        spec["ipFamilies"] = ["IPv6" if ":" in ip else "IPv4" for ip in ips] or ["IPv4"]


@defaulter
def default_secret(obj: Obj, old: Obj | None) -> None:
    if _unset(obj, "type"):
        obj["type"] = "Opaque"


@defaulter
def default_namespace(obj: Obj, old: Obj | None) -> None:
    """SetDefaults_Namespace and SetDefaults_NamespaceStatus. Not the ``kubernetes`` finalizer: kube's
    namespace strategy adds that on create, after the field manager has recorded the body's fields
    (``NamespaceStrategy.prepare_named``)."""
    md = _obj(obj, "metadata")
    name = md.get("name")
    if isinstance(name, str) and name:
        _obj(md, "labels")["kubernetes.io/metadata.name"] = name
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Active"


@defaulter
def default_node(obj: Obj, old: Obj | None) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and status.get("allocatable") is None:
        status["allocatable"] = dict(status["capacity"])


def _default_pvc_spec(spec: Obj) -> None:
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"


@defaulter
def default_persistent_volume_claim(obj: Obj, old: Obj | None) -> None:
    _default_pvc_spec(_obj(obj, "spec"))
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Pending"


@defaulter
def default_persistent_volume(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Pending"


@defaulter
def default_endpoints(obj: Obj, old: Obj | None) -> None:
    for subset in _dicts(obj.get("subsets")):
        for port in _dicts(subset.get("ports")):
            if _unset(port, "protocol"):
                port["protocol"] = "TCP"
