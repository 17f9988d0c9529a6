"""One request as the filter chain and the handlers see it: RequestInfo, RequestContext (its UserInfo is kapi.object.access's).

No ASGI here: the app (kapi.api.app) builds the context from the scope, the chain's filters fill
in what they resolve (request info, user, deadline), and the handlers read the body through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Sequence
from urllib.parse import parse_qsl, unquote

import trio

from kapi.object.access import UserInfo
from kapi.object.listopts import query_bool

BodyReader = Callable[[], Awaitable[bytes]]

# kube-apiserver's long-running check (BasicLongRunningRequestCheck as kube-apiserver configures it):
# these requests get no request deadline and are not counted in flight.
LONG_RUNNING_VERBS = frozenset(("watch", "proxy"))
LONG_RUNNING_SUBRESOURCES = frozenset(("attach", "exec", "proxy", "log", "portforward"))


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The parsed target of a request (kube's RequestInfo); ``is_resource`` is False for /healthz, /version, ..."""

    is_resource: bool
    path: str
    verb: str  # get list watch create update patch delete deletecollection (or the HTTP verb lowered)
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()

    @property
    def long_running(self) -> bool:
        """A watch (or exec, attach, logs, port-forward, proxy): no request deadline, not counted in flight."""
        return self.verb in LONG_RUNNING_VERBS or self.is_resource and self.subresource in LONG_RUNNING_SUBRESOURCES


def parse_query(raw: bytes | str) -> dict[str, str]:
    """The query string as a dict; the first value wins for repeated keys."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    out: dict[str, str] = {}
    for k, v in parse_qsl(text, keep_blank_values=True):
        out.setdefault(k, v)
    return out


def query_values(raw: bytes | str, key: str) -> list[str]:
    """Every value of ``key`` in the query string, in order (a list-valued option such as dryRun)."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    return [v for k, v in parse_qsl(text, keep_blank_values=True) if k == key]


_DURATION_UNITS_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
                      "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX_NS = 1 << 63


def _go_quote(text: str) -> str:
    """Go's time.quote: in double quotes, bytes outside printable ASCII as \\xNN."""
    out = []
    for c in text:
        if c < " " or c >= "\x80":
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "replace"))
        else:
            out.append("\\" + c if c in '"\\' else c)
    return '"' + "".join(out) + '"'


def parse_go_duration(text: str) -> int:
    """Nanoseconds, as Go's time.ParseDuration reads ``text`` ("300ms", "-1.5h", "2h45m"); ValueError with its message."""
    invalid = ValueError("time: invalid duration " + _go_quote(text))
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        i = 0
        while i < len(rest) and rest[i].isascii() and rest[i].isdigit():
            i += 1
        whole, rest = rest[:i], rest[i:]
        fraction = ""
        if rest[:1] == ".":
            j = 1
            while j < len(rest) and rest[j].isascii() and rest[j].isdigit():
                j += 1
            fraction, rest = rest[1:j], rest[j:]
        if not whole and not fraction or whole and int(whole) > _MAX_NS:
            raise invalid
        k = 0
        while k < len(rest) and rest[k] != "." and not (rest[k].isascii() and rest[k].isdigit()):
            k += 1
        if k == 0:
            raise ValueError("time: missing unit in duration " + _go_quote(text))
        unit_name, rest = rest[:k], rest[k:]
        unit = _DURATION_UNITS_NS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {_go_quote(unit_name)} in duration {_go_quote(text)}")
        value = int(whole or "0")
        if value > _MAX_NS // unit:
            raise invalid
        value *= unit
        if fraction.strip("0"):
            value += int(float("0." + fraction) * unit)
        total += value
        if total > _MAX_NS:
            raise invalid
    if not negative and total > _MAX_NS - 1:
        raise invalid
    return -total if negative else total


def new_request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    """Parse ``path`` the way kube-apiserver's RequestInfoFactory does."""
    parts = tuple(unquote(p) for p in path.strip("/").split("/")) if path.strip("/") else ()
    lower = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(False, path, lower, parts=parts)
    prefix = parts[0]
    rest = list(parts[1:])
    group = ""
    if prefix == "apis":
        if not rest:
            return RequestInfo(False, path, lower, api_prefix=prefix, parts=parts)
        group = rest.pop(0)
    if not rest:
        return RequestInfo(False, path, lower, api_prefix=prefix, group=group, parts=parts)
    version = rest.pop(0)
    if not rest:
        return RequestInfo(False, path, lower, api_prefix=prefix, group=group, version=version, parts=parts)
    verb = {"post": "create", "get": "get", "head": "get", "put": "update", "patch": "patch",
            "delete": "delete"}.get(lower, lower)
    watch_path = False
    if rest[0] == "watch":
        watch_path = True
        rest.pop(0)
        verb = "watch"
    namespace = ""
    if rest and rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in ("finalize", "status"):
                rest = rest[2:]
            else:
                # /namespaces/<name>[/status|/finalize] addresses the namespace itself.
                namespace = ""
                rest = ["namespaces", rest[1]] + rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "list"
    if verb == "list" and query_bool(query, "watch"):
        verb = "watch"
    if verb == "delete" and not name:
        verb = "deletecollection"
    if watch_path and verb != "watch":
        verb = "watch"
    if len(rest) > 3:
        subresource = "/".join(rest[2:])
    return RequestInfo(True, path, verb, prefix, group, version, namespace, resource, subresource, name, parts)


async def _no_body() -> bytes:
    return b""


@dataclass(eq=False)
class RequestContext:
    """One request, typed: what the client sent, then what each filter resolved.

    ``info`` is set by the request_info filter, ``user`` by authenticate, ``deadline`` by the
    deadline filter (None: long-running, or outside the chain); the body is read only when a
    handler asks for it (``read_body``), which is after authorization.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    client_cert: bytes | None = None  # DER of the verified TLS client certificate
    # Every header as sent, repeats included (``headers`` keeps the first of each): the few that
    # kube reads in full (Impersonate-Group, the proxy's group and extra headers) are read here.
    raw_headers: Sequence[tuple[bytes, bytes]] = ()
    impersonator: UserInfo | None = None  # the authenticated user when ``user`` is impersonated (audit)
    client: tuple[str, int] | None = None  # the peer's address (audit's sourceIPs)
    raw_path: bytes = b""  # the path as sent, still escaped, and the raw query: audit's requestURI
    query_string: bytes = b""
    audit_id: str = ""  # the Audit-ID header sent, or a fresh UUID: answered on every response
    received_ns: int = 0  # wall-clock ns when the request arrived (audit's requestReceivedTimestamp)
    # Audit annotations (authorization.k8s.io/decision, ...): None unless the request is audited,
    # so recording one costs nothing then (kube's AddAuditAnnotation without an audit context).
    annotations: dict[str, str] | None = None
    response_code: int = 0  # the status the app sent, set before ``on_done`` runs
    body_reader: BodyReader = _no_body  # reads the whole body (bounded by --max-body-bytes), once
    deadline: float | None = None  # trio time by which a non-long-running request must be answered
    warnings: list[str] = field(default_factory=list)
    on_done: list[Callable[[], None]] = field(default_factory=list)  # run once the answer is sent
    # Run once a watch's initial events are handed to the writer (APF frees a watch's seats then);
    # a watch that sends none runs them when its stream starts.
    on_watch_initialized: list[Callable[[], None]] = field(default_factory=list)
    # Returns when the client has gone away (the app's: it first receives the rest of the body, kept for
    # ``read_body``); a request waiting in an APF queue is cancelled by it. Default: never.
    until_disconnect: Callable[[], Awaitable[None]] = trio.sleep_forever
    # Headers a filter adds to the answer, whatever it is (APF's X-Kubernetes-PF-*), refusals included.
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    _info: RequestInfo | None = field(default=None, init=False, repr=False)
    _user: UserInfo | None = field(default=None, init=False, repr=False)
    _body: bytes | None = field(default=None, init=False, repr=False)

    def header(self, name: str) -> str:
        return self.headers.get(name, "")

    def annotate(self, key: str, value: str) -> None:
        """Record an audit annotation; nothing when the request is not audited."""
        if self.annotations is not None:
            self.annotations[key] = value

    def header_values(self, name: str) -> list[str]:
        """Every value sent for header ``name`` (lower case), in order, as Go's ``Header[name]``."""
        if name not in self.headers:
            return []
        wanted = name.encode("latin-1")
        values = [v.decode("latin-1") for k, v in self.raw_headers if k.lower() == wanted]
        return values or [self.headers[name]]

    @property
    def info(self) -> RequestInfo:
        if self._info is None:
            raise RuntimeError("no request info yet: the request_info filter sets it")
        return self._info

    @info.setter
    def info(self, value: RequestInfo) -> None:
        self._info = value

    @property
    def has_info(self) -> bool:
        return self._info is not None

    @property
    def user(self) -> UserInfo:
        if self._user is None:
            raise RuntimeError("no user yet: the authenticate filter sets it")
        return self._user

    @user.setter
    def user(self, value: UserInfo) -> None:
        self._user = value

    @property
    def has_user(self) -> bool:
        return self._user is not None

    @property
    def body_read(self) -> bool:
        return self._body is not None

    @property
    def body(self) -> bytes:
        """The body read by ``read_body``; reading it before that is a bug in the caller."""
        if self._body is None:
            raise RuntimeError("the request body has not been read (await ctx.read_body() first)")
        return self._body

    async def read_body(self) -> bytes:
        """Read the body once (later calls return it again); errors as the reader raises them (413, 400)."""
        if self._body is None:
            self._body = await self.body_reader()
        return self._body
