"""JWT authenticators of ``--authentication-config`` (AuthenticationConfiguration), as kube's oidc plugin.

Each ``jwt`` entry names an issuer (``url``, optional ``discoveryURL`` and ``certificateAuthority``,
``audiences`` with ``audienceMatchPolicy``), claim mappings (``username``, ``groups`` by claim and
prefix, ``uid`` by claim) and claim validation rules (``claim`` with ``requiredValue``). A token is
an entry's when its unverified ``iss`` is the entry's URL; it is then verified with a key of the
issuer's JWKS (found through its OpenID discovery document, fetched on first use and again for a key
id not seen yet), for its issuer, one of the audiences, its expiry and not-before time (five minutes
of leeway, as go-oidc), and the claims are mapped to the user.

CEL expressions (``expression``, ``extra``, ``userValidationRules``) are refused when the file is
loaded: the CEL engine comes with a later issue, and an authenticator that ignored them would let
in tokens kube refuses.
"""

from __future__ import annotations

import base64
import binascii
import logging
import ssl
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import jwt as pyjwt
import orjson
import trio

from kapi.chain.authn import CREDENTIAL_ID, Audiences, intersect
from kapi.errors import AuthenticationError
from kapi.object.access import UserInfo

log = logging.getLogger("kapi.chain.authn.jwt")

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1")
WELL_KNOWN = "/.well-known/openid-configuration"
# kube's oidc.AllValidSigningAlgorithms: with an authentication config every one of them is accepted.
SIGNING_ALGORITHMS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512")
LEEWAY_S = 300.0  # go-oidc's allowance for clock skew on nbf
FETCH_TIMEOUT_S = 30.0  # kube's OIDC HTTP client time-out
VERIFIED_CACHE_SIZE = 4096  # tokens whose signature was verified, kept so a request pays the checks only
REFRESH_INTERVAL_S = 10.0  # kube retries an issuer it could not reach every 10 s; also the least time between fetches
CEL_REFUSED = ("CEL expressions are not supported by this server yet (the CEL engine comes with issue 14); "
               "use claim and prefix mappings and claim/requiredValue validation rules instead")


class ConfigError(ValueError):
    """An AuthenticationConfiguration kube would refuse (the message lists each field's error)."""


@dataclass(frozen=True)
class Issuer:
    url: str
    audiences: tuple[str, ...]
    discovery_url: str = ""
    certificate_authority: str = ""  # PEM


@dataclass(frozen=True)
class ClaimMapping:
    claim: str = ""
    prefix: str = ""


@dataclass(frozen=True)
class JWTConfig:
    """One ``jwt`` entry, validated."""

    issuer: Issuer
    username: ClaimMapping
    groups: ClaimMapping = ClaimMapping()
    uid_claim: str = ""
    required_claims: tuple[tuple[str, str], ...] = ()  # claimValidationRules' claim/requiredValue


@dataclass(frozen=True)
class AuthenticationConfig:
    jwt: tuple[JWTConfig, ...] = ()
    anonymous: bool | None = None  # None: the file does not say (--anonymous-auth decides)
    anonymous_paths: tuple[str, ...] = ()  # conditions[].path; () with anonymous: any path


def load(path: str, disallowed_issuers: tuple[str, ...] = ()) -> AuthenticationConfig:
    """Read and validate an AuthenticationConfiguration file (YAML or JSON); ConfigError with kube's field errors."""
    import yaml

    try:
        with open(path, "rb") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"failed to load authentication configuration from file {path!r}: {exc}") from None
    try:
        return parse(doc, disallowed_issuers)
    except ConfigError as exc:
        raise ConfigError(f"failed to load authentication configuration from file {path!r}: {exc}") from None


def parse(doc: Any, disallowed_issuers: tuple[str, ...] = ()) -> AuthenticationConfig:
    """Validate a decoded AuthenticationConfiguration as kube's ValidateAuthenticationConfiguration."""
    if not isinstance(doc, dict):
        raise ConfigError("not an AuthenticationConfiguration object")
    if doc.get("kind") != "AuthenticationConfiguration" or doc.get("apiVersion") not in API_VERSIONS:
        raise ConfigError(f'no kind "{doc.get("kind")}" is registered for version "{doc.get("apiVersion")}": '
                          f"want kind AuthenticationConfiguration of {', '.join(API_VERSIONS)}")
    errs: list[str] = []
    entries = doc.get("jwt") or []
    if not isinstance(entries, list):
        raise ConfigError("jwt: must be a list")
    if len(entries) > 64:
        raise ConfigError(f"jwt: Too many: {len(entries)}: must have at most 64 items")
    out: list[JWTConfig] = []
    seen: set[str] = set()
    seen_discovery: set[str] = set()
    for i, entry in enumerate(entries):
        at = f"jwt[{i}]"
        if not isinstance(entry, dict):
            errs.append(f"{at}: Invalid value: must be an object")
            continue
        parsed = _jwt(entry, at, set(disallowed_issuers), errs)
        url = _dict(entry.get("issuer")).get("url", "")
        if url in seen:
            errs.append(f'{at}.issuer.url: Duplicate value: "{url}"')
        seen.add(url)
        discovery = _dict(entry.get("issuer")).get("discoveryURL") or ""
        if discovery:
            if discovery in seen_discovery:
                errs.append(f'{at}.issuer.discoveryURL: Duplicate value: "{discovery}"')
            seen_discovery.add(discovery)
        if parsed is not None:
            out.append(parsed)
    anonymous, paths = None, ()
    if doc.get("anonymous") is not None:
        anon = _dict(doc["anonymous"])
        anonymous = bool(anon.get("enabled", False))
        conditions = anon.get("conditions") or []
        paths = tuple(str(_dict(c).get("path", "")) for c in conditions)
        if not anonymous and conditions:
            errs.append("anonymous.conditions: Invalid value: enabled should be set to true when conditions are "
                        "defined")
    if errs:
        raise ConfigError("[" + ", ".join(errs) + "]" if len(errs) > 1 else errs[0])
    return AuthenticationConfig(tuple(out), anonymous, paths)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _url_errors(url: str, at: str, disallowed: set[str]) -> list[str]:
    errs = []
    if url in disallowed:
        errs.append(f'{at}: Invalid value: "{url}": URL must not overlap with disallowed issuers: '
                    f"[{' '.join(sorted(disallowed))}]")
    parts = urlsplit(url)
    if parts.scheme != "https":
        errs.append(f'{at}: Invalid value: "{url}": URL scheme must be https')
    if parts.username is not None or parts.password is not None:
        errs.append(f'{at}: Invalid value: "{url}": URL must not contain a username or password')
    if parts.query:
        errs.append(f'{at}: Invalid value: "{url}": URL must not contain a query')
    if parts.fragment:
        errs.append(f'{at}: Invalid value: "{url}": URL must not contain a fragment')
    return errs


def _jwt(entry: dict[str, Any], at: str, disallowed: set[str], errs: list[str]) -> JWTConfig | None:
    before = len(errs)
    issuer = _dict(entry.get("issuer"))
    url = str(issuer.get("url") or "")
    if not url:
        errs.append(f"{at}.issuer.url: Required value: URL is required")
    else:
        errs += _url_errors(url, f"{at}.issuer.url", disallowed)
    discovery = str(issuer.get("discoveryURL") or "")
    if discovery:
        if url and url.rstrip("/") == discovery.rstrip("/"):
            errs.append(f'{at}.issuer.discoveryURL: Invalid value: "{discovery}": discoveryURL must be different '
                        f"from URL")
        errs += _url_errors(discovery, f"{at}.issuer.discoveryURL", set())
    audiences = issuer.get("audiences") or []
    policy = issuer.get("audienceMatchPolicy") or ""
    if not audiences:
        errs.append(f"{at}.issuer.audiences: Required value: at least one {at}.issuer.audiences is required")
    else:
        seen: set[str] = set()
        for j, audience in enumerate(audiences):
            if not audience:
                errs.append(f"{at}.issuer.audiences[{j}]: Required value: audience can't be empty")
            if audience in seen:
                errs.append(f'{at}.issuer.audiences[{j}]: Duplicate value: "{audience}"')
            seen.add(audience)
        if len(audiences) > 1 and policy != "MatchAny":
            errs.append(f'{at}.issuer.audienceMatchPolicy: Invalid value: "{policy}": audienceMatchPolicy must be '
                        f"MatchAny for multiple audiences")
        if len(audiences) == 1 and policy not in ("", "MatchAny"):
            errs.append(f'{at}.issuer.audienceMatchPolicy: Invalid value: "{policy}": audienceMatchPolicy must be '
                        f"empty or MatchAny for single audience")
    ca = str(issuer.get("certificateAuthority") or "")
    if ca:
        try:
            ssl.create_default_context(cadata=ca)
        except (ssl.SSLError, ValueError) as exc:
            errs.append(f'{at}.issuer.certificateAuthority: Invalid value: "<omitted>": {exc}')
    required: list[tuple[str, str]] = []
    seen_claims: set[str] = set()
    for j, rule in enumerate(entry.get("claimValidationRules") or []):
        rule, where = _dict(rule), f"{at}.claimValidationRules[{j}]"
        claim, expression = str(rule.get("claim") or ""), str(rule.get("expression") or "")
        if claim and expression:
            errs.append(f'{where}: Invalid value: "{claim}": claim and expression can\'t both be set')
        elif not claim and not expression:
            errs.append(f"{where}: Required value: claim or expression is required")
        elif expression:
            errs.append(f"{where}.expression: Forbidden: {CEL_REFUSED}")
        else:
            if rule.get("message"):
                errs.append(f'{where}.message: Invalid value: "{rule["message"]}": message can\'t be set when claim '
                            f"is set")
            if claim in seen_claims:
                errs.append(f'{where}.claim: Duplicate value: "{claim}"')
            seen_claims.add(claim)
            required.append((claim, str(rule.get("requiredValue") or "")))
    mappings = _dict(entry.get("claimMappings"))
    username = _prefixed(_dict(mappings.get("username")), f"{at}.claimMappings.username", True, errs)
    groups = _prefixed(_dict(mappings.get("groups")), f"{at}.claimMappings.groups", False, errs)
    uid = _dict(mappings.get("uid"))
    if uid.get("claim") and uid.get("expression"):
        errs.append(f'{at}.claimMappings.uid: Invalid value: "": claim and expression can\'t both be set')
    elif uid.get("expression"):
        errs.append(f"{at}.claimMappings.uid.expression: Forbidden: {CEL_REFUSED}")
    if mappings.get("extra"):
        errs.append(f"{at}.claimMappings.extra: Forbidden: {CEL_REFUSED}")
    if entry.get("userValidationRules"):
        errs.append(f"{at}.userValidationRules: Forbidden: {CEL_REFUSED}")
    if len(errs) > before:
        return None
    return JWTConfig(Issuer(url, tuple(audiences), discovery, ca), username, groups, str(uid.get("claim") or ""),
                     tuple(required))


def _prefixed(mapping: dict[str, Any], at: str, required: bool, errs: list[str]) -> ClaimMapping:
    claim, expression = str(mapping.get("claim") or ""), str(mapping.get("expression") or "")
    if claim and expression:
        errs.append(f'{at}: Invalid value: "": claim and expression can\'t both be set')
    elif not claim and not expression and required:
        errs.append(f"{at}: Required value: claim or expression is required")
    elif expression:
        errs.append(f"{at}.expression: Forbidden: {CEL_REFUSED}")
    elif claim and mapping.get("prefix") is None:
        errs.append(f"{at}.prefix: Required value: prefix is required when claim is set. It can be set to an empty "
                    f"string to disable prefixing")
    return ClaimMapping(claim, str(mapping.get("prefix") or ""))


def untrusted_issuer(token: str) -> str:
    """kube's untrustedIssuer: the ``iss`` of a compact JWT's payload, unverified; "" when it is no JWT."""
    if token.lstrip().startswith("{"):
        return ""
    parts = token.split(".")
    if len(parts) != 3:
        return ""
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return ""
    iss = claims.get("iss") if isinstance(claims, dict) else None
    if not isinstance(iss, str):
        return ""
    return "https://accounts.google.com" if iss == "accounts.google.com" else iss


@dataclass
class _Key:
    kid: str
    key: Any  # a PyJWK
    alg: str  # "" when the JWK names none


@dataclass
class JWTAuthenticator:
    """One issuer's tokens (a TokenAuthenticator); good for the API audiences, as kube wraps it."""

    config: JWTConfig
    api_audiences: Audiences = ()
    now: Any = time.time  # for tests: the wall clock
    _keys: list[_Key] = field(default_factory=list, init=False, repr=False)
    _fetched_at: float = field(default=-1e18, init=False, repr=False)
    _lock: trio.Lock = field(default_factory=trio.Lock, init=False, repr=False)
    _verified: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict, init=False, repr=False)

    async def authenticate_token(self, token: str, audiences: Audiences) -> tuple[UserInfo, Audiences] | None:
        if untrusted_issuer(token) != self.config.issuer.url:
            return None  # not this issuer's: another authenticator's
        good = audiences
        if audiences and self.api_audiences:
            good = intersect(self.api_audiences, audiences)
            if not good:
                return None
        claims = await self.verify(token)
        return self.user(claims), good

    async def verify(self, token: str) -> dict[str, Any]:
        """The token's claims once signature, issuer, audience, expiry and not-before are good."""
        try:
            header = pyjwt.get_unverified_header(token)
        except pyjwt.PyJWTError as exc:
            raise AuthenticationError(f"oidc: verify token: oidc: malformed jwt: {exc}") from None
        alg, kid = header.get("alg", ""), header.get("kid") or ""
        if alg not in SIGNING_ALGORITHMS:
            raise AuthenticationError(f"oidc: verify token: oidc: id token signed with unsupported algorithm, "
                                      f"expected {list(SIGNING_ALGORITHMS)} got {alg!r}")
        claims = self._verified.get(token)
        if claims is not None:
            self._verified.move_to_end(token)
        else:
            claims = self._verify_signature(token, alg, kid)
            if claims is None and await self._refresh(kid):
                claims = self._verify_signature(token, alg, kid)
            if claims is None:
                raise AuthenticationError("oidc: verify token: failed to verify signature: failed to verify id "
                                          "token signature")
            # A signature checked once stays good (the keys it was checked with are kept until a refresh,
            # as go-oidc keeps them); the time checks below are made every time.
            self._verified[token] = claims
            if len(self._verified) > VERIFIED_CACHE_SIZE:
                self._verified.popitem(last=False)
        issuer = self.config.issuer.url
        if claims.get("iss") != issuer:
            raise AuthenticationError(f"oidc: verify token: oidc: id token issued by a different provider, "
                                      f"expected {issuer!r} got {claims.get('iss')!r}")
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else [a for a in aud or () if isinstance(a, str)]
        if not set(token_audiences) & set(self.config.issuer.audiences):
            raise AuthenticationError(f"oidc: verify token: oidc: expected audience in "
                                      f"{sorted(self.config.issuer.audiences)} got {token_audiences}")
        now = self.now()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool) or exp < now:
            raise AuthenticationError(f"oidc: verify token: oidc: token is expired (Token Expiry: {exp})")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and not isinstance(nbf, bool) and nbf > now + LEEWAY_S:
            raise AuthenticationError(f"oidc: verify token: oidc: current time {now} before the nbf (not before) "
                                      f"time: {nbf}")
        return claims

    def _verify_signature(self, token: str, alg: str, kid: str) -> dict[str, Any] | None:
        for key in self._keys:
            if kid and key.kid != kid or key.alg and key.alg != alg:
                continue
            try:
                return pyjwt.decode(token, key.key.key, algorithms=[alg],
                                    options={"verify_signature": True, "verify_exp": False, "verify_nbf": False,
                                             "verify_iat": False, "verify_aud": False, "verify_iss": False,
                                             "verify_sub": False, "verify_jti": False})  # kube's checks follow
            except pyjwt.InvalidSignatureError:
                continue
            except pyjwt.PyJWTError as exc:
                raise AuthenticationError(f"oidc: verify token: {exc}") from None
        return None

    async def _refresh(self, kid: str) -> bool:
        """Fetch the issuer's keys again (discovery, then JWKS); False when that was done too recently or failed."""
        async with self._lock:
            if kid and any(k.kid == kid for k in self._keys):
                return True  # another request fetched them while this one waited
            if time.monotonic() - self._fetched_at < REFRESH_INTERVAL_S:
                return False
            self._fetched_at = time.monotonic()
            try:
                with trio.fail_after(FETCH_TIMEOUT_S):
                    self._keys = await self._fetch_keys()
                self._verified.clear()  # a key the issuer no longer publishes verifies nothing now
            except trio.TooSlowError:
                log.warning("oidc authenticator: issuer %s: no answer within %.0f s", self.config.issuer.url,
                            FETCH_TIMEOUT_S)
                return False
            except Exception as exc:  # a network or protocol error: the token cannot be verified now
                log.warning("oidc authenticator: initializing plugin: %s", exc)
                return False
            return True

    async def _fetch_keys(self) -> list[_Key]:
        import httpx

        issuer = self.config.issuer
        verify: ssl.SSLContext | bool = True
        if issuer.certificate_authority:
            verify = ssl.create_default_context(cadata=issuer.certificate_authority)
        discovery = issuer.discovery_url or issuer.url.rstrip("/") + WELL_KNOWN
        async with httpx.AsyncClient(verify=verify) as client:
            answer = await client.get(discovery)
            if answer.status_code != 200:
                raise RuntimeError(f"{answer.status_code} {answer.reason_phrase}: {answer.text[:200]}")
            document = answer.json()
            if document.get("issuer") != issuer.url:
                raise RuntimeError(f"oidc: issuer did not match the issuer returned by provider, expected "
                                   f"{issuer.url!r} got {document.get('issuer')!r}")
            jwks_uri = document.get("jwks_uri")
            if not isinstance(jwks_uri, str) or not jwks_uri:
                raise RuntimeError("oidc: discovery document has no jwks_uri")
            answer = await client.get(jwks_uri)
            if answer.status_code != 200:
                raise RuntimeError(f"oidc: get keys failed: {answer.status_code} {answer.reason_phrase}")
            keys = []
            for jwk in answer.json().get("keys") or []:
                if not isinstance(jwk, dict) or jwk.get("use") not in (None, "sig"):
                    continue
                try:
                    keys.append(_Key(str(jwk.get("kid") or ""), pyjwt.PyJWK(jwk), str(jwk.get("alg") or "")))
                except pyjwt.PyJWTError as exc:
                    log.debug("oidc authenticator: issuer %s: key %s skipped: %s", issuer.url, jwk.get("kid"), exc)
            return keys

    def user(self, claims: dict[str, Any]) -> UserInfo:
        """kube's claim mappings: username (email only when verified), groups, uid, the jti as credential id."""
        config = self.config
        name_claim = config.username.claim
        username = claims.get(name_claim)
        if not isinstance(username, str):
            raise AuthenticationError(f'oidc: parse username claims "{name_claim}": '
                                      f"{'claim not present' if username is None else 'not a string'}")
        if name_claim == "email" and "email_verified" in claims:
            verified = claims["email_verified"]
            if not isinstance(verified, bool):
                raise AuthenticationError("oidc: parse 'email_verified' claim: not a boolean")
            if not verified:
                raise AuthenticationError("oidc: email not verified")
        username = config.username.prefix + username
        groups: tuple[str, ...] = ()
        if config.groups.claim and claims.get(config.groups.claim) is not None:  # null: no groups, as Go reads it
            value = claims[config.groups.claim]
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
                raise AuthenticationError(f'oidc: parse groups claim "{config.groups.claim}": not a string or '
                                          f"an array of strings")
            groups = tuple(config.groups.prefix + g for g in value)
        uid = ""
        if config.uid_claim:
            value = claims.get(config.uid_claim)
            if not isinstance(value, str):
                raise AuthenticationError(f'oidc: parse uid claim "{config.uid_claim}": '
                                          f"{'claim not present' if value is None else 'not a string'}")
            uid = value
        for claim, want in config.required_claims:
            if claim not in claims:
                raise AuthenticationError(f"oidc: required claim {claim} not present in ID token")
            got = claims[claim]
            if not isinstance(got, str):
                raise AuthenticationError(f"oidc: parse claim {claim}: not a string")
            if got != want:
                raise AuthenticationError(f"oidc: required claim {claim} value does not match. Got = {got}, "
                                          f"want = {want}")
        extra = {}
        if isinstance(claims.get("jti"), str):
            extra[CREDENTIAL_ID] = (f"JTI={claims['jti']}",)
        return UserInfo(username, uid, groups, extra)


def authenticators(config: AuthenticationConfig, api_audiences: Audiences) -> list[JWTAuthenticator]:
    """One TokenAuthenticator per ``jwt`` entry, in the file's order."""
    return [JWTAuthenticator(entry, api_audiences) for entry in config.jwt]
