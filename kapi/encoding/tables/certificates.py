"""Table printer of certificates.k8s.io CertificateSigningRequests (``printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import (AGE, NAME, Obj, Printer, as_int, as_list, as_map, as_str, column,
    human_duration, since)

_COLUMNS: Final = (
    NAME,
    AGE,
    column("SignerName", "string", "Requested signer for the request. It is a qualified name in the form: "
           "`scope-hostname.io/name`. If empty, it will be defaulted: 1. If it's a kubelet client certificate, it "
           "is assigned \"kubernetes.io/kube-apiserver-client-kubelet\". 2. If it's a kubelet serving "
           "certificate, it is assigned \"kubernetes.io/kubelet-serving\". 3. Otherwise, it is assigned "
           "\"kubernetes.io/legacy-unknown\". Distribution of trust for signers happens out of band. You can "
           "select on this field using `spec.signerName`."),
    column("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
    column("RequestedDuration", "string", "expirationSeconds is the requested duration of validity of the issued "
           "certificate. The certificate signer may issue a certificate with a different validity duration so a "
           "client must check the delta between the notBefore and and notAfter fields in the issued certificate "
           "to determine the actual duration."),
    column("Condition", "string", "Conditions applied to the request, such as approval or denial."),
)


def csr_condition(obj: Obj) -> str:
    """extractCSRStatus: Denied, Approved or Pending, then Failed and Issued."""
    status = as_map(obj.get("status"))
    types = {as_map(c).get("type") for c in as_list(status.get("conditions"))}
    out = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        out += ",Failed"
    if status.get("certificate"):
        out += ",Issued"
    return out


def _row(obj: Obj, now: float) -> list[Any]:
    md, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    seconds = spec.get("expirationSeconds")
    duration = human_duration(as_int(seconds)) if seconds is not None else "<none>"
    return [as_str(md.get("name")), since(md.get("creationTimestamp"), now), as_str(spec.get("signerName")) or
            "<none>", as_str(spec.get("username")), duration, csr_condition(obj)]


CERTIFICATE_SIGNING_REQUEST: Final = Printer(_COLUMNS, _row)
