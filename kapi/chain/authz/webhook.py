"""The Webhook authorization mode: a SubjectAccessReview POSTed to ``--authorization-webhook-config-file``.

kube's ``plugin/pkg/authorizer/webhook``: the request's user and attributes go out as an
``authorization.k8s.io`` SubjectAccessReview (``--authorization-webhook-version`` v1beta1, the
default, names the groups ``group``; v1 ``groups``), the answer's status decides: ``denied`` is
Deny, ``allowed`` Allow, neither NoOpinion (the next mode decides), both Deny with an error. The
status is cached by the review's spec, an allow for ``--authorization-webhook-cache-authorized-ttl``
(5 m), anything else for ``...-unauthorized-ttl`` (30 s), 8192 entries at most (LRU), unless the
request's own attributes are 10,000 bytes or more. A webhook that cannot be asked (after kube's
retries) is NoOpinion with the error: the union then answers 500 unless a later mode allows.
Rules cannot be listed from a webhook: ``rules_for`` says so, as kube's does.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
import trio

from kapi import errors
from kapi.chain.webhookclient import WebhookError
from kapi.object.access import ALLOW, DENY, NO_OPINION, Attributes, Decision, Rules, UserInfo
from kapi.object.selectors import (DOES_NOT_EXIST, DOUBLE_EQUALS, EQUALS, EXISTS, IN, NOT_EQUALS, NOT_IN,
                                   parse_field_terms, parse_label_selector)

GROUP = "authorization.k8s.io"
VERSIONS = ("v1", "v1beta1")
CACHE_SIZE = 8192  # kube's cache.NewLRUExpireCache(8192)
MAX_CONTROLLED_ATTR_CACHE_SIZE = 10000  # longer requester-controlled attributes are not cached (a DoS guard)


class Poster(Protocol):
    async def post(self, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class ExpiringLRU:
    """kube's LRUExpireCache: at most ``size`` entries, each with its own expiry, least recently used out first."""

    size: int = CACHE_SIZE
    _entries: OrderedDict[Any, tuple[float, Any]] = field(default_factory=OrderedDict)

    def get(self, key: Any, now: float) -> Any | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        expires, value = hit
        if now >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def add(self, key: Any, value: Any, ttl_s: float, now: float) -> None:
        if ttl_s <= 0:
            return
        self._entries[key] = (now + ttl_s, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class WebhookAuthorizer:
    """The ``Webhook`` mode: asks ``client`` (a WebhookClient) with SubjectAccessReviews of ``version``."""

    client: Poster
    version: str = "v1beta1"
    authorized_ttl_s: float = 300.0
    unauthorized_ttl_s: float = 30.0
    name: str = "Webhook"
    cache: ExpiringLRU = field(default_factory=ExpiringLRU)
    calls: int = 0  # reviews sent (a cache hit sends none)

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f'unsupported webhook authorizer version "{self.version}", supported versions are '
                             f'"v1", "v1beta1"')

    async def authorize(self, attrs: Attributes) -> Decision:
        spec = review_spec(attrs)
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        status = self.cache.get(key, trio.current_time())
        if status is None:
            self.calls += 1
            try:
                answer = await self.client.post(self._review(spec))
                status = _status_of(answer, self.version)
            except (WebhookError, errors.BadRequest) as exc:
                return Decision(NO_OPINION, "", str(exc))
            if _should_cache(attrs):
                ttl = self.authorized_ttl_s if status["allowed"] else self.unauthorized_ttl_s
                self.cache.add(key, status, ttl, trio.current_time())
        reason = status["reason"]
        if status["denied"] and status["allowed"]:
            return Decision(DENY, reason, "webhook subject access review returned both allow and deny response")
        if status["denied"]:
            return Decision(DENY, reason)
        if status["allowed"]:
            return Decision(ALLOW, reason)
        return Decision(NO_OPINION, reason)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(incomplete=True, evaluation_error="webhook authorizer does not support user rule resolution")

    def _review(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The review as client-go encodes it (empty metadata and status included, as Go's encoder writes them)."""
        if self.version == "v1beta1" and "groups" in spec:
            spec = {("group" if k == "groups" else k): v for k, v in spec.items()}
        return {"kind": "SubjectAccessReview", "apiVersion": f"{GROUP}/{self.version}",
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": {"allowed": False}}


def review_spec(attrs: Attributes) -> dict[str, Any]:
    """The v1 SubjectAccessReviewSpec of a request, fields omitted when empty as Go's omitempty does."""
    user = attrs.user
    spec: dict[str, Any] = {}
    if attrs.resource_request:
        res = {k: v for k, v in (("namespace", attrs.namespace), ("verb", attrs.verb), ("group", attrs.group),
                                 ("version", attrs.version), ("resource", attrs.resource),
                                 ("subresource", attrs.subresource), ("name", attrs.name)) if v}
        fields = field_requirements(attrs.field_selector)
        if fields:
            res["fieldSelector"] = {"requirements": fields}
        labels = label_requirements(attrs.label_selector)
        if labels:
            res["labelSelector"] = {"requirements": labels}
        spec["resourceAttributes"] = res
    else:
        spec["nonResourceAttributes"] = {k: v for k, v in (("path", attrs.path), ("verb", attrs.verb)) if v}
    if user.name:
        spec["user"] = user.name
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if user.uid:
        spec["uid"] = user.uid
    return spec


def field_requirements(text: str) -> list[dict[str, Any]]:
    """kube's fieldSelectorToAuthorizationAPI: ``=``/``==`` as In, ``!=`` as NotIn; unparsable text adds nothing."""
    try:
        selector = parse_field_terms(text)
    except errors.StatusError:
        return []
    return [{"key": r.field, "operator": "NotIn" if r.operator == "!=" else "In", "values": [r.value]}
            for r in selector.requirements]


def label_requirements(text: str) -> list[dict[str, Any]]:
    """kube's labelSelectorToAuthorizationAPI: In/NotIn/Exists/DoesNotExist kept, Gt/Lt dropped (they only narrow)."""
    if not text:
        return []
    try:
        selector = parse_label_selector(text)
    except errors.StatusError:
        return []
    ops = {EQUALS: "In", DOUBLE_EQUALS: "In", IN: "In", NOT_EQUALS: "NotIn", NOT_IN: "NotIn",
           EXISTS: "Exists", DOES_NOT_EXIST: "DoesNotExist"}
    out = []
    for req in selector.requirements:
        op = ops.get(req.operator)
        if op is None:
            continue
        item: dict[str, Any] = {"key": req.key, "operator": op}
        if req.values:
            item["values"] = list(req.values)
        out.append(item)
    return out


def _should_cache(attrs: Attributes) -> bool:
    size = sum(len(v) for v in (attrs.namespace, attrs.verb, attrs.group, attrs.version, attrs.resource,
                                attrs.subresource, attrs.name, attrs.path))
    return size < MAX_CONTROLLED_ATTR_CACHE_SIZE


def _status_of(answer: dict[str, Any], version: str) -> dict[str, Any]:
    """The answer's status (allowed, denied, reason, evaluationError); a wrong kind or version is an error."""
    kind, api_version = answer.get("kind"), answer.get("apiVersion")
    if kind not in (None, "", "SubjectAccessReview") or api_version not in (None, "", f"{GROUP}/{version}"):
        raise errors.BadRequest(f"the webhook answered {api_version or '?'}, Kind={kind or '?'}, not "
                                f"{GROUP}/{version}, Kind=SubjectAccessReview")
    status = answer.get("status") or {}
    if not isinstance(status, dict):
        raise errors.BadRequest("the webhook's SubjectAccessReview status is not an object")
    allowed, denied, reason = status.get("allowed", False), status.get("denied", False), status.get("reason", "")
    if not isinstance(allowed, bool) or not isinstance(denied, bool) or not isinstance(reason, str):
        raise errors.BadRequest("the webhook's SubjectAccessReview status has fields of the wrong types")
    return {"allowed": allowed, "denied": denied, "reason": reason,
            "evaluationError": str(status.get("evaluationError") or "")}
