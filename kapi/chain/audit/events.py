"""The audit.k8s.io/v1 Event of one request, its stages as JSON-ready dicts, and kube's legacy one-line form.

An ``Event`` is filled in as the request goes (kube's audit context); each stage that is sent is a
fresh dict (``snapshot``) in the field order of kube's Go type, so a backend may keep it while the
request goes on.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any

from kapi.object.access import UserInfo, user_info_object
from kapi.object.validation import go_quote

Obj = dict[str, Any]

# kube's maybeTruncateUserAgent
MAX_USER_AGENT = 1024
_TRUNCATED = "...TRUNCATED"


class _Clock:
    """Go's MicroTime and RFC3339Nano forms of wall-clock nanoseconds; the second's prefix is kept."""

    __slots__ = ("_second", "_prefix")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def micro(self, ns: int) -> str:
        """metav1.MicroTime's JSON form: six fraction digits, UTC."""
        second, rest = divmod(ns, 1_000_000_000)
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._prefix}.{rest // 1000:06d}Z"



CLOCK = _Clock()


def user_dict(user: UserInfo | None) -> Obj:
    """authentication.k8s.io/v1 UserInfo as the event writes it (empty fields left out)."""
    return user_info_object(user) if user is not None else {}


def source_ips(headers: dict[str, str], client: tuple[str, int] | None) -> list[str]:
    """kube's utilnet.SourceIPs: X-Forwarded-For's valid addresses, X-Real-Ip if new, then the peer's."""
    ips: list[str] = []
    forwarded = headers.get("x-forwarded-for", "")
    if forwarded:
        for part in forwarded.split(","):
            ip = _ip(part.strip())
            if ip:
                ips.append(ip)
    real = _ip(headers.get("x-real-ip", ""))
    if real and real not in ips:
        ips.append(real)
    remote = _ip(client[0]) if client else ""
    if remote and (not ips or ips[-1] != remote):
        ips.append(remote)
    return ips


def _ip(text: str) -> str:
    if not text:
        return ""
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)  # Go's net.IP prints a v4-in-v6 address as v4
    return str(addr)


def user_agent(value: str) -> str:
    return value[:MAX_USER_AGENT] + _TRUNCATED if len(value) > MAX_USER_AGENT else value


@dataclass(slots=True, eq=False)
class Event:
    """One request's audit event while it is served; ``snapshot`` gives a stage of it."""

    level: str
    audit_id: str
    request_uri: str
    verb: str
    user: UserInfo | None
    source_ips: list[str]
    user_agent: str
    received_ns: int
    object_ref: Obj | None = None
    impersonated_user: UserInfo | None = None
    response_status: Obj | None = None
    request_object: Any = None
    response_object: Any = None
    annotations: dict[str, str] = field(default_factory=dict)
    _user: Obj | None = field(default=None, init=False, repr=False)  # made once, shared by the stages
    _received: str = field(default="", init=False, repr=False)

    def snapshot(self, stage: str, stage_ns: int) -> Obj:
        """The event at ``stage`` as audit.k8s.io/v1 JSON (kube's Go field order, omitempty as Go's)."""
        if self._user is None:
            self._user = user_dict(self.user)
            self._received = CLOCK.micro(self.received_ns)
        out: Obj = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": self.level, "auditID": self.audit_id,
                    "stage": stage, "requestURI": self.request_uri, "verb": self.verb, "user": self._user}
        if self.impersonated_user is not None:
            out["impersonatedUser"] = user_dict(self.impersonated_user)
        if self.source_ips:
            out["sourceIPs"] = self.source_ips
        if self.user_agent:
            out["userAgent"] = self.user_agent
        if self.object_ref:
            out["objectRef"] = dict(self.object_ref)
        if self.response_status is not None:
            out["responseStatus"] = self.response_status
        if self.request_object is not None:
            out["requestObject"] = self.request_object
        if self.response_object is not None:
            out["responseObject"] = self.response_object
        out["requestReceivedTimestamp"] = self._received
        out["stageTimestamp"] = self._received if stage_ns == self.received_ns else CLOCK.micro(stage_ns)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


def object_ref(resource: str, namespace: str, name: str, group: str, version: str, subresource: str) -> Obj:
    """audit.k8s.io/v1 ObjectReference, empty fields left out, in kube's field order."""
    out: Obj = {}
    if resource:
        out["resource"] = resource
    if namespace:
        out["namespace"] = namespace
    if name:
        out["name"] = name
    if group:
        out["apiGroup"] = group
    if version:
        out["apiVersion"] = version
    if subresource:
        out["subresource"] = subresource
    return out


def complete_object_ref(ref: Obj, meta: Any) -> Obj:
    """kube's LogRequestObject: namespace, name, uid and resourceVersion from the request's object when unset."""
    if not isinstance(meta, dict):
        return ref
    out: Obj = {}
    for key in ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource"):
        value = ref.get(key) or (meta.get(key) if key in ("namespace", "name", "uid", "resourceVersion") else "")
        if value and isinstance(value, str):
            out[key] = value
    return out


def _quoted_list(values: list[str]) -> str:
    return ",".join(go_quote(v) for v in values)


def _rfc3339nano(micro: str) -> str:
    """Go's RFC3339Nano of a MicroTime string: trailing zeros of the fraction dropped."""
    head, _, fraction = micro.rstrip("Z").partition(".")
    fraction = fraction.rstrip("0")
    return f"{head}.{fraction}Z" if fraction else f"{head}Z"


def event_string(ev: Obj) -> str:
    """kube's audit.EventString: the ``--audit-log-format legacy`` line of a stage (no newline)."""
    user = ev.get("user") or {}
    username, groups = "<none>", "<none>"
    if user.get("username"):
        username = user["username"]
        if user.get("groups"):
            groups = _quoted_list(user["groups"])
    as_user, as_groups = "<self>", "<lookup>"
    impersonated = ev.get("impersonatedUser")
    if impersonated is not None:
        as_user = impersonated.get("username", "")
        if impersonated.get("groups") is not None:
            as_groups = _quoted_list(impersonated["groups"])
    namespace = (ev.get("objectRef") or {}).get("namespace") or "<none>"
    status = ev.get("responseStatus")
    response = str(status.get("code", 0)) if status is not None else "<deferred>"
    ips = ev.get("sourceIPs") or ()
    ip = ips[0] if ips else "<unknown>"
    q = go_quote
    return (f"{_rfc3339nano(ev['requestReceivedTimestamp'])} AUDIT: id={q(ev['auditID'])} stage={q(ev['stage'])} ip={q(ip)} "
            f"method={q(ev['verb'])} user={q(username)} groups={q(groups)} as={q(as_user)} asgroups={q(as_groups)} "
            f"user-agent={q(ev.get('userAgent', ''))} namespace={q(namespace)} uri={q(ev['requestURI'])} "
            f'response="{response}"')
