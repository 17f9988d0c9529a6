"""Issue 10: no request can crash or brick kapi. Hypothesis-driven requests against a real
``kapi serve`` over HTTPS, as the admin, anonymously and with bad credentials, in groups: bodies,
YAML, protobuf, selectors, list options, patches, read-modify-write updates, headers, HTTP/2,
methods, paths.

Every request is checked by the session's ``Target`` (conftest.py): no 5xx, the process still
runs, an answer arrives within the hang timeout, an error answer is a metav1.Status, a watch
stream starts with events. Each group has a time budget (a share of KAPI_FUZZ_SECONDS) and a
bound on examples; once the budget is spent nothing more is sent. A group's test fails with each
distinct finding and its reproduction; the figures of the whole run are printed at the end of the
session. The last test checks that the server is ready, lists every fuzzed resource, and restarts
on the same data dir to list them again (stored poison shows up there).
"""

from __future__ import annotations

import json
from typing import Any, Callable
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .client import Request, Response
from .conftest import NAMESPACE, Target, budget, examples
from .strategies import (KINDS, METHODS, Kind, dumps, field_selectors, header_sets, json_patches,
                         json_values, label_selectors, list_queries, merge_patches, names, protobuf_bodies,
                         random_paths, shuffled, whole_bodies, wrong_objects, yaml_bodies)

pytestmark = pytest.mark.e2e

JSON = ("Content-Type", "application/json")
AUTH = st.sampled_from(["admin", "admin", "admin", "anonymous", "anonymous", "bad"])


def run_group(target: Target, group: str, weight: float, max_examples: int,
              one: Callable[[Target, Any], None]) -> None:
    """Run ``one(target, data)`` for up to ``max_examples`` examples or the group's time, then
    fail with every finding of the group (each with its reproduction)."""
    target.limit(group, budget(weight))
    batch = 100

    # The budget is checked between batches (each a fresh hypothesis run) and by Target.send, which
    # stops sending once it is spent; an example never draws differently because of it.
    @settings(max_examples=batch, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data: Any) -> None:
        one(target, data)

    done = 0
    while done < examples(max_examples) and not target.closed(group):
        fuzz()
        done += batch
    assert target.sent[group] > 0, f"the {group} group sent nothing"
    found = target.group_findings(group)
    if found:
        lines = [f"{len(found)} distinct finding(s) in {target.sent[group]} {group} requests:"]
        for f in found:
            lines.append(f"  {f.kind} {f.status or ''}: {f.detail[:300]}\n    {json.dumps(f.request)[:800]}")
        pytest.fail("\n".join(lines), pytrace=False)


def seed(target: Target) -> dict[str, str]:
    """One valid object of each kind named ``seed`` (created if missing); kind label -> item path."""
    paths = {}
    for k in KINDS:
        obj = k.template("seed")
        body = dumps(obj)
        target.send("seed", Request("POST", k.collection(), [JSON], body))
        paths[f"{k.group_version}/{k.resource}"] = k.item(obj["metadata"]["name"])
    return paths


def pick_kind(data: Any) -> Kind:
    return data.draw(st.sampled_from(KINDS), label="kind")


def field_validation(data: Any) -> str:
    q = data.draw(st.lists(st.sampled_from(["fieldValidation=Strict", "fieldValidation=Warn", "fieldValidation=Ignore",
                                            "fieldValidation=nope", "dryRun=All", "dryRun=x", "fieldManager=fz",
                                            "fieldManager=" + "m" * 200, "pretty=true"]), max_size=2))
    return ("?" + "&".join(q)) if q else ""


# -- bodies ------------------------------------------------------------------------------------------

def test_bodies(target: Target) -> None:
    """Objects of many kinds with wrong types in metadata and spec, random JSON, deep nesting,
    huge numbers, lone surrogates, invalid UTF-8: POST to the collection or PUT to the item."""
    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        name = data.draw(names(), label="name")
        if data.draw(st.integers(0, 4)):
            body, _ = data.draw(wrong_objects(k, name), label="object")
        else:
            body = data.draw(whole_bodies(), label="body")
        path = k.collection() if data.draw(st.booleans()) else k.item(quote(name, safe="") or "x")
        method = "POST" if path == k.collection() else "PUT"
        ctype = data.draw(st.sampled_from(["application/json", "application/json", "application/yaml"]))
        t.send("bodies", Request(method, path + field_validation(data), [("Content-Type", ctype)], body,
                                 auth=data.draw(AUTH)))
    run_group(target, "bodies", 0.15, 1500, one)


def test_yaml(target: Target) -> None:
    """YAML bodies with !!binary, !!set, timestamps, anchors and aliases, odd keys, several documents."""
    def one(t: Target, data: Any) -> None:
        k = data.draw(st.sampled_from([k for k in KINDS if k.kind in ("ConfigMap", "Secret", "Pod", "Lease")]))
        body = data.draw(yaml_bodies(k.kind), label="yaml")
        t.send("yaml", Request("POST", k.collection() + field_validation(data),
                               [("Content-Type", "application/yaml")], body, auth=data.draw(AUTH)))
    run_group(target, "yaml", 0.08, 500, one)


def test_protobuf(target: Target) -> None:
    """Protobuf garbage (in and out of kube's envelope) with the protobuf content type."""
    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        body = data.draw(protobuf_bodies(), label="protobuf")
        method, path = data.draw(st.sampled_from([("POST", k.collection()), ("PUT", k.item("seed")),
                                                  ("PATCH", k.item("seed"))]))
        headers = [("Content-Type", "application/vnd.kubernetes.protobuf")]
        if data.draw(st.booleans()):
            headers.append(("Accept", "application/vnd.kubernetes.protobuf"))
        t.send("protobuf", Request(method, path, headers, body, auth=data.draw(AUTH)))
    run_group(target, "protobuf", 0.06, 400, one)


# -- reads -------------------------------------------------------------------------------------------

def test_selectors(target: Target) -> None:
    """Label and field selector strings on lists and watches (cached and uncached resources)."""
    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        q = []
        if data.draw(st.booleans()):
            q.append("labelSelector=" + quote(data.draw(label_selectors()), safe="", errors="surrogatepass"))
        if not q or data.draw(st.booleans()):
            q.append("fieldSelector=" + quote(data.draw(field_selectors()), safe="", errors="surrogatepass"))
        watch = data.draw(st.integers(0, 3)) == 0
        if watch:
            q.append("watch=true")
        ns = data.draw(st.sampled_from([NAMESPACE, NAMESPACE, ""])) if k.namespaced else NAMESPACE
        path = k.collection(ns) if ns else k.collection().replace(f"/namespaces/{NAMESPACE}", "")
        t.send("selectors", Request("GET", path + "?" + "&".join(q), auth=data.draw(AUTH), stream=watch))
    run_group(target, "selectors", 0.08, 800, one)


def test_list_options(target: Target) -> None:
    """limit, continue, resourceVersion(Match), timeoutSeconds, watch, sendInitialEvents,
    allowWatchBookmarks with random and overflowing values; watch paths too."""
    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        q, is_watch = data.draw(list_queries(), label="query")
        legacy_watch = data.draw(st.integers(0, 5)) == 0
        ns = data.draw(st.sampled_from([NAMESPACE, NAMESPACE, ""])) if k.namespaced else NAMESPACE
        path = k.collection(ns, watch=legacy_watch) if ns else \
            k.collection(watch=legacy_watch).replace(f"/namespaces/{NAMESPACE}", "")
        item = data.draw(st.integers(0, 4)) == 0
        if item:  # a GET of one object is no watch, watch=true or not (kube watches one only under /watch/)
            path = k.item("seed") if not legacy_watch else k.collection(watch=True) + "/seed"
        headers = []
        if data.draw(st.integers(0, 3)) == 0:
            headers.append(("Accept", data.draw(st.sampled_from([
                "application/json;as=Table;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf",
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "application/yaml"]))))
        t.send("listopts", Request("GET", path + "?" + q, headers, auth=data.draw(AUTH),
                                   stream=legacy_watch or (is_watch and not item)))
    run_group(target, "listopts", 0.12, 1000, one)


# -- writes to existing objects ----------------------------------------------------------------------

PATCH_TYPES = ["application/json-patch+json"] * 3 + ["application/merge-patch+json"] * 3 + [
    "application/strategic-merge-patch+json"] * 3 + ["application/apply-patch+yaml"] + [
    "application/apply-patch+cbor", "application/json"]


def test_patches(target: Target) -> None:
    """JSON patches (copy/move amplification among them), merge patches and strategic merge patches with
    $patch, $retainKeys, $deleteFromPrimitiveList, $setElementOrder in odd places; apply patches."""
    seeds = list(seed(target).values())

    def one(t: Target, data: Any) -> None:
        path = data.draw(st.sampled_from(seeds), label="target")
        ctype = data.draw(st.sampled_from(PATCH_TYPES), label="ctype")
        if ctype == "application/json-patch+json":
            body = data.draw(json_patches(), label="patch")
        elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json", "application/json"):
            body = data.draw(merge_patches(strategic="strategic" in ctype), label="patch")
        else:
            body = data.draw(merge_patches(strategic=False), label="patch")
        sub = data.draw(st.sampled_from(["", "", "", "", "", "/status", "/scale", "/x"]))
        query = data.draw(st.sampled_from(["", "", "?fieldManager=fz", "?fieldManager=fz&force=true", "?force=x",
                                           "?dryRun=All&fieldManager=fz", "?fieldValidation=Strict&fieldManager=fz"]))
        t.send("patches", Request("PATCH", path + sub + query, [("Content-Type", ctype)], body, auth=data.draw(AUTH)))
    run_group(target, "patches", 0.16, 1200, one)


def test_updates(target: Target) -> None:
    """Read-modify-write: GET a seed object as stored (managedFields, resourceVersion, defaults and all),
    change 0-3 of its values to random ones, PUT it back (to the object or its status)."""
    seeds = list(seed(target).values())

    def one(t: Target, data: Any) -> None:
        # every draw before the GET: what the server answers must not change what hypothesis draws
        path = data.draw(st.sampled_from(seeds), label="target")
        sub = data.draw(st.sampled_from(["", "", "", "/status"]))
        query, auth = field_validation(data), data.draw(AUTH)
        seed_ = data.draw(st.integers(0, 2**32), label="mutation seed")
        got = t.send("updates", Request("GET", path))
        if isinstance(got, Response) and got.status == 200:
            t.send("updates", Request("PUT", path + sub + query, [JSON], shuffled(got.json(), seed_), auth=auth))
    run_group(target, "updates", 0.08, 600, one)


def test_headers(target: Target) -> None:
    """Accept, Content-Type with odd parameters, duplicate Authorization, Impersonate-*, huge headers,
    odd bytes, WebSocket and h2c upgrades, on reads and writes of real resources."""
    seeds = list(seed(target).values())

    def one(t: Target, data: Any) -> None:
        headers, auth = data.draw(header_sets(t.server.token), label="headers")
        choice = data.draw(st.sampled_from(["get", "list", "watch", "post", "patch", "exec"]))
        k = pick_kind(data)
        body = None
        stream = False
        if choice == "get":
            method, path = "GET", data.draw(st.sampled_from(seeds))
        elif choice == "list":
            method, path = "GET", k.collection()
        elif choice == "watch":
            method, path, stream = "GET", k.collection() + "?watch=1", True
        elif choice == "post":
            method, path = "POST", k.collection()
            body = dumps(k.template(data.draw(st.from_regex(r"\Ah[a-z0-9]{1,10}\Z"))))
        elif choice == "patch":
            method, path, body = "PATCH", data.draw(st.sampled_from(seeds)), b'{"metadata":{"labels":{"h":"1"}}}'
            if not any(str(h[0]).lower() == "content-type" for h in headers):
                headers.append(("Content-Type", "application/merge-patch+json"))
        else:
            method, path = "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/seed/exec?command=ls&stdout=1"
        t.send("headers", Request(method, path, headers, body, auth=auth, stream=stream))
    run_group(target, "headers", 0.08, 600, one)


def test_http2(target: Target) -> None:
    """The same kinds of requests over HTTP/2 (httpx, one connection reused): objects with wrong values,
    merge patches, list options, odd headers (those HTTP/2 can carry), random paths and methods."""
    seeds = list(seed(target).values())

    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        headers, auth = data.draw(header_sets(t.server.token), label="headers")
        # what HTTP/2 cannot carry is left out: connection headers, bytes a header may not hold (Go resets
        # such a stream), heads over 256 KB (the client blocks writing them when the server stops reading)
        headers = [h for h in headers if str(h[0]).lower() not in ("connection", "upgrade", "http2-settings",
                                                                     "transfer-encoding", "te", "host")
                   and isinstance(h[0], str) and isinstance(h[1], str) and len(h[1]) <= 262144
                   and not any(ord(c) < 32 or ord(c) == 127 for c in h[1])]
        choice = data.draw(st.sampled_from(["post", "put", "patch", "list", "path"]))
        body = None
        stream = False
        if choice == "post":
            method, path = "POST", k.collection()
            body, _ = data.draw(wrong_objects(k, data.draw(names())))
        elif choice == "put":
            method, path = "PUT", k.item("seed")
            body, _ = data.draw(wrong_objects(k, "seed"))
        elif choice == "patch":
            method, path = "PATCH", data.draw(st.sampled_from(seeds))
            body = data.draw(merge_patches(strategic=True))
            headers.append(("Content-Type", "application/strategic-merge-patch+json"))
        elif choice == "list":
            q, stream = data.draw(list_queries())
            method, path = "GET", k.collection() + "?" + q
        else:
            method, path, stream = data.draw(st.sampled_from(["GET", "DELETE", "OPTIONS", "PUT"])), data.draw(random_paths()), True
        if body is not None and not any(str(h[0]).lower() == "content-type" for h in headers):
            headers.append(JSON)
        t.send("http2", Request(method, path, headers, body, auth=auth, http2=True, stream=stream, watch=False))
    run_group(target, "http2", 0.05, 500, one)


def test_methods(target: Target) -> None:
    """Every method (and some that are not) on collections, items, watch paths and subresources,
    with and without bodies; DELETE with odd DeleteOptions."""
    def one(t: Target, data: Any) -> None:
        k = pick_kind(data)
        path = data.draw(st.sampled_from([k.collection(), k.item("seed"), k.item("fz-gone"), k.collection(watch=True),
                                          k.collection(watch=True) + "/seed", k.item("seed") + "/status",
                                          k.item("seed") + "/scale", k.item("seed") + "/log", k.item("seed") + "/binding"]))
        method = data.draw(st.sampled_from(METHODS + ["DELETE"] * 4))
        body = None
        headers: list[tuple[bytes | str, bytes | str]] = []
        if data.draw(st.booleans()):
            if method.upper() == "DELETE" and data.draw(st.booleans()):
                opts: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
                for f in data.draw(st.lists(st.sampled_from(["propagationPolicy", "gracePeriodSeconds", "preconditions",
                                                             "orphanDependents", "dryRun", "kind", "apiVersion"]),
                                            max_size=3)):
                    opts[f] = data.draw(st.one_of(json_values(3), st.sampled_from(
                        ["Orphan", "Background", "Foreground", "x", -1, 2**63, {"uid": 1}, {"resourceVersion": []}])))
                body = dumps(opts)
            else:
                body = dumps(k.template("seed"))
            headers.append(JSON)
        # the seed is not deleted for good: the patch and header groups want it back
        if method.upper() == "DELETE" and path.endswith("/seed"):
            path = path[:-4] + "fz-gone"
        listq, is_watch = data.draw(list_queries(watch=False))
        q = data.draw(st.sampled_from(["", "", "?dryRun=All", "?gracePeriodSeconds=" + "9" * 30,
                                       "?propagationPolicy=nope", "?" + listq]))
        stream = "/watch/" in path or (is_watch and q.endswith(listq) and path == k.collection())
        t.send("methods", Request(method, path + q, headers, body, auth=data.draw(AUTH), stream=stream,
                                  watch=method == "GET"))
    run_group(target, "methods", 0.08, 600, one)


def test_paths(target: Target) -> None:
    """Random segments under /api and /apis, watch paths, subresources, odd percent-encodings."""
    def one(t: Target, data: Any) -> None:
        path = data.draw(random_paths(), label="path")
        method = data.draw(st.sampled_from(["GET", "GET", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]))
        body = dumps(data.draw(json_values(4))) if method in ("POST", "PUT", "PATCH") else None
        headers = [JSON] if body is not None else []
        if method == "PATCH":
            headers = [("Content-Type", "application/merge-patch+json")]
        # a method that does not delete for real on the few real collections a path can name
        if method == "DELETE" and ("namespaces" in path and "fuzz" not in path or path.rstrip("/").endswith("namespaces")):
            method = "GET"
        # a watch or not: only the start of a 2xx answer is read (a random path may open a watch)
        t.send("paths", Request(method, path, headers, body, auth=data.draw(AUTH), stream=True, watch=False))
    run_group(target, "paths", 0.06, 1000, one)


# -- afterwards --------------------------------------------------------------------------------------

def _lists(target: Target) -> dict[str, set[str]]:
    """LIST every fuzzed resource (in the fuzz namespace and across all); names kept for the restart."""
    seen: dict[str, set[str]] = {}
    for k in KINDS:
        for path in ([k.collection(), k.collection().replace(f"/namespaces/{NAMESPACE}", "")] if k.namespaced
                     else [k.collection()]):
            r = target.send("after", Request("GET", path))
            assert isinstance(r, Response) and r.status == 200, (path, r)
            doc = r.json()
            assert doc["kind"] == k.kind + "List" and isinstance(doc["items"], list), (path, doc.get("kind"))
            if path == k.collection():
                # what must survive a restart: objects that nothing (GC, finalization) may take away
                seen[path] = {i["metadata"]["name"] for i in doc["items"]
                              if not i["metadata"].get("ownerReferences") and not i["metadata"].get("deletionTimestamp")}
    return seen


def test_ready_lists_and_restart_after_fuzz(target: Target) -> None:
    """After the groups: /readyz ok, every fuzzed resource lists, and a restart on the same data dir
    comes up ready and lists them all again with nothing lost."""
    r = target.send("after", Request("GET", "/readyz"))
    assert isinstance(r, Response) and r.status == 200 and r.body.strip() == b"ok", r
    before = _lists(target)
    data_dir = target.server.data_dir
    from ..e2e.conftest import stop_server
    assert stop_server(target.server) == 0, target.server.log.read_text()[-3000:]
    target._start(data_dir)  # raises with the server log if it cannot start again: bricked
    r = target.send("after", Request("GET", "/readyz"))
    assert isinstance(r, Response) and r.status == 200, r
    after = _lists(target)
    lost = {p: sorted(before[p] - after.get(p, set()))[:10] for p in before if before[p] - after.get(p, set())}
    assert not lost, f"objects missing after the restart: {lost}"
    assert not target.group_findings("after")
