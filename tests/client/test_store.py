"""The informer store: keys, indexes kept through every change, and relist diffs."""

from __future__ import annotations

from typing import Any

import pytest

from kapi.client.objects import Meta, key, split_key
from kapi.client.store import Store


def obj(name: str, ns: str = "default", rv: str = "1", **labels: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "resourceVersion": rv, "labels": labels}
    if ns:
        md["namespace"] = ns
    return {"metadata": md}


def by_node(o: dict[str, Any]) -> list[str]:
    node = (o.get("spec") or {}).get("nodeName")
    return [node] if node else []


def test_keys_follow_client_go() -> None:
    assert key(obj("a", "ns1")) == "ns1/a"
    assert key(obj("n1", "")) == "n1"
    assert split_key("ns1/a") == ("ns1", "a")
    assert split_key("n1") == ("", "n1")


def test_meta_reads_an_object() -> None:
    m = Meta({"metadata": {"name": "a", "namespace": "x", "uid": "u", "resourceVersion": "7", "generation": 2,
                           "labels": {"k": "v"}, "finalizers": ["f"], "deletionTimestamp": "t"}})
    assert (m.name, m.namespace, m.uid, m.resource_version, m.generation) == ("a", "x", "u", "7", 2)
    assert m.labels == {"k": "v"} and m.finalizers == ["f"] and m.deletion_timestamp == "t"
    assert m.key == "x/a" and Meta({}).labels == {} and Meta({}).generation == 0


def test_namespace_index_is_always_there() -> None:
    s = Store()
    s.upsert(obj("a", "n1"))
    s.upsert(obj("b", "n1"))
    s.upsert(obj("c", "n2"))
    assert [Meta(o).name for o in s.by_index("namespace", "n1")] == ["a", "b"]
    assert sorted(s.index_values("namespace")) == ["n1", "n2"]


def test_user_index_moves_with_updates_and_deletes() -> None:
    s = Store({"node": by_node})
    pod = obj("p", "n1")
    pod["spec"] = {"nodeName": "node-1"}
    s.upsert(pod)
    assert s.index_keys("node", "node-1") == ["n1/p"]
    moved = obj("p", "n1", rv="2")
    moved["spec"] = {"nodeName": "node-2"}
    old = s.upsert(moved)
    assert old is pod
    assert s.index_keys("node", "node-1") == [] and s.index_keys("node", "node-2") == ["n1/p"]
    assert "node-1" not in s.index_values("node")
    assert s.delete("n1/p") is moved
    assert s.index_values("node") == [] and len(s) == 0
    assert s.delete("n1/p") is None


def test_indexers_added_later_file_existing_objects() -> None:
    s = Store()
    pod = obj("p", "n1")
    pod["spec"] = {"nodeName": "node-9"}
    s.upsert(pod)
    s.add_indexers({"node": by_node})
    assert s.by_index("node", "node-9") == [pod]
    with pytest.raises(ValueError):
        s.add_indexers({"node": by_node})
    with pytest.raises(KeyError):
        s.by_index("missing", "x")


def test_replace_reports_added_updated_deleted() -> None:
    s = Store()
    a, b = obj("a"), obj("b")
    s.upsert(a)
    s.upsert(b)
    a2, c = obj("a", rv="5"), obj("c")
    added, updated, deleted = s.replace([a2, c])
    assert added == [c] and updated == [(a, a2)] and deleted == [b]
    assert sorted(s.keys()) == ["default/a", "default/c"]
    assert s.get_by("default", "a") is a2 and s.get("default/b") is None
    assert s.index_keys("namespace", "default") == ["default/a", "default/c"]
