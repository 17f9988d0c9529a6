"""LIST semantics end to end: paging, resourceVersion and its match, errors, selectors, cost warnings, metrics."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_e2e

from .conftest import Kubectl, Server, start_server, stop_server
from .test_watch import api, create_cm, list_rv, raw_watch, settle_namespace

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(server_per_backend: Server) -> Server:
    """Each test here runs against a server on sqlite and one on etcd3 (the list semantics are storage's
    as much as the cache's)."""
    require_e2e("a kapi serve process")
    return server_per_backend


Obj = dict[str, Any]


@pytest.fixture
def ns(server: Server, namespace: str) -> str:
    """A fresh namespace whose start-up configmap already exists."""
    return settle_namespace(server, namespace)


def get(server: Server, path: str) -> tuple[int, dict[str, str], Obj]:
    status, headers, body = server.request("GET", path)
    return status, headers, json.loads(body) if body.startswith(b"{") else {"raw": body.decode()}


def names(body: Obj) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]


def q(selector: str) -> str:
    return urllib.parse.quote(selector, safe="")


def make_cms(server: Server, ns: str, count: int, prefix: str = "c", labels: dict[str, str] | None = None,
             workers: int = 1) -> list[str]:
    """Create ``count`` configmaps named ``<prefix>NN``; returns their names in key order."""
    made = [f"{prefix}{i:02d}" for i in range(count)]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda n: create_cm(server, ns, n, labels=labels), made))
    return sorted(made)


# ------------------------------------------------------------------ paging


def test_kubectl_chunked_list(kubectl: Kubectl, server: Server, ns: str) -> None:
    made = make_cms(server, ns, 10)
    out = kubectl.run("get", "configmaps", "--chunk-size=3", "-o", "name", "-v=6", namespace=ns)
    listed = out.stdout.split()
    assert listed == sorted(f"configmap/{n}" for n in [*made, "kube-root-ca.crt"])
    # 11 objects in pages of 3: three follow-up requests carry a continue token.
    assert out.stderr.count("continue=") >= 3, out.stderr[-2000:]


def test_pages_share_the_first_resource_version(server: Server, ns: str) -> None:
    made = make_cms(server, ns, 10)
    everything = sorted([*made, "kube-root-ca.crt"])
    base = f"/api/v1/namespaces/{ns}/configmaps?limit=3"
    status, _, first = get(server, base)
    assert status == 200
    rv = first["metadata"]["resourceVersion"]
    assert first["metadata"]["remainingItemCount"] == len(everything) - 3
    create_cm(server, ns, "zz-later")  # after page one: the following pages must not show it
    seen = names(first)
    token = first["metadata"]["continue"]
    pages = 1
    while token:
        status, _, page = get(server, f"{base}&continue={urllib.parse.quote(token)}")
        assert status == 200, page
        assert page["metadata"]["resourceVersion"] == rv
        seen += names(page)
        pages += 1
        token = page["metadata"].get("continue", "")
        if token:
            assert page["metadata"]["remainingItemCount"] == len(everything) - len(seen)
        else:
            assert "remainingItemCount" not in page["metadata"]
    assert seen == everything
    assert pages == 4


def test_no_remaining_item_count_with_a_selector(server: Server, ns: str) -> None:
    make_cms(server, ns, 6, labels={"set": "s"})
    status, _, page = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2&labelSelector=set%3Ds")
    assert status == 200
    assert page["metadata"]["continue"] and len(page["items"]) == 2
    assert "remainingItemCount" not in page["metadata"]
    status, _, page = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2&fieldSelector=metadata.name%21%3Dx")
    assert status == 200
    assert page["metadata"]["continue"] and "remainingItemCount" not in page["metadata"]


def test_rv0_ignores_limit(server: Server, ns: str) -> None:
    made = make_cms(server, ns, 7)
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?resourceVersion=0&limit=2")
    assert status == 200
    assert names(body) == sorted([*made, "kube-root-ca.crt"])
    assert "continue" not in body["metadata"]


# ------------------------------------------------------------------ resourceVersion


@pytest.mark.parametrize("match", ["NotOlderThan", ""])
def test_future_rv_times_out_with_504(server: Server, ns: str, match: str) -> None:
    future = list_rv(server, ns) + 1000
    extra = f"&resourceVersionMatch={match}" if match else ""
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?resourceVersion={future}{extra}")
    assert status == 504, body
    assert body["kind"] == "Status" and body["reason"] == "Timeout" and body["code"] == 504
    m = re.fullmatch(rf"Timeout: Too large resource version: {future}, current: (\d+)", body["message"])
    assert m, body["message"]
    assert int(m.group(1)) < future
    causes = body["details"]["causes"]
    assert causes[0]["reason"] == "ResourceVersionTooLarge"
    assert causes[0]["message"] == "Too large resource version"
    assert body["details"]["retryAfterSeconds"] == 1


def test_watch_from_future_rv_waits_without_events(server: Server, ns: str) -> None:
    future = list_rv(server, ns) + 1000
    with raw_watch(server, f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={future}"
                           "&timeoutSeconds=3") as w:
        create_cm(server, ns, "before-future")  # older than the asked rv: never sent
        events, end = w.rest(timeout=60)
    assert events == []
    assert end.clean, end


def test_exact_list_at_an_older_rv(server: Server, ns: str) -> None:
    early = make_cms(server, ns, 3, prefix="early")
    noted = list_rv(server, ns)
    make_cms(server, ns, 3, prefix="late")
    api(server, "DELETE", f"/api/v1/namespaces/{ns}/configmaps/{early[0]}", expect=200)
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?resourceVersion={noted}"
                                  "&resourceVersionMatch=Exact")
    assert status == 200, body
    assert body["metadata"]["resourceVersion"] == str(noted)
    assert names(body) == sorted([*early, "kube-root-ca.crt"])
    # With a limit as well, and the continue page at the same rv.
    status, _, page = get(server, f"/api/v1/namespaces/{ns}/configmaps?resourceVersion={noted}"
                                  "&resourceVersionMatch=Exact&limit=2")
    assert status == 200, page
    assert page["metadata"]["resourceVersion"] == str(noted)
    token = urllib.parse.quote(page["metadata"]["continue"])
    status, _, rest = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2&continue={token}")
    assert status == 200, rest
    assert names(page) + names(rest) == sorted([*early, "kube-root-ca.crt"])


# ------------------------------------------------------------------ validation errors


def test_tampered_continue_token_is_400(server: Server, ns: str) -> None:
    make_cms(server, ns, 4)
    _, _, first = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2")
    token = first["metadata"]["continue"]
    raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    wrong_version = base64.urlsafe_b64encode(json.dumps({**raw, "v": "x/v9"}).encode()).rstrip(b"=").decode()
    unclean = base64.urlsafe_b64encode(json.dumps({**raw, "start": "../x"}).encode()).rstrip(b"=").decode()
    for bad in ("!!" + token[2:], wrong_version, unclean, token[: len(token) // 2]):
        status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2&continue={q(bad)}")
        assert status == 400, (bad, body)
        assert body["reason"] == "BadRequest"


def test_continue_with_a_resource_version_is_400(server: Server, ns: str) -> None:
    make_cms(server, ns, 4)
    _, _, first = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2")
    token = q(first["metadata"]["continue"])
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?limit=2&continue={token}"
                                  f"&resourceVersion={first['metadata']['resourceVersion']}")
    assert status == 400 and body["reason"] == "BadRequest", body


def test_resource_version_match_without_rv_is_422(server: Server, ns: str) -> None:
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?resourceVersionMatch=NotOlderThan")
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "ListOptions" and body["details"]["group"] == "meta.k8s.io"
    assert body["details"]["causes"][0]["field"] == "resourceVersionMatch"


def test_send_initial_events_on_a_list_is_422(server: Server, ns: str) -> None:
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?sendInitialEvents=true")
    assert status == 422, body
    assert body["details"]["kind"] == "ListOptions"
    assert body["details"]["causes"][0]["field"] == "sendInitialEvents"


# ------------------------------------------------------------------ selectors


def _pod(name: str, node: str | None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_pod_field_selector_on_node_name(server: Server, ns: str) -> None:
    for name, node in (("p1", "node-1"), ("p2", "node-2"), ("p3", None), ("p4", "node-1")):
        api(server, "POST", f"/api/v1/namespaces/{ns}/pods", _pod(name, node), expect=201)
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3Dnode-1")
    assert status == 200 and names(body) == ["p1", "p4"]
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D")
    assert status == 200 and names(body) == ["p3"]
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%21%3Dnode-1")
    assert status == 200 and names(body) == ["p2", "p3"]
    # Across namespaces, through the index: still only this namespace's node-1 pods exist on "node-1".
    status, _, body = get(server, f"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1,metadata.namespace%3D{ns}")
    assert status == 200 and names(body) == ["p1", "p4"]


def test_unknown_field_selector_is_400(server: Server, ns: str) -> None:
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.foo%3Dx")
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "field label not supported: spec.foo"
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?fieldSelector=data.x%3D1")
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'


@pytest.mark.parametrize(("selector", "expected"), [
    ("suite=sel", ["a", "b", "c", "d"]),
    ("suite=sel,env in (prod,dev)", ["a", "b"]),
    ("suite=sel,env notin (prod)", ["b", "c", "d"]),
    ("suite=sel,!env", ["c", "d"]),
    ("suite=sel,env", ["a", "b"]),
    ("suite=sel,env!=prod", ["b", "c", "d"]),
    ("suite==sel,tier=web", ["a"]),
    ("suite=sel,n>1", ["c", "d"]),
    ("suite=sel,n<2", ["a", "b"]),
])
def test_label_selector_grammar(server: Server, ns: str, selector: str, expected: list[str]) -> None:
    for name, labels in (("a", {"env": "prod", "tier": "web", "n": "0"}), ("b", {"env": "dev", "n": "1"}),
                         ("c", {"tier": "db", "n": "2"}), ("d", {"n": "3"})):
        create_cm(server, ns, name, labels={"suite": "sel", **labels})
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?labelSelector={q(selector)}")
    assert status == 200, body
    assert names(body) == expected


@pytest.mark.parametrize("selector", ["env in (", "env in (a", "=x", "env notin prod", "a b", "env=(x)"])
def test_malformed_label_selector_is_400(server: Server, ns: str, selector: str) -> None:
    status, _, body = get(server, f"/api/v1/namespaces/{ns}/configmaps?labelSelector={q(selector)}")
    assert status == 400, body
    assert body["reason"] == "BadRequest" and body["message"]


# ------------------------------------------------------------------ costs


def test_costly_list_carries_a_warning(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "d", "--storage-backend", "memory")
    try:
        ns = settle_namespace(srv, "default")
        make_cms(srv, ns, 1500, prefix="bulk", workers=8)
        create_cm(srv, ns, "needle", labels={"find": "me"})
        status, headers, body = srv.request("GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector=find%3Dme")
        assert status == 200
        assert [i["metadata"]["name"] for i in json.loads(body)["items"]] == ["needle"]
        warning = {k.lower(): v for k, v in headers.items()}.get("warning", "")
        assert warning.startswith("299 "), headers
        assert re.search(r"\d{4}", warning), warning  # says how many objects were scanned
        # A cheap list says nothing.
        status, headers, _ = srv.request("GET", f"/api/v1/namespaces/{ns}/configmaps/needle")
        assert status == 200 and "warning" not in {k.lower() for k in headers}
    finally:
        stop_server(srv)


def _samples(text: str, metric: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(metric + "{") or line.startswith(metric + " ")]


def test_metrics_after_a_list(server: Server, ns: str) -> None:
    make_cms(server, ns, 3)
    status, _, _ = server.request("GET", f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 200
    status, _, body = server.request("GET", "/metrics")
    assert status == 200
    text = body.decode()
    for metric in ("apiserver_cache_list_total", "apiserver_cache_list_fetched_objects_total"):
        lines = [line for line in _samples(text, metric) if "configmaps" in line]
        assert lines, f"{metric} has no configmaps sample"
        assert any(float(line.rsplit(" ", 1)[1]) >= 1 for line in lines), lines
    requests = [line for line in _samples(text, "apiserver_request_total")
                if 'verb="LIST"' in line and 'resource="configmaps"' in line]
    assert requests and any(float(line.rsplit(" ", 1)[1]) >= 1 for line in requests), requests
