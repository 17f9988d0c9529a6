"""A webhook the chain calls (TokenReview, SubjectAccessReview): a kubeconfig file -> one HTTPS client.

kube's ``k8s.io/apiserver/pkg/util/webhook``: the kubeconfig's current context names the cluster
(``server`` is the exact URL posted to, ``certificate-authority[-data]``, ``insecure-skip-tls-verify``,
``tls-server-name``) and the user the server presents itself as (``client-certificate[-data]`` with
``client-key[-data]``, ``token`` or ``tokenFile``, or ``username``/``password``); relative paths are
read against the kubeconfig's directory. Every call is one JSON POST bounded by a 30 s time-out
(kube's ``defaultRequestTimeout``, the whole exchange), retried as kube's ``WithExponentialBackoff``
with ``DefaultShouldRetry``: a reset connection, 500, 504 or 429, or an answer with ``Retry-After``,
is tried again after 0.5 s, then x1.5 each time with 20 % jitter, five attempts in all.
"""

from __future__ import annotations

import base64
import binascii
import os
import random
import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import httpx
import orjson
import trio
import yaml

DEFAULT_TIMEOUT_S = 30.0  # kube's util/webhook defaultRequestTimeout
_RETRY_CODES = frozenset((500, 504, 429))  # IsInternalError, IsTimeout, IsTooManyRequests


class WebhookConfigError(ValueError):
    """The webhook's kubeconfig cannot be used (the server refuses to start with it)."""


class WebhookError(Exception):
    """One call failed: unreachable, timed out, a non-2xx answer, or a body that is no JSON object.

    ``retriable`` is kube's DefaultShouldRetry verdict on it.
    """

    def __init__(self, message: str, *, code: int = 0, retriable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable


@dataclass(frozen=True)
class Backoff:
    """kube's wait.Backoff as DefaultAuthWebhookRetryBackoff sets it: 500 ms, x1.5, 20 % jitter, 5 steps."""

    duration_s: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5

    def delays(self) -> Iterator[float]:
        """The waits between the ``steps`` attempts (one fewer than the attempts)."""
        duration = self.duration_s
        for _ in range(self.steps - 1):
            yield duration + random.random() * self.jitter * duration if self.jitter > 0 else duration
            duration *= self.factor


@dataclass
class WebhookClient:
    """POSTs JSON objects to one webhook URL with the kubeconfig's TLS and credentials."""

    url: str
    ssl_context: ssl.SSLContext | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    tls_server_name: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    backoff: Backoff = field(default_factory=Backoff)
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            verify: ssl.SSLContext | bool = self.ssl_context if self.ssl_context is not None else True
            # The time-out is the cancel scope around each exchange; httpx's own per-phase ones off.
            self._client = httpx.AsyncClient(verify=verify, timeout=None, headers=dict(self.headers),
                                             follow_redirects=False, trust_env=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def post_once(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One POST of ``body``; its JSON answer. Raises WebhookError."""
        data = orjson.dumps(body)
        extensions = {"sni_hostname": self.tls_server_name} if self.tls_server_name else None
        where = f'Post "{self.url}"'
        with trio.move_on_after(self.timeout_s) as scope:
            try:
                resp = await self._http().post(
                    self.url, content=data, extensions=extensions,
                    headers={"Content-Type": "application/json", "Accept": "application/json, */*"})
            except httpx.HTTPError as exc:
                raise WebhookError(f"{where}: {_describe(exc)}", retriable=_connection_reset(exc)) from exc
        if scope.cancelled_caught:
            raise WebhookError(f"{where}: context deadline exceeded (Client.Timeout exceeded while awaiting "
                               f"headers)")
        return _answer(resp)

    async def post(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``post_once`` tried again as kube's WithExponentialBackoff; the last error is raised."""
        delays = self.backoff.delays()
        while True:
            try:
                return await self.post_once(body)
            except WebhookError as exc:
                delay = next(delays, None) if exc.retriable else None
                if delay is None:
                    raise
            await trio.sleep(delay)


def _describe(exc: httpx.HTTPError) -> str:
    """The error and what caused it (httpx wraps httpcore's, which wraps the socket's or ssl's), each once."""
    texts: list[str] = []
    cause: BaseException | None = exc
    while cause is not None and len(texts) < 4:
        text = str(cause)
        if text and not any(text in t for t in texts):
            texts.append(text)
        cause = cause.__cause__ or cause.__context__
    return ": ".join(texts) or type(exc).__name__


def _connection_reset(exc: httpx.HTTPError) -> bool:
    """utilnet.IsConnectionReset / IsHTTP2ConnectionLost: the peer dropped a connection it had accepted.

    A refused connection or a time-out is no reset: kube fails those at once.
    """
    if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
        return False
    if isinstance(exc, httpx.RemoteProtocolError):
        return True
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionResetError):
            return True
        cause = cause.__cause__ or cause.__context__
    return isinstance(exc, (httpx.ReadError, httpx.WriteError))


def _answer(resp: httpx.Response) -> dict[str, Any]:
    """The decoded JSON object of a 2xx answer; else the error client-go's REST client would make of it."""
    code = resp.status_code
    body = resp.content
    if 200 <= code < 300:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise WebhookError(f"the webhook's answer is not JSON: {exc}", code=code) from exc
        if not isinstance(doc, dict):
            raise WebhookError("the webhook's answer is not a JSON object", code=code)
        return doc
    retriable = code in _RETRY_CODES or "retry-after" in resp.headers
    status = _status_message(body)
    if status:
        message = status
    elif code == 500:
        message = (f"an error on the server ({orjson.dumps(body.decode('utf-8', 'replace')).decode()}) "
                   f"has prevented the request from succeeding")
    else:
        message = f"the server responded with the status code {code} but did not return more information"
    raise WebhookError(message, code=code, retriable=retriable)


def _status_message(body: bytes) -> str:
    """A metav1.Status body's message, if that is what the answer is."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    if isinstance(doc, dict) and doc.get("kind") == "Status" and isinstance(doc.get("message"), str):
        return doc["message"]
    return ""


# ---------------------------------------------------------------------------------------------
# The kubeconfig


def load_webhook_kubeconfig(path: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                            backoff: Backoff | None = None) -> WebhookClient:
    """kube's webhook.LoadKubeconfig + NewGenericWebhook: the client the kubeconfig at ``path`` describes.

    Raises:
        WebhookConfigError: unreadable file, no current context, a missing cluster or server,
            unreadable CA or client certificate, conflicting fields.
    """
    origin = Path(path)
    try:
        doc = yaml.safe_load(origin.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise WebhookConfigError(f"cannot read webhook kubeconfig {origin}: {exc}") from exc
    if not isinstance(doc, dict):
        raise WebhookConfigError(f"webhook kubeconfig {origin} must be a mapping")
    context_name = doc.get("current-context")
    contexts = _named(doc, "contexts", "context", origin)
    if not context_name:
        if len(contexts) != 1:
            raise WebhookConfigError(f"webhook kubeconfig {origin}: invalid configuration: no current-context is set")
        context_name = next(iter(contexts))
    context = contexts.get(context_name)
    if context is None:
        raise WebhookConfigError(f'webhook kubeconfig {origin}: context "{context_name}" does not exist')
    cluster_name, user_name = context.get("cluster"), context.get("user")
    cluster = _named(doc, "clusters", "cluster", origin).get(cluster_name or "")
    if cluster is None:
        raise WebhookConfigError(f'webhook kubeconfig {origin}: cluster "{cluster_name}" does not exist')
    user: Mapping[str, Any] = {}
    if user_name:
        found = _named(doc, "users", "user", origin).get(user_name)
        if found is None:
            raise WebhookConfigError(f'webhook kubeconfig {origin}: user "{user_name}" does not exist')
        user = found
    fields = _Fields(origin)
    server = fields.text(cluster, "server")
    if not server:
        raise WebhookConfigError(f'webhook kubeconfig {origin}: no server found for cluster "{cluster_name}"')
    if "://" not in server:
        server = "https://" + server
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WebhookConfigError(f"webhook kubeconfig {origin}: server {server!r} is no http(s) URL")
    headers: dict[str, str] = {}
    token = fields.text(user, "token")
    token_file = fields.path(user, "tokenFile")
    if not token and token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise WebhookConfigError(f"webhook kubeconfig {origin}: cannot read tokenFile: {exc}") from exc
    username, password = fields.text(user, "username"), fields.text(user, "password")
    if token and (username or password):
        raise WebhookConfigError(f"webhook kubeconfig {origin}: more than one authentication method found "
                                 f"for {user_name}; found token, basicAuth; only one is allowed")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif username or password:
        basic = base64.b64encode(f"{username}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
    ssl_context = _ssl_context(fields, cluster, user) if parts.scheme == "https" else None
    return WebhookClient(server, ssl_context, headers, fields.text(cluster, "tls-server-name"),
                         timeout_s, backoff or Backoff())


def _named(doc: Mapping[str, Any], section: str, kind: str, origin: Path) -> dict[str, Mapping[str, Any]]:
    items = doc.get(section) or []
    if not isinstance(items, list):
        raise WebhookConfigError(f"webhook kubeconfig {origin}: {section} must be a list")
    out: dict[str, Mapping[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise WebhookConfigError(f"webhook kubeconfig {origin}: every entry of {section} needs a name")
        body = item.get(kind) or {}
        if not isinstance(body, dict):
            raise WebhookConfigError(f'webhook kubeconfig {origin}: {kind} "{item["name"]}" must be a mapping')
        out.setdefault(item["name"], body)
    return out


@dataclass(frozen=True)
class _Fields:
    origin: Path

    def text(self, entry: Mapping[str, Any], key: str) -> str:
        value = entry.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise WebhookConfigError(f"webhook kubeconfig {self.origin}: {key} must be a string")
        return value

    def path(self, entry: Mapping[str, Any], key: str) -> str:
        value = self.text(entry, key)
        return str(self.origin.parent / value) if value else ""

    def data(self, entry: Mapping[str, Any], key: str) -> bytes:
        value = self.text(entry, key)
        if not value:
            return b""
        try:
            return base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise WebhookConfigError(f"webhook kubeconfig {self.origin}: {key} is not valid base64") from exc

    def one(self, entry: Mapping[str, Any], key: str) -> tuple[str, bytes]:
        """``key`` (a file) or ``key-data`` (inline), not both."""
        file, data = self.path(entry, key), self.data(entry, f"{key}-data")
        if file and data:
            raise WebhookConfigError(f"webhook kubeconfig {self.origin}: {key} and {key}-data are both set")
        return file, data


def _ssl_context(fields: _Fields, cluster: Mapping[str, Any], user: Mapping[str, Any]) -> ssl.SSLContext:
    """Verify the webhook with the kubeconfig's CA (the system roots without one); present the client cert."""
    origin = fields.origin
    ca_file, ca_data = fields.one(cluster, "certificate-authority")
    insecure = cluster.get("insecure-skip-tls-verify") is True
    if insecure and (ca_file or ca_data):
        raise WebhookConfigError(f"webhook kubeconfig {origin}: specifying a root certificates file with the "
                                 f"insecure flag is not allowed")
    try:
        if ca_data:
            ctx = ssl.create_default_context(cadata=ca_data.decode("ascii"))
        else:
            ctx = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
        raise WebhookConfigError(f"webhook kubeconfig {origin}: cannot load the certificate authority: {exc}") from exc
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert_file, cert_data = fields.one(user, "client-certificate")
    key_file, key_data = fields.one(user, "client-key")
    if bool(cert_file or cert_data) != bool(key_file or key_data):
        raise WebhookConfigError(f"webhook kubeconfig {origin}: a client certificate needs both a certificate "
                                 f"and a key")
    if cert_file or cert_data:
        # ssl loads a chain only from files: inline data goes through a private directory, removed at once.
        with tempfile.TemporaryDirectory(prefix="kapi-webhook-") as private:
            cert = cert_file or _write_private(private, cert_data)
            key = key_file or _write_private(private, key_data)
            try:
                ctx.load_cert_chain(cert, key, password=_refuse_password)
            except (OSError, ssl.SSLError) as exc:
                raise WebhookConfigError(f"webhook kubeconfig {origin}: cannot load the client certificate and "
                                         f"key: {exc}") from exc
    return ctx


def _refuse_password() -> bytes:
    raise ssl.SSLError("the client key is encrypted; a webhook kubeconfig's key must be unencrypted")


def _write_private(directory: str, data: bytes) -> str:
    with tempfile.NamedTemporaryFile(dir=directory, delete=False) as f:
        f.write(data)
    return f.name
