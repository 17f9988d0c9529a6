"""The certificates.k8s.io admission plugins (kube's plugin/pkg/admission/certificates/...):

- CertificateApproval: approving or denying a CSR (its ``approval`` subresource) needs ``approve`` on
  ``signers`` (certificates.k8s.io) named as the stored CSR's signerName, or ``<domain>/*``;
- CertificateSigning: writing a CSR's ``status`` that changes its certificate or conditions needs
  ``sign`` on the signer the same way;
- CertificateSubjectRestriction: a CSR for ``kubernetes.io/kube-apiserver-client`` may not ask for
  the ``system:masters`` organization;
- ClusterTrustBundleAttest: a ClusterTrustBundle with a signerName needs ``attest`` on the signer
  (acts only where clustertrustbundles are served; changes of only owners, finalizers or managed
  fields pass).

Refusals are 403 with kube's messages. Without an authorizer (the server's own writes) all pass.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, forbidden
from kapi.object.access import Attributes as AccessAttributes, UserInfo
from kapi.object.validation.certificates import decode_bytes, pem_blocks
from kapi.registry.admit import CREATE, UPDATE
from kapi.registry.strategy import Access

Obj = dict[str, Any]

GROUP: Final = "certificates.k8s.io"
KUBE_APISERVER_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client"
_CSRS: Final = frozenset(((GROUP, "certificatesigningrequests"),))


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_csr(request: object) -> Any:
    """certificates.ParseCSR: the PEM ``CERTIFICATE REQUEST`` of a CSR's ``spec.request`` (base64 in JSON),
    signature checked; raises ValueError with Go's text."""
    data = decode_bytes(request) if isinstance(request, str) else request if isinstance(request, bytes) else None
    blocks = pem_blocks(data or b"")
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    from cryptography import x509
    try:
        csr = x509.load_pem_x509_csr(blocks[0][1])
    except ValueError as exc:
        raise ValueError(f"asn1: {exc}") from None
    if not csr.is_signature_valid:
        raise ValueError("x509: signature verification failure")
    return csr


def _signer_attributes(user: UserInfo, verb: str, name: str) -> AccessAttributes:
    return AccessAttributes(user=user, verb=verb, group=GROUP, version="*", resource="signers", name=name)


async def authorized_for_signer(access: Access | None, user: UserInfo, verb: str, signer: str) -> bool:
    """kube's IsAuthorizedForSignerName: ``verb`` on the signer by name, else on ``<domain>/*``."""
    if access is None:
        return True
    if (await access.authorize(_signer_attributes(user, verb, signer))).allowed:
        return True
    domain = signer.split("/")[0]
    return (await access.authorize(_signer_attributes(user, verb, f"{domain}/*"))).allowed


def _signer(csr: object) -> str:
    return str(_d(_d(csr).get("spec")).get("signerName") or "")


class CertificateApproval(Plugin):
    name = "CertificateApproval"
    operations = frozenset((UPDATE,))
    resources = _CSRS

    async def validate(self, a: Attributes) -> None:
        if a.subresource != "approval":
            return
        # Checked against the stored CSR: an approval may not change the signer anyway.
        signer = _signer(a.old)
        if not await authorized_for_signer(self.deps.access, a.user, "approve", signer):
            raise forbidden(a, f'user not permitted to approve requests with signerName "{signer}"')


class CertificateSigning(Plugin):
    name = "CertificateSigning"
    operations = frozenset((UPDATE,))
    resources = _CSRS

    async def validate(self, a: Attributes) -> None:
        if a.subresource != "status":
            return
        old, new = _d(_d(a.old).get("status")), _d(_d(a.obj).get("status"))
        if old.get("certificate") == new.get("certificate") and \
                (old.get("conditions") or []) == (new.get("conditions") or []):
            return
        signer = _signer(a.old)
        if not await authorized_for_signer(self.deps.access, a.user, "sign", signer):
            raise forbidden(a, f'user not permitted to sign requests with signerName "{signer}"')


class CertificateSubjectRestriction(Plugin):
    name = "CertificateSubjectRestriction"
    operations = frozenset((CREATE,))
    resources = _CSRS

    async def validate(self, a: Attributes) -> None:
        if a.subresource or _signer(a.obj) != KUBE_APISERVER_CLIENT_SIGNER:
            return
        try:
            csr = parse_csr(_d(_d(a.obj).get("spec")).get("request"))
        except ValueError as exc:
            raise forbidden(a, f"failed to parse CSR: {exc}") from None
        from cryptography.x509.oid import NameOID
        if any(o.value == "system:masters" for o in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)):
            raise forbidden(a, f"use of {KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed")


def only_gc_fields_changed(new: object, old: object) -> bool:
    """kube's rbac.IsOnlyMutatingGCFields: the objects equal but for owner references, finalizers and
    managed fields (and the resourceVersion an unconditional update leaves out)."""
    if not isinstance(new, dict) or not isinstance(old, dict):
        return False
    copied = copy.deepcopy(new)
    md, old_md = copied.setdefault("metadata", {}), _d(old.get("metadata"))
    for key in ("ownerReferences", "finalizers", "selfLink", "managedFields", "resourceVersion"):
        md.pop(key, None)
        if key in old_md:
            md[key] = old_md[key]
    return bool(copied == old)


class ClusterTrustBundleAttest(Plugin):
    name = "ClusterTrustBundleAttest"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset(((GROUP, "clustertrustbundles"),))

    async def validate(self, a: Attributes) -> None:
        signer = _signer(a.obj)
        if not signer:
            return
        if a.operation == UPDATE and only_gc_fields_changed(a.obj, a.old):
            return
        if not await authorized_for_signer(self.deps.access, a.user, "attest", signer):
            raise forbidden(a, f'user not permitted to attest for signerName "{signer}"')


__all__ = ["CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction", "ClusterTrustBundleAttest",
           "authorized_for_signer", "only_gc_fields_changed", "parse_csr"]
