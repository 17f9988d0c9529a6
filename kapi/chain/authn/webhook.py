"""Webhook token authentication: a bearer token checked by POSTing a TokenReview (``--authentication-token-webhook-config-file``).

kube's ``plugin/pkg/authenticator/token/webhook`` behind its token cache
(``pkg/authentication/token/cache``), as kube-apiserver builds them: the review carries the token
and the audiences asked for (the API audiences, or a TokenReview's own); an answer that is not
``authenticated``, or whose audiences (the API audiences when it names none) meet none of those
asked for, is no user. A webhook that cannot be asked (after kube's retries) is no user either,
and that is not cached; any other answer, yes or no, is cached for
``--authentication-token-webhook-cache-ttl`` (2 m) under an HMAC of the token and audiences (the
token itself is never kept), and concurrent asks of one token share one review.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from kapi.chain.authz.webhook import ExpiringLRU
from kapi.chain.webhookclient import WebhookError
from kapi.object.access import UserInfo

log = logging.getLogger("kapi.chain.authn.webhook")

GROUP = "authentication.k8s.io"
VERSIONS = ("v1", "v1beta1")
CACHE_SIZE = 32 * 1024  # kube's striped cache: 32 stripes, sized for 5k nodes and 10k namespaces

Answer = tuple[UserInfo, tuple[str, ...]] | None


class Poster(Protocol):
    async def post(self, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class _Flight:
    done: trio.Event = field(default_factory=trio.Event)
    answer: Answer = None
    ok: bool = False  # the leader got an answer (not an error, not cancelled)


@dataclass
class WebhookTokenAuthenticator:
    """A TokenAuthenticator asking ``client`` (a WebhookClient) with TokenReviews of ``version``."""

    client: Poster
    version: str = "v1beta1"
    implicit_audiences: tuple[str, ...] = ()  # the API audiences: what a token is good for when the answer names none
    cache_ttl_s: float = 120.0
    cache: ExpiringLRU = field(default_factory=lambda: ExpiringLRU(CACHE_SIZE))
    calls: int = 0  # reviews sent
    _key: bytes = field(default_factory=lambda: os.urandom(32), repr=False)
    _flights: dict[bytes, _Flight] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f'unsupported authentication webhook version "{self.version}", supported versions '
                             f'are "v1", "v1beta1"')

    async def authenticate_token(self, token: str, audiences: tuple[str, ...] = ()) -> Answer:
        """The user the webhook says ``token`` is, and the audiences it is good for; None if none."""
        key = self._cache_key(token, audiences)
        hit = self.cache.get(key, trio.current_time())
        if hit is not None:
            return hit[0]
        flight = self._flights.get(key)
        if flight is not None:  # another request asks for this token now: share its answer
            await flight.done.wait()
            if flight.ok:
                return flight.answer
        return await self._lead(key, token, audiences)

    async def _lead(self, key: bytes, token: str, audiences: tuple[str, ...]) -> Answer:
        flight = self._flights[key] = _Flight()
        try:
            try:
                flight.answer = await self._review(token, audiences)
            except WebhookError as exc:
                log.warning("Failed to make webhook authenticator request: %s", exc)
                return None  # not cached: kube's cache keeps no errors of the webhook
            flight.ok = True
            # Cached as a one-tuple, so that a cached "no user" (None) is told from a miss.
            self.cache.add(key, (flight.answer,), self.cache_ttl_s, trio.current_time())
            return flight.answer
        finally:
            del self._flights[key]
            flight.done.set()

    async def _review(self, token: str, audiences: tuple[str, ...]) -> Answer:
        self.calls += 1
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        answer = await self.client.post({"kind": "TokenReview", "apiVersion": f"{GROUP}/{self.version}",
                                         "metadata": {"creationTimestamp": None}, "spec": spec, "status": {
                                             "user": {}}})
        status = _status_of(answer, self.version)
        granted: tuple[str, ...] = audiences
        if audiences:  # an audience-limited ask: the answer's audiences (or the API's) must meet it
            got = status["audiences"] or self.implicit_audiences
            granted = tuple(a for a in audiences if a in got)
            if not granted:
                return None
        if not status["authenticated"]:
            if status["error"]:
                log.info("the token webhook refused a token: %s", status["error"])
            return None
        user = status["user"]
        return UserInfo(user["username"], user["uid"], tuple(user["groups"]), user["extra"]), granted

    def _cache_key(self, token: str, audiences: tuple[str, ...]) -> bytes:
        """kube's keyFunc: an HMAC of the length-prefixed token and audiences, under a key made at start."""
        h = hmac.new(self._key, digestmod=hashlib.sha256)
        h.update(_prefixed(token))
        h.update(len(audiences).to_bytes(4, "big"))  # the count too: no two lists hash alike
        for audience in audiences:
            h.update(_prefixed(audience))
        return h.digest()


def _prefixed(text: str) -> bytes:
    data = text.encode()
    return len(data).to_bytes(4, "big") + data


def _status_of(answer: dict[str, Any], version: str) -> dict[str, Any]:
    """A TokenReview answer's status, checked; a wrong kind or field types is an error of the webhook."""
    kind, api_version = answer.get("kind"), answer.get("apiVersion")
    if kind not in (None, "", "TokenReview") or api_version not in (None, "", f"{GROUP}/{version}"):
        raise WebhookError(f"the webhook answered {api_version or '?'}, Kind={kind or '?'}, not "
                           f"{GROUP}/{version}, Kind=TokenReview")
    status = answer.get("status") or {}
    user = (status.get("user") or {}) if isinstance(status, dict) else None
    if not isinstance(status, dict) or not isinstance(user, dict):
        raise WebhookError("the webhook's TokenReview status is not an object")
    authenticated = status.get("authenticated", False)
    auds = status.get("audiences") or []
    groups = user.get("groups") or []
    extra = user.get("extra") or {}
    name, uid, error = user.get("username", ""), user.get("uid", ""), status.get("error", "")
    if not (isinstance(authenticated, bool) and isinstance(name, str) and isinstance(uid, str)
            and isinstance(error, str) and _strings(auds) and _strings(groups) and isinstance(extra, dict)
            and all(isinstance(k, str) and _strings(v) for k, v in extra.items())):
        raise WebhookError("the webhook's TokenReview status has fields of the wrong types")
    return {"authenticated": authenticated, "audiences": tuple(auds), "error": error,
            "user": {"username": name, "uid": uid, "groups": groups,
                     "extra": {k: tuple(v) for k, v in extra.items()}}}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
