"""certificates.k8s.io/v1 CertificateSigningRequests (kube's pkg/apis/certificates/validation): the PEM
request, signerName, expirationSeconds, usages, conditions and the issued certificate."""

from __future__ import annotations

import base64
import binascii
import re

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _i, _l, _s, field_duplicate, field_forbidden, field_invalid,
    field_not_supported, field_required, unique_causes)
from kapi.object.validation.names import is_dns1123_subdomain

VALID_USAGES = ("any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
                "data encipherment", "decipher only", "digital signature", "email protection", "encipher only",
                "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
                "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
                "timestamping")
_ONCE = ("Approved", "Denied", "Failed")
_PEM_RE = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)


def decode_bytes(value: object) -> bytes | None:
    """A []byte field's JSON value (base64) as bytes; None when it is not base64."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    return [(m.group(1).decode(), m.group(0)) for m in _PEM_RE.finditer(data)]


def parse_csr_error(data: bytes) -> str:
    """certificates.ParseCSR's error text, "" when the request parses."""
    blocks = pem_blocks(data)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    from cryptography import x509
    try:
        csr = x509.load_pem_x509_csr(blocks[0][1])
    except ValueError as exc:
        return f"asn1: {exc}"
    if not csr.is_signature_valid:
        return "x509: ECDSA verification failure" if "EllipticCurve" in type(csr.public_key()).__name__ \
            else "crypto/rsa: verification error"
    return ""


def _signer_name(value: str, path: str) -> list[Cause]:
    """ValidateSignerName: a domain, a slash, a path."""
    if not value:
        return [field_required(path)]
    parts = value.split("/")
    if len(parts) < 2:
        return [field_invalid(path, value, "must be a fully qualified domain and path of the form "
                              "'example.com/signer-name'")]
    domain, rest = parts[0], "/".join(parts[1:])
    errs = [field_invalid(path, value, f"validating domain component: {m}") for m in is_dns1123_subdomain(domain)]
    if not rest:
        errs.append(field_invalid(path, value, "path component of signerName must not be empty"))
    return errs


def _conditions(status: Obj) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, cond in enumerate(_l(status.get("conditions"))):
        cond, p = _d(cond), f"status.conditions[{i}]"
        kind = _s(cond.get("type"))
        if not kind:
            errs.append(field_required(f"{p}.type"))
        st = _s(cond.get("status"))
        if kind in _ONCE:
            if kind in seen:
                errs.append(field_duplicate(f"{p}.type", kind))
            seen.add(kind)
            if st != "True":
                errs.append(field_not_supported(f"{p}.status", st, ("True",)))
        elif st not in ("True", "False", "Unknown"):
            errs.append(field_not_supported(f"{p}.status", st, ("False", "True", "Unknown")))
    if "Approved" in seen and "Denied" in seen:
        errs.append(field_invalid("status.conditions", status.get("conditions"),
                                  "Approved and Denied conditions are mutually exclusive"))
    cert = status.get("certificate")
    if cert:
        data = decode_bytes(cert)
        blocks = pem_blocks(data or b"")
        if not blocks:
            errs.append(field_invalid("status.certificate", "<certificate data>",
                                      "must contain at least one CERTIFICATE PEM block"))
        elif any(kind != "CERTIFICATE" for kind, _ in blocks):
            errs.append(field_invalid("status.certificate", "<certificate data>",
                                      "only CERTIFICATE PEM blocks are allowed, found \"" +
                                      next(k for k, _ in blocks if k != "CERTIFICATE") + "\""))
        if "Denied" in seen or "Failed" in seen:
            errs.append(field_forbidden("status.certificate",
                                        "certificate may not be set when Denied or Failed conditions are present"))
    return errs


@unique_causes
def validate_csr(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs: list[Cause] = []
    request = decode_bytes(spec.get("request"))
    if not spec.get("request"):
        errs.append(field_required("spec.request"))
    else:
        problem = "illegal base64 data" if request is None else parse_csr_error(request)
        if problem:
            errs.append(field_invalid("spec.request", "<request data>", problem))
    errs += _signer_name(_s(spec.get("signerName")), "spec.signerName")
    seconds = _i(spec.get("expirationSeconds"))
    if seconds is not None and seconds < 600:
        errs.append(field_invalid("spec.expirationSeconds", seconds,
                                  "may not specify a duration less than 600 seconds (10 minutes)"))
    usages = _l(spec.get("usages"))
    if not usages:
        errs.append(field_required("spec.usages"))
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        if usage not in VALID_USAGES:
            errs.append(field_not_supported(f"spec.usages[{i}]", usage, VALID_USAGES))
        if usage in seen:
            errs.append(field_duplicate(f"spec.usages[{i}]", usage))
        seen.add(_s(usage))
    errs += _conditions(_d(obj.get("status")))
    return errs


def _count(obj: Obj, kind: str) -> int:
    return sum(1 for c in _l(_d(obj.get("status")).get("conditions")) if _d(c).get("type") == kind)


def _kept_conditions(new: Obj, old: Obj, *, approval: bool = True) -> list[Cause]:
    """No Approved, Denied or Failed condition goes; only the approval subresource (or the main
    resource, whose status stays as it was) adds Approved or Denied ones; a certificate, once issued,
    stays as it is (kube's validateCertificateSigningRequestUpdate)."""
    errs: list[Cause] = []
    for kind in ("Approved", "Denied", "Failed"):
        if _count(new, kind) < _count(old, kind):
            errs.append(field_forbidden("status.conditions", f'updates may not remove a condition of type "{kind}"'))
    for kind in ("Approved", "Denied") if not approval else ():
        if _count(new, kind) > _count(old, kind):
            errs.append(field_forbidden("status.conditions", f'updates may not add a condition of type "{kind}"'))
    old_cert = _d(old.get("status")).get("certificate")
    if old_cert and _d(new.get("status")).get("certificate") != old_cert:
        errs.append(field_forbidden("status.certificate", "updates may not modify existing certificate content"))
    return errs


@unique_causes
def validate_csr_update(new: Obj, old: Obj) -> list[Cause]:
    return _conditions(_d(new.get("status"))) + _kept_conditions(new, old)


@unique_causes
def validate_csr_status_update(new: Obj, old: Obj) -> list[Cause]:
    return _conditions(_d(new.get("status"))) + _kept_conditions(new, old, approval=False)
