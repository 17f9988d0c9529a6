"""A tiny HTTPS server that answers kubectl's discovery and records the bodies kubectl sends.

``python -m tests.protobuf.capture OUT_DIR -- kubectl ARGS...`` runs one kubectl command
against it and writes each POST body to ``OUT_DIR/<n>.bin`` with its content type.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "v1",
    "resources": [
        {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"]},
        {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["cm"]},
    ],
}
_VERSIONS = {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}
_GROUPS = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}


@dataclass
class Recorded:
    """One request body kubectl sent."""

    method: str
    path: str
    content_type: str
    body: bytes


@dataclass
class CaptureServer:
    """The running server, its address and what it recorded."""

    httpd: ThreadingHTTPServer
    thread: threading.Thread
    recorded: list[Recorded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "capture")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "capture.crt", directory / "capture.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def start(directory: Path) -> CaptureServer:
    """Serve on a free loopback port until ``close()``; certificate files go into ``directory``."""
    recorded: list[Recorded] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _json(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            known = {"/api": _VERSIONS, "/apis": _GROUPS, "/api/v1": _RESOURCES}
            if path in known:
                self._json(200, known[path])
            else:
                self._json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                 "reason": "NotFound", "message": "not found"})

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(size)
            recorded.append(Recorded("POST", self.path, self.headers.get("Content-Type", ""), body))
            kind = "Namespace" if "/namespaces" in self.path and "/configmaps" not in self.path else "ConfigMap"
            self._json(201, {"kind": kind, "apiVersion": "v1", "metadata": {"name": "created"}})

    cert_file, key_file = _self_signed(directory)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return CaptureServer(httpd, thread, recorded)


def kubeconfig(directory: Path, url: str) -> Path:
    """A kubeconfig for ``url`` that skips certificate checks."""
    path = directory / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "capture",
        "clusters": [{"name": "capture", "cluster": {"server": url, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "capture", "user": {"token": "capture-token"}}],
        "contexts": [{"name": "capture", "context": {"cluster": "capture", "user": "capture",
                                                     "namespace": "default"}}],
    }))
    return path


def main(argv: list[str]) -> int:
    """Record the bodies of one kubectl command (see the module docstring)."""
    import subprocess

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    command = argv[argv.index("--") + 1 :]
    server = start(out)
    try:
        config = kubeconfig(out, server.url)
        subprocess.run([*command, "--kubeconfig", str(config)], check=False, timeout=60)
    finally:
        server.close()
    for i, rec in enumerate(server.recorded):
        (out / f"{i}.bin").write_bytes(rec.body)
        print(i, rec.method, rec.path, rec.content_type, len(rec.body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
