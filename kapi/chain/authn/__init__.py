"""Authentication: x509 client certificates, bearer tokens (static file, the admin token), anonymous."""

from __future__ import annotations

import csv
import hmac
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from kapi import errors
from kapi.object.access import UserInfo

ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


def read_token_file(path: str) -> dict[str, UserInfo]:
    """kube-apiserver's --token-auth-file: ``token,user,uid,"group1,group2"`` per line."""
    users: dict[str, UserInfo] = {}
    with open(path, newline="") as f:
        for lineno, row in enumerate(csv.reader(f), 1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{lineno}: need at least token,user,uid")
            groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
            users[row[0].strip()] = UserInfo(row[1].strip(), row[2].strip(), groups + ("system:authenticated",))
    return users


@dataclass
class Authenticator:
    """Maps a request's credentials to a UserInfo, or refuses it with 401."""

    tokens: dict[str, UserInfo] = field(default_factory=dict)
    anonymous: bool = True

    async def authenticate_token(self, token: str, audiences: tuple[str, ...] = ()
                                 ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """The user a bearer token is and the audiences it is good for (a static token: any); None if unknown."""
        for known, user in self.tokens.items():
            if hmac.compare_digest(known, token):
                return user, audiences
        return None

    def authenticate(self, authorization: str, client_cert_der: bytes | None = None) -> UserInfo:
        """x509 first (the TLS layer verified the chain against kapi's CA), then a bearer token."""
        if client_cert_der:
            return user_from_certificate(client_cert_der)
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                token = token.strip()
                for known, user in self.tokens.items():
                    if hmac.compare_digest(known, token):
                        return user
            raise errors.Unauthorized("Unauthorized")
        if self.anonymous:
            return ANONYMOUS
        raise errors.Unauthorized("Unauthorized")


def user_from_certificate(der: bytes) -> UserInfo:
    """kube-apiserver's x509 mapping: CN is the user name, each O a group."""
    cert = x509.load_der_x509_certificate(der)
    cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if not cn:
        raise errors.Unauthorized("Unauthorized")
    return UserInfo(str(cn[0]), groups=tuple(str(o) for o in orgs) + ("system:authenticated",))


@dataclass
class PeerCertificates:
    """Verified client certificates (DER) of the open connections, by client (host, port)."""

    by_client: dict[tuple[str, int], bytes] = field(default_factory=dict)

    def get(self, client: Any) -> bytes | None:
        if not client:
            return None
        return self.by_client.get((client[0], client[1]))
