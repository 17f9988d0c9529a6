"""RequestInfo: what a request path and method address, as kube-apiserver's RequestInfoFactory."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from kapi.object.listopts import query_bool



@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The parsed target of a request; ``is_resource`` is False for /healthz, /version, ..."""

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


def parse_query(raw: bytes | str) -> dict[str, str]:
    """The query string as a dict; the first value wins for repeated keys."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    out: dict[str, str] = {}
    for k, v in parse_qsl(text, keep_blank_values=True):
        out.setdefault(k, v)
    return out


def request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
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
