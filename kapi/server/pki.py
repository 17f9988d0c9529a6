"""The server's own CA, serving certificate, admin credential and admin kubeconfig."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
              "kubernetes.default.svc.cluster.local")
_IPS = ("127.0.0.1", "::1", "10.96.0.1")


@dataclass(frozen=True, slots=True)
class Pki:
    """Paths of the files under ``DIR/pki``, and the admin token."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    admin_token: str


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode applies only to a new file
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _tighten(pki: Path) -> None:
    """``pki/`` 0700, its keys and token 0600 (files written by an earlier run may be wider)."""
    if pki.stat().st_mode & 0o077:
        os.chmod(pki, 0o700)
    for path in pki.iterdir():
        if (path.suffix in (".key", ".token") or path.name.endswith(".tmp")) and path.is_file() \
                and path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
          signing_key: ec.EllipticCurvePrivateKey, *, ca: bool, days: int,
          sans: list[x509.GeneralName] | None = None, client: bool = False) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    else:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_encipherment=True, content_commitment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False,
            decipher_only=False), critical=True)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


# What every replica of one cluster shares (``kapi.server.replica.shared``): the CA, the admin
# credentials and the service-account signing key. The serving certificate and key are each replica's own.
SHARED_FILES = ("ca.crt", "ca.key", "admin.crt", "admin.key", "admin.token", "sa.key")


def ensure_pki(data_dir: Path, bind_address: str, names: Sequence[str] = ()) -> Pki:
    """Make the CA, serving certificate and admin token on first start; reuse them later.

    The serving certificate names localhost, the ``kubernetes`` Service's names and addresses,
    ``bind_address`` and ``names`` (--advertise-address, --tls-san: IP addresses or DNS names); it
    is made again when it lacks one of them or was not signed by the CA (a replica that took
    the cluster's CA).
    """
    pki = data_dir / "pki"
    pki.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tighten(pki)
    ca_cert_path, ca_key_path = pki / "ca.crt", pki / "ca.key"
    srv_cert_path, srv_key_path = pki / "apiserver.crt", pki / "apiserver.key"
    token_path = pki / "admin.token"
    if not ca_cert_path.exists() or not ca_key_path.exists():
        ca_key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kapi-ca")])
        ca_cert = _cert(name, name, ca_key.public_key(), ca_key, ca=True, days=3650)
        _write_private(ca_key_path, _pem_key(ca_key))
        ca_cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        srv_cert_path.unlink(missing_ok=True)
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ips, dns = _serving_names((bind_address, *names))
    if not srv_cert_path.exists() or _stale(srv_cert_path, ca_cert, ips, dns):
        key = _key()
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in sorted(dns)]
        sans += [x509.IPAddress(ip) for ip in sorted(ips, key=lambda ip: (ip.version, ip))]
        cert = _cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]), ca_cert.subject,
                     key.public_key(), ca_key, ca=False, days=365, sans=sans)  # type: ignore[arg-type]
        _write_private(srv_key_path, _pem_key(key))
        srv_cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    admin_cert_path, admin_key_path = pki / "admin.crt", pki / "admin.key"
    if not admin_cert_path.exists() or not admin_key_path.exists():
        key = _key()
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                             x509.NameAttribute(NameOID.COMMON_NAME, "kapi-admin")])
        cert = _cert(subject, ca_cert.subject, key.public_key(), ca_key, ca=False, days=365,  # type: ignore[arg-type]
                     client=True)
        _write_private(admin_key_path, _pem_key(key))
        admin_cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if not token_path.exists():
        _write_private(token_path, secrets.token_urlsafe(32).encode())
    return Pki(ca_cert_path, srv_cert_path, srv_key_path, admin_cert_path, admin_key_path,
               token_path.read_text().strip())


_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _serving_names(names: Sequence[str]) -> tuple[set[_IPAddress], set[str]]:
    """The serving certificate's IP addresses and DNS names: kapi's own and ``names`` (unspecified
    addresses, which no client dials, left out)."""
    ips: set[_IPAddress] = {ipaddress.ip_address(ip) for ip in _IPS}
    dns = set(_DNS_NAMES)
    for name in filter(None, (n.strip().strip("[]") for n in names)):
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            dns.add(name.lower())
            continue
        if not ip.is_unspecified:
            ips.add(ip)
    return ips, dns


def _stale(cert_path: Path, ca_cert: x509.Certificate, ips: set[_IPAddress], dns: set[str]) -> bool:
    """True when the serving certificate lacks a name it should have or was not signed by ``ca_cert``."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        cert.verify_directly_issued_by(ca_cert)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (x509.ExtensionNotFound, ValueError, TypeError, InvalidSignature):
        return True
    return not (ips <= set(san.get_values_for_type(x509.IPAddress))
                and dns <= set(san.get_values_for_type(x509.DNSName)))


def write_kubeconfig(path: Path, server: str, pki: Pki) -> None:
    """The admin kubeconfig: CA embedded; the admin's client certificate and bearer token (system:masters)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kapi", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(pki.ca_cert.read_bytes()).decode()}}],
        "users": [{"name": "kapi-admin", "user": {
            "client-certificate-data": base64.b64encode(pki.admin_cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(pki.admin_key.read_bytes()).decode(),
            "token": pki.admin_token}}],
        "contexts": [{"name": "kapi", "context": {"cluster": "kapi", "user": "kapi-admin",
                                                   "namespace": "default"}}],
        "current-context": "kapi",
        "preferences": {},
    }
    tmp = path.with_suffix(".tmp")
    _write_private(tmp, yaml.safe_dump(doc, sort_keys=False).encode())
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class UserCredential:
    """A client certificate minted by kapi's CA for one user (``kapi kubeconfig``), PEM."""

    user: str
    groups: tuple[str, ...]
    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes
    not_after: dt.datetime


def mint_client_certificate(data_dir: Path, user: str, groups: tuple[str, ...] = (),
                            validity_s: float = 365 * 86400.0) -> UserCredential:
    """A client certificate for ``user`` signed by ``<data-dir>/pki/ca.key``: CN the user, one O per group.

    That is what kube's x509 authenticator reads (CN -> user name, O -> groups), as kubeadm's
    ``kubeconfig user --client-name --org`` mints it. The validity ends no later than the CA's.

    Raises:
        FileNotFoundError: no CA under the data directory yet (``kapi serve`` makes it on first start).
        ValueError: an empty user name or group, or a validity that is not positive.
    """
    if not user or user != user.strip():
        raise ValueError(f"invalid user name {user!r}")
    if any(not g or g != g.strip() for g in groups):
        raise ValueError(f"invalid group name in {list(groups)!r}")
    if not validity_s > 0:
        raise ValueError("the validity must be positive")
    pki = data_dir / "pki"
    ca_cert_path, ca_key_path = pki / "ca.crt", pki / "ca.key"
    for path in (ca_cert_path, ca_key_path):
        if not path.is_file():
            raise FileNotFoundError(2, "no CA here: kapi serve makes it on its first start", str(path))
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    ca_pem = ca_cert_path.read_bytes()
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    # Duplicate groups are one O each in kube's reading anyway; keep the first of each.
    groups = tuple(dict.fromkeys(groups))
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    key = _key()
    now = dt.datetime.now(dt.timezone.utc)
    not_after = min(now + dt.timedelta(seconds=validity_s), ca_cert.not_valid_after_utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_encipherment=True, content_commitment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False,
                decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    return UserCredential(user, groups, cert.public_bytes(serialization.Encoding.PEM), _pem_key(key), ca_pem,
                          not_after)


def user_kubeconfig(server: str, credential: UserCredential, namespace: str = "default") -> bytes:
    """A kubeconfig (YAML) for one minted user: CA, client certificate and key embedded, no token."""
    context = f"{credential.user}@kapi"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kapi", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(credential.ca_pem).decode()}}],
        "users": [{"name": credential.user, "user": {
            "client-certificate-data": base64.b64encode(credential.cert_pem).decode(),
            "client-key-data": base64.b64encode(credential.key_pem).decode()}}],
        "contexts": [{"name": context, "context": {"cluster": "kapi", "user": credential.user,
                                                    "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False).encode()


def write_private_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only (0600), replacing it in one step."""
    tmp = path.with_name(path.name + ".tmp")
    _write_private(tmp, data)
    os.replace(tmp, path)


def ensure_service_account_key(data_dir: Path, key_file: str = "") -> Path:
    """The key that signs service-account tokens: ``key_file`` (--service-account-signing-key-file) when
    given (it must exist), else ``<data-dir>/pki/sa.key``, an ECDSA P-256 key (ES256) made once, 0600.

    Made once and kept, so tokens stay valid across restarts, as kube's key file does.
    """
    if key_file:
        path = Path(key_file)
        if not path.is_file():
            raise FileNotFoundError(2, "no such service-account signing key file", str(path))
        return path
    pki = data_dir / "pki"
    pki.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = pki / "sa.key"
    if not path.exists():
        tmp = pki / "sa.key.tmp"
        _write_private(tmp, _pem_key(_key()))
        os.replace(tmp, path)
    return path
