"""Test helpers for authentication (issue 12): certificates made in the test, and a JWT issuer on 127.0.0.1.

``JWTIssuer`` serves OpenID discovery and its JWKS over HTTPS (a CA made here) from a thread, signs
tokens with its current key (ES256 or RS256) and can rotate to a new key; it counts the JWKS fetches.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Cert:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def der(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.DER)

    def write(self, directory: Path, name: str) -> tuple[Path, Path]:
        crt, key = directory / f"{name}.crt", directory / f"{name}.key"
        crt.write_bytes(self.pem)
        key.write_bytes(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return crt, key


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    if cn:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def make_ca(cn: str) -> Cert:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return Cert(cert, key)


def issue(ca: Cert, cn: str, orgs: tuple[str, ...] = (), *, server: bool = False, eku: bool = True,
          expired: bool = False) -> Cert:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    start, end = (now - dt.timedelta(days=2), now - dt.timedelta(days=1)) if expired else \
        (now - dt.timedelta(minutes=5), now + dt.timedelta(days=1))
    builder = (x509.CertificateBuilder().subject_name(_name(cn, orgs)).issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end))
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]), critical=False)
    return Cert(builder.sign(ca.key, hashes.SHA256()), key)


@dataclass
class JWTIssuer:
    """An OpenID issuer on https://127.0.0.1:PORT serving discovery and JWKS; ``token`` signs claims."""

    directory: Path
    rsa_key: bool = False
    url: str = ""
    ca: Cert = field(init=False)
    jwks_fetches: int = 0
    discovery_issuer: str | None = None  # what discovery says the issuer is (None: the real URL)
    _keys: list[tuple[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        self.ca = make_ca("test-issuer-ca")
        self.rotate()

    def rotate(self) -> str:
        """A new signing key (the old one stays published); its kid."""
        key: Any = rsa.generate_private_key(65537, 2048) if self.rsa_key else ec.generate_private_key(ec.SECP256R1())
        kid = f"key-{len(self._keys) + 1}"
        self._keys.append((kid, key))
        return kid

    def unpublish_all_but_current(self) -> None:
        self._keys = self._keys[-1:]

    @property
    def alg(self) -> str:
        return "RS256" if self.rsa_key else "ES256"

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self._keys:
            jwk = json.loads((jwt.algorithms.RSAAlgorithm if self.rsa_key else jwt.algorithms.ECAlgorithm)
                             .to_jwk(key.public_key()))
            jwk.update(kid=kid, use="sig", alg=self.alg)
            keys.append(jwk)
        return {"keys": keys}

    def token(self, claims: dict[str, Any] | None = None, *, kid: str | None = None, key: Any = None,
              lifetime_s: float = 600, **more: Any) -> str:
        """A signed token: iss, aud "kapi", sub, exp (now + lifetime), iat, with ``claims`` over them."""
        now = int(time.time())
        body: dict[str, Any] = {"iss": self.url, "aud": "kapi", "sub": "alice", "iat": now,
                                "exp": now + int(lifetime_s)}
        body.update(claims or {})
        body.update(more)
        current_kid, current = self._keys[-1]
        return jwt.encode(body, key or current, algorithm=self.alg, headers={"kid": kid or current_kid})

    def __enter__(self) -> JWTIssuer:
        server_cert = issue(self.ca, "127.0.0.1", server=True)
        crt, key = server_cert.write(self.directory, "issuer-server")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.discovery_issuer or issuer.url, "jwks_uri": issuer.url + "/jwks",
                            "id_token_signing_alg_values_supported": [issuer.alg]}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    body = issuer.jwks()
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def config(self, **mappings: Any) -> dict[str, Any]:
        """An AuthenticationConfiguration with this issuer (username claim sub, prefix "oidc:")."""
        entry: dict[str, Any] = {
            "issuer": {"url": self.url, "audiences": ["kapi"], "certificateAuthority": self.ca.pem.decode()},
            "claimMappings": {"username": {"claim": "sub", "prefix": "oidc:"},
                              "groups": {"claim": "groups", "prefix": "oidc:"}}}
        entry["claimMappings"].update(mappings.pop("claimMappings", {}))
        entry.update(mappings)
        return {"apiVersion": "apiserver.config.k8s.io/v1beta1", "kind": "AuthenticationConfiguration",
                "jwt": [entry]}
