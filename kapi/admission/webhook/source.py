"""The webhooks of the Mutating/ValidatingWebhookConfigurations (kube's webhook configuration
managers and ``WebhookAccessor``s).

``HookSource`` reads the configurations from the shared informer (the registry without one) and
gives their webhooks in kube's order: configurations by name, each one's webhooks as listed. A
webhook's selectors are parsed and its matchConditions compiled once per configuration version.
Its HTTPS client is made on first use and kept (one per webhook, for its clientConfig and the
address the Service resolved to); a client whose webhook changed or went is closed.
"""

from __future__ import annotations

import base64
import binascii
import logging
import ssl
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from kapi import errors
from kapi.admission import cel
from kapi.admission.matching import parse_selector
from kapi.admission.plugin import Objects
from kapi.admission.webhook.auth import NONE, AuthInfoResolver, Credentials
from kapi.apis.crdconversion import ClientFactory, HookClient, ServiceResolver
from kapi.object.selectors import LabelSelector

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"
DEFAULT_TIMEOUT_S = 10  # kube's default timeoutSeconds
READY_WAIT_S = 10.0  # kube's WaitForReady

log = logging.getLogger(__name__)


def _selector(spec: Any) -> tuple[LabelSelector | None, errors.StatusError | None]:
    try:
        return parse_selector(spec if isinstance(spec, dict) else None), None
    except errors.StatusError as exc:
        return None, exc


@dataclass(eq=False)
class Hook:
    """One webhook of one configuration (kube's WebhookAccessor)."""

    uid: str  # "<configuration>/<webhook>/<n>": unique while the configuration is
    configuration: str
    spec: Obj
    mutating: bool
    ns_selector: LabelSelector | None = None
    ns_selector_error: errors.StatusError | None = None
    obj_selector: LabelSelector | None = None
    obj_selector_error: errors.StatusError | None = None
    _conditions: list[tuple[str, cel.Compiled | cel.CelError]] | None = None
    client_config_key: bytes = b""
    _ssl: dict[str, ssl.SSLContext] = field(default_factory=dict)

    @classmethod
    def of(cls, uid: str, configuration: str, spec: Obj, mutating: bool) -> Hook:
        hook = cls(uid, configuration, spec, mutating)
        hook.ns_selector, hook.ns_selector_error = _selector(spec.get("namespaceSelector"))
        hook.obj_selector, hook.obj_selector_error = _selector(spec.get("objectSelector"))
        hook.client_config_key = orjson.dumps(spec.get("clientConfig") or {}, option=orjson.OPT_SORT_KEYS)
        return hook

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @property
    def rules(self) -> list[Obj]:
        return [r for r in self.spec.get("rules") or [] if isinstance(r, dict)]

    @property
    def match_policy(self) -> str:
        return str(self.spec.get("matchPolicy") or "Equivalent")

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def side_effects(self) -> str | None:
        value = self.spec.get("sideEffects")
        return str(value) if value is not None else None

    @property
    def timeout_s(self) -> int:
        value = self.spec.get("timeoutSeconds")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_TIMEOUT_S

    @property
    def review_versions(self) -> list[str]:
        return [str(v) for v in self.spec.get("admissionReviewVersions") or []]

    @property
    def reinvocation_policy(self) -> str:
        return str(self.spec.get("reinvocationPolicy") or "Never")

    @property
    def conditions(self) -> list[tuple[str, cel.Compiled | cel.CelError]]:
        """The matchConditions compiled (kube's filter compiler: object, oldObject, request, authorizer);
        one that does not compile is kept as its error (it fails when evaluated)."""
        if self._conditions is None:
            out: list[tuple[str, cel.Compiled | cel.CelError]] = []
            for cond in self.spec.get("matchConditions") or []:
                if not isinstance(cond, dict):
                    continue
                try:
                    out.append((str(cond.get("name") or ""),
                                cel.compile_expression(str(cond.get("expression") or ""), (), kind="bool",
                                                       params=False, authorizer=True)))
                except cel.CelError as exc:
                    out.append((str(cond.get("name") or ""), exc))
            self._conditions = out
        return self._conditions

    def ssl_context(self, creds: Credentials = NONE) -> ssl.SSLContext:
        """The TLS context verifying the webhook (its caBundle, else the system's roots) and
        presenting ``creds``' client certificate."""
        found = self._ssl.get(creds.name)
        if found is None:
            ca = (self.spec.get("clientConfig") or {}).get("caBundle")
            try:
                if ca:
                    pem = base64.b64decode(ca, validate=True).decode("ascii") if isinstance(ca, str) else ca
                    ctx = ssl.create_default_context(cadata=pem)
                else:
                    ctx = ssl.create_default_context()
                creds.load_into(ctx)
            except (binascii.Error, UnicodeDecodeError, ssl.SSLError, OSError, ValueError) as exc:
                raise ClientError(f"could not get REST client: unable to load root certificates: {exc}") from exc
            found = self._ssl[creds.name] = ctx
        return found


class ClientError(Exception):
    """No client could be made for a webhook (kube's ``could not get REST client``)."""


@dataclass
class Target:
    """Where one call goes: the URL shown in messages (the Service's DNS name for a service
    reference, as kube's clients dial it), the URL connected to, and the TLS server name."""

    shown: str
    url: str
    server_name: str
    creds: Credentials = NONE


def _host_port(url: str) -> str:
    """kube's lookup key of a URL webhook's credentials: its host and port (443 when none)."""
    netloc = urllib.parse.urlsplit(url).netloc.rpartition("@")[2]
    if not netloc.rsplit("]", 1)[-1].count(":"):
        netloc += ":443"
    return netloc


def _with_timeout(url: str, timeout_s: int) -> str:
    """The URL client-go posts to: its path at least "/", and ``Request.Timeout``'s time-out in the
    query (``?timeout=10s``)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.path:
        url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/", parts.query, parts.fragment))
    return f"{url}{'&' if '?' in url else '?'}timeout={timeout_s}s"


@dataclass
class HookSource:
    """The webhooks of one kind of configuration, kept current from the informer."""

    objects: Objects
    resource: str  # MUTATING or VALIDATING
    client_factory: ClientFactory | None = None
    resolve_service: ServiceResolver | None = None
    auth: AuthInfoResolver = field(default_factory=AuthInfoResolver)
    _hooks: list[Hook] = field(default_factory=list)
    _fingerprint: tuple[tuple[str, str], ...] | None = None
    _dirty: bool = True
    _clients: dict[str, tuple[tuple[Any, ...], HookClient]] = field(default_factory=dict)
    _closing: list[HookClient] = field(default_factory=list)
    _wakeup: trio.Event = field(default_factory=trio.Event)
    _running: bool = False

    def __post_init__(self) -> None:
        self.informer = self.objects.watch(GROUP, self.resource)
        if self.informer is not None:
            self.informer.add_handler(self._changed, lambda old, new: self._changed(), lambda item: self._changed())

    @property
    def mutating(self) -> bool:
        return self.resource == MUTATING

    def _changed(self, *args: Any) -> None:
        self._dirty = True

    @property
    def idle(self) -> bool:
        """No webhook is configured, as the synced informer knows now (a write costs nothing more)."""
        inf = self.informer
        return not self._hooks and not self._dirty and inf is not None and inf.has_synced

    async def ready(self) -> bool:
        """Whether the configurations have been read (kube's WaitForReady: up to 10 s)."""
        inf = self.informer
        if inf is None or inf.has_synced:
            return True
        with trio.move_on_after(READY_WAIT_S):
            await inf.wait_for_sync()
        return inf.has_synced

    async def hooks(self) -> list[Hook]:
        """The webhooks now, in kube's order."""
        inf = self.informer
        if inf is not None and inf.has_synced:
            if not self._dirty:
                return self._hooks
            self._dirty = False
            configs = inf.list("")
        else:
            configs = await self.objects.list(GROUP, self.resource, "")
        fingerprint = tuple((str(c.get("metadata", {}).get("name", "")),
                             str(c.get("metadata", {}).get("resourceVersion", ""))) for c in configs)
        if fingerprint != self._fingerprint:
            self._fingerprint = fingerprint
            self._rebuild(configs)
        if self._closing and not self._running:  # no background task (a server without run()): close here
            await self.close_retired()
        return self._hooks

    def _rebuild(self, configs: list[Obj]) -> None:
        old = {h.uid: h for h in self._hooks}
        hooks: list[Hook] = []
        for config in sorted(configs, key=lambda c: str(c.get("metadata", {}).get("name", ""))):
            cname = str(config.get("metadata", {}).get("name", ""))
            seen: dict[str, int] = {}
            for spec in config.get("webhooks") or []:
                if not isinstance(spec, dict):
                    continue
                hname = str(spec.get("name") or "")
                n = seen.get(hname, 0)
                seen[hname] = n + 1
                uid = f"{cname}/{hname}/{n}"
                prev = old.get(uid)
                if prev is not None and prev.spec == spec:
                    hooks.append(prev)  # unchanged: keeps its compiled conditions and TLS context
                else:
                    hooks.append(Hook.of(uid, cname, spec, self.mutating))
        self._hooks = hooks
        keep = {h.uid: h.client_config_key for h in hooks}
        for uid in list(self._clients):
            key, client = self._clients[uid]
            if keep.get(uid) != key[0]:
                del self._clients[uid]
                self._retire(client)

    def _retire(self, client: HookClient) -> None:
        self._closing.append(client)
        self._wakeup.set()

    async def target(self, hook: Hook) -> Target:
        """The URL a call to ``hook`` goes to (a Service resolved to its endpoint); raises ClientError
        or OSError-like errors with kube's text."""
        cc = hook.spec.get("clientConfig") or {}
        if cc.get("url"):
            url = _with_timeout(str(cc["url"]), hook.timeout_s)
            return Target(url, url, "", self.auth.for_target(_host_port(str(cc["url"]))))
        svc = cc.get("service") or {}
        namespace, name = str(svc.get("namespace") or ""), str(svc.get("name") or "")
        port = svc.get("port") if isinstance(svc.get("port"), int) else 443
        path = str(svc.get("path") or "")
        if path and not path.startswith("/"):
            path = "/" + path
        server_name = f"{name}.{namespace}.svc"
        shown = _with_timeout(f"https://{server_name}:{port}{path}", hook.timeout_s)
        if self.resolve_service is None:
            raise CallTargetError(shown, "no service resolver is configured")
        try:
            host, to_port = await self.resolve_service(namespace, name, port)
        except errors.StatusError as exc:
            raise CallTargetError(shown, exc.message) from exc
        netloc = f"[{host}]" if ":" in host else host
        return Target(shown, _with_timeout(f"https://{netloc}:{to_port}{path}", hook.timeout_s), server_name,
                      self.auth.for_target(f"{server_name}:{port}"))

    def client(self, hook: Hook, target: Target) -> HookClient:
        """The kept client of ``hook`` for ``target`` (made now if there is none, or it changed)."""
        key = (hook.client_config_key, target.url, target.server_name, target.creds.name)
        found = self._clients.get(hook.uid)
        if found is not None:
            if found[0] == key:
                return found[1]
            del self._clients[hook.uid]
            self._retire(found[1])
        if self.client_factory is None:
            raise ClientError("could not get REST client: no webhook client is configured")
        # The call's own time-out bounds the exchange (kube's context deadline); the client's is a backstop.
        client = self.client_factory(target.url, hook.ssl_context(target.creds), target.server_name,
                                     hook.timeout_s + 5.0)
        if target.creds.headers and hasattr(client, "headers"):
            # the credentials' headers (a bearer token) on every request of the client
            client.headers = {**dict(client.headers), **dict(target.creds.headers)}
        self._clients[hook.uid] = (key, client)
        return client

    async def close_retired(self) -> None:
        clients, self._closing = self._closing, []
        for c in clients:
            try:
                await c.aclose()
            except Exception:  # a client that fails to close is dropped all the same
                log.debug("closing a webhook client failed", exc_info=True)

    async def run(self) -> None:
        """Close the clients of changed or removed webhooks as they are retired."""
        self._running = True
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                await self.close_retired()
        finally:
            self._running = False
            with trio.CancelScope(shield=True):
                for _, client in list(self._clients.values()):
                    self._closing.append(client)
                self._clients.clear()
                with trio.move_on_after(2):
                    await self.close_retired()


class CallTargetError(Exception):
    """A Service reference that does not resolve: ``Post "<url>": <why>`` as kube's dialer fails."""

    def __init__(self, shown: str, why: str) -> None:
        super().__init__(f'Post "{shown}": {why}')
        self.shown = shown
