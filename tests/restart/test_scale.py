"""Issue 10: restarts work at any size (tens of thousands of objects in one resource).

A server that held more than 500 objects of one kind without owners could not start again
(the collector's start-up watch raised UnboundLocalError). These tests write 20,000
ConfigMaps straight into the sqlite file, then run ``kapi serve`` on it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from ..e2e.conftest import Server, start_server, stop_server
from .conftest import configmap, stored, write_objects

pytestmark = pytest.mark.e2e

COUNT = 20_000
JSON = {"Content-Type": "application/json"}


def get_json(server: Server, path: str) -> dict[str, Any]:
    status, _, body = server.request("GET", path)
    assert status == 200, body[:500]
    out: dict[str, Any] = json.loads(body)
    return out


def names(server: Server, path: str, limit: int = 0) -> list[str]:
    """Every item's name of a LIST, followed through its continue tokens."""
    out: list[str] = []
    token = ""
    while True:
        query = f"?limit={limit}" if limit else "?"
        if token:
            query += f"&continue={token}"
        page = get_json(server, path + query)
        out += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            return out


def eventually(check: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def gone(server: Server, path: str) -> bool:
    return server.request("GET", path)[0] == 404


def watch_sees_a_new_object(server: Server) -> None:
    """A watch from a LIST's resourceVersion gets the ADDED of an object created after it."""
    rv = get_json(server, "/api/v1/namespaces/default/configmaps?limit=1")["metadata"]["resourceVersion"]
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-restart"}}).encode()
    status, _, text = server.request("POST", "/api/v1/namespaces/default/configmaps", body, JSON)
    assert status == 201, text
    status, _, stream = server.request(
        "GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=2")
    assert status == 200
    events = [json.loads(line) for line in stream.splitlines() if line]
    assert ("ADDED", "after-restart") in [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def test_restart_with_20000_configmaps_without_owners(tmp_path: Path) -> None:
    """Issue 10 defect 1 at scale: start on 20,000 owner-less ConfigMaps, SIGTERM, start again."""
    write_objects(tmp_path / "kapi.db", (stored(configmap(f"cm-{i:05d}")) for i in range(COUNT)))
    for round_ in range(2):
        server = start_server(tmp_path, "--etcd-compaction-interval", "0")
        try:
            assert server.request("GET", "/readyz")[0] == 200
            listed = [n for n in names(server, "/api/v1/namespaces/default/configmaps") if n.startswith("cm-")]
            assert len(listed) == COUNT
            paged = [n for n in names(server, "/api/v1/configmaps", limit=5000) if n.startswith("cm-")]
            assert paged == sorted(listed)
            if round_ == 0:
                watch_sees_a_new_object(server)
        finally:
            assert stop_server(server) == 0, server.log.read_text()[-3000:]


def test_restart_with_20000_owned_and_finalized_configmaps(tmp_path: Path) -> None:
    """Issue 10: 20,000 ConfigMaps with owners and finalizers; the collector still works after the start."""
    owners = [configmap(f"owner-{i:03d}") for i in range(100)]
    # Owners 0-4 were being deleted with propagationPolicy=Orphan when the server stopped.
    for owner in owners[:5]:
        owner["metadata"].update(deletionTimestamp="2026-01-01T00:00:01Z", deletionGracePeriodSeconds=0,
                                 finalizers=["orphan"])
    objects = list(owners)
    per_owner = (COUNT - 2 * len(owners)) // len(owners)
    for o, owner in enumerate(owners):
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
               "uid": owner["metadata"]["uid"]}
        for i in range(per_owner):
            md: dict[str, Any] = {"ownerReferences": [ref]}
            if i % 50 == 0:
                md["finalizers"] = ["example.com/keep"]
            objects.append(configmap(f"dep-{o:03d}-{i:03d}", **md))
    objects += [configmap(f"free-{i:03d}", finalizers=["example.com/keep"]) for i in range(len(owners))]
    assert len(objects) == COUNT
    write_objects(tmp_path / "kapi.db", (stored(obj) for obj in objects))

    server = start_server(tmp_path, "--etcd-compaction-interval", "0")
    try:
        assert server.request("GET", "/readyz")[0] == 200
        base = "/api/v1/namespaces/default/configmaps"
        # The orphaning owners finish: their dependents lose the reference, then the owners go.
        eventually(lambda: all(gone(server, f"{base}/owner-{i:03d}") for i in range(5)))
        orphan = get_json(server, f"{base}/dep-000-001")
        assert not orphan["metadata"].get("ownerReferences")
        listed = [n for n in names(server, base) if n.startswith(("owner-", "dep-", "free-"))]
        assert len(listed) == COUNT - 5
        watch_sees_a_new_object(server)

        # Background deletion of a live owner: its dependents are collected; those with a
        # finalizer stay, marked for deletion.
        status, _, text = server.request("DELETE", f"{base}/owner-050")
        assert status == 200, text
        eventually(lambda: gone(server, f"{base}/dep-050-001") and gone(server, f"{base}/dep-050-{per_owner - 1:03d}"))
        kept = get_json(server, f"{base}/dep-050-000")
        assert kept["metadata"].get("deletionTimestamp") and kept["metadata"]["finalizers"] == ["example.com/keep"]
        assert get_json(server, f"{base}/dep-051-001")["metadata"]["ownerReferences"][0]["name"] == "owner-051"

        # A finalizer on an object without owners holds its deletion as before.
        status, _, _ = server.request("DELETE", f"{base}/free-007")
        assert status == 200
        assert get_json(server, f"{base}/free-007")["metadata"].get("deletionTimestamp")
    finally:
        assert stop_server(server) == 0, server.log.read_text()[-3000:]
