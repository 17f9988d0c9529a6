"""certificates.k8s.io CSRs, admissionregistration.k8s.io and apiregistration.k8s.io through the API
(issue 14, builtins B): the requester written into the spec, approval and status subresources, the
signing controller's certificate verified against the CA, webhook/policy defaults and kube's 422s,
APIServices listed and Available."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any, AsyncIterator

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.csrsigning import CSRSigningController
from kapi.controllers.namespace import NamespaceController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.apiservices import keep_api_services
from kapi.server.bootstrap import bootstrap
from kapi.server.pki import ensure_pki
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
AR = "/apis/admissionregistration.k8s.io/v1"
APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


class Env:
    def __init__(self, api: Api, ca: x509.Certificate) -> None:
        self.api, self.ca = api, ca


@pytest.fixture
async def env(nursery: trio.Nursery, tmp_path: Any) -> AsyncIterator[Env]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           enable_priority_and_fairness=False), registry, TOKEN, Health(ready=True), informers)
    await bootstrap(registry, NamespaceController(registry))
    pki = ensure_pki(tmp_path, "127.0.0.1")
    signer = CSRSigningController(registry, informers.informer("certificates.k8s.io", "certificatesigningrequests"),
                                  pki.ca_cert.read_bytes(), (tmp_path / "pki" / "ca.key").read_bytes())
    await nursery.start(informers.run)
    await nursery.start(signer.run)
    await nursery.start(keep_api_services, registry)
    yield Env(Api(app, registry), x509.load_pem_x509_certificate(pki.ca_cert.read_bytes()))


def csr_pem(cn: str = "jane", org: str = "devs") -> tuple[str, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    req = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                                    x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
           .sign(key, hashes.SHA256()))
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode(), key


def csr(name: str, request: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                            "usages": ["client auth"]}
    body.update(spec)
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name}, "spec": body}


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    return [(c["reason"], c["field"], c["message"]) for c in reply.json()["details"]["causes"]]


async def wait_for(api: Api, path: str, check: Any) -> dict[str, Any]:
    with trio.fail_after(10):
        while True:
            obj = (await api.request("GET", path)).json()
            if check(obj):
                return obj
            await trio.sleep(0.02)


# ------------------------------------------------------------ CSRs


async def test_csr_approve_sign_verify(env: Env) -> None:
    api = env.api
    request, key = csr_pem()
    r = await api.create(CSRS, csr("jane", request, expirationSeconds=3600, username="mallory", groups=["x"]),
                         headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"})
    assert r.status == 201, r.body
    assert r.headers["content-type"] == "application/vnd.kubernetes.protobuf", r.headers
    r = await api.request("GET", f"{CSRS}/jane")
    obj = r.json()
    # the requester, not the body, is the username (the test token's user)
    assert obj["spec"]["username"] != "mallory" and obj["spec"]["username"]
    assert "x" not in obj["spec"].get("groups", [])
    t = (await api.request("GET", f"{CSRS}/jane", headers=TABLE)).json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Age", "SignerName", "Requestor",
                                                           "RequestedDuration", "Condition"]
    assert t["rows"][0]["cells"][2:] == ["kubernetes.io/kube-apiserver-client", obj["spec"]["username"], "60m",
                                         "Pending"]
    # a main-resource update changes neither spec nor status
    obj["spec"]["signerName"] = "example.com/other"
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "sneaky"}]}
    r = await api.request("PUT", f"{CSRS}/jane", obj)
    assert r.status == 200, r.body
    assert r.json()["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert "conditions" not in (r.json().get("status") or {})
    # approve through the approval subresource
    obj = r.json()
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove",
                                     "message": "ok"}], "certificate": base64.b64encode(b"nope").decode()}
    r = await api.request("PUT", f"{CSRS}/jane/approval", obj)
    assert r.status == 200, r.body
    cond = r.json()["status"]["conditions"][0]
    assert cond["type"] == "Approved" and cond["lastUpdateTime"] and cond["lastTransitionTime"]
    assert "certificate" not in r.json()["status"]  # approval writes conditions only
    signed = await wait_for(api, f"{CSRS}/jane", lambda o: (o.get("status") or {}).get("certificate"))
    cert = x509.load_pem_x509_certificate(base64.b64decode(signed["status"]["certificate"]))
    cert.verify_directly_issued_by(env.ca)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "jane"
    assert cert.public_key() == key.public_key()
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    with pytest.raises(x509.ExtensionNotFound):  # no key usage asked for: none (an empty one is invalid)
        cert.extensions.get_extension_for_class(x509.KeyUsage)
    lifetime = cert.not_valid_after_utc - dt.datetime.now(dt.timezone.utc)
    assert dt.timedelta(minutes=55) < lifetime <= dt.timedelta(minutes=60)
    t = (await api.request("GET", f"{CSRS}/jane", headers=TABLE)).json()
    assert t["rows"][0]["cells"][5] == "Approved,Issued"
    # the Approved condition cannot be dropped, the certificate cannot be changed
    signed["status"]["conditions"] = []
    got = causes(await api.request("PUT", f"{CSRS}/jane/approval", signed))
    assert ("FieldValueForbidden", "status.conditions",
            'Forbidden: updates may not remove a condition of type "Approved"') in got


async def test_csr_wrong_usages_fail(env: Env) -> None:
    api = env.api
    request, _ = csr_pem("web")
    r = await api.create(CSRS, csr("srv", request, usages=["client auth", "server auth"]))
    assert r.status == 201, r.body
    obj = r.json()
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "r"}]}
    assert (await api.request("PUT", f"{CSRS}/srv/approval", obj)).status == 200
    failed = await wait_for(api, f"{CSRS}/srv", lambda o: any(
        c["type"] == "Failed" for c in (o.get("status") or {}).get("conditions") or []))
    assert not failed["status"].get("certificate")
    assert [c["reason"] for c in failed["status"]["conditions"] if c["type"] == "Failed"] == ["SignerValidationFailure"]
    # /status: the Approved condition keeps its old value in the place the write gives it; none is added
    approved, failure = (next(c for c in failed["status"]["conditions"] if c["type"] == kind)
                         for kind in ("Approved", "Failed"))
    failed["status"]["conditions"] = [failure, dict(approved, reason="changed")]
    r = await api.request("PUT", f"{CSRS}/srv/status", failed)
    assert r.status == 200, r.body
    assert r.json()["status"]["conditions"] == [failure, approved]
    again = r.json()
    again["status"]["conditions"].append({"type": "Denied", "status": "True"})
    assert ("FieldValueForbidden", "status.conditions", 'Forbidden: updates may not add a condition of type "Denied"') \
        in causes(await api.request("PUT", f"{CSRS}/srv/status", again))  # (besides: Approved and Denied exclude)
    # /approval may not drop the Failed condition either
    again["status"]["conditions"] = [approved]
    assert causes(await api.request("PUT", f"{CSRS}/srv/approval", again)) == [
        ("FieldValueForbidden", "status.conditions", 'Forbidden: updates may not remove a condition of type "Failed"')]


async def test_csr_refusals(env: Env) -> None:
    api = env.api
    request, _ = csr_pem()
    got = causes(await api.create(CSRS, csr("a", base64.b64encode(b"not pem").decode(), signerName="nodomain",
                                            expirationSeconds=599, usages=["client auth", "flying"])))
    assert ("FieldValueInvalid", "spec.request",
            'Invalid value: "<request data>": PEM block type must be CERTIFICATE REQUEST') in got
    assert ("FieldValueInvalid", "spec.signerName", 'Invalid value: "nodomain": must be a fully qualified domain '
            "and path of the form 'example.com/signer-name'") in got
    assert ("FieldValueInvalid", "spec.expirationSeconds",
            "Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)") in got
    assert any(f == "spec.usages[1]" and r == "FieldValueNotSupported" for r, f, _ in got)
    r = await api.create(CSRS, csr("b", request))
    obj = r.json()
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}
    got = causes(await api.request("PUT", f"{CSRS}/b/approval", obj))
    assert any(f == "status.conditions" and m.endswith("Approved and Denied conditions are mutually exclusive")
               for _, f, m in got)


# ------------------------------------------------------------ admissionregistration


def webhook(name: str = "check.example.com", **extra: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                            "clientConfig": {"service": {"namespace": "default", "name": "hook"}},
                            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                       "resources": ["pods"]}]}
    hook.update(extra)
    return hook


async def test_webhook_configurations_defaults_table_refusals(env: Env) -> None:
    api = env.api
    for plural, kind in (("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
                         ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration")):
        r = await api.create(f"{AR}/{plural}", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                                "metadata": {"name": "w"}, "webhooks": [webhook()]})
        assert r.status == 201, r.body
        hook = r.json()["webhooks"][0]
        assert (hook["failurePolicy"], hook["matchPolicy"], hook["timeoutSeconds"]) == ("Fail", "Equivalent", 10)
        assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
        assert hook["rules"][0]["scope"] == "*" and hook["clientConfig"]["service"]["port"] == 443
        assert (hook.get("reinvocationPolicy") == "Never") == (kind == "MutatingWebhookConfiguration")
        assert r.json()["metadata"]["generation"] == 1
        t = (await api.request("GET", f"{AR}/{plural}", headers=TABLE)).json()
        assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
        assert t["rows"][0]["cells"][:2] == ["w", 1]
        bad = webhook("short", timeoutSeconds=31, clientConfig={"url": "http://x.example.com/h"})
        del bad["sideEffects"], bad["admissionReviewVersions"]
        got = causes(await api.create(f"{AR}/{plural}", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "bad"},
            "webhooks": [bad, webhook(), webhook()]}))
        assert ("FieldValueInvalid", "webhooks[0].name",
                'Invalid value: "short": should be a domain with at least three segments separated by dots') in got
        assert ("FieldValueRequired", "webhooks[0].sideEffects",
                "Required value: must specify one of None, NoneOnDryRun") in got
        assert ("FieldValueRequired", "webhooks[0].admissionReviewVersions",
                "Required value: must specify one of v1, v1beta1") in got
        assert ("FieldValueInvalid", "webhooks[0].timeoutSeconds",
                "Invalid value: 31: the timeout value must be between 1 and 30 seconds") in got
        assert ("FieldValueInvalid", "webhooks[0].clientConfig.url",
                "Invalid value: \"http://x.example.com/h\": 'https' is the only allowed URL scheme") in got
        assert ("FieldValueDuplicate", "webhooks[2].name", 'Duplicate value: "check.example.com"') in got


async def test_validating_admission_policy_and_binding(env: Env) -> None:
    api = env.api
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "replicas"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                               "operations": ["CREATE", "UPDATE"],
                                                               "resources": ["deployments"]}]},
                       "validations": [{"expression": "object.spec.replicas <= 5"}]}}
    r = await api.create(f"{AR}/validatingadmissionpolicies", policy)
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert spec["matchConstraints"]["namespaceSelector"] == {} and spec["matchConstraints"]["objectSelector"] == {}
    assert spec["matchConstraints"]["resourceRules"][0]["scope"] == "*"
    obj = r.json()
    obj["status"] = {"observedGeneration": 1, "typeChecking": {}, "conditions": [
        {"type": "Ready", "status": "True", "reason": "r", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    r = await api.request("PUT", f"{AR}/validatingadmissionpolicies/replicas/status", obj)
    assert r.status == 200, r.body
    assert r.json()["status"]["observedGeneration"] == 1
    t = (await api.request("GET", f"{AR}/validatingadmissionpolicies", headers=TABLE)).json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Validations", "ParamKind", "Age"]
    assert t["rows"][0]["cells"][:3] == ["replicas", 1, "<unset>"]
    got = causes(await api.create(f"{AR}/validatingadmissionpolicies", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "empty"}, "spec": {"failurePolicy": "Sometimes"}}))
    assert ("FieldValueRequired", "spec.validations",
            "Required value: validations or auditAnnotations must contain at least one item") in got
    assert any(f == "spec.failurePolicy" and r == "FieldValueNotSupported" for r, f, _ in got)
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "b"}, "spec": {"policyName": "replicas", "validationActions": ["Deny"],
                                                   "paramRef": {"name": "p", "namespace": "default"}}}
    r = await api.create(f"{AR}/validatingadmissionpolicybindings", binding)
    assert r.status == 201, r.body
    assert r.json()["spec"]["paramRef"]["parameterNotFoundAction"] == "Deny"
    t = (await api.request("GET", f"{AR}/validatingadmissionpolicybindings", headers=TABLE)).json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "PolicyName", "ParamRef", "Age"]
    assert t["rows"][0]["cells"][:3] == ["b", "replicas", "default/p"]
    binding["metadata"]["name"] = "bad"
    binding["spec"] = {"validationActions": []}
    got = causes(await api.create(f"{AR}/validatingadmissionpolicybindings", binding))
    assert ("FieldValueRequired", "spec.policyName", "Required value") in got
    assert ("FieldValueRequired", "spec.validationActions",
            "Required value: at least one validation action is required") in got


# ------------------------------------------------------------ apiregistration


async def test_api_services_listed_and_available(env: Env) -> None:
    api = env.api
    t = (await api.request("GET", APISERVICES, headers=TABLE)).json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Service", "Available", "Age"]
    rows = {row["cells"][0]: row["cells"][1:3] for row in t["rows"]}
    for name in ("v1.", "v1.apps", "v2.autoscaling", "v1.autoscaling", "v1.certificates.k8s.io",
                 "v1.apiregistration.k8s.io", "v1.admissionregistration.k8s.io"):
        assert rows.get(name) == ["Local", "True"], (name, rows.get(name))
    core = (await api.request("GET", f"{APISERVICES}/v1.")).json()
    assert core["spec"] == {"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert core["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    cond = core["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Available", "True", "Local")
    apps = (await api.request("GET", f"{APISERVICES}/v1.apps")).json()
    assert (apps["spec"]["groupPriorityMinimum"], apps["spec"]["versionPriority"]) == (17800, 15)
    # a name that is not version.group, priorities out of range
    got = causes(await api.create(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.wrong.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1001,
                 "caBundle": base64.b64encode(b"x" * 30).decode()}}))
    assert ("FieldValueInvalid", "metadata.name",
            'Invalid value: "v1.wrong.io": must be `spec.version+"."+spec.group`: "v1.metrics.k8s.io"') in got
    assert ("FieldValueInvalid", "spec.groupPriorityMinimum",
            "Invalid value: 0: must be positive and less than 20000") in got
    assert ("FieldValueInvalid", "spec.versionPriority",
            "Invalid value: 1001: must be positive and less than 1000") in got
    assert any(f == "spec.caBundle" and m.endswith("local APIServices may not have a caBundle") for _, f, m in got)
    # an aggregated one is stored with its service (port defaulted) and printed with it
    r = await api.create(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "insecureSkipTLSVerify": True,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}}})
    assert r.status == 201, r.body
    assert r.json()["spec"]["service"]["port"] == 443
    t = (await api.request("GET", f"{APISERVICES}/v1beta1.metrics.k8s.io", headers=TABLE)).json()
    assert t["rows"][0]["cells"][1:3] == ["kube-system/metrics-server", "Unknown"]


async def test_api_services_follow_the_table(env: Env) -> None:
    from kapi.apis.core.configmaps import CONFIG_MAPS
    from dataclasses import replace
    api = env.api
    extra = replace(CONFIG_MAPS, group="widgets.example.com", version="v1alpha1", resource="widgets", kind="Widget",
                    strategy=type(CONFIG_MAPS.strategy)())
    api.registry.table.add(extra)
    svc = await wait_for(api, f"{APISERVICES}/v1alpha1.widgets.example.com",
                         lambda o: o.get("kind") == "APIService" and (o.get("status") or {}).get("conditions"))
    assert (svc["spec"]["groupPriorityMinimum"], svc["spec"]["versionPriority"]) == (1000, 100)
    assert svc["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    api.registry.table.remove("widgets.example.com", "v1alpha1", "widgets")
    await wait_for(api, f"{APISERVICES}/v1alpha1.widgets.example.com", lambda o: o.get("code") == 404)


async def test_discovery_lists_the_groups(env: Env) -> None:
    api = env.api
    groups = (await api.request("GET", "/apis")).json()["groups"]
    names = [g["name"] for g in groups]
    assert names[0] == "apiregistration.k8s.io"
    autoscaling = next(g for g in groups if g["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]
    assert autoscaling["preferredVersion"]["version"] == "v2"
    for gv, plural in (("certificates.k8s.io/v1", "certificatesigningrequests"),
                       ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies"),
                       ("apiregistration.k8s.io/v1", "apiservices")):
        resources = {r["name"] for r in (await api.request("GET", f"/apis/{gv}")).json()["resources"]}
        assert plural in resources
    resources = {r["name"] for r in (await api.request("GET", "/apis/certificates.k8s.io/v1")).json()["resources"]}
    assert {"certificatesigningrequests/approval", "certificatesigningrequests/status"} <= resources
    core = {r["name"] for r in (await api.request("GET", "/api/v1")).json()["resources"]}
    assert {"replicationcontrollers", "replicationcontrollers/scale", "limitranges", "resourcequotas",
            "resourcequotas/status"} <= core
