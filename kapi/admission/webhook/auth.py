"""What the server presents to admission webhooks: the WebhookAdmissionConfiguration of
--admission-control-config-file (``kubeConfigFile``), kube's ``AuthenticationInfoResolver``.

The kubeconfig's ``users`` are keyed by the webhook they are for: ``host:port`` (a Service's
``<name>.<namespace>.svc:<port>``), a ``*.`` wildcard of its domain, either without ``:443``, or
``*`` for every webhook. A user gives a client certificate (``client-certificate[-data]`` and
``client-key[-data]``), a bearer ``token`` (or ``tokenFile``) or ``username``/``password``.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kapi.admission.chain import AdmissionConfigError

Obj = dict[str, Any]


@dataclass(frozen=True)
class Credentials:
    """One kubeconfig user: a client certificate (PEM, both) and the headers of each request."""

    name: str = ""
    cert_pem: bytes = b""
    key_pem: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()

    def load_into(self, ctx: ssl.SSLContext) -> None:
        if not self.cert_pem:
            return
        # ssl loads a chain only from files: through a private directory, removed at once
        with tempfile.TemporaryDirectory(prefix="kapi-webhook-") as private:
            cert, key = Path(private, "tls.crt"), Path(private, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            ctx.load_cert_chain(str(cert), str(key))


NONE = Credentials()


@dataclass
class AuthInfoResolver:
    """The users of a webhook kubeconfig, by the name kube looks them up by."""

    users: dict[str, Credentials] = field(default_factory=dict)

    def for_target(self, host_port: str) -> Credentials:
        """kube's defaultAuthenticationInfoResolver.clientConfig lookup order."""
        users = self.users
        if not users:
            return NONE
        if host_port in users:
            return users[host_port]
        steps = host_port.split(".")
        for i in range(1, len(steps)):
            found = users.get("*." + ".".join(steps[i:]))
            if found is not None:
                return found
        host, _, port = host_port.rpartition(":")
        if host and port == "443":
            if host in users:
                return users[host]
            steps = host.split(".")
            for i in range(1, len(steps)):
                found = users.get("*." + ".".join(steps[i:]))
                if found is not None:
                    return found
        return users.get("*", NONE)


def _text(entry: Obj, key: str, origin: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AdmissionConfigError(f"webhook kubeconfig {origin}: {key} must be a string")
    return value


def _file_or_data(entry: Obj, key: str, base: Path, origin: str) -> bytes:
    path, data = _text(entry, key, origin), _text(entry, f"{key}-data", origin)
    if data:
        try:
            return base64.b64decode("".join(data.split()), validate=True)
        except (binascii.Error, ValueError):
            raise AdmissionConfigError(f"webhook kubeconfig {origin}: {key}-data is not valid base64") from None
    if path:
        file = Path(path) if os.path.isabs(path) else base / path
        try:
            return file.read_bytes()
        except OSError as exc:
            raise AdmissionConfigError(f"webhook kubeconfig {origin}: cannot read {key} {file}: {exc}") from None
    return b""


def _credentials(name: str, user: Obj, base: Path, origin: str) -> Credentials:
    cert = _file_or_data(user, "client-certificate", base, origin)
    key = _file_or_data(user, "client-key", base, origin)
    if bool(cert) != bool(key):
        raise AdmissionConfigError(f'webhook kubeconfig {origin}: user "{name}" needs both a client certificate '
                                   f'and a key')
    headers: list[tuple[str, str]] = []
    token = _text(user, "token", origin)
    token_file = _text(user, "tokenFile", origin)
    if not token and token_file:
        file = Path(token_file) if os.path.isabs(token_file) else base / token_file
        try:
            token = file.read_text().strip()
        except OSError as exc:
            raise AdmissionConfigError(f"webhook kubeconfig {origin}: cannot read tokenFile {file}: {exc}") from None
    username, password = _text(user, "username", origin), _text(user, "password", origin)
    if token:
        headers.append(("Authorization", f"Bearer {token}"))
    elif username or password:
        basic = base64.b64encode(f"{username}:{password}".encode()).decode()
        headers.append(("Authorization", f"Basic {basic}"))
    creds = Credentials(name, cert, key, tuple(headers))
    if cert:
        try:
            creds.load_into(ssl.create_default_context())
        except (OSError, ssl.SSLError) as exc:
            raise AdmissionConfigError(f'webhook kubeconfig {origin}: user "{name}": cannot load the client '
                                       f'certificate and key: {exc}') from None
    return creds


def resolver_from(configuration: Obj | None, plugin: str) -> AuthInfoResolver:
    """The resolver of a plugin's WebhookAdmissionConfiguration (none: no credentials). Raises
    AdmissionConfigError (the server does not start) as kube refuses a bad configuration."""
    if not configuration:
        return AuthInfoResolver()
    kind = configuration.get("kind")
    if kind not in (None, "WebhookAdmissionConfiguration"):
        raise AdmissionConfigError(f"{plugin}: no kind \"{kind}\" is registered for the configuration "
                                   f"(WebhookAdmissionConfiguration, apiserver.config.k8s.io/v1)")
    path = configuration.get("kubeConfigFile")
    if not path:
        return AuthInfoResolver()
    if not isinstance(path, str) or not os.path.isabs(path):
        raise AdmissionConfigError(f'{plugin}: kubeConfigFile: Invalid value: "{path}": must be an absolute file path')
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AdmissionConfigError(f"{plugin}: cannot read kubeConfigFile {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise AdmissionConfigError(f"{plugin}: kubeConfigFile {path} must be a mapping")
    users: dict[str, Credentials] = {}
    base = Path(path).parent
    for item in doc.get("users") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise AdmissionConfigError(f"webhook kubeconfig {path}: every entry of users needs a name")
        user = item.get("user") or {}
        if not isinstance(user, dict):
            raise AdmissionConfigError(f'webhook kubeconfig {path}: user "{item["name"]}" must be a mapping')
        users.setdefault(item["name"], _credentials(item["name"], user, base, path))
    return AuthInfoResolver(users)
