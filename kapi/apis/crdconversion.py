"""Conversion of custom objects between the versions of one CustomResourceDefinition.

kube's ``apiextensions-apiserver/pkg/apiserver/conversion``: ``spec.conversion.strategy`` ``None``
(the nop converter: only ``apiVersion`` is rewritten) or ``Webhook`` (a ``ConversionReview`` POSTed
to ``spec.conversion.webhook.clientConfig``: a ``url``, or a ``service`` reached at
``https://<name>.<namespace>.svc:<port><path>``, verified with ``caBundle``).

``conversion_for(crd)`` gives the ``Conversion`` of a CRD. ``convert_sync`` serves the None strategy
(the custom resource strategy's ``from_storage`` / ``to_storage`` call it); a webhook is I/O, so
``convert`` is the coroutine that serves both (``needs_async`` tells which a caller must use). The
webhook's answer is checked as kube's webhook converter checks it, with its messages: the review's
kind and ``uid``, ``result.status`` Success, as many objects as were sent, each one's
``apiVersion`` and ``kind``, name, namespace and uid unchanged; of the metadata only ``labels``
and ``annotations`` may change (the rest is restored from the original).
"""

from __future__ import annotations

import base64
import binascii
import copy
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kapi import errors
from kapi.object import meta
from kapi.object.validation.meta import validate_annotations, validate_labels

__all__ = ["ClientFactory", "Conversion", "HookClient", "ServiceResolver", "conversion_for", "registry_service_resolver"]

Obj = dict[str, Any]
# (namespace, service name, service port) -> (host, port) a connection goes to.
ServiceResolver = Callable[[str, str, int], Awaitable[tuple[str, int]]]

_REVIEW_GROUP = "apiextensions.k8s.io"
DEFAULT_TIMEOUT_S = 30.0  # kube's webhook request timeout


class HookClient(Protocol):
    """One webhook's HTTPS client: ``kapi.chain.webhookclient.WebhookClient`` (the server hands its class
    in as ``client_factory``: the chain layer is above this one)."""

    async def post_once(self, body: dict[str, Any]) -> dict[str, Any]:
        """One JSON POST and its JSON answer; raises an Exception whose text kube would print."""
        ...

    async def aclose(self) -> None: ...


# (url, ssl context, TLS server name, time-out) -> a client
ClientFactory = Callable[[str, ssl.SSLContext, str, float], HookClient]


class _ResolveError(Exception):
    pass


def _gvk_text(api_version: str, kind: str) -> str:
    """Go's schema.GroupVersionKind.String(): ``stable.example.com/v1, Kind=CronTab``."""
    return f"{api_version}, Kind={kind}"


def _failed(message: str) -> errors.InternalError:
    return errors.InternalError(message)


@dataclass
class Conversion:
    """How one CRD's objects change version. ``strategy`` is ``None`` or ``Webhook``."""

    group: str
    kind: str
    strategy: str = "None"
    review_versions: tuple[str, ...] = ("v1",)
    # The webhook: a fixed URL, or a service resolved on each call.
    url: str = ""
    service: tuple[str, str, int, str] | None = None  # (namespace, name, port, path)
    ca_bundle: bytes = b""
    client_cert: tuple[str, str] | None = None  # (certificate file, key file) presented, if any
    resolve_service: ServiceResolver | None = None
    client_factory: ClientFactory | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    new_uid: Callable[[], str] = meta.new_uid
    _clients: dict[tuple[str, str], HookClient] = field(default_factory=dict, repr=False)
    _ssl: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def needs_async(self) -> bool:
        """Whether conversion is I/O (a webhook): callers must use ``convert``, not ``convert_sync``."""
        return self.strategy == "Webhook"

    # ------------------------------------------------------------------ None

    def convert_sync(self, obj: Obj, api_version: str) -> Obj:
        """``obj`` in ``api_version`` by the None strategy (a copy; ``obj`` itself is kept).

        Raises InternalError for a webhook (use ``convert``).
        """
        if obj.get("apiVersion") == api_version:
            return obj
        if self.needs_async:
            raise _failed(f"conversion webhook for {_gvk_text(str(obj.get('apiVersion', '')), self.kind)} failed: "
                          f"the conversion of a webhook strategy is asynchronous")
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    # --------------------------------------------------------------- either

    async def convert(self, objs: Sequence[Obj], api_version: str) -> list[Obj]:
        """Each of ``objs`` in ``api_version``; those already in it are kept as they are.

        A webhook gets the others in one ConversionReview. Raises InternalError (500) with kube's messages.
        """
        if not self.needs_async:
            return [self.convert_sync(o, api_version) for o in objs]
        todo = [o for o in objs if o.get("apiVersion") != api_version and not _empty(o)]
        if not todo:
            return [o if o.get("apiVersion") == api_version else self.convert_sync_nop(o, api_version) for o in objs]
        converted = await self._call_webhook(todo, api_version)
        out: list[Obj] = []
        it = iter(converted)
        for o in objs:
            if o.get("apiVersion") == api_version:
                out.append(o)
            elif _empty(o):
                out.append(self.convert_sync_nop(o, api_version))
            else:
                out.append(next(it))
        return out

    @staticmethod
    def convert_sync_nop(obj: Obj, api_version: str) -> Obj:
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    async def convert_one(self, obj: Obj, api_version: str) -> Obj:
        return (await self.convert([obj], api_version))[0]

    # -------------------------------------------------------------- Webhook

    def _review_version(self) -> str:
        for v in self.review_versions:
            if v in ("v1", "v1beta1"):
                return v
        raise _failed("no supported conversion review versions")

    async def _client(self) -> HookClient:
        if self.url:
            url, sni = self.url, ""
        else:
            assert self.service is not None
            namespace, name, port, path = self.service
            sni = f"{name}.{namespace}.svc"
            if self.resolve_service is None:
                raise _ResolveError(f'Post "https://{sni}:{port}{path}": no resolver for services is configured')
            try:
                host, to_port = await self.resolve_service(namespace, name, port)
            except errors.StatusError as exc:
                raise _ResolveError(f'Post "https://{sni}:{port}{path}": {exc}') from exc
            netloc = f"[{host}]" if ":" in host else host
            url = f"https://{netloc}:{to_port}{path}"
        key = (url, sni)
        client = self._clients.get(key)
        if client is None:
            if self.client_factory is None:
                raise _ResolveError(f'Post "{url}": no webhook client is configured')
            client = self._clients[key] = self.client_factory(url, self._ssl_context(), sni, self.timeout_s)
        return client

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            try:
                if self.ca_bundle:
                    ctx = ssl.create_default_context(cadata=self.ca_bundle.decode("ascii"))
                else:
                    ctx = ssl.create_default_context()
                if self.client_cert:
                    ctx.load_cert_chain(*self.client_cert)
            except (OSError, ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
                raise _failed(f"conversion webhook for {self.group}, Kind={self.kind}: cannot load the caBundle: "
                              f"{exc}") from exc
            self._ssl = ctx
        return self._ssl

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()

    async def _call_webhook(self, objs: list[Obj], api_version: str) -> list[Obj]:
        first = objs[0]
        gvk = _gvk_text(str(first.get("apiVersion", "")), str(first.get("kind", self.kind)))
        review_version = self._review_version()
        uid = self.new_uid()
        review = {"apiVersion": f"{_REVIEW_GROUP}/{review_version}", "kind": "ConversionReview",
                  "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": list(objs)}}
        try:
            client = await self._client()
            answer = await client.post_once(review)
        except errors.StatusError:
            raise
        except Exception as exc:  # the client's errors (WebhookError), a service that does not resolve
            raise _failed(f"conversion webhook for {gvk} failed: {exc}") from exc
        try:
            converted = _response_objects(answer, review_version, uid)
        except ValueError as exc:
            raise _failed(f"conversion webhook for {gvk} failed: {exc}") from exc
        if len(converted) != len(objs):
            raise _failed(f"conversion webhook for {gvk} returned {len(converted)} objects, expected {len(objs)}")
        out: list[Obj] = []
        single = len(objs) == 1
        for index, (original, got) in enumerate(zip(objs, converted)):
            at = "object at index 0" if single else f"converted object at index {index}"
            if not isinstance(got, dict):
                raise _failed(f"conversion webhook for {gvk} returned invalid {at}: the object is no JSON object")
            if got.get("apiVersion") != api_version:
                raise _failed(f"conversion webhook for {gvk} returned invalid {at}: invalid groupVersion "
                              f"(expected {api_version}, received {got.get('apiVersion', '')})")
            if got.get("kind") != original.get("kind"):
                raise _failed(f"conversion webhook for {gvk} returned invalid {at}: invalid kind "
                              f"(expected {original.get('kind', '')}, received {got.get('kind', '')})")
            problem = _changed_identity(original, got)
            if problem:
                what = "object" if single else f"converted object at index {index}"
                raise _failed(f"conversion webhook for {gvk} returned invalid {what}: {problem}")
            try:
                out.append(_restore_meta(original, got))
            except ValueError as exc:
                what = "metadata" if single else f"metadata in object at index {index}"
                raise _failed(f"conversion webhook for {gvk} returned invalid {what}: {exc}") from exc
        return out


def _empty(obj: Obj) -> bool:
    """kube's isEmptyUnstructuredObject: only apiVersion and kind (converted without the webhook)."""
    return set(obj) == {"apiVersion", "kind"}


def _response_objects(answer: Obj, review_version: str, uid: str) -> list[Any]:
    """kube's getConvertedObjectsFromResponse; ValueError with its messages."""
    if review_version == "v1":
        got_gvk = f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}"
        want = f"{_REVIEW_GROUP}/v1, Kind=ConversionReview"
        if (answer.get("apiVersion"), answer.get("kind")) != (f"{_REVIEW_GROUP}/v1", "ConversionReview"):
            raise ValueError(f"expected webhook response of {want}, got {got_gvk}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if review_version == "v1" and response.get("uid", "") != uid:
        raise ValueError(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    result = response.get("result") if isinstance(response.get("result"), dict) else {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise ValueError(str(result["message"]))
        raise ValueError(f"response.result.status was '{result.get('status', '')}', not 'Success'")
    objs = response.get("convertedObjects") or []
    if not isinstance(objs, list):
        raise ValueError("response.convertedObjects is no list")
    return objs


def _changed_identity(original: Obj, got: Obj) -> str:
    """kube's validateConvertedObject: kind, name, namespace and uid stay."""
    om, gm = original.get("metadata") or {}, got.get("metadata") if isinstance(got.get("metadata"), dict) else {}
    pairs = (("kind", original.get("kind", ""), got.get("kind", "")),
             ("name", om.get("name", ""), gm.get("name", "")),
             ("namespace", om.get("namespace", ""), gm.get("namespace", "")),
             ("UID", om.get("uid", ""), gm.get("uid", "")))
    for what, e, a in pairs:
        if (e or "") != (a or ""):
            return f"must have the same {what}: {e} != {a}"
    return ""


def _restore_meta(original: Obj, got: Obj) -> Obj:
    """kube's restoreObjectMeta: the original's metadata with the converted labels and annotations."""
    if "metadata" not in got:
        raise ValueError("missing metadata in converted object")
    response_md = got["metadata"]
    if not isinstance(response_md, dict):
        raise ValueError(f"invalid metadata of type {_go_type(response_md)} in converted object")
    out = dict(got)
    md: Obj = copy.deepcopy(original.get("metadata") or {})
    for fld in ("labels", "annotations"):
        value = response_md.get(fld)
        if value is None:
            md.pop(fld, None)
            continue
        if not isinstance(value, dict):
            raise ValueError(f"invalid metadata.{fld} of type {_go_type(value)} in converted object")
        for k, v in value.items():
            if not isinstance(v, str):
                raise ValueError(f"metadata.{fld}[{k}] must be a string, but is {_go_type(v)} in converted object")
        if value != (md.get(fld) or {}):
            causes = (validate_labels(value, "metadata.labels") if fld == "labels"
                      else validate_annotations(value, "metadata.annotation"))
            if causes:
                texts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
                raise ValueError(errors.aggregate_messages(texts))
        md[fld] = value
    out["metadata"] = md
    return out


def _go_type(value: Any) -> str:
    """The Go type name encoding/json decodes a JSON value into (for kube's %T)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float64" if not isinstance(value, int) else "int64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


# ---------------------------------------------------------------------------------------------


def conversion_for(crd: Obj, *, client_factory: ClientFactory | None = None,
                   resolve_service: ServiceResolver | None = None,
                   client_cert: tuple[str, str] | None = None,
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> Conversion:
    """The Conversion ``crd`` asks for (its ``spec.conversion``); a missing one is ``None``.

    ``client_factory``: makes a webhook's client (the server passes ``WebhookClient``; without one a
    webhook conversion fails with a 500); ``resolve_service``: where a webhook ``service`` is reached (see ``registry_service_resolver``);
    ``client_cert``: the certificate the server presents to webhooks, if any.
    Raises InternalError for a webhook configuration kube's validation would have refused.
    """
    spec = crd.get("spec") or {}
    group = str(spec.get("group", ""))
    kind = str((spec.get("names") or {}).get("kind", ""))
    conv = spec.get("conversion") or {}
    strategy = conv.get("strategy") or "None"
    if strategy == "None":
        return Conversion(group, kind)
    if strategy != "Webhook":
        raise _failed(f'unknown conversion strategy "{strategy}"')
    webhook = conv.get("webhook") or {}
    # apiextensions/v1beta1 kept these beside the strategy.
    client_config = webhook.get("clientConfig") or conv.get("webhookClientConfig") or {}
    versions = tuple(webhook.get("conversionReviewVersions") or conv.get("conversionReviewVersions") or ("v1beta1",))
    # kube takes the first version of the list it understands; v1 wins when listed.
    chosen = "v1" if "v1" in versions else "v1beta1" if "v1beta1" in versions else ""
    if not chosen:
        raise _failed(f"webhook does not accept v1 or v1beta1 ConversionReview: {list(versions)}")
    ca = client_config.get("caBundle") or ""
    try:
        ca_bundle = base64.b64decode(ca, validate=True) if isinstance(ca, str) else bytes(ca)
    except (binascii.Error, ValueError) as exc:
        raise _failed(f"conversion webhook for {group}, Kind={kind}: caBundle is not valid base64") from exc
    conversion = Conversion(group, kind, "Webhook", (chosen,), ca_bundle=ca_bundle, client_cert=client_cert,
                            resolve_service=resolve_service, client_factory=client_factory, timeout_s=timeout_s)
    url = client_config.get("url")
    service = client_config.get("service")
    if url:
        parts = urllib.parse.urlsplit(str(url))
        if parts.scheme != "https" or not parts.netloc:
            raise _failed(f"conversion webhook for {group}, Kind={kind}: url {url!r} must be an https URL")
        conversion.url = str(url)
    elif isinstance(service, dict) and service.get("name"):
        path = str(service.get("path") or "")
        if path and not path.startswith("/"):
            path = "/" + path
        conversion.service = (str(service.get("namespace") or "default"), str(service["name"]),
                              int(service.get("port") or 443), path)
    else:
        raise _failed(f"conversion webhook for {group}, Kind={kind}: clientConfig needs a url or a service")
    return conversion


class _Reader:
    """What ``registry_service_resolver`` reads with: ``get(group, version, resource, namespace, name)``."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    async def get(self, resource: str, namespace: str, name: str) -> Obj:
        res = self.registry.table.get("", "v1", resource)
        if res is None:
            raise errors.ServiceUnavailable(f"{resource} are not served")
        obj: Obj = await self.registry.get(res, namespace, name)
        return obj


def registry_service_resolver(registry: Any) -> ServiceResolver:
    """A resolver reading the Service and its Endpoints from ``registry``.

    The service port's ``targetPort`` on the first ready address of the Endpoints (kube's
    endpoint routing); a Service without endpoints, or an ExternalName one (its name and the port).
    """
    reader = _Reader(registry)

    async def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        try:
            svc = await reader.get("services", namespace, name)
        except errors.NotFound:
            raise errors.ServiceUnavailable(f'service "{name}" not found') from None
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName" and spec.get("externalName"):
            return str(spec["externalName"]), port
        svc_port = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
        if svc_port is None:
            raise errors.ServiceUnavailable(f'no service port {port} found for service "{name}"')
        try:
            eps = await reader.get("endpoints", namespace, name)
        except errors.NotFound:
            raise errors.ServiceUnavailable(f'endpoints for service/{name} in "{namespace}" not found') from None
        target = svc_port.get("targetPort", port)
        for subset in eps.get("subsets") or []:
            addresses = subset.get("addresses") or []
            if not addresses:
                continue
            for p in subset.get("ports") or []:
                if (svc_port.get("name") and p.get("name") == svc_port.get("name")) or \
                        (not svc_port.get("name") and (p.get("port") == target or len(subset["ports"]) == 1)):
                    return str(addresses[0]["ip"]), int(p["port"])
        raise errors.ServiceUnavailable(f'no endpoints available for service "{name}"')

    return resolve
