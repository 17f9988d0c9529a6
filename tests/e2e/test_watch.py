"""Watch end to end: kubectl (get -w, wait, rollout status), the Python client, and the raw stream over HTTPS."""

from __future__ import annotations

import http.client
import json
import queue
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from kubernetes import client, config, watch

from tests.conftest import require_e2e

from .conftest import Kubectl, Server, start_server, stop_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(server_per_backend: Server) -> Server:
    """Each test here runs against a server on sqlite and one on etcd3 (the watch semantics are storage's
    as much as the cache's)."""
    require_e2e("a kapi serve process")
    return server_per_backend


Obj = dict[str, Any]
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}


# ------------------------------------------------------------------ helpers


def api(server: Server, method: str, path: str, body: Obj | None = None,
        headers: dict[str, str] | None = None, expect: int | None = None) -> Obj:
    """One JSON request; asserts the status when ``expect`` is given and returns the decoded body."""
    data = json.dumps(body).encode() if body is not None else None
    status, _, text = server.request(method, path, data, headers or (JSON if data else None))
    if expect is not None:
        assert status == expect, f"{method} {path}: {status} {text[:500]!r}"
    return json.loads(text) if text else {}


def create_cm(server: Server, ns: str, name: str, labels: dict[str, str] | None = None,
              data: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return api(server, "POST", f"/api/v1/namespaces/{ns}/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": name}}, expect=201)


def patch_cm(server: Server, ns: str, name: str, patch: Obj) -> Obj:
    return api(server, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/{name}", patch, MERGE, expect=200)


def delete_cm(server: Server, ns: str, name: str) -> Obj:
    return api(server, "DELETE", f"/api/v1/namespaces/{ns}/configmaps/{name}", expect=200)


def list_rv(server: Server, ns: str) -> int:
    """The resourceVersion of a fresh list of the namespace's configmaps."""
    return int(api(server, "GET", f"/api/v1/namespaces/{ns}/configmaps", expect=200)["metadata"]["resourceVersion"])


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``cond`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def settle_namespace(server: Server, ns: str) -> str:
    """Wait for the server's own configmap (kube-root-ca.crt) so no background write races the test."""
    def present() -> bool:
        status, _, _ = server.request("GET", f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt")
        return status == 200
    wait_until(present, f"kube-root-ca.crt in {ns}")
    return ns


@pytest.fixture
def ns(server: Server, namespace: str) -> str:
    """A fresh namespace whose start-up configmap already exists."""
    return settle_namespace(server, namespace)


def name_of(event: Obj) -> str:
    return str(event["object"]["metadata"].get("name", ""))


def rv_of(event_or_obj: Obj) -> int:
    obj = event_or_obj.get("object", event_or_obj)
    return int(obj["metadata"]["resourceVersion"])


@dataclass
class End:
    """How a watch stream ended: ``clean`` when the chunked body finished, else the error."""

    clean: bool
    detail: str = ""


@dataclass
class RawWatch:
    """One watch over HTTP/1.1 + TLS on a socket of our own; a thread reads events into a queue."""

    server: Server
    path: str
    rcvbuf: int | None = None
    status: int = 0
    events: queue.Queue[Obj | End] = field(default_factory=queue.Queue)
    end: End | None = None

    def __post_init__(self) -> None:
        url = urllib.parse.urlsplit(self.server.url)
        host, port = url.hostname or "127.0.0.1", url.port or 443
        ctx = ssl.create_default_context(cafile=str(self.server.ca_file))
        ctx.set_alpn_protocols(["http/1.1"])
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.rcvbuf is not None:
            # Set before connect so the advertised TCP window stays small.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        raw.settimeout(120)
        raw.connect((host, port))
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.conn = http.client.HTTPSConnection(host, port, context=ctx)
        self.conn.sock = self.sock  # use our socket (small receive buffer) instead of connecting again
        self.conn.request("GET", self.path, headers={"Authorization": f"Bearer {self.server.token}"})
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.thread: threading.Thread | None = None

    def start(self) -> RawWatch:
        """Start reading events on a thread."""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        try:
            while True:
                line = self.response.readline()
                if not line:
                    self.events.put(End(clean=True))
                    return
                if line.strip():
                    self.events.put(json.loads(line))
        except Exception as exc:  # reset, truncated chunk, TLS error, our own close
            self.events.put(End(clean=False, detail=repr(exc)))

    def next(self, timeout: float = 30.0) -> Obj:
        """The next event; fails if the stream ends or nothing comes within ``timeout``."""
        try:
            item = self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no watch event within {timeout} s on {self.path}") from None
        if isinstance(item, End):
            self.end = item
            raise AssertionError(f"watch {self.path} ended early: {item}")
        return item

    def until(self, pred: Callable[[Obj], bool], timeout: float = 30.0) -> list[Obj]:
        """Events up to and including the first one ``pred`` accepts."""
        deadline = time.monotonic() + timeout
        seen: list[Obj] = []
        while True:
            ev = self.next(max(0.01, deadline - time.monotonic()))
            seen.append(ev)
            if pred(ev):
                return seen

    def rest(self, timeout: float = 60.0) -> tuple[list[Obj], End]:
        """Every remaining event and how the stream ended; fails if it has not ended within ``timeout``."""
        deadline = time.monotonic() + timeout
        seen: list[Obj] = []
        while True:
            try:
                item = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"watch {self.path} still open after {timeout} s; got {len(seen)} events") \
                    from None
            if isinstance(item, End):
                self.end = item
                return seen, item
            seen.append(item)

    def close(self) -> None:
        """Close our end; the reader thread sees the socket go away and stops."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
        if self.thread is not None:
            self.thread.join(10)

    def __enter__(self) -> RawWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def raw_watch(server: Server, path: str) -> RawWatch:
    """Open a watch, check the 200, start reading."""
    w = RawWatch(server, path)
    if w.status != 200:
        body = w.response.read()
        w.close()
        raise AssertionError(f"watch {path} answered {w.status}: {body[:500]!r}")
    return w.start()


class Proc:
    """A long-running kubectl whose stdout and stderr are collected on threads."""

    def __init__(self, kubectl: Kubectl, *args: str, namespace: str) -> None:
        cmd = [kubectl.binary, "--kubeconfig", str(kubectl.server.kubeconfig), "-n", namespace, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self.threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, self.out), daemon=True),
                        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err), daemon=True)]
        for t in self.threads:
            t.start()

    @staticmethod
    def _pump(stream: Any, sink: list[str]) -> None:
        for chunk in iter(lambda: stream.read(1), ""):
            sink.append(chunk)

    @property
    def stdout(self) -> str:
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def wait_output(self, cond: Callable[[str], bool], what: str, timeout: float = 30.0, stderr: bool = False) -> None:
        def ok() -> bool:
            if self.proc.poll() is not None and not cond(self.stderr if stderr else self.stdout):
                raise AssertionError(f"kubectl exited {self.proc.returncode} before {what}:\n"
                                     f"stdout: {self.stdout}\nstderr: {self.stderr}")
            return cond(self.stderr if stderr else self.stdout)
        try:
            wait_until(ok, what, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nstdout: {self.stdout}\nstderr: {self.stderr[-3000:]}") from None

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for kubectl to exit by itself."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"kubectl did not exit:\nstdout: {self.stdout}\nstderr: {self.stderr[-3000:]}") \
                from None
        self._close_pipes()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for t in self.threads:
            t.join(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def json_docs(text: str) -> list[Obj]:
    """The complete JSON documents in a stream of concatenated (pretty-printed) ones."""
    decoder = json.JSONDecoder()
    docs: list[Obj] = []
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return docs  # the last document is still being written
        docs.append(doc)


# ------------------------------------------------------------------ kubectl


def test_kubectl_get_watch_sees_added_modified_deleted(kubectl: Kubectl, server: Server, ns: str) -> None:
    create_cm(server, ns, "before")
    proc = Proc(kubectl, "get", "configmaps", "--watch", "--output-watch-events", "-o", "json", namespace=ns)
    try:
        def events() -> list[tuple[str, str]]:
            return [(d["type"], d["object"]["metadata"]["name"]) for d in json_docs(proc.stdout)]
        proc.wait_output(lambda _: ("ADDED", "before") in events(), "the initial list")
        create_cm(server, ns, "x")
        patch_cm(server, ns, "x", {"data": {"k": "changed"}})
        delete_cm(server, ns, "x")
        proc.wait_output(lambda _: ("DELETED", "x") in events(), "DELETED x")
        later = [e for e in events() if e[1] == "x"]
        assert later == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]
        docs = [d for d in json_docs(proc.stdout) if d["object"]["metadata"]["name"] == "x"]
        assert docs[1]["object"]["data"] == {"k": "changed"}
        assert rv_of(docs[0]) < rv_of(docs[1]) < rv_of(docs[2])
    finally:
        proc.kill()


def _pod(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def test_kubectl_wait_for_condition_ready(kubectl: Kubectl, server: Server, ns: str) -> None:
    api(server, "POST", f"/api/v1/namespaces/{ns}/pods", _pod("w"), expect=201)
    proc = Proc(kubectl, "wait", "--for=condition=Ready", "pod/w", "--timeout=30s", "-v=6", namespace=ns)
    try:
        # -v=6 logs each response: once the watch answered, a status change can only reach kubectl through it.
        proc.wait_output(lambda err: "watch=true" in err, "kubectl's watch request", stderr=True)
        assert proc.proc.poll() is None, proc.stdout
        api(server, "PATCH", f"/api/v1/namespaces/{ns}/pods/w/status",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, MERGE, expect=200)
        assert proc.finish() == 0, proc.stderr[-3000:]
        assert "pod/w condition met" in proc.stdout
    finally:
        proc.kill()


def test_kubectl_wait_for_delete(kubectl: Kubectl, server: Server, ns: str) -> None:
    create_cm(server, ns, "gone")
    proc = Proc(kubectl, "wait", "--for=delete", "configmap/gone", "--timeout=30s", "-v=6", namespace=ns)
    try:
        proc.wait_output(lambda err: "watch=true" in err, "kubectl's watch request", stderr=True)
        assert proc.proc.poll() is None, proc.stdout
        delete_cm(server, ns, "gone")
        assert proc.finish() == 0, proc.stderr[-3000:]
        assert "configmap/gone condition met" in proc.stdout
    finally:
        proc.kill()


def test_kubectl_rollout_status_follows_status_updates(kubectl: Kubectl, server: Server, ns: str) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ro"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "ro"}},
                    "template": {"metadata": {"labels": {"app": "ro"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    created = api(server, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", dep, expect=201)
    gen = created["metadata"]["generation"]
    status_path = f"/apis/apps/v1/namespaces/{ns}/deployments/ro/status"
    proc = Proc(kubectl, "rollout", "status", "deployment/ro", "--timeout=30s", namespace=ns)
    try:
        proc.wait_output(lambda out: "spec update to be observed" in out, "the first waiting message")
        api(server, "PATCH", status_path, {"status": {"observedGeneration": gen, "replicas": 2, "updatedReplicas": 1,
                                                      "readyReplicas": 1, "availableReplicas": 1}}, MERGE, expect=200)
        proc.wait_output(lambda out: "1 out of 2 new replicas have been updated" in out, "the progress message")
        api(server, "PATCH", status_path, {"status": {"observedGeneration": gen, "replicas": 2, "updatedReplicas": 2,
                                                      "readyReplicas": 2, "availableReplicas": 2}}, MERGE, expect=200)
        assert proc.finish() == 0, proc.stderr[-3000:]
        assert 'deployment "ro" successfully rolled out' in proc.stdout
    finally:
        proc.kill()


# ------------------------------------------------------------------ Python client


def test_python_client_watch_stream_and_resume(server: Server, ns: str) -> None:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    core = client.CoreV1Api(api_client)
    create_cm(server, ns, "sentinel")
    seen: list[tuple[str, str]] = []
    last_rv = ""
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=30):
        name = ev["object"].metadata.name
        seen.append((ev["type"], name))
        last_rv = ev["object"].metadata.resource_version
        if (ev["type"], name) == ("ADDED", "sentinel"):
            create_cm(server, ns, "py")
            patch_cm(server, ns, "py", {"data": {"k": "2"}})
            delete_cm(server, ns, "py")
        if (ev["type"], name) == ("DELETED", "py"):
            w.stop()
    assert [e for e in seen if e[1] == "py"] == [("ADDED", "py"), ("MODIFIED", "py"), ("DELETED", "py")]

    # Resume from the last event's rv: only what happened afterwards arrives.
    create_cm(server, ns, "after")
    resumed: list[tuple[str, str]] = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=last_rv, timeout_seconds=30):
        resumed.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert resumed == [("ADDED", "after")]


# ------------------------------------------------------------------ raw stream


def test_watch_rv0_sends_existing_objects_then_changes(server: Server, ns: str) -> None:
    for n in ("a", "b"):
        create_cm(server, ns, n)
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion=0") as w:
        initial = [w.next() for _ in range(3)]
        assert {(e["type"], name_of(e)) for e in initial} == {("ADDED", "a"), ("ADDED", "b"),
                                                              ("ADDED", "kube-root-ca.crt")}
        assert all(e["object"]["kind"] == "ConfigMap" and e["object"]["apiVersion"] == "v1" for e in initial)
        create_cm(server, ns, "c")
        patch_cm(server, ns, "a", {"data": {"k": "new"}})
        ev = w.next()
        assert (ev["type"], name_of(ev)) == ("ADDED", "c")
        ev = w.next()
        assert (ev["type"], name_of(ev)) == ("MODIFIED", "a") and ev["object"]["data"] == {"k": "new"}


def test_watch_from_rv_sends_only_later_events(server: Server, ns: str) -> None:
    first = create_cm(server, ns, "a")
    create_cm(server, ns, "b")
    patch_cm(server, ns, "a", {"data": {"k": "2"}})
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv_of(first)}") as w:
        got = [w.next(), w.next()]
        assert [(e["type"], name_of(e)) for e in got] == [("ADDED", "b"), ("MODIFIED", "a")]
        assert all(rv_of(e) > rv_of(first) for e in got)
        delete_cm(server, ns, "b")
        ev = w.next()
        assert (ev["type"], name_of(ev)) == ("DELETED", "b")


def test_watch_too_old_rv_after_restart_is_410_expired(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d")
    try:
        last = 0
        for i in range(20):
            last = rv_of(create_cm(srv, "default", f"old{i}"))
        for i in range(10):
            last = rv_of(patch_cm(srv, "default", f"old{i}", {"data": {"k": "x"}}))
    finally:
        stop_server(srv)
    srv = start_server(tmp_path / "d")
    try:
        with raw_watch(srv, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1") as w:
            events, end = w.rest(timeout=30)
        assert len(events) == 1, [(e["type"], e["object"].get("metadata", {}).get("name")) for e in events[:5]]
        ev = events[0]
        assert ev["type"] == "ERROR"
        status = ev["object"]
        assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
        m = re.fullmatch(r"too old resource version: 1 \((\d+)\)", status["message"])
        assert m, status["message"]
        assert int(m.group(1)) >= last
    finally:
        stop_server(srv)


def test_watch_list_initial_events_then_end_bookmark(server: Server, ns: str) -> None:
    rvs = [rv_of(create_cm(server, ns, n)) for n in ("a", "b", "c")]
    path = (f"/api/v1/namespaces/{ns}/configmaps?watch=1&sendInitialEvents=true"
            "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30")
    with raw_watch(server, path) as w:
        got = w.until(lambda e: e["type"] != "ADDED")
    added, bookmark = got[:-1], got[-1]
    assert sorted(name_of(e) for e in added) == ["a", "b", "c", "kube-root-ca.crt"]
    assert bookmark["type"] == "BOOKMARK", bookmark
    obj = bookmark["object"]
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"
    assert obj["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert rv_of(obj) >= max(rvs)
    # Initial events keep each object's own resourceVersion.
    assert {name_of(e): rv_of(e) for e in added if name_of(e) != "kube-root-ca.crt"} == dict(zip("abc", rvs))


def test_send_initial_events_needs_not_older_than(server: Server, ns: str) -> None:
    status, _, body = server.request(
        "GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
               "&timeoutSeconds=3")
    assert status == 422, body
    assert json.loads(body)["details"]["kind"] == "ListOptions"


def test_periodic_bookmark_before_the_deadline(server: Server, ns: str) -> None:
    start = list_rv(server, ns)
    path = f"/api/v1/namespaces/{ns}/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=5" \
           f"&resourceVersion={start}"
    with raw_watch(server, path) as w:
        tick = create_cm(server, ns, "tick")
        ev = w.next()
        assert (ev["type"], name_of(ev)) == ("ADDED", "tick")
        # A watcher is due a bookmark at deadline - 2 s, i.e. before the 5 s stream ends.
        rest, end = w.rest(timeout=60)
    assert end.clean, end
    bookmarks = [e for e in rest if e["type"] == "BOOKMARK"]
    assert bookmarks, rest
    for b in bookmarks:
        obj = b["object"]
        assert obj["kind"] == "ConfigMap" and set(obj["metadata"]) <= {"resourceVersion", "annotations"}
        assert "data" not in obj
        assert rv_of(obj) >= rv_of(tick)


def test_no_bookmarks_unless_asked(server: Server, ns: str) -> None:
    start = list_rv(server, ns)
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=4"
                           f"&resourceVersion={start}") as w:
        create_cm(server, ns, "quiet")
        events, end = w.rest(timeout=60)
    assert [(e["type"], name_of(e)) for e in events] == [("ADDED", "quiet")]
    assert end.clean


def test_label_selector_transitions(server: Server, ns: str) -> None:
    start = list_rv(server, ns)
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&labelSelector=app%3Dx"
                           f"&resourceVersion={start}") as w:
        create_cm(server, ns, "a", labels={"app": "y"})
        labelled = patch_cm(server, ns, "a", {"metadata": {"labels": {"app": "x"}}})
        changed = patch_cm(server, ns, "a", {"data": {"k": "2"}})
        unlabelled = patch_cm(server, ns, "a", {"metadata": {"labels": {"app": "z"}}})
        patch_cm(server, ns, "a", {"data": {"k": "3"}})  # matches neither before nor after: no event
        create_cm(server, ns, "b", labels={"app": "x"})
        delete_cm(server, ns, "b")
        got = w.until(lambda e: (e["type"], name_of(e)) == ("DELETED", "b"))
    assert [(e["type"], name_of(e)) for e in got] == [
        ("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a"), ("ADDED", "b"), ("DELETED", "b")]
    assert rv_of(got[0]) == rv_of(labelled)
    assert rv_of(got[1]) == rv_of(changed)
    # Leaving the selector: DELETED carries the previous state at the event's resourceVersion.
    gone = got[2]["object"]
    assert gone["metadata"]["labels"] == {"app": "x"} and gone["data"] == {"k": "2"}
    assert rv_of(gone) == rv_of(unlabelled)


@pytest.mark.parametrize("value", ["1", "true", "True"])
def test_watch_parameter_spellings(server: Server, ns: str, value: str) -> None:
    create_cm(server, ns, "w")
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch={value}&resourceVersion=0"
                           "&fieldSelector=metadata.name%3Dw") as w:
        ev = w.next()
    assert (ev["type"], name_of(ev)) == ("ADDED", "w")


@pytest.mark.parametrize("form", ["watch-path", "field-selector"])
def test_watch_one_object(server: Server, ns: str, form: str) -> None:
    create_cm(server, ns, "one")
    create_cm(server, ns, "other")
    path = (f"/api/v1/watch/namespaces/{ns}/configmaps/one?resourceVersion=0" if form == "watch-path" else
            f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion=0&fieldSelector=metadata.name%3Done")
    with raw_watch(server, path) as w:
        ev = w.next()
        assert (ev["type"], name_of(ev)) == ("ADDED", "one")
        patch_cm(server, ns, "other", {"data": {"k": "2"}})
        patch_cm(server, ns, "one", {"data": {"k": "2"}})
        delete_cm(server, ns, "other")
        delete_cm(server, ns, "one")
        got = [w.next(), w.next()]
    assert [(e["type"], name_of(e)) for e in got] == [("MODIFIED", "one"), ("DELETED", "one")]


def test_timeout_seconds_ends_the_stream_cleanly(server: Server, ns: str) -> None:
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=2"
                           f"&resourceVersion={list_rv(server, ns)}") as w:
        events, end = w.rest(timeout=60)
    assert events == []
    assert end.clean, end


def test_slow_watcher_is_closed_while_others_get_everything(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d")
    try:
        ns = settle_namespace(srv, "default")
        start = list_rv(srv, ns)
        path = f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={start}"
        count, size = 400, 128 * 1024  # ~50 MB: far beyond socket buffers plus a watcher's queue
        fast = [raw_watch(srv, path) for _ in range(3)]
        slow = RawWatch(srv, path, rcvbuf=4096)  # never read until the writer is done
        assert slow.status == 200
        try:
            blob = "x" * size

            def write(i: int) -> None:
                create_cm(srv, ns, f"big{i:04d}", data={"blob": blob})

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(write, range(count)))
            want = {f"big{i:04d}" for i in range(count)}
            for w in fast:
                names: set[str] = set()
                while names != want:
                    ev = w.next(timeout=60)
                    assert ev["type"] == "ADDED", ev["type"]
                    names.add(name_of(ev))
            # Now drain the slow one: the server must have ended it, so the stream ends before all events.
            slow.start()
            events, end = slow.rest(timeout=60)
            assert len({name_of(e) for e in events if e["type"] == "ADDED"}) < count, \
                "the slow watcher was not closed: it received every event"
        finally:
            for w in [*fast, slow]:
                w.close()
    finally:
        stop_server(srv)
