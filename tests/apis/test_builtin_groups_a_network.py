"""Issue 14, builtins A: networking.k8s.io/v1 (Ingress, IngressClass, NetworkPolicy) and policy/v1
(PodDisruptionBudget) through the ASGI app: create/get/list, kube's defaults, its validation's 422s,
the status subresource and the Table columns kubectl prints."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, api  # noqa: F401 (the in-process app fixture)

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
NET = "/apis/networking.k8s.io/v1"
ING = f"{NET}/namespaces/default/ingresses"
NP = f"{NET}/namespaces/default/networkpolicies"
IC = f"{NET}/ingressclasses"
PDB = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    body = reply.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def table(api: Api, path: str) -> tuple[list[str], list[list[Any]]]:
    reply = await api.request("GET", path, headers=TABLE)
    assert reply.status == 200, reply.body
    body = reply.json()
    assert body["kind"] == "Table"
    return [c["name"] for c in body["columnDefinitions"]], [r["cells"] for r in body["rows"]]


def backend(name: str = "web", number: int = 80) -> dict[str, Any]:
    return {"service": {"name": name, "port": {"number": number}}}


def ingress(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name}, "spec": spec}


def rule(host: str | None, path: str = "/", path_type: str | None = "Prefix") -> dict[str, Any]:
    item: dict[str, Any] = {"path": path, "backend": backend()}
    if path_type is not None:
        item["pathType"] = path_type
    out: dict[str, Any] = {"http": {"paths": [item]}}
    if host is not None:
        out["host"] = host
    return out


# ------------------------------------------------------------------------------- Ingress


async def test_ingress_create_get_list_and_table(api: Api) -> None:
    spec = {"ingressClassName": "nginx", "rules": [rule("a.example.com"), rule("b.example.com"),
                                                   rule("c.example.com"), rule("d.example.com")],
            "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}]}
    created = await api.create(ING, ingress("web", spec))
    assert created.status == 201, created.body
    body = created.json()
    assert body["metadata"]["generation"] == 1
    got = (await api.request("GET", f"{ING}/web")).json()
    assert got["spec"]["rules"][0]["host"] == "a.example.com"
    listed = (await api.request("GET", ING)).json()
    assert listed["kind"] == "IngressList" and [i["metadata"]["name"] for i in listed["items"]] == ["web"]
    assert (await api.create(ING, ingress("plain", {"defaultBackend": backend()}))).status == 201
    names, rows = await table(api, ING)
    assert names == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert rows[0][:5] == ["plain", "<none>", "*", "", "80"]
    assert rows[1][:5] == ["web", "nginx", "a.example.com,b.example.com,c.example.com + 1 more...", "", "80, 443"]


async def test_ingress_status_subresource(api: Api) -> None:
    created = (await api.create(ING, ingress("web", {"defaultBackend": backend()}))).json()
    created["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example.com"}]}}
    # A write of the main resource leaves status alone ...
    put = (await api.request("PUT", f"{ING}/web", created)).json()
    assert put.get("status", {}).get("loadBalancer", {}) == {}
    # ... the status subresource sets it, without moving the generation.
    put["status"] = created["status"]
    st = await api.request("PUT", f"{ING}/web/status", put)
    assert st.status == 200, st.body
    assert st.json()["status"]["loadBalancer"]["ingress"][0] == {"ip": "10.0.0.9"}
    assert st.json()["metadata"]["generation"] == 1
    _, rows = await table(api, ING)
    assert rows[0][3] == "10.0.0.9,lb.example.com"
    bad = st.json()
    bad["status"]["loadBalancer"]["ingress"] = [{"ip": "not-an-ip"}]
    assert causes(await api.request("PUT", f"{ING}/web/status", bad)) == [
        ("FieldValueInvalid", "status.loadBalancer.ingress[0].ip",
         'Invalid value: "not-an-ip": must be a valid IP address')]


async def test_ingress_spec_change_moves_generation(api: Api) -> None:
    created = (await api.create(ING, ingress("web", {"defaultBackend": backend()}))).json()
    created["spec"]["defaultBackend"] = backend("other")
    assert (await api.request("PUT", f"{ING}/web", created)).json()["metadata"]["generation"] == 2


async def test_ingress_validation(api: Api) -> None:
    assert causes(await api.create(ING, ingress("x", {}))) == [
        ("FieldValueInvalid", "spec",
         "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified")]
    assert causes(await api.create(ING, ingress("x", {"rules": [rule("a.example.com", path_type=None)]}))) == [
        ("FieldValueRequired", "spec.rules[0].http.paths[0].pathType", "Required value: pathType must be specified")]
    assert causes(await api.create(ING, ingress("x", {"rules": [rule("a.example.com", path_type="Regex")]}))) == [
        ("FieldValueNotSupported", "spec.rules[0].http.paths[0].pathType",
         'Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"')]
    assert causes(await api.create(ING, ingress("x", {"rules": [rule("a.example.com", path="foo")]}))) == [
        ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", 'Invalid value: "foo": must be an absolute path')]
    assert causes(await api.create(ING, ingress("x", {"rules": [rule("a.example.com", path="/a//b")]}))) == [
        ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", "Invalid value: \"/a//b\": must not contain '//'")]
    assert causes(await api.create(ING, ingress("x", {"rules": [rule("10.1.2.3")]}))) == [
        ("FieldValueInvalid", "spec.rules[0].host",
         'Invalid value: "10.1.2.3": must be a DNS name, not an IP address')]
    no_port = {"service": {"name": "web", "port": {}}}
    assert causes(await api.create(ING, ingress("x", {"defaultBackend": no_port}))) == [
        ("FieldValueRequired", "spec.defaultBackend", "Required value: port name or number is required")]
    both = {"service": {"name": "web", "port": {"name": "http", "number": 80}}}
    assert causes(await api.create(ING, ingress("x", {"defaultBackend": both}))) == [
        ("FieldValueInvalid", "spec.defaultBackend", 'Invalid value: "": cannot set both port name & port number')]
    assert causes(await api.create(ING, ingress("x", {"defaultBackend": backend("Web_1")})))[0][:2] == (
        "FieldValueInvalid", "spec.defaultBackend.service.name")
    wild = await api.create(ING, ingress("ok", {"rules": [rule("*.example.com")]}))
    assert wild.status == 201, wild.body
    reply = await api.create(ING, ingress("x", {"defaultBackend": backend(), "ingressClassName": "Bad_Class"}))
    assert causes(reply)[0][:2] == ("FieldValueInvalid", "spec.ingressClassName")
    assert reply.json()["message"].startswith('Ingress.networking.k8s.io "x" is invalid: spec.ingressClassName')


# -------------------------------------------------------------------------- IngressClass


async def test_ingress_class_cluster_scoped_defaults_and_table(api: Api) -> None:
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
           "spec": {"controller": "k8s.io/ingress-nginx",
                    "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}}
    created = await api.create(IC, obj)
    assert created.status == 201, created.body
    assert created.json()["spec"]["parameters"]["scope"] == "Cluster"
    assert "namespace" not in created.json()["metadata"]
    names, rows = await table(api, IC)
    assert names == ["Name", "Controller", "Parameters", "Age"]
    assert rows[0][:3] == ["nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/p"]
    # the controller is immutable
    got = created.json()
    got["spec"]["controller"] = "example.com/other"
    assert causes(await api.request("PUT", f"{IC}/nginx", got)) == [
        ("FieldValueInvalid", "spec.controller", 'Invalid value: "example.com/other": field is immutable')]
    # a namespaced path is not served for it
    assert (await api.request("GET", f"{NET}/namespaces/default/ingressclasses")).status == 404


async def test_ingress_class_validation(api: Api) -> None:
    def ic(spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "x"}, "spec": spec}
    assert causes(await api.create(IC, ic({}))) == [("FieldValueRequired", "spec.controller", "Required value")]
    reply = await api.create(IC, ic({"controller": "a.io/x", "parameters": {
        "kind": "P", "name": "p", "scope": "Namespace"}}))
    assert causes(reply) == [("FieldValueRequired", "spec.parameters.namespace",
                              "Required value: `parameters.scope` is set to 'Namespace'")]


# ------------------------------------------------------------------------- NetworkPolicy


def netpol(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name}, "spec": spec}


async def test_network_policy_defaults_and_table(api: Api) -> None:
    ingress_only = await api.create(NP, netpol("a", {"podSelector": {"matchLabels": {"app": "web"}},
                                                     "ingress": [{"ports": [{"port": 80}]}]}))
    assert ingress_only.status == 201, ingress_only.body
    spec = ingress_only.json()["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    both = (await api.create(NP, netpol("b", {"podSelector": {}, "egress": [{"to": [{"ipBlock": {
        "cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}))).json()
    assert both["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert both["metadata"]["generation"] == 1
    names, rows = await table(api, NP)
    assert names == ["Name", "Pod-Selector", "Age"]
    assert [r[:2] for r in rows] == [["a", "app=web"], ["b", "<none>"]]


async def test_network_policy_validation(api: Api) -> None:
    reply = await api.create(NP, netpol("x", {"podSelector": {}, "ingress": [{"ports": [
        {"port": 80, "protocol": "ICMP"}, {"port": 90, "endPort": 85}, {"port": "http", "endPort": 90}],
        "from": [{}]}], "policyTypes": ["Sideways"]}))
    assert causes(reply) == [
        ("FieldValueNotSupported", "spec.ingress[0].ports[0].protocol",
         'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
        ("FieldValueInvalid", "spec.ingress[0].ports[1].endPort",
         "Invalid value: 85: must be greater than or equal to `port`"),
        ("FieldValueInvalid", "spec.ingress[0].ports[2].endPort",
         "Invalid value: 90: may not be specified when `port` is non-numeric"),
        ("FieldValueRequired", "spec.ingress[0].from[0]", "Required value: must specify a peer"),
        ("FieldValueNotSupported", "spec.policyTypes[0]",
         'Unsupported value: "Sideways": supported values: "Ingress", "Egress"'),
    ]
    reply = await api.create(NP, netpol("x", {"podSelector": {}, "egress": [{"to": [{"ipBlock": {
        "cidr": "10.0.0.0/16", "except": ["192.168.0.0/24"]}}]}]}))
    assert causes(reply) == [("FieldValueInvalid", "spec.egress[0].to[0].ipBlock.except[0]",
                              'Invalid value: "192.168.0.0/24": must be a strict subset of `cidr`')]


# ------------------------------------------------------------------- PodDisruptionBudget


def pdb(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


async def test_pdb_create_list_table_and_status(api: Api) -> None:
    created = await api.create(PDB, pdb("a", minAvailable=2))
    assert created.status == 201, created.body
    assert created.json()["metadata"]["generation"] == 1
    assert (await api.create(PDB, pdb("b", maxUnavailable="25%"))).status == 201
    names, rows = await table(api, PDB)
    assert names == ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]
    assert [r[:4] for r in rows] == [["a", "2", "N/A", 0], ["b", "N/A", "25%", 0]]
    # status through its subresource only
    obj = (await api.request("GET", f"{PDB}/a")).json()
    obj["status"] = {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
                     "observedGeneration": 1}
    ignored = (await api.request("PUT", f"{PDB}/a", obj)).json()
    assert ignored.get("status", {}).get("disruptionsAllowed", 0) == 0
    obj["metadata"]["resourceVersion"] = ignored["metadata"]["resourceVersion"]
    st = await api.request("PUT", f"{PDB}/a/status", obj)
    assert st.status == 200, st.body
    assert st.json()["status"]["disruptionsAllowed"] == 1
    _, rows = await table(api, PDB)
    assert rows[0][3] == 1
    listed = (await api.request("GET", "/apis/policy/v1/poddisruptionbudgets")).json()
    assert listed["kind"] == "PodDisruptionBudgetList" and len(listed["items"]) == 2


async def test_pdb_validation(api: Api) -> None:
    reply = await api.create(PDB, pdb("x", minAvailable=1, maxUnavailable=1))
    assert [(r, f) for r, f, _ in causes(reply)] == [("FieldValueInvalid", "spec")]
    assert causes(reply)[0][2].endswith("minAvailable and maxUnavailable cannot be both set")
    assert causes(await api.create(PDB, pdb("x", minAvailable="120%"))) == [
        ("FieldValueInvalid", "spec.minAvailable", # an IntOrString prints by its String(): unquoted
        "Invalid value: 120%: must not be greater than 100%")]
    assert causes(await api.create(PDB, pdb("x", maxUnavailable=-1))) == [
        ("FieldValueInvalid", "spec.maxUnavailable", "Invalid value: -1: must be greater than or equal to 0")]
    assert causes(await api.create(PDB, pdb("x", minAvailable=1, unhealthyPodEvictionPolicy="Sometimes"))) == [
        ("FieldValueNotSupported", "spec.unhealthyPodEvictionPolicy",
         'Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"')]
