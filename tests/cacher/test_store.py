"""CacheStore (entries in key order, field indexes) and Snapshot (the state at an older rv)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kapi.cacher.store import CacheEvent, CacheStore, Entry, Snapshot

NODE = "spec.nodeName"


def entry(key: str, rv: int = 1, node: str = "", labels: dict[str, str] | None = None) -> Entry:
    ns, _, name = key.rpartition("/")
    return Entry(key, ns, name, rv, labels or {}, {NODE: node, "metadata.name": name}, b'{"rv":%d}' % rv)


def test_put_returns_previous_and_get_sees_latest() -> None:
    store = CacheStore()
    assert store.put(entry("a/x", 1)) is None
    prev = store.put(entry("a/x", 2))
    assert prev is not None and prev.rv == 1
    got = store.get("a/x")
    assert got is not None and got.rv == 2
    assert len(store) == 1


def test_delete_returns_previous_and_missing_is_none() -> None:
    store = CacheStore()
    store.put(entry("a/x", 1))
    gone = store.delete("a/x")
    assert gone is not None and gone.rv == 1
    assert store.get("a/x") is None
    assert store.delete("a/x") is None
    assert len(store) == 0


def test_index_follows_put_move_and_delete() -> None:
    store = CacheStore((NODE,))
    assert store.indexed_fields == (NODE,)
    store.put(entry("a/p2", 1, node="n1"))
    store.put(entry("a/p1", 2, node="n1"))
    store.put(entry("b/p3", 3, node="n2"))
    assert store.indexed_keys(NODE, "n1") == ["a/p1", "a/p2"]  # key order
    assert store.indexed_keys(NODE, "n2") == ["b/p3"]
    store.put(entry("a/p1", 4, node="n2"))  # moved
    assert store.indexed_keys(NODE, "n1") == ["a/p2"]
    assert store.indexed_keys(NODE, "n2") == ["a/p1", "b/p3"]
    store.put(entry("a/p1", 5, node="n2"))  # same value: unchanged
    assert store.indexed_keys(NODE, "n2") == ["a/p1", "b/p3"]
    store.delete("a/p2")
    assert store.indexed_keys(NODE, "n1") == []
    store.delete("b/p3")
    store.delete("a/p1")
    assert store.indexed_keys(NODE, "n2") == []
    assert store._indexes[NODE] == {}  # no empty buckets left behind


def test_indexed_keys_of_unindexed_field_is_none() -> None:
    store = CacheStore((NODE,))
    store.put(entry("a/x", 1, node="n1"))
    assert store.indexed_keys("metadata.name", "x") is None
    assert store.indexed_keys(NODE, "nowhere") == []


def test_empty_value_is_indexed_too() -> None:
    store = CacheStore((NODE,))
    store.put(entry("a/x", 1, node=""))
    assert store.indexed_keys(NODE, "") == ["a/x"]


def test_replace_all_rebuilds_entries_and_indexes() -> None:
    store = CacheStore((NODE,))
    store.put(entry("a/old", 1, node="n1"))
    store.replace_all([entry("b/y", 5, node="n2"), entry("a/x", 4, node="n1")])
    assert list(store.keys_from("", None)) == ["a/x", "b/y"]
    assert store.indexed_keys(NODE, "n1") == ["a/x"]
    assert store.indexed_keys(NODE, "n2") == ["b/y"]
    assert store.get("a/old") is None


def test_keys_from_is_half_open_and_ordered() -> None:
    store = CacheStore()
    for key in ("/r/a/1", "/r/a/2", "/r/a/3", "/r/b/1", "/r/c/1"):
        store.put(entry(key))
    assert list(store.keys_from("/r/a/", "/r/a0")) == ["/r/a/1", "/r/a/2", "/r/a/3"]
    assert list(store.keys_from("/r/a/2", "/r/a0")) == ["/r/a/2", "/r/a/3"]
    assert list(store.keys_from("/r/a/2\x00", "/r/a0")) == ["/r/a/3"]
    assert list(store.keys_from("/r/b/", None)) == ["/r/b/1", "/r/c/1"]
    assert list(store.keys_from("/r/a/1", "/r/a/1")) == []
    assert list(store.keys_from("/r/d/", None)) == []


def test_count_range_matches_keys_from() -> None:
    store = CacheStore()
    for key in ("/r/a/1", "/r/a/2", "/r/a/3", "/r/b/1", "/r/c/1"):
        store.put(entry(key))
    for low, high in [("/r/a/", "/r/a0"), ("/r/a/2\x00", "/r/a0"), ("/r/", None), ("/r/b/", "/r/b0"),
                      ("/r/z", None), ("/r/c/1", "/r/a/")]:
        assert store.count_range(low, high) == len(list(store.keys_from(low, high)))
    assert store.count_range("/r/a/", "/r/a0") == 3
    assert store.count_range("/r/c/1", "/r/a/") == 0  # inverted range


# ------------------------------------------------------------ snapshots

KEYS = [f"/r/{ns}/{n}" for ns in ("a", "b", "c") for n in ("p", "q", "r")]


class Model:
    """Applies operations to a CacheStore exactly as the cacher does, recording the events."""

    def __init__(self) -> None:
        self.store = CacheStore((NODE,))
        self.events: list[CacheEvent] = []
        self.history: dict[int, dict[str, int]] = {0: {}}  # rv -> {key: entry rv}
        self.rv = 0

    def apply(self, key: str, delete: bool, node: str) -> None:
        self.rv += 1
        if delete:
            if self.store.get(key) is None:
                self.rv -= 1
                return
            prev = self.store.delete(key)
            assert prev is not None
            last = entry(key, self.rv, prev.fields[NODE])
            self.events.append(CacheEvent("DELETED", key, self.rv, last, prev))
        else:
            new = entry(key, self.rv, node)
            prev = self.store.put(new)
            self.events.append(CacheEvent("MODIFIED" if prev else "ADDED", key, self.rv, new, prev))
        state = dict(self.history[self.rv - 1])
        if delete:
            del state[key]
        else:
            state[key] = self.rv
        self.history[self.rv] = state


ops = st.lists(st.tuples(st.sampled_from(KEYS), st.booleans(), st.sampled_from(["n1", "n2", ""])),
               max_size=40)
bounds = st.sampled_from([("/r/", None), ("/r/a/", "/r/a0"), ("/r/b/", "/r/b0"), ("/r/b/q", "/r/c0"),
                          ("/r/a/q\x00", None), ("/r/c/r\x00", "/r/c0")])


@settings(max_examples=200, deadline=None)
@given(ops, bounds)
def test_snapshot_rewind_equals_state_at_rv(operations: list[tuple[str, bool, str]],
                                             rng: tuple[str, str | None]) -> None:
    model = Model()
    for key, delete, node in operations:
        model.apply(key, delete, node)
    low, high = rng
    for rv, state in model.history.items():
        snap = Snapshot.rewind(model.store, [e for e in model.events if e.revision > rv])
        want = sorted(k for k in state if k >= low and (high is None or k < high))
        assert list(snap.keys_from(low, high)) == want
        for key in KEYS:
            got = snap.get(key)
            if key in state:
                assert got is not None and got.rv == state[key]
            else:
                assert got is None


def test_snapshot_of_deleted_and_created_keys() -> None:
    model = Model()
    model.apply("/r/a/p", False, "n1")  # 1
    model.apply("/r/b/p", False, "n1")  # 2
    model.apply("/r/a/p", True, "")  # 3
    model.apply("/r/a/q", False, "n2")  # 4
    model.apply("/r/b/p", False, "n2")  # 5
    snap = Snapshot.rewind(model.store, [e for e in model.events if e.revision > 2])
    assert list(snap.keys_from("/r/", None)) == ["/r/a/p", "/r/b/p"]
    b = snap.get("/r/b/p")
    assert b is not None and b.rv == 2 and b.fields[NODE] == "n1"
    assert snap.get("/r/a/q") is None
    now = Snapshot.rewind(model.store, [])
    assert list(now.keys_from("/r/", None)) == ["/r/a/q", "/r/b/p"]
