"""ServiceAccounts, and their ``token`` subresource: a TokenRequest answered with a signed token
(kube's pkg/registry/core/serviceaccount/storage/token.go); the signer is the server's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Protocol

from kapi import errors
from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

MIN_TOKEN_EXPIRATION_S: Final = 10 * 60
MAX_TOKEN_EXPIRATION_S: Final = 1 << 32
DEFAULT_TOKEN_EXPIRATION_S: Final = 3600
# kubelet's default projected-token length: the one kube's safe transition extends.
WARN_ONLY_BOUND_TOKEN_EXPIRATION_S: Final = 60 * 60 + 7
_GROUP: Final = "authentication.k8s.io"
ISSUED_CREDENTIAL_ID_ANNOTATION: Final = "authentication.kubernetes.io/issued-credential-id"

# (resource, namespace, name) -> the stored object; NotFound when absent.
Getter = Callable[[str, str, str], Awaitable[Obj]]


class TokenSigner(Protocol):
    """What a TokenRequest needs of the server's service-account token issuer."""

    api_audiences: tuple[str, ...]
    max_expiration_s: int  # 0: none
    extend_expiration: bool
    max_extended_expiration_s: int

    def now(self) -> float: ...

    def bound_claims(self, sa: Obj, audiences: Sequence[str], expiration_s: int, *, pod: Obj | None = None,
                     secret: Obj | None = None, node: Obj | None = None, warn_after_s: int = 0,
                     now: float | None = None) -> Obj: ...

    def sign(self, claims: Obj) -> str: ...


class ServiceAccountStrategy(Strategy):
    delete_returns_object = True
    printer = tables.SERVICE_ACCOUNT


def token_request_causes(req: Obj) -> list[Cause]:
    """kube's ValidateTokenRequest: expirationSeconds at least 10 minutes and at most 2^32 seconds."""
    causes: list[Cause] = []
    value = (req.get("spec") or {}).get("expirationSeconds")
    if not isinstance(value, int):
        return causes
    if value < MIN_TOKEN_EXPIRATION_S:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {value}: may not specify a duration less than "
                            "10 minutes", "spec.expirationSeconds"))
    if value > MAX_TOKEN_EXPIRATION_S:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {value}: may not specify a duration larger than "
                            "2^32 seconds", "spec.expirationSeconds"))
    return causes


def _rfc3339(t: float) -> str:
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def create_token(get: Getter, signer: TokenSigner, namespace: str, name: str, req: Obj,
                       warnings: list[str], annotate: Callable[[str, str], None] | None = None) -> Obj:
    """kube's TokenREST.Create: ``req`` (a TokenRequest for ServiceAccount ``name``) with its status,
    a token signed by ``signer``; kube's 4xx for a body or a bound object it refuses. ``annotate``
    records the token's credential id for audit."""
    md = req.get("metadata") or {}
    req["metadata"] = md
    for key, want in (("name", name), ("namespace", namespace)):
        if md.get(key) and md[key] != want:
            raise errors.invalid("TokenRequest", _GROUP, name, [Cause(
                "FieldValueInvalid", f'Invalid value: "{md[key]}": must match the service account {key} '
                "if specified", f"metadata.{key}")])
    sa = await get("serviceaccounts", namespace, name)
    spec = req.get("spec") or {}
    req["spec"] = spec
    if not spec.get("audiences"):
        spec["audiences"] = list(signer.api_audiences)
    if spec.get("expirationSeconds") is None:
        spec["expirationSeconds"] = DEFAULT_TOKEN_EXPIRATION_S
    md.setdefault("name", sa["metadata"]["name"])
    md.setdefault("namespace", sa["metadata"]["namespace"])
    # Taken before the token is made: the status's expiration is never after the token's.
    now = signer.now()
    md["creationTimestamp"] = _rfc3339(now)
    req.pop("status", None)
    causes = token_request_causes(req)
    if causes:
        raise errors.invalid("TokenRequest", _GROUP, "", causes)
    pod = secret = node = None
    ref = spec.get("boundObjectRef")
    if ref:
        api_version, kind, ref_name = ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
        group, _, version = api_version.rpartition("/")
        bound_kind = _BOUND_KINDS.get(kind) if group == "" else None
        if bound_kind is None:
            raise errors.BadRequest(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
        resource, namespaced = bound_kind
        bound = await get(resource, namespace if namespaced else "", ref_name)
        uid = bound["metadata"].get("uid", "")
        if resource == "pods":
            pod = bound
            if name != (pod.get("spec") or {}).get("serviceAccountName", "default"):
                raise errors.BadRequest(f'cannot bind token for serviceaccount "{name}" to pod running with '
                                        "different serviceaccount name.")
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:  # ServiceAccountTokenPodNodeInfo: the pod's node goes into the claims too
                try:
                    node = await get("nodes", "", node_name)
                except errors.NotFound:
                    node = {"metadata": {"name": node_name}}  # the name alone, as kube embeds it
        elif resource == "secrets":
            secret = bound
        else:
            node = bound
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.conflict(kind, group, ref_name, f"the UID in the bound object reference ({ref['uid']}) "
                                  "does not match the UID in record. The object might have been deleted and then "
                                  "recreated")
    expiration = int(spec["expirationSeconds"])
    if signer.max_expiration_s > 0 and expiration > signer.max_expiration_s:
        warnings.append(f"requested expiration of {expiration} seconds shortened to {signer.max_expiration_s} "
                        "seconds")
        expiration = spec["expirationSeconds"] = signer.max_expiration_s
    # kube's safe transition of projected tokens: a pod-bound token of kubelet's default length for
    # the API audiences stays valid for the extended time, warning (warnafter) after the time asked.
    exp, warn_after = expiration, 0
    if signer.extend_expiration and pod is not None and expiration == WARN_ONLY_BOUND_TOKEN_EXPIRATION_S \
            and set(spec["audiences"]) <= set(signer.api_audiences):
        warn_after, exp = expiration, signer.max_extended_expiration_s
    claims = signer.bound_claims(sa, spec["audiences"], exp, pod=pod, secret=secret, node=node,
                                 warn_after_s=warn_after, now=now)
    req["status"] = {"token": signer.sign(claims), "expirationTimestamp": _rfc3339(now + expiration)}
    if annotate is not None and claims.get("jti"):
        annotate(ISSUED_CREDENTIAL_ID_ANNOTATION, f"JTI={claims['jti']}")
    req.setdefault("kind", "TokenRequest")
    req.setdefault("apiVersion", f"{_GROUP}/v1")
    return req


# The kinds a token may be bound to (core group): their resource, and whether they are namespaced.
_BOUND_KINDS: Final = {"Pod": ("pods", True), "Secret": ("secrets", True), "Node": ("nodes", False)}


SERVICE_ACCOUNTS: Final = Resource(group="", version="v1", resource="serviceaccounts", kind="ServiceAccount",
                                   short_names=("sa",), subresources=("token",), strategy=ServiceAccountStrategy())
