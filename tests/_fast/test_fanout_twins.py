"""Fan-out twins: what a watcher sees of a cache event, and queueing it to many (SEMANTICS §2.5).

Every test runs on the compiled and the pure twin; a hypothesis property compares them on random
filters and events.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi.cacher.store import CacheEvent, Entry
from kapi.cacher.watcher import Filter
from kapi.object.selectors import parse_field_terms, parse_label_selector
from tests._needs import compiled_twin


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def fanout(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "c":
        return compiled_twin("fanout")
    return importlib.import_module("kapi._fast.fanout_py")


def entry(key: str, rv: int, labels: dict[str, str] | None = None, fields: dict[str, str] | None = None) -> Entry:
    _, _, ns, name = key.split("/")
    return Entry(key, ns, name, rv, labels or {}, fields or {}, b"{}")


@dataclass(eq=False)
class FakeWatcher:
    filter: Filter
    min_revision: int = 0
    closed: bool = False
    room: int = 10**9  # how many more items its channel takes
    got: list[Any] = field(default_factory=list)

    def offer(self, item: Any) -> bool:
        if self.room <= 0:
            return False
        self.room -= 1
        self.got.append(item)
        return True


GOLD = Filter("/pods/a/", parse_label_selector("tier=gold"))
EVERYTHING_IN_A = Filter("/pods/a/")


@pytest.mark.parametrize(("kind", "now", "was", "expected"), [
    ("ADDED", True, False, ("ADDED", False)),
    ("ADDED", False, False, None),
    ("MODIFIED", True, True, ("MODIFIED", False)),
    ("MODIFIED", True, False, ("ADDED", False)),  # comes into the selection
    ("MODIFIED", False, True, ("DELETED", True)),  # leaves it: its previous state, deleted
    ("MODIFIED", False, False, None),
    ("DELETED", True, True, ("DELETED", False)),
    ("DELETED", False, True, ("DELETED", False)),
    ("DELETED", True, False, ("DELETED", False)),
    ("DELETED", False, False, None),
])
def test_transition_table(fanout: ModuleType, kind: str, now: bool, was: bool,
                          expected: tuple[str, bool] | None) -> None:
    new = entry("/pods/a/p", 5, {"tier": "gold" if now else "blue"})
    old = entry("/pods/a/p", 4, {"tier": "gold" if was else "blue"}) if kind != "ADDED" else None
    if kind == "ADDED" and was:
        pytest.skip("an ADDED event has no previous state")
    ev = CacheEvent(kind, "/pods/a/p", 5, new, old)
    assert fanout.transition(GOLD, ev) == expected


def test_key_range_and_field_selector(fanout: ModuleType) -> None:
    on_node = Filter("/pods/", None, parse_field_terms("spec.nodeName=n1"))
    ev = CacheEvent("ADDED", "/pods/b/p", 3, entry("/pods/b/p", 3, fields={"spec.nodeName": "n1"}), None)
    assert fanout.transition(on_node, ev) == ("ADDED", False)
    assert fanout.transition(EVERYTHING_IN_A, ev) is None  # another namespace's key
    assert fanout.matches(on_node, ev.entry) and not fanout.matches(EVERYTHING_IN_A, ev.entry)
    moved = CacheEvent("MODIFIED", "/pods/b/p", 4, entry("/pods/b/p", 4, fields={"spec.nodeName": "n2"}), ev.entry)
    assert fanout.transition(on_node, moved) == ("DELETED", True)


def test_offer_event_queues_skips_and_reports_the_full(fanout: ModuleType) -> None:
    ev = CacheEvent("MODIFIED", "/pods/a/p", 10, entry("/pods/a/p", 10, {"tier": "gold"}),
                    entry("/pods/a/p", 9, {"tier": "blue"}))
    plain, gold, closed, later, full, other, full2 = (
        FakeWatcher(EVERYTHING_IN_A), FakeWatcher(GOLD), FakeWatcher(EVERYTHING_IN_A, closed=True),
        FakeWatcher(EVERYTHING_IN_A, min_revision=10), FakeWatcher(EVERYTHING_IN_A, room=0),
        FakeWatcher(Filter("/pods/b/")), FakeWatcher(GOLD, room=0))
    blocked = fanout.offer_event([plain, gold, closed, later, full, other, full2], ev)
    assert plain.got == [(ev, "MODIFIED", False)]
    assert gold.got == [(ev, "ADDED", False)]
    assert closed.got == later.got == full.got == other.got == []
    assert blocked == [(full, (ev, "MODIFIED", False)), (full2, (ev, "ADDED", False))]
    assert fanout.offer_event([], ev) == []
    assert fanout.offer_event(iter([plain]), ev) == [] and len(plain.got) == 2  # any iterable


# ------------------------------------------------------------------ parity

_labels = st.dictionaries(st.sampled_from(["tier", "app", "env"]), st.sampled_from(["gold", "blue", "x"]),
                          max_size=3)
_fields = st.dictionaries(st.sampled_from(["spec.nodeName", "status.phase"]), st.sampled_from(["n1", "n2", ""]),
                          max_size=2)
_keys = st.sampled_from(["/pods/a/p", "/pods/a/q", "/pods/b/p", "/pods/ab/p"])
_filters = st.builds(
    Filter, st.sampled_from(["", "/pods/", "/pods/a/", "/pods/b/", "/pods/a"]),
    st.one_of(st.none(), st.sampled_from(["tier=gold", "tier!=gold", "app", "!app", "env in (x,blue)"])
              .map(parse_label_selector)),
    st.one_of(st.none(), st.sampled_from(["spec.nodeName=n1", "status.phase!=n2", "spec.nodeName="])
              .map(parse_field_terms)))


@st.composite
def _events(draw: st.DrawFn) -> CacheEvent:
    kind = draw(st.sampled_from(["ADDED", "MODIFIED", "DELETED"]))
    key = draw(_keys)
    rv = draw(st.integers(2, 50))
    new = entry(key, rv, draw(_labels), draw(_fields))
    old = None if kind == "ADDED" else entry(key, rv - 1, draw(_labels), draw(_fields))
    return CacheEvent(kind, key, rv, new, old)


@settings(max_examples=300, deadline=None)
@given(filters=st.lists(_filters, min_size=1, max_size=8), ev=_events(),
       rooms=st.lists(st.integers(0, 1), min_size=8, max_size=8),
       mins=st.lists(st.integers(0, 50), min_size=8, max_size=8))
def test_twins_agree(filters: list[Filter], ev: CacheEvent, rooms: list[int], mins: list[int]) -> None:
    c = compiled_twin("fanout")
    py = importlib.import_module("kapi._fast.fanout_py")
    for filt in filters:
        assert c.transition(filt, ev) == py.transition(filt, ev)
    results = []
    for twin in (c, py):
        watchers = [FakeWatcher(f, min_revision=m, room=r) for f, m, r in zip(filters, mins, rooms)]
        blocked = twin.offer_event(watchers, ev)
        results.append(([w.got for w in watchers], [(watchers.index(w), item) for w, item in blocked]))
    assert results[0] == results[1]
