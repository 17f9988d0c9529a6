"""Authentication: kube's union of authenticators, tried in kube-apiserver's order.

``Authenticator.authenticate(ctx)`` asks, in the order of kube's authenticator config
(pkg/kubeapiserver/authenticator/config.go):

1. the authenticating proxy (``--requestheader-*``: a client certificate of the request-header
   CA, then the user from the headers; kapi.chain.authn.requestheader),
2. x509 client certificates of the client CA (CN the user, each O a group),
3. bearer tokens: the static token file (and the admin token) first, then every
   ``TokenAuthenticator`` in the order they were added (service accounts, the JWT authenticators
   of ``--authentication-config``, the token webhook);

the first that says who the request is wins. One that fails (a certificate of another CA, a token
no one knows) does not stop the others, but when none succeeds a failure is a 401, never
anonymous; only a request with no credentials at all is ``system:anonymous`` (when
``--anonymous-auth``). Every authenticated user is in ``system:authenticated`` (kube's
AuthenticatedGroupAdder).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import hmac
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kapi import errors
from kapi.errors import AuthenticationError
from kapi.chain.context import RequestContext
from kapi.object.access import UserInfo

log = logging.getLogger("kapi.chain.authn")

ANONYMOUS_USER = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(ALL_UNAUTHENTICATED,))
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"  # kube's user.CredentialIDKey

Audiences = tuple[str, ...]


class TokenAuthenticator(Protocol):
    """A bearer-token authenticator (service accounts, JWT issuers, the token webhook, the token file).

    ``audiences`` are the ones asked for (the API audiences for a request, a TokenReview's
    spec.audiences); the answer is the user and the audiences the token is good for among them, or
    None when the token is not this authenticator's or is invalid.
    """

    async def authenticate_token(self, token: str, audiences: Audiences
                                 ) -> tuple[UserInfo, Audiences] | None: ...


class RequestAuthenticator(Protocol):
    """An authenticator of the whole request (the proxy's headers, a client certificate).

    None: not this authenticator's request; raises ``AuthenticationError`` for a credential that is
    its kind but bad.
    """

    async def authenticate_request(self, ctx: RequestContext) -> UserInfo | None: ...


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
            users[row[0].strip()] = UserInfo(row[1].strip(), row[2].strip(), groups)
    return users


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """kube's AuthenticatedGroupAdder: ``system:authenticated`` added unless anonymous or already marked."""
    if user.name == ANONYMOUS_USER or ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, user.groups + (ALL_AUTHENTICATED,), user.extra)


def intersect(ours: Sequence[str], asked: Sequence[str]) -> Audiences:
    """kube's Audiences.Intersect: those of ``ours`` also in ``asked``, in our order."""
    return tuple(a for a in ours if a in asked)


@dataclass
class StaticTokens:
    """--token-auth-file (and the admin token): audience-agnostic, good for the API audiences only
    (kube's WrapAudienceAgnosticToken)."""

    tokens: dict[str, UserInfo] = field(default_factory=dict)
    api_audiences: Audiences = ()

    async def authenticate_token(self, token: str, audiences: Audiences) -> tuple[UserInfo, Audiences] | None:
        if audiences and self.api_audiences:
            good = intersect(self.api_audiences, audiences)
            if not good:
                return None
        else:
            good = audiences
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user, good
        return None


def load_certificates(path: str) -> tuple[x509.Certificate, ...]:
    """The certificates of a PEM bundle (a CA file); ValueError when it holds none."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        certs = tuple(x509.load_pem_x509_certificates(data))
    except ValueError as exc:
        raise ValueError(f"{path}: no PEM certificates: {exc}") from None
    return certs


def verify_client_certificate(der: bytes, cas: Sequence[x509.Certificate]) -> x509.Certificate:
    """The leaf when one of ``cas`` issued it, it is in its validity period and may authenticate a
    client (kube's x509 Verify with ExtKeyUsageClientAuth); AuthenticationError saying why not.

    The TLS layer verified the chain against every CA it accepts (the client CA and the
    request-header CA); this says which of them it was.
    """
    import datetime

    cert = x509.load_der_x509_certificate(der)
    serial = f"{cert.serial_number:x}"
    who = f'"{_common_name(cert)}" [serial={serial}]'
    now = datetime.datetime.now(datetime.timezone.utc)
    if now < cert.not_valid_before_utc or now > cert.not_valid_after_utc:
        raise AuthenticationError(f"verifying certificate {who} failed: x509: certificate has expired or is "
                                  f"not yet valid")
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        eku = None
    if eku is not None and ExtendedKeyUsageOID.CLIENT_AUTH not in eku \
            and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in eku:
        raise AuthenticationError(f"verifying certificate {who} failed: x509: certificate specifies an "
                                  f"incompatible key usage")
    for ca in cas:
        if ca.subject != cert.issuer:
            continue
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return cert
    raise AuthenticationError(f"verifying certificate {who} failed: x509: certificate signed by unknown "
                              f"authority")


def _common_name(cert: x509.Certificate) -> str:
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cn[0].value) if cn else ""


def user_from_certificate(der: bytes | x509.Certificate) -> UserInfo | None:
    """kube's CommonNameUserConversion: CN is the user name, each O a group, the certificate's SHA-256
    its credential id (extra ``authentication.kubernetes.io/credential-id``); None without a CN."""
    cert = x509.load_der_x509_certificate(der) if isinstance(der, bytes) else der
    cn = _common_name(cert)
    if not cn:
        return None
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    fingerprint = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    return UserInfo(cn, groups=tuple(str(o.value) for o in orgs),
                    extra={CREDENTIAL_ID: (f"X509SHA256={fingerprint}",)})


def unescape_extra_key(key: str) -> str:
    """kube's unescapeExtraKey: %-decoded as Go's url.PathUnescape; a malformed escape keeps the key as sent."""
    if "%" not in key:
        return key
    i = key.find("%")
    while i >= 0:
        if len(key) < i + 3 or not all(c in "0123456789abcdefABCDEF" for c in key[i + 1:i + 3]):
            return key
        i = key.find("%", i + 3)
    return unquote(key, errors="surrogateescape")


@dataclass
class X509:
    """Client certificates of the client CA (kube's x509 authenticator); ``cas`` None: trust the TLS
    layer's verification (it accepts no other CA)."""

    cas: Sequence[x509.Certificate] | None = None

    async def authenticate_request(self, ctx: RequestContext) -> UserInfo | None:
        if not ctx.client_cert:
            return None
        if self.cas is None:
            return _user_of_verified(ctx.client_cert)
        return user_from_certificate(verify_client_certificate(ctx.client_cert, self.cas))


@functools.lru_cache(maxsize=1024)
def _user_of_verified(der: bytes) -> UserInfo | None:
    """The user of a certificate the TLS layer verified (its dates too), parsed once per certificate:
    a connection's every request, and every connection of the same client, sends the same one."""
    return with_authenticated_group(user) if (user := user_from_certificate(der)) is not None else None


_INVALID_TOKEN = "invalid bearer token"
EXTRA_SPACE_WARNING = ("the provided Authorization header contains extra space before the bearer token, and is "
                       "ignored")


@dataclass
class Authenticator:
    """kube's authenticator union (see the module docstring); ``authenticate`` raises 401."""

    tokens: dict[str, UserInfo] = field(default_factory=dict)  # --token-auth-file and the admin token
    anonymous: bool = True  # --anonymous-auth
    token_authenticators: list[TokenAuthenticator] = field(default_factory=list)  # after the static tokens
    api_audiences: Audiences = ()  # --api-audiences (the issuer's by default): what a request's token is for
    x509: RequestAuthenticator | None = field(default_factory=X509)  # None: no client certificates
    request_header: RequestAuthenticator | None = None  # --requestheader-client-ca-file
    # AuthenticationConfiguration's anonymous.conditions: anonymous only for these paths (None: any path)
    anonymous_paths: frozenset[str] | None = None
    _static: StaticTokens = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._static = StaticTokens(self.tokens, self.api_audiences)

    def add_token_authenticator(self, authenticator: TokenAuthenticator) -> None:
        """Ask ``authenticator`` about bearer tokens after the ones added before it."""
        self.token_authenticators.append(authenticator)

    async def authenticate_token(self, token: str, audiences: Audiences = ()
                                 ) -> tuple[UserInfo, Audiences] | None:
        """The user a bearer token is (with ``system:authenticated``) and the audiences it is good for
        among ``audiences`` (() asks for the API audiences); None if no token authenticator knows it.
        TokenReview answers from this."""
        asked = audiences or self.api_audiences
        failures: list[str] = []
        for authenticator in (self._static, *self.token_authenticators):
            try:
                found = await authenticator.authenticate_token(token, asked)
            except AuthenticationError as exc:
                failures.append(str(exc))
                continue
            if found is not None:
                return with_authenticated_group(found[0]), found[1]
        if failures:  # kube's token union: none took it, and these said why
            raise AuthenticationError(errors.aggregate_messages(failures))
        return None

    async def authenticate(self, ctx: RequestContext) -> UserInfo:
        """Who ``ctx`` is, in kube's order; 401 when a credential fails, or none is sent and anonymous is off."""
        failures: list[str] = []
        for authenticator in (self.request_header, self.x509):
            if authenticator is None:
                continue
            try:
                user = await authenticator.authenticate_request(ctx)
            except AuthenticationError as exc:
                failures.append(str(exc))
                continue
            if user is not None:
                return with_authenticated_group(user)
        authorization = ctx.header("authorization")
        token = bearer_token(authorization)
        if not token and authorization.strip().lower().startswith("bearer  "):
            ctx.warnings.append(EXTRA_SPACE_WARNING)  # kube's bearertoken warns, then ignores the header
        if token:
            try:
                found = await self.authenticate_token(token, self.api_audiences)
            except AuthenticationError as exc:
                found = None
                failures.append(str(exc))
            if found is not None:
                user, good = found
                if self.api_audiences and good and not intersect(self.api_audiences, good):
                    # kube's audiencesAreAcceptable: a token for another audience is no credential here.
                    raise errors.Unauthorized("Unauthorized")
                ctx.headers.pop("authorization", None)  # kube removes it once it has served
                return user
            failures.append(_INVALID_TOKEN)
        if failures:
            log.debug("unable to authenticate %s %s: %s", ctx.method, ctx.path, "; ".join(failures))
            raise errors.Unauthorized("Unauthorized")
        if self.anonymous and (self.anonymous_paths is None or ctx.path in self.anonymous_paths):
            return ANONYMOUS
        raise errors.Unauthorized("Unauthorized")


def bearer_token(authorization: str) -> str:
    """kube's bearertoken: the token of ``Bearer <token>`` (the scheme in any case); "" for none or
    another scheme (which is then no credential at all: kube ignores it)."""
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


@dataclass
class PeerCertificates:
    """Verified client certificates (DER) of the open connections, by client (host, port)."""

    by_client: dict[tuple[str, int], bytes] = field(default_factory=dict)

    def get(self, client: Any) -> bytes | None:
        if not client:
            return None
        return self.by_client.get((client[0], client[1]))
