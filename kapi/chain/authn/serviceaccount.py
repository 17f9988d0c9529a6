"""Service-account tokens as kube-apiserver makes and checks them (pkg/serviceaccount/{jwt,claims,legacy}.go).

``ServiceAccountTokens`` signs JWTs with the server's key (RS256, or ES256/384/512 by the EC
curve), verifies them with that key and the ``--service-account-key-file`` keys, and is a
``TokenAuthenticator``: a bound token (``iss`` one of ``--service-account-issuer``, kube's claims
with the ``kubernetes.io`` private claim) is good while its ServiceAccount, and the Pod, Secret or
Node it is bound to, still exist with the uids it names; a legacy token (``iss``
``kubernetes/serviceaccount``, the ``kubernetes.io/serviceaccount/...`` claims, kept in a
``kubernetes.io/service-account-token`` Secret) while its Secret holds it. Those objects are read
from an index the shared informers keep current, never from storage per request. It also answers
the TokenRequest subresource (pkg/registry/core/serviceaccount/storage/token.go) and renders the
issuer discovery documents (pkg/serviceaccount/openidmetadata.go).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import jwt
import orjson
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kapi import errors
from kapi.apis.core.serviceaccounts import create_token
from kapi.chain.authn import intersect
from kapi.errors import AuthenticationError
from kapi.object.access import UserInfo
from kapi.object.validation import go_quote_list
from kapi.registry.informer import Informers, Item
from kapi.registry.store import Registry

log = logging.getLogger("kapi.chain.authn")

Obj = dict[str, Any]
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
# How long kube's safe transition keeps a pod-bound token of kubelet's default length (3607 s) valid.
EXPIRATION_EXTENSION_S = 24 * 365 * 60 * 60
LEEWAY_S = 60  # go-jose's jwt.DefaultLeeway
CACHE_MAX_AGE_S = 3600
VERIFIED_CACHE_SIZE = 4096  # tokens whose signature is known good (least recently used dropped)  # the discovery documents' max-age, as kube's static key getter reports it

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
LABEL_INVALID_SINCE = "kubernetes.io/legacy-token-invalid-since"
LABEL_LAST_USED = "kubernetes.io/legacy-token-last-used"
_LEGACY = "kubernetes.io/serviceaccount/"

_INVALIDATED = "service account token has been invalidated"


# ------------------------------------------------------------------ keys


def key_id(public_key: PublicKey) -> str:
    """kube's keyIDFromPublicKey: base64url (unpadded) SHA-256 of the key's PKIX DER."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def algorithm(public_key: PublicKey) -> str:
    """The JWS algorithm kube signs and advertises with a key: RS256, or ES256/384/512 by curve."""
    if isinstance(public_key, rsa.RSAPublicKey):
        return "RS256"
    curve = public_key.curve.name
    alg = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}.get(curve)
    if alg is None:
        raise ValueError("unknown private key curve, must be 256, 384, or 521")
    return alg


def load_private_key(path: str | Path) -> PrivateKey:
    """An RSA or ECDSA private key from a PEM file (``--service-account-signing-key-file``)."""
    data = Path(path).read_bytes()
    try:
        key = serialization.load_pem_private_key(data, None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a PEM private key: {exc}") from None
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise ValueError(f"{path}: the key must be RSA or ECDSA")
    algorithm(key.public_key())
    return key


def load_public_keys(path: str | Path) -> list[PublicKey]:
    """Every RSA/ECDSA public key in a PEM file: public keys, private keys (their public half) and
    certificates, as kube reads ``--service-account-key-file``; ValueError when it holds none."""
    data = Path(path).read_bytes()
    keys: list[PublicKey] = []
    for block in data.split(b"-----END ")[:-1]:
        start = block.rfind(b"-----BEGIN ")
        if start < 0:
            continue
        label = block[start + 11:block.index(b"-----", start + 11)]
        pem = block[start:] + b"-----END " + label + b"-----\n"
        key: Any
        try:
            if label.endswith(b"PRIVATE KEY"):
                key = serialization.load_pem_private_key(pem, None).public_key()
            elif label == b"CERTIFICATE":
                key = x509.load_pem_x509_certificate(pem).public_key()
            elif label.endswith(b"PUBLIC KEY"):
                key = serialization.load_pem_public_key(pem)
            else:
                continue
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: unreadable {label.decode()}: {exc}") from None
        if isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
            keys.append(key)
    if not keys:
        raise ValueError(f"{path}: no RSA or ECDSA keys")
    return keys


def _b64(n: int, size: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(size, "big")).rstrip(b"=").decode()


def jwk(public_key: PublicKey) -> Obj:
    """A public key as a JWK, with kube's ``use``, ``kid`` and ``alg`` (go-jose's field order)."""
    out: Obj = {"use": "sig"}
    if isinstance(public_key, rsa.RSAPublicKey):
        nums = public_key.public_numbers()
        out.update(kty="RSA", kid=key_id(public_key), alg="RS256",
                   n=_b64(nums.n, (nums.n.bit_length() + 7) // 8), e=_b64(nums.e, (nums.e.bit_length() + 7) // 8))
        return out
    ecn = public_key.public_numbers()
    size = (public_key.curve.key_size + 7) // 8
    out.update(kty="EC", kid=key_id(public_key), crv={256: "P-256", 384: "P-384", 521: "P-521"}[
        public_key.curve.key_size], alg=algorithm(public_key), x=_b64(ecn.x, size), y=_b64(ecn.y, size))
    return out


# ------------------------------------------------------------- the index


@dataclass(slots=True)
class _Ref:
    """What token validation needs of one object: its uid, when its deletion began, and for a token
    Secret its token and whether it was marked invalid."""

    uid: str
    deleting_since: float | None = None
    token: bytes = b""
    invalid_since: str = ""
    last_used: str = ""


def _deleting_since(md: Obj) -> float | None:
    ts = md.get("deletionTimestamp")
    if not ts:
        return None
    try:
        return dt.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp()
    except ValueError:
        return time.time()


SECRETS = "secrets"


def _meta_ref(item: Item) -> _Ref:
    md = item.metadata()
    return _Ref(md.get("uid", ""), _deleting_since(md))


def _secret_ref(item: Item) -> _Ref:
    obj = item.object()
    md = obj.get("metadata") or {}
    ref = _Ref(md.get("uid", ""), _deleting_since(md))
    if obj.get("type") == SA_TOKEN_TYPE:
        try:
            ref.token = base64.b64decode((obj.get("data") or {}).get("token") or "")
        except ValueError:
            ref.token = b""
        labels = md.get("labels") or {}
        ref.invalid_since = labels.get(LABEL_INVALID_SINCE, "")
        ref.last_used = labels.get(LABEL_LAST_USED, "")
    return ref


class ObjectIndex:
    """ServiceAccounts, Secrets, Pods and Nodes by name, as validation reads them; kept by informer
    handlers (each change decoded once), so a token check reads no storage and decodes nothing."""

    KINDS = ("serviceaccounts", SECRETS, "pods", "nodes")

    def __init__(self) -> None:
        self.refs: dict[str, dict[tuple[str, str], _Ref]] = {k: {} for k in self.KINDS}

    def follow(self, informers: Informers) -> None:
        """Register with the shared informers (before they run)."""
        for kind in self.KINDS:
            refs = self.refs[kind]
            # Secrets need their data (a token Secret's token); the others their metadata alone.
            read = _secret_ref if kind == SECRETS else _meta_ref

            def put(item: Item, refs: dict[tuple[str, str], _Ref] = refs,
                    read: Callable[[Item], _Ref] = read) -> None:
                refs[(item.namespace, item.name)] = read(item)

            def drop(item: Item, refs: dict[tuple[str, str], _Ref] = refs) -> None:
                refs.pop((item.namespace, item.name), None)

            informers.informer("", kind).add_handler(on_add=put, on_update=lambda old, new, put=put: put(new),
                                                     on_delete=drop)

    def get(self, kind: str, namespace: str, name: str) -> _Ref | None:
        return self.refs[kind].get((namespace, name))


# --------------------------------------------------------------- tokens


def service_account_user(namespace: str, name: str, uid: str, extra: dict[str, tuple[str, ...]] | None = None
                         ) -> UserInfo:
    """kube's ServiceAccountInfo.UserInfo: the user name and groups of a service account."""
    return UserInfo(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", uid,
                    (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}"), extra or {})


def split_username(username: str) -> tuple[str, str] | None:
    """kube's SplitUsername: (namespace, name) of ``system:serviceaccount:ns:name``, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def _unverified_issuer(token: str) -> str | None:
    """kube's hasCorrectIssuer read: the ``iss`` of a compact JWS, unverified; None if it is not one."""
    if token.lstrip().startswith("{"):
        return None
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    iss = payload.get("iss") if isinstance(payload, dict) else None
    return iss if isinstance(iss, str) else None


@dataclass
class ServiceAccountTokens:
    """The server's service-account token issuer and authenticator (see the module docstring)."""

    signing_key: PrivateKey
    verify_keys: list[PublicKey] = field(default_factory=list)  # besides the signing key's own
    issuers: tuple[str, ...] = (DEFAULT_ISSUER,)  # the first signs; all are accepted
    api_audiences: tuple[str, ...] = ()  # (): the issuers
    max_expiration_s: int = 0  # --service-account-max-token-expiration; 0: none
    extend_expiration: bool = True  # --service-account-extend-token-expiration
    index: ObjectIndex = field(default_factory=ObjectIndex)
    now: Callable[[], float] = time.time
    # Told (namespace, secret name, date) when a legacy token is used on a day its Secret's
    # last-used label does not name yet: the token controller writes the label (kube's
    # LegacyServiceAccountTokenTracking patches it from the authenticator itself).
    on_legacy_use: Callable[[str, str, str], None] | None = None

    def __post_init__(self) -> None:
        if not self.issuers:
            self.issuers = (DEFAULT_ISSUER,)
        if not self.api_audiences:  # kube: --api-audiences, else every issuer
            self.api_audiences = tuple(self.issuers)
        public = self.signing_key.public_key()
        self.kid = key_id(public)
        self.alg = algorithm(public)
        keys: dict[str, tuple[PublicKey, str]] = {self.kid: (public, self.alg)}
        for key in self.verify_keys:
            keys.setdefault(key_id(key), (key, algorithm(key)))
        self._keys = keys
        # Tokens whose signature and issuer were verified, with their claims: a token's bytes and the
        # keys never change, so only the checks of time and of the objects are made again per request.
        self._verified: OrderedDict[str, Obj] = OrderedDict()
        # kube's MaxExtendedExpiration with a key of its own (no external signer): a year, whatever the max.
        self.max_extended_expiration_s = EXPIRATION_EXTENSION_S

    # ------------------------------------------------------------ signing

    def sign(self, claims: Obj) -> str:
        """A compact JWS of ``claims`` with the issuer added, header ``alg`` and ``kid`` (no ``typ``, as kube)."""
        payload = dict(claims, iss=self.issuers[0]) if "iss" not in claims else claims
        return jwt.encode(payload, self.signing_key, algorithm=self.alg, headers={"kid": self.kid, "typ": None})

    def bound_claims(self, sa: Obj, audiences: Sequence[str], expiration_s: int, *, pod: Obj | None = None,
                     secret: Obj | None = None, node: Obj | None = None, warn_after_s: int = 0,
                     now: float | None = None) -> Obj:
        """kube's Claims: sub, aud, iat, nbf, exp, jti and the ``kubernetes.io`` private claim."""
        now = int(self.now() if now is None else now)
        md = sa["metadata"]
        private: Obj = {"namespace": md["namespace"],
                        "serviceaccount": {"name": md["name"], "uid": md.get("uid", "")}}

        def ref(obj: Obj) -> Obj:
            out = {"name": obj["metadata"]["name"]}
            if obj["metadata"].get("uid"):
                out["uid"] = obj["metadata"]["uid"]
            return out

        if pod is not None:
            private["pod"] = ref(pod)
            if node is not None:
                private["node"] = ref(node)  # ServiceAccountTokenPodNodeInfo
        elif secret is not None:
            private["secret"] = ref(secret)
        elif node is not None:
            private["node"] = ref(node)  # ServiceAccountTokenNodeBinding
        if warn_after_s:
            private["warnafter"] = now + warn_after_s
        return {"aud": list(audiences), "exp": now + expiration_s, "iat": now, "iss": self.issuers[0],
                "jti": str(uuid.uuid4()), "kubernetes.io": private, "nbf": now,
                "sub": f"{SERVICE_ACCOUNT_PREFIX}{md['namespace']}:{md['name']}"}

    def legacy_token(self, sa: Obj, secret_name: str) -> str:
        """kube's LegacyClaims signed: what the token controller puts in a token Secret (never expires)."""
        md = sa["metadata"]
        return self.sign({"iss": LEGACY_ISSUER, _LEGACY + "namespace": md["namespace"],
                          _LEGACY + "secret.name": secret_name, _LEGACY + "service-account.name": md["name"],
                          _LEGACY + "service-account.uid": md.get("uid", ""),
                          "sub": f"{SERVICE_ACCOUNT_PREFIX}{md['namespace']}:{md['name']}"})

    # ----------------------------------------------------- authentication

    async def authenticate_token(self, token: str, audiences: tuple[str, ...]
                                 ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """A TokenAuthenticator: None when the token is no service-account token; raises
        ``AuthenticationError`` with kube's reason when it is one but not good."""
        iss = _unverified_issuer(token)
        if iss is None:
            return None
        legacy = iss == LEGACY_ISSUER
        if not legacy and iss not in self.issuers:
            return None
        claims = self._verified_claims(token)
        token_auds = claims.get("aud")
        if isinstance(token_auds, str):
            token_auds = [token_auds]
        if not isinstance(token_auds, list) or not token_auds:
            token_auds = list(self.api_audiences)  # only the API audiences for a legacy (aud-less) token
        requested = tuple(audiences) or self.api_audiences
        good = intersect([a for a in token_auds if isinstance(a, str)], requested)
        if not good:
            raise AuthenticationError(f"token audiences {go_quote_list(token_auds)} is invalid for the target "
                                      f"audiences {go_quote_list(requested)}")
        user = self._validate_legacy(token, claims) if legacy else self._validate_bound(claims)
        return user, good

    def _verified_claims(self, token: str) -> Obj:
        claims = self._verified.get(token)
        if claims is not None:
            self._verified.move_to_end(token)
            return claims
        claims = self._verify(token)
        self._verified[token] = claims
        if len(self._verified) > VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)
        return claims

    def _verify(self, token: str) -> Obj:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthenticationError("invalid signature, no keys found") from None
        kid = header.get("kid") if isinstance(header.get("kid"), str) else ""
        keys = [self._keys[kid]] if kid in self._keys else [] if kid else list(self._keys.values())
        if not keys:
            raise AuthenticationError("invalid signature, no keys found")
        for key, alg in keys:
            try:
                payload = jwt.api_jws.decode_complete(token, key, algorithms=[alg])["payload"]
            except jwt.PyJWTError:
                continue
            try:
                claims = orjson.loads(payload)
            except orjson.JSONDecodeError:
                break
            if not isinstance(claims, dict):
                break
            iss = claims.get("iss")
            if iss != LEGACY_ISSUER and iss not in self.issuers:
                raise AuthenticationError(f"token issuer {orjson.dumps(iss).decode()} is invalid")
            return claims
        raise AuthenticationError("square/go-jose: error in cryptographic primitive")

    def _times_ok(self, claims: Obj) -> None:
        """go-jose's Claims.Validate with the default leeway, in kube's words."""
        now = self.now()
        exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
        for value in (exp, nbf, iat):
            if value is not None and not isinstance(value, (int, float)):
                raise AuthenticationError("service account token claims could not be validated due to "
                                          "unexpected validation error")
        if exp is not None and now - LEEWAY_S > exp:
            raise AuthenticationError("service account token has expired")
        if nbf is not None and now + LEEWAY_S < nbf:
            raise AuthenticationError("service account token is not valid yet")
        if iat is not None and now + LEEWAY_S < iat:
            raise AuthenticationError("service account token is issued in the future")

    def _deleted(self, ref: _Ref) -> bool:
        return ref.deleting_since is not None and ref.deleting_since < self.now() - LEEWAY_S

    def _check_bound(self, what: str, resource: str, namespace: str, ref: tuple[str, str] | None) -> None:
        """A bound Secret or Pod must exist with the token's uid and not be deleted (kube's validator)."""
        if ref is None:
            return
        held = self.index.get(resource, namespace, ref[0])
        if held is None:
            raise AuthenticationError(_INVALIDATED)
        if held.uid != ref[1]:
            raise AuthenticationError(f"{what} UID ({held.uid}) does not match service account {what} ref "
                                      f"claim ({ref[1]})")
        if self._deleted(held):
            raise AuthenticationError(_INVALIDATED)

    def _validate_bound(self, claims: Obj) -> UserInfo:
        """kube's validator.Validate: times, then the ServiceAccount and bound objects with their uids."""
        self._times_ok(claims)
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            private = {}

        def ref_of(key: str) -> tuple[str, str] | None:
            r = private.get(key)
            if not isinstance(r, dict):
                return None
            return str(r.get("name") or ""), str(r.get("uid") or "")

        namespace = str(private.get("namespace") or "")
        sa_name, sa_uid = ref_of("serviceaccount") or ("", "")
        sa = self.index.get("serviceaccounts", namespace, sa_name)
        if sa is None:
            raise AuthenticationError(f'serviceaccounts "{sa_name}" not found')
        if sa.uid != sa_uid:
            raise AuthenticationError(f"service account UID ({sa.uid}) does not match claim ({sa_uid})")
        if self._deleted(sa):
            raise AuthenticationError(f"service account {namespace}/{sa_name} has been deleted")
        extra: dict[str, tuple[str, ...]] = {}
        self._check_bound("secret", "secrets", namespace, ref_of("secret"))
        pod_ref = ref_of("pod")
        if pod_ref is not None:
            self._check_bound("pod", "pods", namespace, pod_ref)
            extra[POD_NAME_KEY], extra[POD_UID_KEY] = (pod_ref[0],), (pod_ref[1],)
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
        node_ref = ref_of("node")
        if node_ref is not None:
            if pod_ref is None:  # a token bound to the Node itself: the Node must still be there
                self._check_bound("node", "nodes", "", node_ref)
            if node_ref[0]:
                extra[NODE_NAME_KEY] = (node_ref[0],)
                if node_ref[1]:
                    extra[NODE_UID_KEY] = (node_ref[1],)
        return service_account_user(namespace, sa_name, sa_uid, extra)

    def _validate_legacy(self, token: str, claims: Obj) -> UserInfo:
        """kube's legacyValidator.Validate (with lookup): the Secret holds this very token, the
        ServiceAccount is there with its uid, and the Secret is not marked invalid."""
        def claim(name: str) -> str:
            value = claims.get(_LEGACY + name)
            return value if isinstance(value, str) else ""

        sub = claims.get("sub") if isinstance(claims.get("sub"), str) else ""
        namespace, secret_name = claim("namespace"), claim("secret.name")
        sa_name, sa_uid = claim("service-account.name"), claim("service-account.uid")
        for value, what in ((sub, "sub"), (namespace, "namespace"), (secret_name, "secretName"),
                            (sa_name, "serviceAccountName"), (sa_uid, "serviceAccountUID")):
            if not value:
                raise AuthenticationError(f"{what} claim is missing")
        if split_username(sub) != (namespace, sa_name):
            raise AuthenticationError("sub claim is invalid")
        secret = self.index.get("secrets", namespace, secret_name)
        if secret is None or secret.deleting_since is not None:
            raise AuthenticationError(_INVALIDATED)
        if not hmac.compare_digest(secret.token, token.encode()):
            raise AuthenticationError("service account token does not match server's copy")
        sa = self.index.get("serviceaccounts", namespace, sa_name)
        if sa is None:
            raise AuthenticationError(f'serviceaccounts "{sa_name}" not found')
        if sa.deleting_since is not None:
            raise AuthenticationError(f"service account {namespace}/{sa_name} has been deleted")
        if sa.uid != sa_uid:
            raise AuthenticationError(f"service account UID ({sa.uid}) does not match claim ({sa_uid})")
        today = dt.datetime.fromtimestamp(self.now(), dt.timezone.utc).strftime("%Y-%m-%d")
        if secret.last_used != today and self.on_legacy_use is not None:
            self.on_legacy_use(namespace, secret_name, today)
        if secret.invalid_since:
            raise AuthenticationError(
                f"the token in secret {namespace}/{secret_name} for service account {namespace}/{sa_name} has been "
                "marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or "
                f"remove the '{LABEL_INVALID_SINCE}' label from the secret to temporarily allow use of this token")
        return service_account_user(namespace, sa_name, sa_uid)

    # -------------------------------------------------------- TokenRequest

    async def request_token(self, registry: Registry, namespace: str, name: str, req: Obj,
                            warnings: list[str], annotate: Callable[[str, str], None] | None = None) -> Obj:
        """The TokenRequest subresource (kube's TokenREST.Create), reading what it needs from ``registry``."""
        async def get(resource: str, ns: str, obj_name: str) -> Obj:
            res = registry.table.get("", "v1", resource)
            if res is None:
                raise errors.not_found(resource, "", obj_name)
            return await registry.get(res, ns, obj_name)

        return await create_token(get, self, namespace, name, req, warnings, annotate)

    # ------------------------------------------------------ issuer discovery

    def jwks(self) -> bytes:
        """``/openid/v1/jwks``: every verification key, as a JSON Web Key Set."""
        return orjson.dumps({"keys": [jwk(key) for key, _ in self._keys.values()]})

    def openid_configuration(self, external_address: str) -> bytes | None:
        """``/.well-known/openid-configuration`` for the first issuer; None when kube would not serve it
        (an issuer that is not an https URL without query or fragment)."""
        iss = self.issuers[0]
        if not iss.startswith("https://") or "?" in iss or "#" in iss or not external_address:
            return None
        algs = sorted({alg for _, alg in self._keys.values()})
        return orjson.dumps({"issuer": iss, "jwks_uri": f"https://{external_address}/openid/v1/jwks",
                             "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                             "id_token_signing_alg_values_supported": algs})

