"""The audit webhook backend (issue 12): batches of audit.k8s.io/v1 EventLists posted to a server on
127.0.0.1, retried on failure; the blocking mode delivers a request's events as it is served."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest
import trio
import yaml

from kapi.chain.audit.webhook import WebhookBackend

from tests.chain.test_audit import CM, make_app, policy  # noqa: F401 (make_app is a fixture)


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]]
    fail_first: list[bool]

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.fail_first and self.fail_first.pop():
            self.send_response(503)
            self.end_headers()
            return
        self.bodies.append({"auth": self.headers.get("Authorization"), "doc": orjson.loads(body)})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, Any]], list[bool]]]:
    bodies: list[dict[str, Any]] = []
    fail_first: list[bool] = []
    handler = type("Receiver", (_Receiver,), {"bodies": bodies, "fail_first": fail_first})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "webhook.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "audit",
        "clusters": [{"name": "sink", "cluster": {"server": f"http://127.0.0.1:{httpd.server_port}/audit"}}],
        "users": [{"name": "kapi", "user": {"token": "sink-token"}}],
        "contexts": [{"name": "audit", "context": {"cluster": "sink", "user": "kapi"}}]}))
    yield kubeconfig, bodies, fail_first
    httpd.shutdown()
    httpd.server_close()


async def _wait_for(check: Any, seconds: float = 10.0) -> None:
    with trio.fail_after(seconds):
        while not check():
            await trio.sleep(0.02)


async def test_the_webhook_backend_posts_batches_of_event_lists(
        receiver: tuple[Path, list[dict[str, Any]], list[bool]], nursery: trio.Nursery) -> None:
    kubeconfig, bodies, fail_first = receiver
    backend = WebhookBackend.from_kubeconfig(str(kubeconfig), "batch", max_batch_size=3, max_batch_wait_s=0.2,
                                             initial_backoff_s=0.05)
    await nursery.start(backend.run)
    for i in range(4):
        backend.process_nowait({"kind": "Event", "auditID": str(i)})
    # three make a full batch at once; the fourth goes when the batch wait has passed
    await trio.to_thread.run_sync(lambda: None)
    await _wait_for(lambda: sum(len(b["doc"]["items"]) for b in bodies) == 4)
    assert [len(b["doc"]["items"]) for b in bodies] == [3, 1]
    assert bodies[0]["doc"]["kind"] == "EventList" and bodies[0]["doc"]["apiVersion"] == "audit.k8s.io/v1"
    assert bodies[0]["auth"] == "Bearer sink-token"
    # a failed POST is tried again (kube's audit webhook retries on any error)
    fail_first.append(True)
    assert await backend.send_events([{"kind": "Event", "auditID": "again"}])
    assert bodies[-1]["doc"]["items"][0]["auditID"] == "again"


async def test_a_blocking_webhook_receives_the_events_of_a_request(
        receiver: tuple[Path, list[dict[str, Any]], list[bool]], make_app: Any, nursery: trio.Nursery) -> None:
    """RequestReceived is delivered before the request is served; the ResponseComplete of an answer
    streamed after the handler (a LIST) is queued for the backend's task."""
    kubeconfig, bodies, _ = receiver
    srv = await make_app(policy({"level": "Metadata"}))
    hook = WebhookBackend.from_kubeconfig(str(kubeconfig), "blocking", max_batch_wait_s=0.05,
                                          initial_backoff_s=0.05)
    srv.audit.backends = [*srv.audit.backends, hook]
    srv.audit.__post_init__()
    assert srv.audit.blocking

    def stages() -> list[tuple[str, str]]:
        return [(e["auditID"], e["stage"]) for b in bodies for e in b["doc"]["items"]]

    code, headers, _ = await srv.request("GET", CM + "/absent")  # answered by the handler: both delivered
    assert code == 404
    assert stages() == [(headers["audit-id"], "RequestReceived"), (headers["audit-id"], "ResponseComplete")]
    await nursery.start(hook.run)
    code, headers, _ = await srv.request("GET", CM)
    assert code == 200
    assert stages()[2] == (headers["audit-id"], "RequestReceived")
    await _wait_for(lambda: len(stages()) == 4)
    assert stages()[3] == (headers["audit-id"], "ResponseComplete")


def test_build_audit_makes_the_webhook_backend_from_its_flags(
        receiver: tuple[Path, list[dict[str, Any]], list[bool]], tmp_path: Path) -> None:
    from kapi.config import Config
    from kapi.server.security import build_audit

    kubeconfig, _, _ = receiver
    pfile = tmp_path / "p.yaml"
    pfile.write_text(yaml.safe_dump(policy({"level": "Metadata"})))
    built = build_audit(Config(audit_policy_file=str(pfile), audit_webhook_config_file=str(kubeconfig),
                               audit_webhook_mode="blocking-strict", audit_webhook_batch_max_size=7))
    assert built is not None and built.blocking and built.strict
    [hook] = built.backends
    assert isinstance(hook, WebhookBackend) and hook.max_batch_size == 7
    assert hook.client.url.endswith("/audit") and hook.client.backoff.duration_s == 10.0
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(ValueError, match="webhook kubeconfig"):
        build_audit(Config(audit_policy_file=str(pfile), audit_webhook_config_file=str(broken)))


async def test_blocking_strict_fails_the_request_its_event_cannot_reach(make_app: Any, tmp_path: Path) -> None:
    """kube's blocking-strict: a RequestReceived event that cannot be stored fails the request (500)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "down.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "down", "cluster": {"server": f"http://127.0.0.1:{port}/"}}],
        "contexts": [{"name": "c", "context": {"cluster": "down"}}]}))
    srv = await make_app(policy({"level": "Metadata"}))
    srv.audit.backends = [WebhookBackend.from_kubeconfig(str(kubeconfig), "blocking-strict", initial_backoff_s=0.01)]
    srv.audit.__post_init__()
    code, _, body = await srv.request("GET", CM)
    assert code == 500 and b"failed to store audit event" in body
    metrics = srv.app.metrics.exposition().decode()
    assert "apiserver_audit_requests_rejected_total 1.0" in metrics
    assert 'apiserver_audit_error_total{plugin="webhook"} 1.0' in metrics
    srv.audit.backends[0].strict = False  # plain blocking: the same failure is logged, the request served
    srv.audit.__post_init__()
    code, _, _ = await srv.request("GET", CM)
    assert code == 200


async def test_the_webhook_over_https_with_a_client_certificate(tmp_path: Path, nursery: trio.Nursery) -> None:
    """The kubeconfig's CA verifies the receiver, which requires kapi's client certificate."""
    from tests.chain.test_webhooks import Webhook, make_pki, write_kubeconfig

    hook = Webhook(make_pki(tmp_path / "pki"), answer=lambda body: (200, b"", {}))
    hook.start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "pki" / "audit.kubeconfig", hook.url, hook.pki)
        backend = WebhookBackend.from_kubeconfig(str(kubeconfig), "batch", max_batch_size=2, max_batch_wait_s=0.1,
                                                 initial_backoff_s=0.05)
        await nursery.start(backend.run)
        backend.process_nowait({"kind": "Event", "auditID": "tls-1"})
        backend.process_nowait({"kind": "Event", "auditID": "tls-2"})
        await _wait_for(lambda: bool(hook.seen))
        [seen] = hook.seen
        assert seen.client_cn == "kube-apiserver" and seen.headers["content-type"] == "application/json"
        assert [e["auditID"] for e in seen.body["items"]] == ["tls-1", "tls-2"] and seen.body["kind"] == "EventList"
    finally:
        hook.stop()
