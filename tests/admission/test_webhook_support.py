"""What the webhook tests share: an HTTPS admission webhook on 127.0.0.1 (a thread, a server
certificate from a CA made per test), configurations pointing at it, and a registry with the two
webhook plugins behind informers. (The checks of this module's own pieces are at its end.)"""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kapi.admission.chain import AdmissionChain, build_chain
from kapi.admission.plugin import Objects, PluginDeps
from kapi.apis import BUILTIN
from kapi.apis.crdconversion import registry_service_resolver
from kapi.chain.webhookclient import WebhookClient
from kapi.metrics import Metrics
from kapi.object.access import UserInfo
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informers
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage
from tests.chain.test_webhooks import Pki, make_pki

Obj = dict[str, Any]
USER = UserInfo("alice", "uid-a", ("devs", "system:authenticated"))
GROUP = "admissionregistration.k8s.io"
WAIT_S = 20  # a deadline against hangs, not a timing assertion

# (path, review) -> (HTTP code, reply body) ; a reply that is bytes is sent as it is
Handler = Callable[[str, Obj], tuple[int, Any]]


def allow(review: Obj, **response: Any) -> tuple[int, Obj]:
    """A v1 (or v1beta1) answer to ``review`` allowing it, with ``response`` fields added."""
    return 200, {"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                 "response": {"uid": review["request"]["uid"], "allowed": True, **response}}


def deny(review: Obj, message: str = "", code: int | None = None, **response: Any) -> tuple[int, Obj]:
    status: Obj = {"message": message} if message else {}
    if code is not None:
        status["code"] = code
    return 200, {"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                 "response": {"uid": review["request"]["uid"], "allowed": False, "status": status, **response}}


def patch_of(ops: list[Obj]) -> str:
    return base64.b64encode(orjson.dumps(ops)).decode()


@dataclass
class Seen:
    path: str
    review: Obj
    headers: dict[str, str] = field(default_factory=dict)
    client_cn: str = ""


@dataclass
class AdmissionServer:
    """An HTTPS admission webhook in a thread; ``handler`` answers each review, ``seen`` records them."""

    pki: Pki
    handler: Handler = lambda path, review: allow(review)
    seen: list[Seen] = field(default_factory=list)
    delay_s: float = 0.0
    client_certs: bool = False  # ask for (and verify) a client certificate of the CA
    server: http.server.ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        assert self.server is not None
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.pki.ca.read_bytes()).decode()

    def start(self) -> None:
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                peer = self.connection.getpeercert()  # type: ignore[attr-defined]
                cn = dict(x[0] for x in peer["subject"]).get("commonName", "") if peer else ""
                hook.seen.append(Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()}, cn))
                if hook.delay_s:
                    time.sleep(hook.delay_s)
                code, reply = hook.handler(self.path, body)
                data = reply if isinstance(reply, bytes) else orjson.dumps(reply)
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a time-out)

            def log_message(self, *args: Any) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        if self.client_certs:
            ctx.load_verify_locations(self.pki.ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self.server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def reviews(self, path: str = "") -> list[Obj]:
        return [s.review for s in self.seen if not path or s.path.split("?")[0] == path]


def service_pki(where: Path, dns_name: str) -> Pki:
    """A CA and a server certificate for ``dns_name`` (a Service's ``<name>.<namespace>.svc``) and 127.0.0.1."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "service-ca")])
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_name)]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False).sign(ca_key, hashes.SHA256()))
    where.mkdir(parents=True, exist_ok=True)
    (where / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (where / "server.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (where / "server.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    return Pki(where, where / "ca.crt", where / "server.crt", where / "server.key", b"", b"")


def new_server(tmp: Path, handler: Handler | None = None, label: str = "webhook-ca",
               pki: Pki | None = None, client_certs: bool = False) -> AdmissionServer:
    server = AdmissionServer(pki or make_pki(tmp / "pki", label), client_certs=client_certs)
    if handler is not None:
        server.handler = handler
    server.start()
    return server


def rule(resources: list[str], operations: list[str] | None = None, groups: list[str] | None = None,
         versions: list[str] | None = None, scope: str | None = None) -> Obj:
    out: Obj = {"operations": operations or ["*"], "apiGroups": groups if groups is not None else [""],
                "apiVersions": versions or ["*"], "resources": resources}
    if scope:
        out["scope"] = scope
    return out


def webhook(name: str, server: AdmissionServer | None, path: str = "/", *, rules: list[Obj] | None = None,
            url: str = "", **fields: Any) -> Obj:
    """A webhook entry calling ``server`` at ``path`` (or ``url``), for ConfigMaps unless ``rules``."""
    client: Obj = {"url": url or (server.base + path if server else "")}
    if server is not None:
        client["caBundle"] = server.ca_bundle
    out: Obj = {"name": name, "clientConfig": client, "rules": rules or [rule(["configmaps"])],
                "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    out.update(fields)
    return out


def configuration(kind: str, name: str, hooks: list[Obj]) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name}, "webhooks": hooks}


def cm(name: str, namespace: str = "app", labels: dict[str, str] | None = None, **data: str) -> Obj:
    md: Obj = {"name": name, "namespace": namespace}
    if labels:
        md["labels"] = labels
    out: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
    if data:
        out["data"] = dict(data)
    return out


def factory(url: str, ctx: ssl.SSLContext, sni: str, timeout_s: float) -> WebhookClient:
    return WebhookClient(url, ctx, {}, sni, timeout_s)


@dataclass
class Env:
    """A registry with namespaces "app" (labelled env=prod) and "dev", the webhook plugins and their informers."""

    registry: Registry
    chain: AdmissionChain
    informers: Informers
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)

    def res(self, group: str, resource: str) -> Resource:
        found = next(r for r in self.registry.table.resources if r.group == group and r.resource == resource)
        return found

    def opts(self, dry_run: bool = False, user: UserInfo = USER) -> WriteOptions:
        query = {"dryRun": "All"} if dry_run else {}
        return WriteOptions(dry_run=dry_run, admission=self.chain.bind(user, self.warnings, self.annotate, query))

    def delete_opts(self) -> DeleteOptions:
        return DeleteOptions(admission=self.chain.bind(USER, self.warnings, self.annotate))

    def annotate(self, key: str, value: str) -> None:
        self.annotations[key] = value

    async def configure(self, kind: str, name: str, hooks: list[Obj]) -> Obj:
        """Create (or replace) a configuration, then wait for the plugins' informer to hold it."""
        plural = kind.lower() + "s"
        res = self.res(GROUP, plural)
        obj = configuration(kind, name, hooks)
        existing = self.informers.informer(GROUP, plural).get("", name)
        if existing is None:
            made = await self.registry.create(res, "", obj, WriteOptions())
        else:
            obj["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            made, _ = await self.registry.update(res, "", name, obj, WriteOptions())
        await self.synced(plural, name, made["metadata"]["resourceVersion"])
        return made

    async def configure_raw(self, kind: str, name: str, hooks: list[Obj]) -> None:
        """A configuration written to storage as it is, past validation: what an older server kept
        (v1beta1 allowed sideEffects Some and Unknown, which v1 refuses)."""
        plural = kind.lower() + "s"
        res = self.res(GROUP, plural)
        obj = configuration(kind, name, hooks)
        obj["metadata"].update(uid=f"uid-{name}", creationTimestamp="2024-01-01T00:00:00Z", generation=1)
        key = self.registry.key(res, "", name)
        existing = self.informers.informer(GROUP, plural).get("", name)
        if existing is not None:
            await self.registry.delete(res, "", name, DeleteOptions())
            await self.synced(plural, name, None)
        rev = await self.registry.storage.create(key, await self.registry.encode_async(res, obj))
        await self.synced(plural, name, str(rev))

    async def unconfigure(self, kind: str, name: str) -> None:
        plural = kind.lower() + "s"
        await self.registry.delete(self.res(GROUP, plural), "", name, DeleteOptions())
        await self.synced(plural, name, None)

    async def synced(self, plural: str, name: str, rv: str | None) -> None:
        inf = self.informers.informer(GROUP, plural)
        with trio.fail_after(WAIT_S):
            while True:
                got = inf.get("", name)
                if (got is None and rv is None) or (got is not None and got["metadata"]["resourceVersion"] == rv):
                    return
                await trio.sleep(0.01)

    async def create_cm(self, obj: Obj, **kw: Any) -> Obj:
        made: Obj = await self.registry.create(self.res("", "configmaps"), obj["metadata"]["namespace"], obj,
                                               self.opts(**kw))
        return made


async def start_env(nursery: trio.Nursery, plugins: tuple[str, ...] = ("NamespaceLifecycle", "MutatingAdmissionWebhook",
                                                                      "ValidatingAdmissionWebhook"),
                    access: Any = None, configuration: dict[str, Obj] | None = None) -> Env:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    ns = registry.table.get("", "v1", "namespaces")
    assert ns is not None
    for name, labels in (("app", {"env": "prod"}), ("dev", {"env": "dev"})):
        await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name, "labels": labels}}, WriteOptions())
    informers = Informers(registry)
    deps = PluginDeps(registry, Objects(registry, informers), access=access, client_factory=factory,
                      resolve_service=registry_service_resolver(registry), configuration=configuration or {})
    chain = build_chain(list(plugins), deps)
    await nursery.start(informers.run)
    await nursery.start(chain.run)
    return Env(registry, chain, informers)


# ------------------------------------------------------------------ checks of the support itself


def test_answers_have_the_review_shape() -> None:
    review = {"apiVersion": "admission.k8s.io/v1", "request": {"uid": "u1"}}
    assert allow(review, warnings=["w"]) == (200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                                    "response": {"uid": "u1", "allowed": True, "warnings": ["w"]}})
    code, body = deny(review, "no", 403)
    assert body["response"]["status"] == {"message": "no", "code": 403} and not body["response"]["allowed"]
    assert orjson.loads(base64.b64decode(patch_of([{"op": "add", "path": "/a", "value": 1}]))) == \
        [{"op": "add", "path": "/a", "value": 1}]
