"""kube's csrsigning controller for the ``kubernetes.io/kube-apiserver-client`` signer: an approved,
not failed, not yet issued CertificateSigningRequest of that signer gets a client certificate signed by
kapi's CA in ``status.certificate``.

As kube's (pkg/controller/certificates/signer): the requested ``spec.expirationSeconds`` is honoured
(at least 600 s, at most ``max_duration_s``, never past the CA's own expiry); the certificate is
backdated 5 minutes; its subject and SANs are the request's; its key usages and extended key usages
are the CSR's ``spec.usages``. A request this signer may not sign (usages other than client auth,
digital signature, key encipherment; a CA request) gets a ``Failed`` condition (reason
``SignerValidationFailure``) instead, as kube's.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from typing import Any

import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from kapi import errors
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.object import meta
from kapi.registry.informer import Informer, Item
from kapi.registry.store import Registry, WriteOptions

__all__ = ["GROUP", "RESOURCE", "SIGNER", "CSRSigningController", "sign_request"]

log = logging.getLogger("kapi.controllers.csrsigning")
Obj = dict[str, Any]
GROUP = "certificates.k8s.io"
RESOURCE = "certificatesigningrequests"
SIGNER = "kubernetes.io/kube-apiserver-client"
MIN_DURATION_S = 600
DEFAULT_MAX_DURATION_S = 365 * 24 * 3600  # kube-controller-manager's --cluster-signing-duration
_BACKDATE = dt.timedelta(minutes=5)
_CLIENT_USAGES = frozenset({"client auth", "digital signature", "key encipherment"})
_KEY_USAGES = {"digital signature": "digital_signature", "content commitment": "content_commitment",
               "key encipherment": "key_encipherment", "key agreement": "key_agreement",
               "data encipherment": "data_encipherment", "cert sign": "key_cert_sign", "crl sign": "crl_sign",
               "encipher only": "encipher_only", "decipher only": "decipher_only"}
_EXT_USAGES = {"client auth": ExtendedKeyUsageOID.CLIENT_AUTH, "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
               "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
               "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
               "timestamping": ExtendedKeyUsageOID.TIME_STAMPING, "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING}


def _conditions(csr: Obj) -> list[Obj]:
    conds = (csr.get("status") or {}).get("conditions")
    return [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []


def wants_signing(csr: Obj) -> bool:
    """Approved, not failed or denied, no certificate yet, and of this signer."""
    types = {c.get("type") for c in _conditions(csr) if c.get("status") == "True"}
    return (csr.get("spec") or {}).get("signerName") == SIGNER and "Approved" in types and \
        not types & {"Denied", "Failed"} and not (csr.get("status") or {}).get("certificate")


def refusal(csr: Obj) -> str:
    """Why this signer may not sign the request ("" if it may): kube's ValidateKubeAPIServerClientCSR."""
    usages = set((csr.get("spec") or {}).get("usages") or [])
    if "client auth" not in usages:
        return "missing required usages: [client auth]"
    extra = sorted(usages - _CLIENT_USAGES)
    if extra:
        return f"invalid usages for kube-apiserver-client signer: {extra}".replace("'", "")
    return ""


def sign_request(csr: Obj, ca_cert: x509.Certificate, ca_key: Any, *, max_duration_s: int = DEFAULT_MAX_DURATION_S,
                 now: dt.datetime | None = None) -> bytes:
    """The PEM certificate for ``csr`` (its spec.request), signed by the CA."""
    spec = csr.get("spec") or {}
    request = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
    now = now or dt.datetime.now(dt.timezone.utc)
    seconds = spec.get("expirationSeconds")
    duration = max_duration_s if not isinstance(seconds, int) else max(MIN_DURATION_S, min(seconds, max_duration_s))
    not_after = min(now + dt.timedelta(seconds=duration), ca_cert.not_valid_after_utc)
    usages = list(spec.get("usages") or [])
    flags = {v: False for v in _KEY_USAGES.values()}
    for u in usages:
        if u in _KEY_USAGES:
            flags[_KEY_USAGES[u]] = True
    builder = (x509.CertificateBuilder().subject_name(request.subject).issuer_name(ca_cert.subject)
               .public_key(request.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - _BACKDATE).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if any(flags.values()):  # Go's x509 leaves out a KeyUsage with no bit set
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    ext = [_EXT_USAGES[u] for u in usages if u in _EXT_USAGES]
    if ext:
        builder = builder.add_extension(x509.ExtendedKeyUsage(ext), critical=False)
    try:
        san = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        builder = builder.add_extension(san, critical=False)
    except x509.ExtensionNotFound:
        pass
    try:
        aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key())  # type: ignore[arg-type]
        builder = builder.add_extension(aki, critical=False)
    except (TypeError, ValueError):
        pass
    algorithm = None if isinstance(ca_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = builder.sign(ca_key, algorithm)  # type: ignore[arg-type]
    return cert.public_bytes(serialization.Encoding.PEM)


class CSRSigningController:
    """Signs approved kube-apiserver-client CSRs with kapi's CA, from the shared CSR informer."""

    def __init__(self, registry: Registry, informer: Informer, ca_cert_pem: bytes, ca_key_pem: bytes, *,
                 max_duration_s: int = DEFAULT_MAX_DURATION_S, writes: Writes | None = None) -> None:
        self.registry = registry
        self.writer = (writes or Writes(registry)).controller("certificate-controller")
        self.informer = informer
        self.resource = informer.res
        self.ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
        key = serialization.load_pem_private_key(ca_key_pem, None)
        if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey, ed25519.Ed25519PrivateKey)):
            raise ValueError("the CA key is not an ECDSA, RSA or Ed25519 key")
        self.ca_key = key
        self.max_duration_s = max_duration_s
        self._queue = WorkQueue()
        informer.add_handler(on_add=self._offer, on_update=lambda _old, new: self._offer(new))

    def _offer(self, item: Item) -> None:
        try:
            if wants_signing(item.object()):
                self._queue.add(item.name)
        except Exception:  # undecodable (the informer logs it)
            pass

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.informer.wait_for_sync()
        for item in list(self.informer.items()):
            self._offer(item)
        task_status.started()
        while True:
            name = await self._queue.get()
            try:
                await self.sync(name)
            except errors.StatusError as err:
                log.warning("signing certificatesigningrequest %s: %s", name, err.message)
                await trio.sleep(0.5)
                self._queue.add(name)

    async def sync(self, name: str) -> bool:
        """Sign (or fail) one CSR; whether it wrote."""
        try:
            csr = await self.registry.get(self.resource, "", name)
        except errors.NotFound:
            return False
        if not wants_signing(csr):
            return False
        status = csr.setdefault("status", {})
        problem = refusal(csr)
        if not problem:
            try:
                pem = sign_request(csr, self.ca_cert, self.ca_key, max_duration_s=self.max_duration_s)
            except (ValueError, TypeError, KeyError) as exc:
                problem = f"unable to parse csr: {exc}"
            else:
                status["certificate"] = base64.b64encode(pem).decode()
        if problem:
            now = meta.now_rfc3339()
            status.setdefault("conditions", []).append({
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": problem,
                "lastUpdateTime": now, "lastTransitionTime": now})
        await self.writer.update(self.resource, "", name, csr, WriteOptions(field_manager="kube-controller-manager"),
                                 "status")
        return True
