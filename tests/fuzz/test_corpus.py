"""Issue 10: every reproduction the issue lists, each a named case citing its item number, each
asserting the fixed behaviour (kube-apiserver's answer).

The cases share one ``kapi serve`` for the module; a case that kills it (what these defects did)
fails, and the next case gets a fresh server. The last case restarts the shared server on its data
dir, so anything a case managed to store and cannot be read back shows up there.
"""

from __future__ import annotations

import datetime
import json
import re
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..e2e.conftest import Server, start_server, stop_server
from .client import Endpoint, Request, Response, send, status_body_problem
from .conftest import rss_mb

pytestmark = pytest.mark.e2e

JSON = ("Content-Type", "application/json")
YAML = ("Content-Type", "application/yaml")


class Kapi:
    """The module's server, replaced by a fresh one when a case has killed it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.n = 0
        self.server: Server = self._new()

    def _new(self) -> Server:
        self.n += 1
        srv = start_server(self.base / f"d{self.n}")
        self.ep = Endpoint.from_url(srv.url, str(srv.ca_file))
        return srv

    def live(self) -> "Kapi":
        if self.server.proc.poll() is not None:
            self.server = self._new()
        return self

    def alive(self) -> bool:
        return self.server.proc.poll() is None

    def send(self, method: str, path: str, body: bytes | None = None, headers: list[Any] | None = None,
             auth: str = "admin", stream: bool = False, timeout: float = 30.0) -> Response:
        req = Request(method, path, headers or [], body, auth=auth, stream=stream)
        r = send(self.ep, req, self.server.token, timeout)
        assert isinstance(r, Response), f"no answer to {req.describe()}: {r}"
        return r

    def ns(self) -> str:
        name = f"c-{uuid.uuid4().hex[:8]}"
        r = self.send("POST", "/api/v1/namespaces", _j({"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": name}}), [JSON])
        assert r.status == 201, r.body
        return name


@pytest.fixture(scope="module")
def _kapi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kapi]:
    k = Kapi(tmp_path_factory.mktemp("corpus"))
    yield k
    stop_server(k.server)


@pytest.fixture
def kapi(_kapi: Kapi) -> Kapi:
    return _kapi.live()


def _j(v: Any) -> bytes:
    return json.dumps(v).encode()


def _cm(name: str, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, **extra.pop("metadata", {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


def status_of(r: Response, code: int, reason: str | None = None) -> dict[str, Any]:
    """The answer is a metav1.Status for ``code`` (and ``reason``); returns it."""
    assert r.status == code, (r.status, r.body[:500])
    problem = status_body_problem(Request("GET", "/api/x"), r)
    assert problem is None, problem
    doc = r.json()
    assert doc["status"] == "Failure", doc
    if reason is not None:
        assert doc.get("reason") == reason, doc
    return doc


def bad_request_stored_nothing(kapi: Kapi, ns: str, body: bytes, name: str, message: str,
                               headers: list[Any] | None = None) -> None:
    """POST answers 400 with kube's decoder message, the server lives, nothing was stored."""
    r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", body, headers or [JSON])
    doc = status_of(r, 400, "BadRequest")
    assert message in doc["message"], doc["message"]
    assert kapi.alive(), "the server exited"
    assert kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}").status == 404
    assert kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps").status == 200


# -- item 1 ------------------------------------------------------------------------------------------

def test_item1_restart_with_504_configmaps(tmp_path: Path) -> None:
    """Issue 10 item 1: 504 ConfigMaps without ownerReferences, SIGTERM, restart: it comes up and lists them."""
    srv = start_server(tmp_path / "d")
    try:
        ep = Endpoint.from_url(srv.url, str(srv.ca_file))
        for i in range(504):
            r = send(ep, Request("POST", "/api/v1/namespaces/default/configmaps", [JSON], _j(_cm(f"cm-{i}"))), srv.token)
            assert isinstance(r, Response) and r.status == 201, r
        assert stop_server(srv, signal.SIGTERM) == 0
        srv = start_server(tmp_path / "d")
        ep = Endpoint.from_url(srv.url, str(srv.ca_file))
        r = send(ep, Request("GET", "/readyz"), srv.token)
        assert isinstance(r, Response) and r.status == 200, r
        r = send(ep, Request("GET", "/api/v1/namespaces/default/configmaps"), srv.token)
        assert isinstance(r, Response) and r.status == 200
        names = {i["metadata"]["name"] for i in r.json()["items"]}
        assert {f"cm-{i}" for i in range(504)} <= names
    finally:
        stop_server(srv)


# -- item 2: wrongly typed metadata --------------------------------------------------------------------

def test_item2_labels_list(kapi: Kapi) -> None:
    """Issue 10 item 2: labels ["a"] is refused with kube's decoder message, nothing stored."""
    ns = kapi.ns()
    bad_request_stored_nothing(kapi, ns, _j(_cm("l", metadata={"labels": ["a"]})), "l",
                               "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels "
                               "of type map[string]string")


@pytest.mark.parametrize("value,jtype", [(1, "number"), (True, "bool")])
def test_item2_owner_references_scalar(kapi: Kapi, value: Any, jtype: str) -> None:
    """Issue 10 item 2: ownerReferences 1 / true is refused, nothing stored, the controllers live on."""
    ns = kapi.ns()
    bad_request_stored_nothing(kapi, ns, _j(_cm("o", metadata={"ownerReferences": value})), "o",
                               f"json: cannot unmarshal {jtype} into Go struct field ObjectMeta.metadata.ownerReferences "
                               "of type []v1.OwnerReference")


def test_item2_finalizers_number(kapi: Kapi) -> None:
    """Issue 10 item 2: finalizers 1 is refused, nothing stored."""
    ns = kapi.ns()
    bad_request_stored_nothing(kapi, ns, _j(_cm("f", metadata={"finalizers": 1})), "f",
                               "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers "
                               "of type []string")


def _merge_patch_invalid(kapi: Kapi, patch: bytes) -> None:
    """kube's jsonPatcher: the patched object does not decode -> 422 Invalid on field "patch"; unchanged."""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("m", data={"k": "v"})), [JSON]).status == 201
    before = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/m").json()
    r = kapi.send("PATCH", f"/api/v1/namespaces/{ns}/configmaps/m", patch,
                  [("Content-Type", "application/merge-patch+json")])
    doc = status_of(r, 422, "Invalid")
    assert [c.get("field") for c in doc["details"]["causes"]] == ["patch"], doc
    assert kapi.alive(), "the server exited"
    after = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/m").json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_item2_merge_patch_labels_list(kapi: Kapi) -> None:
    """Issue 10 item 2: merge patch {"metadata":{"labels":[1]}} -> 422, nothing changed, server alive."""
    _merge_patch_invalid(kapi, b'{"metadata":{"labels":[1]}}')


# -- item 3: YAML ---------------------------------------------------------------------------------

def _yaml_created(kapi: Kapi, doc: str, name: str) -> dict[str, Any]:
    ns = kapi.ns()
    r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", doc.encode(), [YAML])
    assert r.status == 201, (r.status, r.body[:400])
    assert kapi.alive()
    got = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")
    assert got.status == 200, got.body
    lst = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps")
    assert lst.status == 200 and name in {i["metadata"]["name"] for i in lst.json()["items"]}
    return got.json()


def test_item3_yaml_binary(kapi: Kapi) -> None:
    """Issue 10 item 3: !!binary is decoded to its string, as sigs.k8s.io/yaml (go-yaml v2) does."""
    obj = _yaml_created(kapi, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: !!binary aGVsbG8=\n", "b")
    assert obj["data"] == {"k": "hello"}


def test_item3_yaml_dates(kapi: Kapi) -> None:
    """Issue 10 item 3: YAML dates and timestamps stay the strings they were written as (go-yaml v2
    keeps a timestamp decoded into interface{} a string)."""
    obj = _yaml_created(kapi, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n"
                              "  annotations: {day: 2002-12-14, at: 2001-12-14t21:59:43.10-05:00}\n"
                              "data:\n  k: 2002-12-14\n", "d")
    assert obj["data"] == {"k": "2002-12-14"}
    assert obj["metadata"]["annotations"] == {"day": "2002-12-14", "at": "2001-12-14t21:59:43.10-05:00"}


def test_item3_yaml_set(kapi: Kapi) -> None:
    """Issue 10 item 3: !!set {a, b} is a mapping to nulls in go-yaml v2; nulls decode to "" in a
    map[string]string."""
    obj = _yaml_created(kapi, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata: !!set {a, b}\n", "s")
    assert obj["data"] == {"a": "", "b": ""}


# -- item 4: JSON patch amplification ---------------------------------------------------------------

def test_item4_json_patch_copy_amplification(kapi: Kapi) -> None:
    """Issue 10 item 4: a ~1 KB patch of copies that double a value: kube bounds the accumulated copy
    size (json-patch's AccumulatedCopySizeLimit) and answers 422; the server must not grow to GBs."""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("amp")), [JSON]).status == 201
    ops: list[Any] = [{"op": "add", "path": "/spec", "value": {"a": ["x" * 256]}}]
    ops += [{"op": "copy", "from": "/spec/a", "path": "/spec/a/-"}] * 24  # 2**24 * 256 B = 4 GB
    body = json.dumps(ops, separators=(",", ":")).encode()
    assert 900 < len(body) < 1700
    answer, peak = send_guarded(kapi, Request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/amp", [
        ("Content-Type", "application/json-patch+json")], body))
    assert isinstance(answer, Response), answer
    status_of(answer, 422)
    assert kapi.alive()
    assert peak < 1000, f"the server grew to {peak} MB"


def send_guarded(kapi: Kapi, req: Request, limit_mb: int = 1500) -> tuple[Any, int]:
    """Send ``req`` while watching the server's RSS; kill it past ``limit_mb`` (guarding the machine
    from an amplification) and fail. Returns the answer and the peak RSS in MB."""
    pid = kapi.server.proc.pid
    peak = [rss_mb(pid)]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_mb(pid))
            if peak[0] > limit_mb and kapi.server.proc.poll() is None:
                kapi.server.proc.kill()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        answer = send(kapi.ep, req, kapi.server.token, 60.0)
    finally:
        done.set()
        t.join()
    assert peak[0] <= limit_mb, f"the server grew to {peak[0]} MB (killed)"
    return answer, peak[0]


def test_yaml_alias_amplification(kapi: Kapi) -> None:
    """Issue 10 ("bounded with 4xx answers"): a 'billion laughs' YAML (9 levels of 9 aliases, 387 million
    strings once expanded) is refused (go-yaml: excessive aliasing) and the server stays small."""
    ns = kapi.ns()
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: laughs}", "x0: &x0 lol"]
    for i in range(1, 10):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]")
    lines.append("data: {k: v}")
    answer, peak = send_guarded(kapi, Request("POST", f"/api/v1/namespaces/{ns}/configmaps", [YAML],
                                              ("\n".join(lines) + "\n").encode()))
    assert isinstance(answer, Response), answer
    status_of(answer, 400, "BadRequest")
    assert kapi.alive()
    assert peak < 1000, f"the server grew to {peak} MB"


# -- item 5: 500s ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events",
                                  "/api/v1/events"])
def test_item5_limit_overflow(kapi: Kapi, path: str) -> None:
    """Issue 10 item 5: limit=99999999999999999999999 does not parse as an int64: 400."""
    status_of(kapi.send("GET", path + "?limit=99999999999999999999999"), 400, "BadRequest")


def test_item5_watch_timeout_400_digits(kapi: Kapi) -> None:
    """Issue 10 item 5: a watch timeoutSeconds of 400 digits: 400 before any stream."""
    r = kapi.send("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=" + "9" * 400, stream=True)
    status_of(r, 400, "BadRequest")


def test_item5_lone_surrogate(kapi: Kapi) -> None:
    """Issue 10 item 5: "\\ud800" in ConfigMap data: Go's JSON decoder turns an unpaired surrogate into
    U+FFFD, so kube stores the replacement character (never a 500, never a poisoned object)."""
    ns = kapi.ns()
    r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", b'{"apiVersion":"v1","kind":"ConfigMap",'
                  b'"metadata":{"name":"u"},"data":{"k":"\\ud800"}}', [JSON])
    assert r.status == 201, (r.status, r.body[:300])
    assert r.json()["data"] == {"k": "\ufffd"}
    got = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/u")
    assert got.status == 200 and got.json()["data"] == {"k": "\ufffd"}


def test_item5_annotations_nested_1000(kapi: Kapi) -> None:
    """Issue 10 item 5: annotations nested 1,000 levels: a decode error (400), not a RecursionError."""
    ns = kapi.ns()
    deep = '{"a":' * 1000 + '"x"' + "}" * 1000
    body = ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n","annotations":' + deep + "}}").encode()
    bad_request_stored_nothing(kapi, ns, body, "n", "metadata.annotations")


def test_item5_yaml_nested_1000(kapi: Kapi) -> None:
    """Issue 10 item 5: YAML nested 1,000 levels: a 400, not a RecursionError."""
    ns = kapi.ns()
    deep = "[" * 1000 + "x" + "]" * 1000
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  annotations: {{a: {deep}}}\n".encode()
    r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", body, [YAML])
    status_of(r, 400, "BadRequest")
    assert kapi.alive()
    assert kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/y").status == 404


def test_item5_merge_patch_metadata_list(kapi: Kapi) -> None:
    """Issue 10 item 5: merge patch {"metadata":[]}: 422 (the patched object does not decode)."""
    _merge_patch_invalid(kapi, b'{"metadata":[]}')


# -- item 6 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events",
                                  "/api/v1/watch/namespaces/default/events"])
def test_item6_watch_events_invalid_selector(kapi: Kapi, path: str) -> None:
    """Issue 10 item 6: a watch on events with an invalid label selector is a 400 before any stream."""
    sep = "&" if "?" in path else "?"
    q = "labelSelector=a%20b%20c" + ("" if "/watch/" in path else "&watch=1")
    r = kapi.send("GET", path + sep + q, stream=True)
    status_of(r, 400, "BadRequest")


# -- item 7 -----------------------------------------------------------------------------------------

def test_item7_no_cancel_scope_corruption_when_watches_close(kapi: Kapi) -> None:
    """Issue 10 item 7: watches that end while events flow (timeoutSeconds, client gone) log no
    "Cancel scope stack corrupted"."""
    ns = kapi.ns()
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm(f"w{i}")), [JSON])
            i += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        assert kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&timeoutSeconds=1").status == 200
        from .client import build
        raw = build(Request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1"), f"{kapi.ep.host}:{kapi.ep.port}",
                    kapi.server.token)
        for _ in range(100):  # each read for a moment while events flow, then dropped by the client
            conn = kapi.ep.connect(30)
            try:
                conn.sendall(raw)
                assert conn.recv(65536).startswith(b"HTTP/1.1 200")
                conn.recv(65536)
            finally:
                conn.close()
    finally:
        stop.set()
        t.join()
    time.sleep(0.5)
    assert kapi.alive()
    assert "Cancel scope stack corrupted" not in kapi.server.log.read_text(errors="replace")


# -- item 9: the HTTP layer -------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_item9_write_methods_on_watch_path(kapi: Kapi, method: str) -> None:
    """Issue 10 item 9: POST/PUT/DELETE on /api/v1/watch/... is 405, no watch opened."""
    r = kapi.send(method, "/api/v1/watch/namespaces/default/configmaps", _j(_cm("w")), [JSON], stream=True)
    status_of(r, 405, "MethodNotAllowed")


def test_item9_nul_in_header(kapi: Kapi) -> None:
    """Issue 10 item 9: a NUL in a header value: 400 with a Status body."""
    status_of(kapi.send("GET", "/api/v1/namespaces", headers=[(b"X-Nul", b"a\x00b")]), 400)


def test_item9_too_large_header(kapi: Kapi) -> None:
    """Issue 10 item 9: a 2 MB header (over Go's MaxHeaderBytes, 1 MiB, and its 4 KiB slack): 431 with a Status body."""
    status_of(kapi.send("GET", "/api/v1/namespaces", headers=[("X-Huge", "a" * (2 << 20))]), 431)


def test_item9_websocket_upgrade(kapi: Kapi) -> None:
    """Issue 10 item 9: a WebSocket upgrade for a missing pod's exec answers a Status (404), not a 500."""
    r = kapi.send("GET", "/api/v1/namespaces/default/pods/missing/exec?command=ls&stdout=1", headers=[
        ("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Protocol", "v4.channel.k8s.io")])
    status_of(r, 404, "NotFound")


# -- item 10: security ------------------------------------------------------------------------------

def test_item10_first_authorization_header_wins(kapi: Kapi) -> None:
    """Issue 10 item 10: with two Authorization headers the FIRST is used, as Go's Header.Get does."""
    token = kapi.server.token
    r = kapi.send("GET", "/api/v1/namespaces", auth="raw", headers=[
        ("Authorization", "Bearer not-a-valid-token"), ("Authorization", f"Bearer {token}")])
    status_of(r, 401, "Unauthorized")
    r = kapi.send("GET", "/api/v1/namespaces", auth="raw", headers=[
        ("Authorization", f"Bearer {token}"), ("Authorization", "Bearer not-a-valid-token")])
    assert r.status == 200, r.body[:300]


def test_item10_impersonation_refused(kapi: Kapi) -> None:
    """Issue 10 item 10: impersonation headers are not ignored. Issue 12: impersonation exists; a group
    without a user is refused (400), not silently dropped."""
    status_of(kapi.send("GET", "/api/v1/namespaces", headers=[("Impersonate-Group", "system:masters")]), 400,
              "BadRequest")


def test_item10_file_modes(tmp_path: Path) -> None:
    """Issue 10 item 10: kapi.db (Secrets inside) is 0600, pki/ is 0700, and the data dir is 0700 once it
    holds kapi's state (the harness creates the directory before kapi runs; kapi leaves a directory it
    did not create alone until its state is in it, so the restart is where it must be 0700)."""
    d = tmp_path / "d"
    srv = start_server(d)
    try:
        assert (d / "kapi.db").stat().st_mode & 0o777 == 0o600
        assert (d / "pki").stat().st_mode & 0o777 == 0o700
        assert stop_server(srv) == 0
        srv = start_server(d)
        assert d.stat().st_mode & 0o777 == 0o700
        assert (d / "kapi.db").stat().st_mode & 0o777 == 0o600
        assert (d / "pki").stat().st_mode & 0o777 == 0o700
    finally:
        stop_server(srv)


# -- items 11, 12: the Python client ----------------------------------------------------------------

def _api(kapi: Kapi) -> Any:
    from kubernetes import config
    return config.new_client_from_config(config_file=str(kapi.server.kubeconfig))


def test_item11_python_client_configmap_read_modify_write(kapi: Kapi) -> None:
    """Issue 10 item 11: read_namespaced_config_map then replace_namespaced_config_map succeeds."""
    from kubernetes import client
    ns = kapi.ns()
    core = client.CoreV1Api(_api(kapi))
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="rmw"), data={"a": "1"}))
    got = core.read_namespaced_config_map("rmw", ns)
    got.data["a"] = "2"
    replaced = core.replace_namespaced_config_map("rmw", ns, got)
    assert replaced.data == {"a": "2"}
    raw = kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/rmw").json()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", raw["metadata"]["creationTimestamp"]), raw["metadata"]


def test_item11_python_client_lease_read_modify_write(kapi: Kapi) -> None:
    """Issue 10 item 11: the same for coordination leases (leader election with the Python client);
    MicroTime fields written back in kube's canonical form."""
    from kubernetes import client
    ns = kapi.ns()
    coord = client.CoordinationV1Api(_api(kapi))
    now = datetime.datetime.now(datetime.timezone.utc)
    coord.create_namespaced_lease(ns, client.V1Lease(metadata=client.V1ObjectMeta(name="le"), spec=client.V1LeaseSpec(
        holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now)))
    got = coord.read_namespaced_lease("le", ns)
    got.spec.renew_time = now + datetime.timedelta(seconds=5)
    got.spec.holder_identity = "b"
    replaced = coord.replace_namespaced_lease("le", ns, got)
    assert replaced.spec.holder_identity == "b"
    raw = kapi.send("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/le").json()
    micro = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
    assert re.fullmatch(micro, raw["spec"]["renewTime"]) and re.fullmatch(micro, raw["spec"]["acquireTime"]), raw["spec"]


def test_item12_delete_service_returns_the_object(kapi: Kapi) -> None:
    """Issue 10 item 12: DELETE of a Service returns the Service (kube's ReturnDeletedObject);
    delete_namespaced_service() does not raise."""
    from kubernetes import client
    ns = kapi.ns()
    core = client.CoreV1Api(_api(kapi))
    core.create_namespaced_service(ns, client.V1Service(metadata=client.V1ObjectMeta(name="svc"), spec=client.V1ServiceSpec(
        ports=[client.V1ServicePort(port=80)])))
    deleted = core.delete_namespaced_service("svc", ns)
    assert isinstance(deleted, client.V1Service) and deleted.metadata.name == "svc"


# -- item 13: the wire --------------------------------------------------------------------------------

def test_item13_status_line_reason_phrase(kapi: Kapi) -> None:
    """Issue 10 item 13: the raw HTTP/1.1 status line carries the reason phrase: ``HTTP/1.1 409 Conflict``."""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("dup")), [JSON]).status == 201
    from .client import build
    raw = build(Request("POST", f"/api/v1/namespaces/{ns}/configmaps", [JSON], _j(_cm("dup"))),
                f"{kapi.ep.host}:{kapi.ep.port}", kapi.server.token)
    conn = kapi.ep.connect(30)
    try:
        conn.sendall(raw)
        head = b""
        while b"\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                break
            head += chunk
    finally:
        conn.close()
    assert head.split(b"\r\n", 1)[0] == b"HTTP/1.1 409 Conflict"


def test_item13_json_bodies_end_with_newline(kapi: Kapi) -> None:
    """Issue 10 item 13: JSON bodies end with "\\n", as Go's encoder writes them (objects, lists, Status)."""
    ns = kapi.ns()
    created = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("nl")), [JSON])
    assert created.status == 201 and created.body.endswith(b"}\n"), created.body[-20:]
    for path in [f"/api/v1/namespaces/{ns}/configmaps/nl", f"/api/v1/namespaces/{ns}/configmaps",
                 f"/api/v1/namespaces/{ns}/configmaps/missing"]:
        r = kapi.send("GET", path)
        assert r.body.endswith(b"}\n"), (path, r.body[-20:])


# -- item 14: empty value structs ----------------------------------------------------------------------

def test_item14_deployment_has_status(kapi: Kapi) -> None:
    """Issue 10 item 14: a created Deployment has "status": {} (Go encodes an empty struct)."""
    ns = kapi.ns()
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    r = kapi.send("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", _j(dep), [JSON])
    assert r.status == 201, r.body[:300]
    assert r.json().get("status") == {}
    assert "status" in kapi.send("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/d").json()


def test_item14_node_has_spec_and_status(kapi: Kapi) -> None:
    """Issue 10 item 14: a Node created with metadata only comes back with "spec" and "status"."""
    name = f"n-{uuid.uuid4().hex[:6]}"
    r = kapi.send("POST", "/api/v1/nodes", _j({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}), [JSON])
    assert r.status == 201, r.body[:300]
    doc = r.json()
    assert "spec" in doc and "status" in doc, doc


# -- found by the fuzz suite (issue 10's "find the next ones") -----------------------------------------

def test_fuzz_unknown_field_with_non_latin1_name(kapi: Kapi) -> None:
    """Issue 10, found by tests/fuzz: an unknown field named "\u20ac" made the Warning header fail to
    encode (latin-1): 500 with an empty body; one with a control character made h11 refuse the header
    (500). kube answers 201 and warns (the text quoted, UTF-8 in the header)."""
    ns = kapi.ns()
    for i, body in enumerate(['{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e0"},"\u20ac":1}',
                              '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e1","\u20ac":1}}',
                              '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2"},"a\\u000bb":1}']):
        r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", body.encode(), [JSON])
        assert r.status == 201, (i, r.status, r.body[:300])
        warning = r.header("warning") or ""
        assert "unknown field" in warning, r.headers


def test_fuzz_yaml_not_utf8_or_control_characters(kapi: Kapi) -> None:
    """Issue 10, found by tests/fuzz: a YAML body that is not UTF-8 (or holds a C1 control character,
    which PyYAML refuses) answered 500 (yaml.reader.ReaderError). kube: 400 (sigs.k8s.io/yaml's error)."""
    ns = kapi.ns()
    for body in [b"\xff", b"\xbe", b"a: \xc2\x92\n", b"\x00", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff}\n"]:
        r = kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", body, [YAML])
        status_of(r, 400, "BadRequest")
    assert kapi.alive()


def test_fuzz_strategic_merge_patch_unknown_directive_value(kapi: Kapi) -> None:
    """Issue 10, found by tests/fuzz: a strategic merge patch with "$patch" set to an unknown value in a
    map answered 500 "unknown patch type". (kube's strategicpatch returns this error unmapped, so kube
    says 500 too; kapi must not: it is the client's bad patch, a 400.)"""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("p")), [JSON]).status == 201
    for patch in [b'{"metadata":{"$patch":"x"}}', b'{"$patch":["a"]}', b'{"data":{"$patch":1}}', b'{"$patch":null}',
                  b'{"metadata":{"$patch":""}}']:
        r = kapi.send("PATCH", f"/api/v1/namespaces/{ns}/configmaps/p", patch,
                      [("Content-Type", "application/strategic-merge-patch+json")])
        status_of(r, 400, "BadRequest")


@pytest.mark.parametrize("method", ["DELETECOLLECTION", "LIST", "WATCH", "CREATE", "OPTIONS"])
def test_fuzz_methods_that_http_does_not_have(kapi: Kapi, method: str) -> None:
    """Issue 10, found by tests/fuzz: a request method named after a verb was served as that verb:
    ``DELETECOLLECTION .../serviceaccounts/x`` deleted every ServiceAccount in the namespace, ``LIST``
    listed. kube routes only the HTTP methods: 405, nothing deleted. (Go's methods are also
    case-sensitive, so kube answers ``get`` with 405 too; hypercorn upper-cases a method before kapi
    sees it, so kapi serves ``get`` as GET — a known difference, harmless: it is the same verb.)"""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("keep")), [JSON]).status == 201
    for path in [f"/api/v1/namespaces/{ns}/configmaps/x", f"/api/v1/namespaces/{ns}/configmaps"]:
        status_of(kapi.send(method, path), 405, "MethodNotAllowed")
    assert kapi.send("GET", f"/api/v1/namespaces/{ns}/configmaps/keep").status == 200


def test_fuzz_json_patch_operation_with_non_string_pointer(kapi: Kapi) -> None:
    """Issue 10, found by tests/fuzz: a JSON patch "move" whose "from" is a number or whose "path" is an
    object answered 500 (TypeError, AttributeError). kube: the patch does not apply, 422."""
    ns = kapi.ns()
    assert kapi.send("POST", f"/api/v1/namespaces/{ns}/configmaps", _j(_cm("j", data={"k": "v"})), [JSON]).status == 201
    for patch in [b'[{"op":"move","path":"/","from":1}]', b'[{"op":"move","path":{},"from":"/data"}]',
                  b'[{"op":"copy","path":"/data/x","from":2}]']:
        r = kapi.send("PATCH", f"/api/v1/namespaces/{ns}/configmaps/j", patch,
                      [("Content-Type", "application/json-patch+json")])
        status_of(r, 422)


@pytest.mark.parametrize("size", [16 << 10, 64 << 10, 200 << 10])
def test_fuzz_http2_header_below_max_header_bytes(kapi: Kapi, size: int) -> None:
    """Issue 10, found by tests/fuzz: over HTTP/2 a 64 KB header ended the whole connection
    (GOAWAY ENHANCE_YOUR_CALM, no answer) though HTTP/1.1 takes up to 1 MiB. kube's limit is the
    same MaxHeaderBytes (1 MiB) on both protocols: these are answered."""
    import httpx
    with httpx.Client(http2=True, verify=ssl_context(kapi), base_url=kapi.server.url,
                      timeout=httpx.Timeout(30.0)) as c:
        r = c.get("/api/v1/namespaces", headers={"Authorization": f"Bearer {kapi.server.token}", "X-Big": "a" * size})
        assert r.http_version == "HTTP/2"
        assert r.status_code == 200


def ssl_context(kapi: Kapi) -> Any:
    import ssl
    return ssl.create_default_context(cafile=str(kapi.server.ca_file))


def test_fuzz_watch_parameter_is_kubes_bool(kapi: Kapi) -> None:
    """Issue 10, found by tests/fuzz: ``watch=t`` answered a LIST. kube reads a bool query parameter as
    true unless it is "0" or "false" in any case (runtime.Convert_Slice_string_To_bool): a watch."""
    for value in ["t", "yes"]:
        r = kapi.send("GET", f"/api/v1/namespaces/default/configmaps?watch={value}&timeoutSeconds=1")
        assert r.status == 200
        first = json.loads(r.body.split(b"\n", 1)[0])
        assert first.get("type") == "ADDED", (value, r.body[:200])
    r = kapi.send("GET", "/api/v1/namespaces/default/configmaps?watch=FALSE")
    assert r.status == 200 and r.json()["kind"] == "ConfigMapList"


# -- and afterwards ---------------------------------------------------------------------------------

def test_zz_restart_after_corpus(_kapi: Kapi) -> None:
    """Issue 10: after the corpus, the shared server restarts on its data dir, ready, and lists configmaps
    in every namespace (nothing the cases stored poisons the start)."""
    k = _kapi.live()
    assert stop_server(k.server) == 0, k.server.log.read_text()[-2000:]
    k.server = start_server(k.server.data_dir)
    k.ep = Endpoint.from_url(k.server.url, str(k.server.ca_file))
    assert k.send("GET", "/readyz").status == 200
    for path in ["/api/v1/configmaps", "/api/v1/namespaces", "/apis/apps/v1/deployments", "/api/v1/nodes",
                 "/apis/coordination.k8s.io/v1/leases"]:
        assert k.send("GET", path).status == 200, path
    assert k.alive()
