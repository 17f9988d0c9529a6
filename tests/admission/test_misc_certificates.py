"""CertificateApproval, CertificateSigning and CertificateSubjectRestriction (on by default) through the
API with --authorization-mode RBAC: approving needs ``approve`` on the CSR's signer (by name or
``<domain>/*``), writing a certificate or condition through ``status`` needs ``sign``, and a
kube-apiserver-client CSR may not ask for system:masters; ClusterTrustBundleAttest directly (its
resource is not served)."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kapi import errors
from kapi.admission.plugin import Attributes, Objects, PluginDeps
from kapi.admission.plugins.certificates import ClusterTrustBundleAttest, only_gc_fields_changed, parse_csr
from kapi.object.access import ALLOW, NO_OPINION, Attributes as AccessAttributes, Decision, UserInfo
from kapi.registry.admit import CREATE, UPDATE, AdmissionRequest
from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMIN = "admin-token"
TOKENS = ('approver-token,approver,,""\nwild-token,wild,,""\nclerk-token,clerk,,""\nsigner-token,signer,,""\n')


def csr_request(cn: str = "jane", orgs: tuple[str, ...] = ("devs",)) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs] + [
        x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(name)).sign(key, hashes.SHA256())
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str, signer: str = "example.com/foo", orgs: tuple[str, ...] = ("devs",)) -> Obj:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": csr_request(orgs=orgs), "signerName": signer, "usages": ["client auth"]}}


async def grant(api: Api, user: str, rules: list[Obj]) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
            "rules": rules}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    for path, obj in ((f"{RBAC}/clusterroles", role), (f"{RBAC}/clusterrolebindings", binding)):
        r = await api.create(path, obj, token=ADMIN)
        assert r.status == 201, r.json()


CSR_RULE = {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests",
                                                                "certificatesigningrequests/approval",
                                                                "certificatesigningrequests/status"],
            "verbs": ["get", "update", "patch"]}


def signers(verb: str, *names: str) -> Obj:
    return {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "verbs": [verb],
            "resourceNames": list(names)}


@pytest.fixture
async def rbac_api(nursery: trio.Nursery, tmp_path: Path) -> Api:
    api = await serve_with_informers(nursery, tmp_path, ("RBAC",), TOKENS, policy=True, admin_token=ADMIN)
    await grant(api, "approver", [CSR_RULE, signers("approve", "example.com/foo")])
    await grant(api, "wild", [CSR_RULE, signers("approve", "example.com/*")])
    await grant(api, "clerk", [CSR_RULE])
    await grant(api, "signer", [CSR_RULE, signers("sign", "example.com/foo")])
    return api


async def until_allowed(api: Api, token: str) -> None:
    """RBAC reads roles from informers: wait until the user's grant is in effect."""
    with trio.fail_after(10):
        while (await api.request("GET", f"{CSRS}/none", token=token)).status == 403:
            await trio.sleep(0.01)


def approved(obj: Obj, kind: str = "Approved") -> Obj:
    obj["status"] = {"conditions": [{"type": kind, "status": "True", "reason": "Test", "message": "ok"}]}
    return obj


async def test_approval_needs_approve_on_the_signer(rbac_api: Api) -> None:
    api = rbac_api
    for user in ("approver", "wild", "clerk"):
        await until_allowed(api, f"{user}-token")
    for name in ("a", "b", "c", "d"):
        assert (await api.create(CSRS, csr(name), token=ADMIN)).status == 201
    other = csr("other", signer="other.io/x")
    assert (await api.create(CSRS, other, token=ADMIN)).status == 201

    async def approve(name: str, token: str, kind: str = "Approved") -> Any:
        obj = (await api.request("GET", f"{CSRS}/{name}", token=ADMIN)).json()
        return await api.request("PUT", f"{CSRS}/{name}/approval", approved(obj, kind), token=token)

    r = await approve("a", "clerk-token")
    assert r.status == 403
    assert r.json()["message"] == ('certificatesigningrequests.certificates.k8s.io "a" is forbidden: user not '
                                   'permitted to approve requests with signerName "example.com/foo"')
    r = await approve("a", "clerk-token", "Denied")  # denying is approving's other half
    assert r.status == 403
    assert (await approve("a", "approver-token")).status == 200
    assert (await approve("b", "wild-token")).status == 200  # example.com/* covers the domain's signers
    assert (await approve("other", "wild-token")).status == 403
    assert (await approve("other", "approver-token")).status == 403
    assert (await approve("c", ADMIN)).status == 200  # system:masters may do anything
    # a main-resource update by the clerk is not an approval
    obj = (await api.request("GET", f"{CSRS}/d", token=ADMIN)).json()
    obj["metadata"]["labels"] = {"x": "y"}
    assert (await api.request("PUT", f"{CSRS}/d", obj, token="clerk-token")).status == 200


async def test_signing_needs_sign_on_the_signer(rbac_api: Api) -> None:
    api = rbac_api
    for user in ("signer", "clerk"):
        await until_allowed(api, f"{user}-token")
    assert (await api.create(CSRS, csr("s"), token=ADMIN)).status == 201
    obj = (await api.request("GET", f"{CSRS}/s", token=ADMIN)).json()
    r = await api.request("PUT", f"{CSRS}/s/approval", approved(obj), token=ADMIN)
    assert r.status == 200, r.json()
    obj = r.json()
    # a status write that changes neither certificate nor conditions is not signing
    obj["metadata"]["labels"] = {"a": "b"}
    r = await api.request("PUT", f"{CSRS}/s/status", obj, token="clerk-token")
    assert r.status == 200, r.json()
    obj = r.json()
    obj["status"]["conditions"].append({"type": "Failed", "status": "True", "reason": "Broken", "message": "no"})
    r = await api.request("PUT", f"{CSRS}/s/status", obj, token="clerk-token")
    assert r.status == 403
    assert r.json()["message"] == ('certificatesigningrequests.certificates.k8s.io "s" is forbidden: user not '
                                   'permitted to sign requests with signerName "example.com/foo"')
    r = await api.request("PUT", f"{CSRS}/s/status", obj, token="signer-token")
    assert r.status == 200, r.json()


async def test_no_system_masters_for_the_client_signer(rbac_api: Api) -> None:
    api = rbac_api
    r = await api.create(CSRS, csr("m", "kubernetes.io/kube-apiserver-client", ("devs", "system:masters")), token=ADMIN)
    assert r.status == 403
    assert r.json()["message"] == ('certificatesigningrequests.certificates.k8s.io "m" is forbidden: use of '
                                   "kubernetes.io/kube-apiserver-client signer with system:masters group is not "
                                   "allowed")
    assert (await api.create(CSRS, csr("n", "kubernetes.io/kube-apiserver-client"), token=ADMIN)).status == 201
    assert (await api.create(CSRS, csr("o", "example.com/foo", ("system:masters",)), token=ADMIN)).status == 201


def test_parse_csr() -> None:
    assert parse_csr(csr_request("x")).subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "x"
    with pytest.raises(ValueError, match="PEM block type must be CERTIFICATE REQUEST"):
        parse_csr(base64.b64encode(b"nope").decode())


class Access:
    def __init__(self, *allowed: tuple[str, str]) -> None:
        self.allowed = set(allowed)

    async def authorize(self, attrs: AccessAttributes) -> Decision:
        ok = attrs.resource == "signers" and attrs.group == "certificates.k8s.io" and \
            (attrs.verb, attrs.name) in self.allowed
        return Decision(ALLOW if ok else NO_OPINION)


async def test_cluster_trust_bundle_attest(rbac_api: Api) -> None:
    registry = rbac_api.registry
    csrs = registry.table.get("certificates.k8s.io", "v1", "certificatesigningrequests")
    assert csrs is not None  # a stand-in: only the resource's name and group matter here
    res = dataclasses.replace(csrs, version="v1beta1", resource="clustertrustbundles", kind="ClusterTrustBundle")
    plugin = ClusterTrustBundleAttest(PluginDeps(registry, Objects(registry, None),
                                                 access=Access(("attest", "example.com/*"))))  # type: ignore[arg-type]
    assert plugin.interested(CREATE, "certificates.k8s.io", "clustertrustbundles")

    def bundle(signer: str, **md: Any) -> Obj:
        return {"metadata": {"name": "b", **md}, "spec": {"signerName": signer, "trustBundle": "pem"}}

    async def check(op: str, new: Obj, old: Obj | None = None) -> None:
        await plugin.validate(Attributes(AdmissionRequest(op, res, "", "", "b", new, old), UserInfo("u"), {}, []))

    await check(CREATE, bundle(""))
    await check(CREATE, bundle("example.com/a"))
    with pytest.raises(errors.Forbidden) as info:
        await check(CREATE, bundle("other.io/a"))
    assert str(info.value) == ('clustertrustbundles.certificates.k8s.io "b" is forbidden: user not permitted to '
                               'attest for signerName "other.io/a"')
    # only owners or finalizers changing: no attest check (garbage collection, storage migration)
    old = bundle("other.io/a")
    await check(UPDATE, bundle("other.io/a", finalizers=["x"]), old)
    with pytest.raises(errors.Forbidden):
        await check(UPDATE, bundle("other.io/a", labels={"a": "b"}), old)
    assert only_gc_fields_changed(bundle("s", ownerReferences=[{}], resourceVersion="3"), bundle("s"))
    assert not only_gc_fields_changed(bundle("s"), None)
