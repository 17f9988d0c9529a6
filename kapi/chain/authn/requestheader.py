"""The authenticating proxy (``--requestheader-*``), as kube's headerrequest behind its x509 verifier.

A request is the proxy's when its client certificate was issued by the request-header CA
(``--requestheader-client-ca-file``) and, if ``--requestheader-allowed-names`` is set, has one of
those common names. The user is then read from the headers: the first username header with a
value, the first uid header with a value, every value of every group header, and each header under
an extra prefix as an extra (key lower-cased and %-decoded). A request without a username header is
not the proxy's (the other authenticators are asked); a certificate of another CA or a name not
allowed is a failure, which leaves the others to try (a kapi client certificate still works).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from cryptography import x509

from kapi.chain.authn import load_certificates, unescape_extra_key, verify_client_certificate
from kapi.errors import AuthenticationError
from kapi.chain.context import RequestContext
from kapi.config import Config
from kapi.object.access import UserInfo

# kube's standard headers: aggregated API servers read these (kube warns when they are left out).
STANDARD_USERNAME = "X-Remote-User"
STANDARD_UID = "X-Remote-Uid"
STANDARD_GROUP = "X-Remote-Group"
STANDARD_EXTRA = "X-Remote-Extra-"


@dataclass
class RequestHeader:
    """The proxy's headers, trusted only with a client certificate of ``cas`` (and an allowed name)."""

    cas: Sequence[x509.Certificate]
    username_headers: tuple[str, ...]
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] = ()
    allowed_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        lower = str.lower
        self._names = tuple(map(lower, self.username_headers))
        self._uids = tuple(map(lower, self.uid_headers))
        self._groups = tuple(map(lower, self.group_headers))
        self._prefixes = tuple(map(lower, self.extra_prefixes))

    async def authenticate_request(self, ctx: RequestContext) -> UserInfo | None:
        if not ctx.client_cert:
            return None
        cert = verify_client_certificate(ctx.client_cert, self.cas)
        if self.allowed_names:
            cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
            name = str(cn[0].value) if cn else ""
            if name not in self.allowed_names:
                raise AuthenticationError(f"x509: subject with cn={name} is not in the allowed list")
        username = next((ctx.headers[h] for h in self._names if ctx.headers.get(h)), "")
        if not username:
            return None
        uid = next((ctx.headers[h] for h in self._uids if ctx.headers.get(h)), "")
        groups = tuple(v for h in self._groups for v in ctx.header_values(h) if v)
        extra: dict[str, list[str]] = {}
        for prefix in self._prefixes:
            for name in ctx.headers:
                if name.startswith(prefix):
                    extra.setdefault(unescape_extra_key(name[len(prefix):]), []).extend(ctx.header_values(name))
        # kube clears the headers it read: nothing below sees them as if they were the client's.
        for name in [n for n in ctx.headers if n in self._names or n in self._uids or n in self._groups
                     or n.startswith(self._prefixes)]:
            del ctx.headers[name]
        return UserInfo(username, uid, groups, {k: tuple(v) for k, v in extra.items()})


def validate(config: Config) -> list[str]:
    """kube's RequestHeaderAuthenticationOptions.Validate: the errors (warnings are logged by the caller)."""
    problems = []
    for flag, values in (("requestheader-username-headers", config.requestheader_username_headers),
                         ("requestheader-group-headers", config.requestheader_group_headers),
                         ("requestheader-extra-headers-prefix", config.requestheader_extra_headers_prefix),
                         ("requestheader-allowed-names", config.requestheader_allowed_names),
                         ("requestheader-uid-headers", config.requestheader_uid_headers)):
        if any(not v.strip() for v in values):
            problems.append(f'empty value in "{flag}"')
    uids = config.requestheader_uid_headers
    if uids and not any(h.lower() == STANDARD_UID.lower() for h in uids):
        problems.append("--requestheader-uid-headers is set without specifying the standard X-Remote-Uid "
                        "header - API aggregation will not work")
    return problems


def from_config(config: Config) -> RequestHeader | None:
    """The proxy authenticator of the flags; None without --requestheader-client-ca-file (as kube)."""
    if not config.requestheader_client_ca_file:
        return None
    problems = validate(config)
    if problems:
        raise ValueError("; ".join(problems))
    return RequestHeader(load_certificates(config.requestheader_client_ca_file),
                         tuple(h.strip() for h in config.requestheader_username_headers),
                         tuple(h.strip() for h in config.requestheader_uid_headers),
                         tuple(h.strip() for h in config.requestheader_group_headers),
                         tuple(h.strip() for h in config.requestheader_extra_headers_prefix),
                         config.requestheader_allowed_names)
