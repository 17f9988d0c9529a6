"""Where the client connects and how it authenticates: kubeconfig files and in-cluster service accounts.

The rules follow client-go's ``clientcmd`` loader and ``rest.InClusterConfig``, so a kubeconfig means
the same thing here as it does to kubectl.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

__all__ = ["ClientConfig", "ConfigError", "kubeconfig_paths", "load_kubeconfig", "load_incluster_config",
           "load_config", "DEFAULT_INCLUSTER_ROOT", "TOKEN_FILE_REFRESH_S"]

log = logging.getLogger("kapi.client")

DEFAULT_INCLUSTER_ROOT = "/var/run/secrets/kubernetes.io/serviceaccount"
# client-go's cached file token source re-reads the file at most this often: projected
# service account tokens rotate, but reading the file on every request would be wasteful.
TOKEN_FILE_REFRESH_S = 60.0
_ALPN_PROTOCOLS = ["h2", "http/1.1"]
# Fields whose silent omission would change who the client acts as, so they must fail loudly.
_UNSUPPORTED_USER_FIELDS = {
    "exec": "an exec credential plugin",
    "auth-provider": "an auth-provider plugin",
    "as": "impersonation (as)",
    "as-uid": "impersonation (as-uid)",
    "as-groups": "impersonation (as-groups)",
    "as-user-extra": "impersonation (as-user-extra)",
}


class ConfigError(Exception):
    """The client configuration cannot be loaded; the message names the file and the entry at fault."""


class _TokenFile:
    """The last token read from a file, re-read at most every ``TOKEN_FILE_REFRESH_S`` seconds."""

    def __init__(self, path: str, clock: Callable[[], float]) -> None:
        self._path = path
        self._clock = clock
        self._token: str | None = None
        self._read_at = 0.0

    def get(self) -> str:
        now = self._clock()
        if self._token is not None and now - self._read_at < TOKEN_FILE_REFRESH_S:
            return self._token
        try:
            token = _read_token(self._path)
        except ConfigError as exc:
            if self._token is None:
                raise
            # Like client-go: a rotation hiccup must not break a client that holds a token already.
            log.warning("keeping the previous bearer token: %s", exc)
            return self._token
        self._token, self._read_at = token, now
        return token


def _read_token(path: str) -> str:
    try:
        token = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read token file {path}: {exc}") from exc
    if not token:
        raise ConfigError(f"token file {path} is empty")
    return token


@dataclass(frozen=True)
class ClientConfig:
    """Everything the client needs to reach one API server as one user."""

    server: str
    namespace: str
    context: str
    token: str | None = None
    token_file: str | None = None
    ssl_context: ssl.SSLContext | None = None
    tls_server_name: str | None = None
    username: str | None = None
    password: str | None = None
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    _token_source: _TokenFile | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.token_file:
            object.__setattr__(self, "_token_source", _TokenFile(self.token_file, self.clock))

    def bearer_token(self) -> str | None:
        """The literal token, else the token file's current contents, else None.

        The file is a small synchronous read, at most once every ``TOKEN_FILE_REFRESH_S``.

        Raises:
            ConfigError: the token file has never been readable.
        """
        if self.token:
            return self.token
        if self._token_source is not None:
            return self._token_source.get()
        return None

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header for the next request: bearer token, else basic auth, else none."""
        token = self.bearer_token()
        if token:
            return {"Authorization": f"Bearer {token}"}
        if self.username or self.password:
            pair = f"{self.username or ''}:{self.password or ''}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
        return {}


# ---------------------------------------------------------------------------------------------
# Finding kubeconfig files


def kubeconfig_paths(explicit: str | os.PathLike[str] | None = None, *,
                     env: Mapping[str, str] | None = None) -> list[Path]:
    """The kubeconfig files to merge, highest precedence first.

    An explicit path is returned as it is (loading it fails if it is missing). Otherwise the
    entries of ``$KUBECONFIG`` that exist, or ``~/.kube/config``.

    Raises:
        ConfigError: ``$KUBECONFIG`` is set but none of its files exist.
    """
    if explicit is not None:
        return [Path(explicit)]
    env = os.environ if env is None else env
    listed = env.get("KUBECONFIG", "")
    if not listed:
        home = env.get("HOME")
        return [(Path(home) if home else Path.home()) / ".kube" / "config"]
    entries = _dedup(Path(p) for p in listed.split(os.pathsep) if p)
    return _existing(entries, f"KUBECONFIG={listed!r}")


def _dedup(paths: Iterator[Path] | Sequence[Path]) -> list[Path]:
    """Paths in order with repeats dropped (a repeated file adds nothing to a first-wins merge)."""
    return list(dict.fromkeys(paths))


def _existing(paths: list[Path], source: str) -> list[Path]:
    """The paths that exist; missing ones are skipped as kubectl does, but not all of them."""
    found = [p for p in paths if p.exists()]
    if not found:
        raise ConfigError(f"no kubeconfig file found: none of the files in {source} exist")
    return found


# ---------------------------------------------------------------------------------------------
# Reading and merging


@dataclass(frozen=True)
class _Entry:
    """One named cluster, user or context, and the file that defined it."""

    kind: str
    name: str
    body: Mapping[str, Any]
    origin: Path

    def where(self) -> str:
        return f'{self.kind} "{self.name}" in {self.origin}'

    def fail(self, problem: str) -> NoReturn:
        raise ConfigError(f"{self.where()}: {problem}")

    def string(self, key: str) -> str | None:
        """A string field; None when absent or empty."""
        value = self.body.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.fail(f"{key} must be a string, not {type(value).__name__}")
        return value

    def flag(self, key: str) -> bool:
        value = self.body.get(key, False)
        if not isinstance(value, bool):
            self.fail(f"{key} must be true or false, not {value!r}")
        return value

    def path(self, key: str) -> str | None:
        """A file path field, relative ones resolved against the directory of the defining file."""
        value = self.string(key)
        return None if value is None else str(self.origin.parent / value)

    def data(self, key: str) -> bytes | None:
        """A base64 ``*-data`` field, decoded."""
        value = self.string(key)
        if value is None:
            return None
        try:
            return base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            self.fail(f"{key} is not valid base64 ({exc})")


@dataclass
class _Merged:
    files: list[Path]
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: str = ""

    def describe(self) -> str:
        return ", ".join(str(p) for p in self.files)


_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


def _read_kubeconfig(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path} must be a mapping, not {type(doc).__name__}")
    return doc


def _entries(doc: Mapping[str, Any], section: str, kind: str, origin: Path) -> Iterator[_Entry]:
    items = doc.get(section) or []
    if not isinstance(items, list):
        raise ConfigError(f"kubeconfig {origin}: {section} must be a list")
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ConfigError(f"kubeconfig {origin}: every entry of {section} needs a name, got {item!r}")
        body = item.get(kind) or {}
        if not isinstance(body, dict):
            raise ConfigError(f'kubeconfig {origin}: {kind} "{item["name"]}" must be a mapping')
        yield _Entry(kind, item["name"], body, origin)


def _merge(paths: list[Path]) -> _Merged:
    """Merge files as clientcmd does: the first file to define a name, or a current-context, wins."""
    merged = _Merged(paths)
    for path in paths:
        doc = _read_kubeconfig(path)
        for section, kind in _SECTIONS:
            target = getattr(merged, section)
            for entry in _entries(doc, section, kind, path):
                target.setdefault(entry.name, entry)
        current = doc.get("current-context")
        if not merged.current_context and isinstance(current, str):
            merged.current_context = current
    return merged


# ---------------------------------------------------------------------------------------------
# Turning entries into a ClientConfig


@dataclass(frozen=True)
class _Tls:
    ca_file: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None


def _server_url(cluster: _Entry) -> str:
    server = cluster.string("server")
    if server is None:
        cluster.fail("no server is set")
    if "://" not in server:
        server = "https://" + server  # client-go's default scheme when none is given
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        cluster.fail(f"server {server!r} is not an http(s) URL")
    return server.rstrip("/")


def _cluster_tls(cluster: _Entry) -> _Tls:
    ca_file, ca_data = cluster.path("certificate-authority"), cluster.data("certificate-authority-data")
    if ca_file and ca_data:
        cluster.fail("certificate-authority and certificate-authority-data are both set; keep one")
    insecure = cluster.flag("insecure-skip-tls-verify")
    if insecure and (ca_file or ca_data):
        cluster.fail("specifying a root certificates file with the insecure flag is not allowed")
    return _Tls(ca_file=ca_file, ca_data=ca_data, insecure=insecure)


def _check_user(user: _Entry) -> None:
    for key, what in _UNSUPPORTED_USER_FIELDS.items():
        if user.body.get(key):
            user.fail(f"uses {what}, which kapi's client does not support; "
                      "use token, tokenFile, a client certificate or username/password")
    has_token = bool(user.string("token") or user.string("tokenFile"))
    if has_token and (user.string("username") or user.string("password")):
        user.fail("more than one authentication method found (token and basic auth); only one is allowed")


def _user_tls(user: _Entry, base: _Tls) -> _Tls:
    cert_file, cert_data = user.path("client-certificate"), user.data("client-certificate-data")
    key_file, key_data = user.path("client-key"), user.data("client-key-data")
    if cert_file and cert_data:
        user.fail("client-certificate and client-certificate-data are both set; keep one")
    if key_file and key_data:
        user.fail("client-key and client-key-data are both set; keep one")
    if bool(cert_file or cert_data) != bool(key_file or key_data):
        user.fail("a client certificate needs both a certificate and a key")
    return _Tls(base.ca_file, base.ca_data, base.insecure, cert_file, cert_data, key_file, key_data)


def _ssl_context(tls: _Tls, cluster: str, user: str) -> ssl.SSLContext:
    """A verifying client context (system CAs unless a CA is given), with the client certificate.

    Args:
        cluster, user: where the CA and the client certificate come from, for error messages.
    """
    # A configured CA replaces the system roots rather than adding to them, as in client-go.
    if tls.ca_data is not None:
        try:
            ctx = ssl.create_default_context(cadata=tls.ca_data.decode("ascii"))
        except (UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"{cluster}: certificate-authority-data holds no PEM certificate: {exc}") from exc
    else:
        try:
            ctx = ssl.create_default_context(cafile=tls.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"{cluster}: cannot load certificate-authority {tls.ca_file}: {exc}") from exc
    if tls.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_file or tls.cert_data:
        _load_client_cert(ctx, tls, user)
    ctx.set_alpn_protocols(_ALPN_PROTOCOLS)
    return ctx


def _refuse_password() -> bytes:
    raise ConfigError("the client key is encrypted; kubeconfig client keys must be unencrypted")


def _load_client_cert(ctx: ssl.SSLContext, tls: _Tls, where: str) -> None:
    """Load the certificate and key; ``*-data`` goes through files that exist only while loading."""
    # ssl can load a chain only from files: use a 0700 directory with 0600 files, removed on exit.
    with tempfile.TemporaryDirectory(prefix="kapi-client-") as private:
        cert = tls.cert_file or _write_private(private, tls.cert_data or b"")
        key = tls.key_file or _write_private(private, tls.key_data or b"")
        try:
            ctx.load_cert_chain(cert, key, password=_refuse_password)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"{where}: cannot load the client certificate and key: {exc}") from exc
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from exc


def _write_private(directory: str, data: bytes) -> str:
    """Write ``data`` to a new 0600 file in ``directory``; the caller removes the directory."""
    with tempfile.NamedTemporaryFile(dir=directory, delete=False) as f:
        f.write(data)
    return f.name


def _context_entry(merged: _Merged, name: str | None) -> _Entry:
    name = name or merged.current_context
    if not name:
        raise ConfigError(f"no current-context is set in {merged.describe()}; pass a context")
    entry = merged.contexts.get(name)
    if entry is None:
        raise ConfigError(f'context "{name}" not found in {merged.describe()}')
    return entry


def _referenced(merged: _Merged, ctx: _Entry, kind: str) -> _Entry:
    """The cluster or user a context names; an empty user when it names none (anonymous requests)."""
    name = ctx.string(kind)
    if name is None:
        if kind == "user":
            return _Entry("user", "", {}, ctx.origin)
        ctx.fail("no cluster is set")
    found = (merged.clusters if kind == "cluster" else merged.users).get(name)
    if found is None:
        raise ConfigError(f'{kind} "{name}" of context "{ctx.name}" not found in {merged.describe()}')
    return found


def _from_kubeconfig(merged: _Merged, context: str | None) -> ClientConfig:
    ctx = _context_entry(merged, context)
    cluster, user = _referenced(merged, ctx, "cluster"), _referenced(merged, ctx, "user")
    server = _server_url(cluster)
    _check_user(user)
    tls = _user_tls(user, _cluster_tls(cluster))
    config = ClientConfig(
        server=server, namespace=ctx.string("namespace") or "default", context=ctx.name,
        token=user.string("token"), token_file=user.path("tokenFile"),
        ssl_context=_ssl_context(tls, cluster.where(), user.where()) if server.startswith("https://") else None,
        tls_server_name=cluster.string("tls-server-name"),
        username=user.string("username"), password=user.string("password"))
    config.bearer_token()  # an unreadable tokenFile fails now, as in client-go, not on the first request
    return config


def load_kubeconfig(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None, *,
                    context: str | None = None) -> ClientConfig:
    """Load and merge kubeconfig files, then resolve ``context`` (default: the current-context).

    Args:
        path: one file; or several, merged highest precedence first (missing ones skipped);
            or None for ``$KUBECONFIG`` / ``~/.kube/config``.

    Raises:
        ConfigError: a file is missing or malformed, or the chosen context cannot be used.
    """
    if path is None or isinstance(path, (str, os.PathLike)):
        paths = kubeconfig_paths(path)
    else:
        paths = _existing(_dedup([Path(p) for p in path]), "the given kubeconfig list")
    return _from_kubeconfig(_merge(paths), context)


# ---------------------------------------------------------------------------------------------
# In-cluster


def load_incluster_config(root: str = DEFAULT_INCLUSTER_ROOT, env: Mapping[str, str] | None = None) -> ClientConfig:
    """The pod's service account: the API server from the environment, token and CA from ``root``.

    Raises:
        ConfigError: not in a cluster (no KUBERNETES_SERVICE_HOST/PORT), or the token is unreadable.
    """
    env = os.environ if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                          "must be set")
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address, as net.JoinHostPort writes it
    base = Path(root)
    ca = base / "ca.crt"
    ca_file = str(ca) if ca.is_file() else None
    if ca_file is None:
        # client-go logs this too and falls back to the system roots.
        log.warning("no service account CA at %s; verifying the API server with the system CAs", ca)
    tls = _Tls(ca_file=ca_file)
    where = f"in-cluster config ({root})"
    config = ClientConfig(
        server=f"https://{host}:{port}", namespace=_incluster_namespace(base, env), context="",
        token_file=str(base / "token"), ssl_context=_ssl_context(tls, where, where))
    config.bearer_token()
    return config


def _incluster_namespace(root: Path, env: Mapping[str, str]) -> str:
    """POD_NAMESPACE, else the service account's namespace file, else "default" (as clientcmd)."""
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        return (root / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


def load_config(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None, *,
                context: str | None = None, env: Mapping[str, str] | None = None,
                incluster_root: str = DEFAULT_INCLUSTER_ROOT) -> ClientConfig:
    """The kubeconfig if one is given or found, else the in-cluster service account.

    Raises:
        ConfigError: neither is available, or the one found cannot be used.
    """
    if path is not None:
        return load_kubeconfig(path, context=context)
    env = os.environ if env is None else env
    try:
        found = [p for p in kubeconfig_paths(env=env) if p.exists()]
    except ConfigError:
        found = []
    if found:
        return load_kubeconfig(found, context=context)
    if context:
        raise ConfigError(f'context "{context}" was requested but no kubeconfig file was found')
    try:
        return load_incluster_config(incluster_root, env)
    except ConfigError as exc:
        raise ConfigError(f"no kubeconfig file found ($KUBECONFIG or ~/.kube/config) and no in-cluster "
                          f"config: {exc}") from exc
