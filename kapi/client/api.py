"""The async API client: requests, lists and watches over HTTP/1.1 or HTTP/2, JSON or protobuf.

Built on ``httpx`` (its anyio backend runs under trio), one connection pool per
``Client``. Objects are plain dicts in their JSON form whichever encoding went
over the wire: protobuf responses are decoded with kapi's schema of the built-in
types (kinds without a protobuf encoding, such as custom resources, fall back to
JSON as client-go does by asking ``application/vnd.kubernetes.protobuf, application/json``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from kapi import errors
from kapi.encoding import protobuf
from kapi.object.schema import Schema, load_builtin

from kapi.client.config import ClientConfig

Obj = dict[str, Any]

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_OR_JSON = f"{PROTOBUF}, {JSON}"
WATCH_JSON = JSON
WATCH_PROTOBUF = f"{PROTOBUF};stream=watch, {JSON}"

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource to talk to: ``Resource("v1", "pods", "Pod")``, ``Resource("apps/v1", "deployments", "Deployment")``."""

    api_version: str
    plural: str
    kind: str = ""
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        base = f"/api/{self.api_version}" if not self.group else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{_quote(namespace)}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{_quote(name)}"
            if subresource:
                base += f"/{subresource}"
        return base


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


# A few resources every controller uses; others come from ``Client.discover``.
PODS = Resource("v1", "pods", "Pod")
NAMESPACES = Resource("v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("v1", "configmaps", "ConfigMap")
SECRETS = Resource("v1", "secrets", "Secret")
SERVICES = Resource("v1", "services", "Service")
SERVICEACCOUNTS = Resource("v1", "serviceaccounts", "ServiceAccount")
NODES = Resource("v1", "nodes", "Node", namespaced=False)
EVENTS = Resource("v1", "events", "Event")
DEPLOYMENTS = Resource("apps/v1", "deployments", "Deployment")
LEASES = Resource("coordination.k8s.io/v1", "leases", "Lease")


class ApiError(Exception):
    """A non-2xx answer, with the server's ``metav1.Status`` (or one made from the bare status code)."""

    def __init__(self, code: int, status: Obj, retry_after_s: float | None = None) -> None:
        self.code = code
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(f"{code} {self.reason}: {self.message}")

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")

    @property
    def gone(self) -> bool:
        """The resourceVersion asked for is older than the server keeps (410: relist)."""
        return self.code == 410

    @classmethod
    def from_status(cls, status: Obj, retry_after_s: float | None = None) -> ApiError:
        return cls(int(status.get("code") or 500), status, retry_after_s)


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: client-go ignores it too


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED, BOOKMARK (ERROR events are raised as ``ApiError``)."""

    type: str
    object: Obj


class Client:
    """An async client of one API server.

    ``async with Client(config) as client:`` ... Every request carries the
    credentials of ``config``; ``protobuf=True`` asks for protobuf (falling back
    to JSON per kind, as the server answers).
    """

    def __init__(self, config: ClientConfig, *, http2: bool = True, protobuf: bool = False,
                 timeout_s: float = 60.0, max_connections: int = 100) -> None:
        self.config = config
        self.protobuf = protobuf
        self.timeout_s = timeout_s
        self._schema: Schema | None = None
        # tls-server-name: the name the server's certificate is checked against (and sent as SNI).
        self._extensions = {"sni_hostname": config.tls_server_name} if config.tls_server_name else {}
        self.http2 = http2
        self._http = self._pool(max_connections)

    def _pool(self, max_connections: int) -> httpx.AsyncClient:
        verify: Any = self.config.ssl_context if self.config.ssl_context is not None else True
        return httpx.AsyncClient(
            base_url=self.config.server, verify=verify, http2=self.http2, timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            headers={"User-Agent": "kapi-client"})

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    @property
    def schema(self) -> Schema:
        if self._schema is None:
            self._schema = load_builtin()
        return self._schema

    # ------------------------------------------------------------------ plumbing

    def _headers(self, accept: str, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": accept, **self.config.auth_headers()}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _decode(self, content_type: str, body: bytes) -> Obj:
        if content_type.startswith(PROTOBUF):
            try:
                return protobuf.decode_object(self.schema, body)
            except errors.StatusError as exc:
                raise ApiError(500, {"reason": "BadResponse", "message": f"undecodable protobuf answer: {exc}"}) from exc
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(500, {"reason": "BadResponse", "message": f"undecodable answer: {body[:200]!r}"}) from exc
        if not isinstance(value, dict):
            raise ApiError(500, {"reason": "BadResponse", "message": "the answer is not an object"})
        return value

    def _error(self, resp: httpx.Response, body: bytes) -> ApiError:
        status: Obj | None = None
        try:
            decoded = self._decode(resp.headers.get("content-type", ""), body)
            if decoded.get("kind") == "Status":
                status = decoded
        except ApiError:
            pass
        if status is None:
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": resp.status_code,
                      "reason": resp.reason_phrase, "message": body[:500].decode("utf-8", "replace")}
        return ApiError(resp.status_code, status, _retry_after(resp.headers))

    async def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                      body: Obj | bytes | None = None, content_type: str = JSON,
                      accept: str | None = None) -> Obj:
        """One request; the decoded answer, or ``ApiError``. ``httpx.TransportError`` when unreachable."""
        data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        accept = accept or (PROTOBUF_OR_JSON if self.protobuf else JSON)
        headers = self._headers(accept, content_type if data is not None else None)
        try:
            resp = await self._http.request(method, path, params=_params(params), content=data, headers=headers,
                                            extensions=self._extensions)
        except (httpx.WriteError, httpx.RemoteProtocolError) as exc:
            # A kept-alive connection the server had closed (it restarted, or timed the connection
            # out): the request did not get through, or for an idempotent one may be sent again.
            # Once, on a fresh connection, as Go's transport does.
            if isinstance(exc, httpx.RemoteProtocolError) and method not in _IDEMPOTENT:
                raise
            resp = await self._http.request(method, path, params=_params(params), content=data, headers=headers,
                                            extensions=self._extensions)
        if resp.status_code >= 300:
            raise self._error(resp, resp.content)
        return self._decode(resp.headers.get("content-type", ""), resp.content)

    # ------------------------------------------------------------------ verbs

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        return await self.request("GET", res.path(namespace, name))

    async def list(self, res: Resource, namespace: str | None = None, **options: Any) -> Obj:
        """One LIST (one page when ``limit`` is given); options as in the API, snake_case or camelCase."""
        return await self.request("GET", res.path(namespace), params=_list_params(options))

    async def list_pages(self, res: Resource, namespace: str | None = None, *, limit: int = 500,
                         **options: Any) -> AsyncIterator[Obj]:
        """Every page of a paginated LIST, following ``continue`` tokens."""
        params = _list_params({**options, "limit": limit})
        while True:
            page = await self.request("GET", res.path(namespace), params=params)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params = {**params, "continue": token}
            params.pop("resourceVersion", None)
            params.pop("resourceVersionMatch", None)

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None, **options: Any) -> Obj:
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        return await self.request("POST", res.path(ns), params=_params(options), body=obj)

    async def update(self, res: Resource, obj: Obj, namespace: str | None = None, subresource: str | None = None,
                     **options: Any) -> Obj:
        meta = obj.get("metadata") or {}
        ns = namespace or meta.get("namespace")
        return await self.request("PUT", res.path(ns, meta["name"], subresource), params=_params(options), body=obj)

    async def patch(self, res: Resource, name: str, patch: Obj | list[Any] | bytes, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None, **options: Any) -> Obj:
        """PATCH with ``patch_type`` merge, json, strategic or apply (server-side apply needs ``field_manager``)."""
        body = patch if isinstance(patch, bytes) else orjson.dumps(patch)
        return await self.request("PATCH", res.path(namespace, name, subresource), params=_params(options),
                                  body=body, content_type=PATCH_TYPES[patch_type])

    async def delete(self, res: Resource, name: str, namespace: str | None = None, **options: Any) -> Obj:
        return await self.request("DELETE", res.path(namespace, name), params=_params(options))

    async def discover(self, plural: str, api_version: str | None = None) -> Resource:
        """The ``Resource`` named ``plural`` (``deployments``, ``deployments.apps``), from discovery."""
        name, _, group = plural.partition(".")
        versions = [api_version] if api_version else await self._preferred_versions(group)
        for gv in versions:
            listing = await self.request("GET", f"/api/{gv}" if "/" not in gv else f"/apis/{gv}", accept=JSON)
            for r in listing.get("resources", []):
                if r.get("name") == name:
                    return Resource(gv, name, r.get("kind", ""), bool(r.get("namespaced")))
        raise ApiError(404, {"reason": "NotFound", "message": f"the server has no resource {plural!r}"})

    async def _preferred_versions(self, group: str) -> list[str]:
        if not group:
            return ["v1"]
        groups = await self.request("GET", "/apis", accept=JSON)
        for g in groups.get("groups", []):
            if g.get("name") == group:
                preferred = g.get("preferredVersion", {}).get("groupVersion")
                others = [v["groupVersion"] for v in g.get("versions", []) if v["groupVersion"] != preferred]
                return ([preferred] if preferred else []) + others
        raise ApiError(404, {"reason": "NotFound", "message": f"the server has no API group {group!r}"})

    # ------------------------------------------------------------------ watch

    @asynccontextmanager
    async def watch(self, res: Resource, namespace: str | None = None, **options: Any) -> AsyncIterator[
            AsyncIterator[WatchEvent]]:
        """A watch stream: ``async with client.watch(PODS, resource_version=rv) as events: async for ev in events``.

        Options as for LIST (``resource_version``, ``label_selector``, ``allow_watch_bookmarks``,
        ``send_initial_events``, ``timeout_seconds``...). The stream opens (or raises
        ``ApiError``) on entering; an ERROR event is raised as ``ApiError``; the iterator
        ends when the server ends the watch.

        Over HTTP/2 each watch has a connection of its own. httpx's HTTP/2 connection
        reads the network for one stream at a time, under a lock: a stream whose data
        has arrived can sit waiting for that lock behind a quiet watch that holds it
        while it waits for data, so a watch sharing a connection can hold up every
        other answer on it until its next event.
        """
        params = _list_params({**options, "watch": "true"})
        accept = WATCH_PROTOBUF if self.protobuf else WATCH_JSON
        timeout_s = float(params.get("timeoutSeconds", 0)) or None
        read_timeout = timeout_s + 30 if timeout_s else None  # bookmarks come at least each minute
        http = self._pool(1) if self.http2 else self._http
        try:
            request = http.build_request("GET", res.path(namespace), params=params, headers=self._headers(accept),
                                         timeout=httpx.Timeout(self.timeout_s, read=read_timeout),
                                         extensions=self._extensions)
            resp = await http.send(request, stream=True)
            try:
                if resp.status_code >= 300:
                    raise self._error(resp, await resp.aread())
                content_type = resp.headers.get("content-type", "")
                events = self._protobuf_events(resp) if content_type.startswith(PROTOBUF) else self._json_events(resp)
                async with aclosing(events):
                    yield events
            finally:
                await resp.aclose()
        finally:
            if http is not self._http:
                await http.aclose()

    async def _json_events(self, resp: httpx.Response) -> AsyncIterator[WatchEvent]:
        pending = b""
        async with aclosing(resp.aiter_raw()) as chunks:
            async for chunk in chunks:
                if pending:
                    chunk = pending + chunk
                lines = chunk.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.strip():
                        yield self._event(orjson.loads(line))

    async def _protobuf_events(self, resp: httpx.Response) -> AsyncIterator[WatchEvent]:
        buf = bytearray()
        async with aclosing(resp.aiter_raw()) as chunks:
            async for chunk in chunks:
                buf += chunk
                pos = 0
                while pos + 4 <= len(buf):
                    size = int.from_bytes(buf[pos:pos + 4], "big")
                    if pos + 4 + size > len(buf):
                        break
                    frame = bytes(buf[pos:pos + 4 + size])
                    pos += 4 + size
                    for event_type, raw in protobuf.iter_watch_frames(frame):
                        yield self._event({"type": event_type,
                                           "object": protobuf.decode_object(self.schema, raw)})
                del buf[:pos]

    @staticmethod
    def _event(raw: Obj) -> WatchEvent:
        event_type, obj = raw.get("type", ""), raw.get("object") or {}
        if event_type == "ERROR":
            raise ApiError.from_status(obj)
        return WatchEvent(event_type, obj)


_CAMEL = {
    "label_selector": "labelSelector", "field_selector": "fieldSelector", "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch", "continue_": "continue", "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks", "send_initial_events": "sendInitialEvents",
    "field_manager": "fieldManager", "field_validation": "fieldValidation", "dry_run": "dryRun",
    "propagation_policy": "propagationPolicy", "grace_period_seconds": "gracePeriodSeconds",
}


def _params(options: Mapping[str, Any] | None) -> dict[str, str]:
    """Query parameters in the API's spelling; None values are left out, booleans are ``true``/``false``."""
    out: dict[str, str] = {}
    for k, v in (options or {}).items():
        if v is None:
            continue
        out[_CAMEL.get(k, k)] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def _list_params(options: Mapping[str, Any]) -> dict[str, str]:
    params = _params(options)
    if params.get("resourceVersion") == "":
        del params["resourceVersion"]
    return params
