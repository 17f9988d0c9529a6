"""The Webhook authorizer and webhook token authentication (issue 12), against a real HTTPS webhook on 127.0.0.1.

The webhook runs in a thread (http.server over TLS with a server certificate from a CA made here, and
client certificates required from that CA); the kubeconfig the server reads points at it.
"""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson
import pytest
import trio
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kapi import errors
from kapi.chain.authn.webhook import WebhookTokenAuthenticator
from kapi.chain.authz import AlwaysAllow, Authorizer
from kapi.chain.authz.webhook import ExpiringLRU, WebhookAuthorizer, review_spec
from kapi.chain.webhookclient import Backoff, WebhookClient, WebhookConfigError, load_webhook_kubeconfig
from kapi.object.access import ALLOW, DENY, NO_OPINION, Attributes, UserInfo

ALICE = UserInfo("alice", "uid-a", ("devs", "system:authenticated"), {"scopes": ("a", "b")})
FAST = Backoff(duration_s=0.01, factor=1.5, jitter=0.2, steps=5)


# ------------------------------------------------------------------ a CA, certificates, the webhook


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Pki:
    dir: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: bytes
    client_key: bytes


def make_pki(where: Path, label: str = "webhook-ca") -> Pki:
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(label)).issuer_name(_name(label))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, server: bool) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1)))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                critical=False)
        return b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM), _pem_key(key)

    where.mkdir(parents=True, exist_ok=True)
    (where / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert, key = leaf("127.0.0.1", True)
    (where / "server.crt").write_bytes(cert)
    (where / "server.key").write_bytes(key)
    client_cert, client_key = leaf("kube-apiserver", False)
    return Pki(where, where / "ca.crt", where / "server.crt", where / "server.key", client_cert, client_key)


Answer = tuple[int, Any, dict[str, str]]


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    client_cn: str


@dataclass
class Webhook:
    """An HTTPS webhook in a thread: ``answer(body)`` makes each reply; ``seen`` records each request."""

    pki: Pki
    answer: Callable[[Any], Answer] = lambda body: (200, {"status": {"allowed": True}}, {})
    seen: list[Seen] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"https://127.0.0.1:{self.server.server_address[1]}/authorize"

    def start(self) -> None:
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                peer = self.connection.getpeercert()  # type: ignore[attr-defined]
                cn = dict(x[0] for x in peer["subject"]).get("commonName", "") if peer else ""
                hook.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body, cn))
                code, reply, headers = hook.answer(body)
                data = reply if isinstance(reply, bytes) else orjson.dumps(reply)
                self.send_response(code)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        ctx.load_verify_locations(self.pki.ca)
        ctx.verify_mode = ssl.CERT_REQUIRED  # the apiserver must present its client certificate
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self.server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def webhook(pki: Pki) -> Iterator[Webhook]:
    hook = Webhook(pki)
    hook.start()
    yield hook
    hook.stop()


def write_kubeconfig(path: Path, server: str, pki: Pki, *, token: str = "", user: dict[str, Any] | None = None,
                     ca: Path | None = None) -> Path:
    """A webhook kubeconfig: the CA by (relative) file, the client certificate inline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ca_path = ca or pki.ca
    body = user if user is not None else {
        "client-certificate-data": base64.b64encode(pki.client_cert).decode(),
        "client-key-data": base64.b64encode(pki.client_key).decode()}
    if token:
        body = {**body, "token": token}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "webhook",
        "clusters": [{"name": "authz", "cluster": {"server": server,
                                                   "certificate-authority": str(ca_path.relative_to(path.parent))
                                                   if ca_path.is_relative_to(path.parent) else str(ca_path)}}],
        "users": [{"name": "apiserver", "user": body}],
        "contexts": [{"name": "webhook", "context": {"cluster": "authz", "user": "apiserver"}}]}))
    return path


def client_for(webhook: Webhook, tmp_path: Path, **kw: Any) -> WebhookClient:
    path = write_kubeconfig(tmp_path / "pki" / "kubeconfig.yaml", webhook.url, webhook.pki, **kw)
    return load_webhook_kubeconfig(path, backoff=FAST)


def pods(verb: str = "list", *, user: UserInfo = ALICE, name: str = "", fields: str = "", labels: str = ""
         ) -> Attributes:
    return Attributes(user, verb, True, "", "v1", "pods", "", "default", name, "/api/v1/namespaces/default/pods",
                      fields, labels)


# ------------------------------------------------------------------ the Webhook authorizer over HTTPS


async def test_subject_access_review_v1beta1_over_https(webhook: Webhook, tmp_path: Path) -> None:
    """Issue 12: kube's v1beta1 review (groups as ``group``), the client certificate presented, allows cached."""
    client = client_for(webhook, tmp_path)
    authz = WebhookAuthorizer(client)  # v1beta1: kube's default --authorization-webhook-version
    try:
        d = await authz.authorize(pods("get", name="web"))
        assert d.decision == ALLOW and not d.error
        (seen,) = webhook.seen
        assert seen.path == "/authorize" and seen.client_cn == "kube-apiserver"
        assert seen.headers["content-type"] == "application/json"
        assert seen.body == {
            "kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1beta1",
            "metadata": {"creationTimestamp": None}, "status": {"allowed": False},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "version": "v1",
                                            "resource": "pods", "name": "web"},
                     "user": "alice", "group": ["devs", "system:authenticated"], "extra": {"scopes": ["a", "b"]},
                     "uid": "uid-a"}}
        assert (await authz.authorize(pods("get", name="web"))).decision == ALLOW
        assert len(webhook.seen) == 1  # answered from the cache
        await authz.authorize(pods("get", name="db"))
        assert len(webhook.seen) == 2
        na = Attributes(ALICE, "get", False, path="/healthz")
        await authz.authorize(na)
        assert webhook.seen[-1].body["spec"]["nonResourceAttributes"] == {"path": "/healthz", "verb": "get"}
    finally:
        await client.aclose()


async def test_subject_access_review_v1_with_selectors_and_a_token(webhook: Webhook, tmp_path: Path) -> None:
    """v1 names ``groups``; a list's field and label selectors go as requirements (kube's AuthorizeWithSelectors)."""
    client = client_for(webhook, tmp_path, token="s3cret")
    authz = WebhookAuthorizer(client, "v1")
    try:
        await authz.authorize(pods(fields="spec.nodeName=n1,status.phase!=Failed", labels="app=web,!legacy,x>3"))
        (seen,) = webhook.seen
        assert seen.headers["authorization"] == "Bearer s3cret"
        assert seen.body["apiVersion"] == "authorization.k8s.io/v1"
        spec = seen.body["spec"]
        assert spec["groups"] == ["devs", "system:authenticated"] and "group" not in spec
        assert spec["resourceAttributes"]["fieldSelector"] == {"requirements": [
            {"key": "spec.nodeName", "operator": "In", "values": ["n1"]},
            {"key": "status.phase", "operator": "NotIn", "values": ["Failed"]}]}
        assert spec["resourceAttributes"]["labelSelector"] == {"requirements": [
            {"key": "app", "operator": "In", "values": ["web"]},
            {"key": "legacy", "operator": "DoesNotExist"}]}  # Gt is dropped: it only narrows
    finally:
        await client.aclose()


async def test_the_webhook_decides(webhook: Webhook, tmp_path: Path) -> None:
    """denied: Deny; allowed: Allow; neither: NoOpinion (the next mode decides); both: Deny with an error."""
    statuses = {"alice": {"allowed": False, "denied": True, "reason": "alice is on holiday"},
                "bob": {"allowed": False, "reason": "not my business"},
                "carol": {"allowed": True, "denied": True}}
    webhook.answer = lambda body: (200, {"apiVersion": "authorization.k8s.io/v1beta1", "kind": "SubjectAccessReview",
                                         "status": statuses[body["spec"]["user"]]}, {})
    client = client_for(webhook, tmp_path)
    authz = WebhookAuthorizer(client)
    try:
        d = await authz.authorize(pods(user=UserInfo("alice")))
        assert (d.decision, d.reason, d.error) == (DENY, "alice is on holiday", "")
        d = await authz.authorize(pods(user=UserInfo("bob")))
        assert (d.decision, d.reason) == (NO_OPINION, "not my business")
        d = await authz.authorize(pods(user=UserInfo("carol")))
        assert d.decision == DENY and d.error == "webhook subject access review returned both allow and deny response"
        # through the union: bob passes on to the next mode, alice's Deny ends it
        union = Authorizer([authz, AlwaysAllow()])
        assert (await union.authorize(pods(user=UserInfo("bob")))).allowed
        assert (await union.authorize(pods(user=UserInfo("alice")))).denied
        assert authz.rules_for(ALICE, "default").incomplete
    finally:
        await client.aclose()


async def test_a_webhook_that_cannot_answer(webhook: Webhook, tmp_path: Path) -> None:
    """Issue 12: an error is NoOpinion with the error, not cached; alone, the union answers 500, a later mode may allow."""
    answers = iter([(400, b"no", {}), (400, b"no", {}), (200, {"status": {"allowed": True}}, {})])
    webhook.answer = lambda body: next(answers)
    client = client_for(webhook, tmp_path)
    authz = WebhookAuthorizer(client)
    try:
        d = await authz.authorize(pods())
        assert d.decision == NO_OPINION
        assert d.error == "the server responded with the status code 400 but did not return more information"
        assert len(webhook.seen) == 1  # a 400 is not retried
        with pytest.raises(errors.InternalError) as caught:
            await Authorizer([authz]).check(pods())
        assert caught.value.to_status()["code"] == 500
        assert (await authz.authorize(pods())).decision == ALLOW  # errors are not cached: asked again
        assert len(webhook.seen) == 3
    finally:
        await client.aclose()
    # a webhook that is down: refused at once, NoOpinion with kube's "Post <url>: ..." error
    down = WebhookAuthorizer(load_webhook_kubeconfig(write_kubeconfig(
        tmp_path / "down" / "kubeconfig.yaml", "https://127.0.0.1:1/authorize", webhook.pki), backoff=FAST))
    d = await down.authorize(pods())
    assert d.decision == NO_OPINION and d.error.startswith('Post "https://127.0.0.1:1/authorize": ')
    with pytest.raises(errors.InternalError):
        await Authorizer([down]).check(pods())
    assert (await Authorizer([down, AlwaysAllow()]).authorize(pods())).allowed


async def test_retries_as_kube_does(webhook: Webhook, tmp_path: Path) -> None:
    """500, 504 and 429 (and an answer with Retry-After) are tried again, five attempts in all; the last error stays."""
    answers = iter([(500, b"oops", {}), (429, b"", {}), (503, b"", {"Retry-After": "1"}),
                    (200, {"status": {"allowed": True}}, {})])
    webhook.answer = lambda body: next(answers)
    client = client_for(webhook, tmp_path)
    authz = WebhookAuthorizer(client)
    try:
        assert (await authz.authorize(pods())).decision == ALLOW
        assert len(webhook.seen) == 4
        webhook.answer = lambda body: (504, b"", {})
        d = await authz.authorize(pods("watch"))
        assert len(webhook.seen) == 4 + 5
        assert d.error == "the server responded with the status code 504 but did not return more information"
        webhook.answer = lambda body: (500, orjson.dumps({"kind": "Status", "message": "db down"}), {})
        assert (await authz.authorize(pods("delete", name="x"))).error == "db down"
    finally:
        await client.aclose()


async def test_a_webhook_with_a_certificate_of_another_ca(webhook: Webhook, tmp_path: Path) -> None:
    other = make_pki(tmp_path / "other", "someone-else")
    client = client_for(webhook, tmp_path, ca=other.ca)
    try:
        d = await WebhookAuthorizer(client).authorize(pods())
        assert d.decision == NO_OPINION and "CERTIFICATE_VERIFY_FAILED" in d.error
        assert webhook.seen == []
    finally:
        await client.aclose()


# ------------------------------------------------------------------ caches (a webhook in process)


@dataclass
class FakeHook:
    answer: Callable[[dict[str, Any]], dict[str, Any]]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    gate: trio.Event | None = None

    async def post(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        if self.gate is not None:
            await self.gate.wait()
        return self.answer(body)


async def test_authorizer_cache_ttls(autojump_clock: Any) -> None:
    """An allow is cached --authorization-webhook-cache-authorized-ttl, anything else ...-unauthorized-ttl."""
    hook = FakeHook(lambda body: {"status": {"allowed": body["spec"]["user"] == "alice"}})
    authz = WebhookAuthorizer(hook, authorized_ttl_s=300, unauthorized_ttl_s=30)
    alice, bob = pods(), pods(user=UserInfo("bob"))
    await authz.authorize(alice)
    await authz.authorize(bob)
    await trio.sleep(29)
    await authz.authorize(alice)
    await authz.authorize(bob)
    assert len(hook.bodies) == 2
    await trio.sleep(2)
    await authz.authorize(bob)
    await authz.authorize(alice)
    assert [b["spec"]["user"] for b in hook.bodies] == ["alice", "bob", "bob"]
    await trio.sleep(300)
    await authz.authorize(alice)
    assert len(hook.bodies) == 4
    # requester-controlled attributes of 10,000 bytes or more are never cached (kube's DoS guard)
    huge = pods("get", name="x" * 10_000)
    await authz.authorize(huge)
    await authz.authorize(huge)
    assert len(hook.bodies) == 6
    # a zero TTL caches nothing
    nocache = WebhookAuthorizer(hook, authorized_ttl_s=0, unauthorized_ttl_s=0)
    await nocache.authorize(alice)
    await nocache.authorize(alice)
    assert len(hook.bodies) == 8


def test_expiring_lru_drops_the_least_recently_used() -> None:
    cache = ExpiringLRU(size=2)
    cache.add("a", 1, 10, now=0)
    cache.add("b", 2, 10, now=0)
    assert cache.get("a", now=1) == 1  # a is now the most recent
    cache.add("c", 3, 10, now=1)
    assert cache.get("b", now=1) is None and cache.get("a", now=1) == 1 and cache.get("c", now=1) == 3
    assert cache.get("a", now=10) is None and len(cache) == 1


def test_review_spec_omits_what_is_empty() -> None:
    assert review_spec(Attributes(UserInfo(""), "list", True, resource="nodes")) == {
        "resourceAttributes": {"verb": "list", "resource": "nodes"}}


async def test_a_wrong_answer_is_an_error() -> None:
    hook = FakeHook(lambda body: {"apiVersion": "v1", "kind": "Status"})
    d = await WebhookAuthorizer(hook).authorize(pods())
    assert d.decision == NO_OPINION and "Kind=SubjectAccessReview" in d.error
    hook.answer = lambda body: {"status": {"allowed": "yes"}}
    assert (await WebhookAuthorizer(hook).authorize(pods())).error
    with pytest.raises(ValueError, match="unsupported webhook authorizer version"):
        WebhookAuthorizer(hook, "v2")


# ------------------------------------------------------------------ webhook token authentication


def token_review(body: dict[str, Any]) -> dict[str, Any]:
    token = body["spec"]["token"]
    if token == "good":
        return {"apiVersion": body["apiVersion"], "kind": "TokenReview", "status": {
            "authenticated": True, "user": {"username": "jane", "uid": "j-1", "groups": ["ops"],
                                            "extra": {"team": ["blue"]}}}}
    if token == "scoped":
        return {"status": {"authenticated": True, "user": {"username": "svc"}, "audiences": ["other-api"]}}
    return {"status": {"authenticated": False, "error": "unknown token"}}


async def test_token_review_over_https(webhook: Webhook, tmp_path: Path) -> None:
    """Issue 12: kube's TokenReview (v1beta1 by default); the audiences asked for are sent, and checked."""
    webhook.answer = lambda body: (200, token_review(body), {})
    client = client_for(webhook, tmp_path)
    authn = WebhookTokenAuthenticator(client, implicit_audiences=("https://kubernetes.default.svc",))
    try:
        got = await authn.authenticate_token("good", ("https://kubernetes.default.svc",))
        assert got == (UserInfo("jane", "j-1", ("ops",), {"team": ("blue",)}), ("https://kubernetes.default.svc",))
        (seen,) = webhook.seen
        assert seen.client_cn == "kube-apiserver"
        assert seen.body == {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1beta1",
                             "metadata": {"creationTimestamp": None},
                             "spec": {"token": "good", "audiences": ["https://kubernetes.default.svc"]},
                             "status": {"user": {}}}
        # an answer naming other audiences than those asked for is no user
        assert await authn.authenticate_token("scoped", ("https://kubernetes.default.svc",)) is None
        assert (await authn.authenticate_token("scoped", ("other-api",)))[1] == ("other-api",)  # type: ignore[index]
        assert await authn.authenticate_token("bad", ("https://kubernetes.default.svc",)) is None
        v1 = WebhookTokenAuthenticator(client, "v1")
        assert (await v1.authenticate_token("good"))[0].name == "jane"  # type: ignore[index]
        assert webhook.seen[-1].body["apiVersion"] == "authentication.k8s.io/v1"
        assert "audiences" not in webhook.seen[-1].body["spec"]
    finally:
        await client.aclose()


async def test_token_cache_and_shared_reviews(autojump_clock: Any) -> None:
    """Answers (yes or no) are cached for the TTL under the token and audiences; errors are not;
    concurrent asks of one token share one review."""
    hook = FakeHook(token_review)
    authn = WebhookTokenAuthenticator(hook, implicit_audiences=("api", "other"), cache_ttl_s=120)
    assert (await authn.authenticate_token("good", ("api",)))[0].name == "jane"  # type: ignore[index]
    assert await authn.authenticate_token("bad", ("api",)) is None
    await trio.sleep(119)
    await authn.authenticate_token("good", ("api",))
    await authn.authenticate_token("bad", ("api",))
    assert len(hook.bodies) == 2
    await authn.authenticate_token("good", ("other",))  # other audiences: another entry
    assert len(hook.bodies) == 3
    await trio.sleep(2)
    await authn.authenticate_token("good", ("api",))
    assert len(hook.bodies) == 4
    assert all("good" not in repr(k) for k in authn.cache._entries)  # tokens are never kept

    results: list[Any] = []
    hook.gate = trio.Event()

    async def ask() -> None:
        results.append(await authn.authenticate_token("fresh", ()))

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(ask)
        await trio.sleep(1)
        hook.gate.set()
    assert results == [None] * 5 and len(hook.bodies) == 5  # one review for five asks

    def failing(body: dict[str, Any]) -> dict[str, Any]:
        from kapi.chain.webhookclient import WebhookError
        raise WebhookError("down")

    hook.gate, hook.answer = None, failing
    assert await authn.authenticate_token("other", ()) is None
    assert await authn.authenticate_token("other", ()) is None
    assert len(hook.bodies) == 7  # errors are not cached


# ------------------------------------------------------------------ the kubeconfig


def test_kubeconfig_errors(tmp_path: Path, pki: Pki) -> None:
    with pytest.raises(WebhookConfigError, match="cannot read"):
        load_webhook_kubeconfig(tmp_path / "missing.yaml")
    good = write_kubeconfig(tmp_path / "k.yaml", "https://127.0.0.1:9/x", pki)
    doc = yaml.safe_load(good.read_text())

    def variant(change: Callable[[dict[str, Any]], None]) -> Path:
        d = yaml.safe_load(good.read_text())
        change(d)
        p = tmp_path / "variant.yaml"
        p.write_text(yaml.safe_dump(d))
        return p

    with pytest.raises(WebhookConfigError, match='context "nope" does not exist'):
        load_webhook_kubeconfig(variant(lambda d: d.update({"current-context": "nope"})))
    with pytest.raises(WebhookConfigError, match="no server found"):
        load_webhook_kubeconfig(variant(lambda d: d["clusters"][0]["cluster"].pop("server")))
    with pytest.raises(WebhookConfigError, match="not valid base64"):
        load_webhook_kubeconfig(variant(lambda d: d["users"][0]["user"].update({"client-key-data": "%%%"})))
    with pytest.raises(WebhookConfigError, match="insecure flag"):
        load_webhook_kubeconfig(variant(lambda d: d["clusters"][0]["cluster"].update(
            {"insecure-skip-tls-verify": True})))
    with pytest.raises(WebhookConfigError, match="needs both"):
        load_webhook_kubeconfig(variant(lambda d: d["users"][0]["user"].pop("client-key-data")))
    with pytest.raises(WebhookConfigError, match="only one is allowed"):
        load_webhook_kubeconfig(variant(lambda d: d["users"][0]["user"].update({"token": "t", "username": "u"})))
    client = load_webhook_kubeconfig(good)
    assert client.url == "https://127.0.0.1:9/x" and client.ssl_context is not None
    assert doc["clusters"][0]["cluster"]["certificate-authority"] == "pki/ca.crt"  # read relative to the file
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    with_file = load_webhook_kubeconfig(variant(lambda d: d["users"][0].update({"user": {"tokenFile": "token"}})))
    assert with_file.headers == {"Authorization": "Bearer from-file"}


# ------------------------------------------------------------------ through the server's chain


def review(body: dict[str, Any]) -> Answer:
    """One webhook for both: TokenReviews as token_review, SubjectAccessReviews allow jane pods only."""
    if body["kind"] == "TokenReview":
        return 200, token_review(body), {}
    spec = body["spec"]
    attrs = spec.get("resourceAttributes") or {}
    if spec.get("user") == "jane" and attrs.get("resource") == "pods":
        return 200, {"status": {"allowed": True, "reason": "jane runs pods"}}, {}
    return 200, {"status": {"allowed": False, "reason": "ask the ops team"}}, {}


async def test_webhooks_in_the_servers_chain(webhook: Webhook, tmp_path: Path, nursery: trio.Nursery) -> None:
    """Issue 12: --authentication-token-webhook-config-file and --authorization-mode Webhook in a real app."""
    from kapi.api.app import Health
    from kapi.apis import BUILTIN
    from kapi.config import Config
    from kapi.registry.resources import ResourceTable
    from kapi.registry.store import Registry
    from kapi.server.serve import build_app
    from kapi.storage.memory import MemoryStorage
    from tests.api.conftest import Api

    webhook.answer = review
    kubeconfig = write_kubeconfig(tmp_path / "pki" / "kubeconfig.yaml", webhook.url, webhook.pki)
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    config = Config(storage_backend="memory", authorization_mode=("Webhook",),
                    authorization_webhook_config_file=str(kubeconfig),
                    authentication_token_webhook_config_file=str(kubeconfig))
    api = Api(build_app(config, registry, "admin-token", Health(ready=True)), registry)
    r = await api.request("GET", "/api/v1/namespaces/default/pods", token="good")
    assert r.status == 200, r.json()
    r = await api.request("GET", "/api/v1/namespaces/default/secrets", token="good")
    assert r.status == 403
    assert r.json()["message"] == ('secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" '
                                   'in the namespace "default": ask the ops team')
    assert (await api.request("GET", "/api/v1/namespaces/default/pods", token="bad")).status == 401
    kinds = [s.body["kind"] for s in webhook.seen]
    assert kinds.count("TokenReview") == 2 and kinds.count("SubjectAccessReview") == 2
    # the token's review was cached: the same token again asks only about the new request
    await api.request("GET", "/api/v1/namespaces/kube-system/pods", token="good")
    assert [s.body["kind"] for s in webhook.seen[len(kinds):]] == ["SubjectAccessReview"]
    tr = webhook.seen[0].body["spec"]
    assert tr == {"token": "good", "audiences": ["https://kubernetes.default.svc.cluster.local"]}
    # the webhook gone: requests it must decide are 500s (a Status), tokens it must check 401s
    webhook.stop()
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps", token="admin-token")
    assert r.status == 200  # system:masters never asks
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps", token="good")
    assert r.status == 500 and r.json()["reason"] == "InternalError"
    assert (await api.request("GET", "/api/v1/namespaces/default/pods", token="new-token")).status == 401


def test_webhook_flags_kube_refuses(tmp_path: Path) -> None:
    from kapi.config import Config
    from kapi.server.security import build_authorizer

    with pytest.raises(ValueError, match="authorization config file not passed"):
        build_authorizer(Config(authorization_mode=("Webhook",)), None)
    with pytest.raises(ValueError, match="without mode Webhook"):
        build_authorizer(Config(authorization_mode=("AlwaysAllow",), authorization_webhook_config_file="x"), None)
    with pytest.raises(WebhookConfigError):
        build_authorizer(Config(authorization_mode=("Webhook",),
                                authorization_webhook_config_file=str(tmp_path / "nope")), None)
