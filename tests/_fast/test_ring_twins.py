"""EventRing twins: the compiled and the pure event window behave the same (SEMANTICS §2.1, §3)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi.errors import Gone
from tests._needs import compiled_twin

from .ring_fakes import Ev, FakeClock, revs

REPO = Path(__file__).resolve().parents[2]



def fixed(ring: ModuleType, capacity: int) -> Any:
    """A ring that never resizes."""
    return ring.EventRing(capacity, min_capacity=capacity, max_capacity=capacity, clock=FakeClock())


# ------------------------------------------------------------ window and lookups


def test_append_order_newest_and_reset(ring: ModuleType) -> None:
    r = fixed(ring, 4)
    assert len(r) == 0 and r.capacity == 4 and r.newest_revision == 0 and r.oldest_known == 0
    r.reset(10)
    for rv in (11, 13, 17):
        r.append(Ev(rv))
    assert len(r) == 3 and r.newest_revision == 17 and r.oldest_known == 10
    assert revs(r.events_after(10)) == [11, 13, 17]
    r.reset(50)
    assert len(r) == 0 and r.oldest_known == 50 and r.newest_revision == 50 and r.capacity == 4
    assert r.events_after(50) == []
    r.append(Ev(51))
    assert revs(r.events_after(50)) == [51]


def test_eviction_moves_the_window(ring: ModuleType) -> None:
    r = fixed(ring, 4)
    for rv in range(1, 8):
        r.append(Ev(rv))
    assert len(r) == 4 and r.oldest_known == 3
    assert revs(r.events_after(3)) == [4, 5, 6, 7]
    assert r.covers(3) and not r.covers(2)


def test_wraparound_lookups_at_every_split(ring: ModuleType) -> None:
    r = fixed(ring, 5)
    for rv in range(1, 24):
        r.append(Ev(rv * 2))
        oldest = r.oldest_known
        held = [e for e in range(oldest + 1, rv * 2 + 1) if e % 2 == 0]
        for q in range(oldest, rv * 2 + 2):  # every split point, including those across the wrap
            assert revs(r.events_after(q)) == [e for e in held if e > q]


def test_boundaries_with_gaps(ring: ModuleType) -> None:
    r = fixed(ring, 8)
    r.reset(5)
    for rv in (10, 20, 30):
        r.append(Ev(rv))
    assert revs(r.events_after(9)) == [10, 20, 30]
    assert revs(r.events_after(10)) == [20, 30]
    assert revs(r.events_after(29)) == [30]
    assert revs(r.events_after(30)) == []
    assert revs(r.events_after(1000)) == []


def test_result_is_a_fresh_list_of_the_same_objects(ring: ModuleType) -> None:
    r = fixed(ring, 4)
    events = [Ev(rv) for rv in (1, 2, 3)]
    for e in events:
        r.append(e)
    got = r.events_after(0)
    assert all(a is b for a, b in zip(got, events, strict=True))
    got.clear()  # the caller owns its answer: the ring must not change
    assert revs(r.events_after(0)) == [1, 2, 3]


def test_gone_message_names_the_lowest_accepted_rv(ring: ModuleType) -> None:
    r = fixed(ring, 2)
    r.reset(7)
    with pytest.raises(Gone) as info:
        r.events_after(6)
    assert info.value.code == 410 and info.value.message == "too old resource version: 6 (7)"
    for rv in (8, 9, 10):
        r.append(Ev(rv))
    with pytest.raises(Gone) as info:
        r.events_after(7)
    assert info.value.message == "too old resource version: 7 (8)"


def test_large_revisions(ring: ModuleType) -> None:
    r = fixed(ring, 3)
    base = 2**62
    r.reset(base)
    for k in range(1, 5):
        r.append(Ev(base + k))
    assert r.newest_revision == base + 4 and r.oldest_known == base + 1
    assert revs(r.events_after(base + 2)) == [base + 3, base + 4]


# ------------------------------------------------------------ resizing


def test_doubles_while_fresh_up_to_max_then_evicts(ring: ModuleType) -> None:
    clock = FakeClock()
    r = ring.EventRing(2, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 6):
        r.append(Ev(rv))
    assert r.capacity == 8 and r.oldest_known == 0
    for rv in range(6, 10):
        r.append(Ev(rv))
    assert r.capacity == 8 and r.oldest_known == 1
    assert revs(r.events_after(1)) == list(range(2, 10))


def test_no_doubling_when_oldest_is_exactly_fresh_s_old(ring: ModuleType) -> None:
    clock = FakeClock()
    r = ring.EventRing(4, min_capacity=4, max_capacity=16, clock=clock)
    for rv in range(1, 5):
        r.append(Ev(rv))
    clock.now = 75.0
    r.append(Ev(5))
    assert r.capacity == 4 and revs(r.events_after(1)) == [2, 3, 4, 5]


def test_halves_when_quarter_event_is_old(ring: ModuleType) -> None:
    clock = FakeClock()
    r = ring.EventRing(8, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 9):
        clock.now = float(rv)
        r.append(Ev(rv))
    clock.now = 200.0
    r.append(Ev(9))
    assert r.capacity == 4 and r.oldest_known == 5
    assert revs(r.events_after(5)) == [6, 7, 8, 9]
    with pytest.raises(Gone):
        r.events_after(4)


def test_no_halving_when_quarter_event_is_fresh_nor_below_min(ring: ModuleType) -> None:
    clock = FakeClock()
    r = ring.EventRing(8, min_capacity=6, max_capacity=8, clock=clock)
    for rv in range(1, 7):
        r.append(Ev(rv))
    clock.now = 190.0
    for rv in (7, 8):
        r.append(Ev(rv))
    clock.now = 200.0
    r.append(Ev(9))
    assert r.capacity == 8
    for rv in range(10, 30):
        clock.now += 100.0
        r.append(Ev(rv))
    assert r.capacity == 6
    assert revs(r.events_after(r.oldest_known)) == list(range(24, 30))


def test_grow_then_shrink_back_stays_contiguous(ring: ModuleType) -> None:
    clock = FakeClock()
    r = ring.EventRing(4, min_capacity=4, max_capacity=64, clock=clock)
    for rv in range(1, 34):
        r.append(Ev(rv))
    assert r.capacity == 64
    rv = 34
    while r.capacity > 4 and rv < 300:
        clock.now += 100.0
        r.append(Ev(rv))
        rv += 1
    assert r.capacity == 4
    assert revs(r.events_after(r.oldest_known)) == list(range(r.oldest_known + 1, rv))


# ------------------------------------------------------------ parity


def _both() -> tuple[ModuleType, ModuleType]:
    py = importlib.import_module("kapi._fast.ring_py")
    c = compiled_twin("ring")
    return c, py


def _answer(r: Any, rv: int) -> tuple[str, Any]:
    try:
        return "ok", revs(r.events_after(rv))
    except Gone as err:
        return "gone", (err.code, err.message)


_op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.sampled_from([0.0, 0.5, 1.0, 30.0, 74.9, 75.0, 75.1, 200.0])),
    st.tuples(st.just("reset"), st.integers(0, 5), st.just(0.0)),
    st.tuples(st.just("after"), st.integers(-3, 40), st.just(0.0)),
    st.tuples(st.just("covers"), st.integers(-3, 5), st.just(0.0)),
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 8), st.integers(1, 8), st.integers(1, 32), st.sampled_from([0.0, 1.0, 75.0]),
    st.lists(_op, max_size=80),
)
def test_twins_agree(capacity: int, min_capacity: int, max_capacity: int, fresh_s: float,
                     ops: list[tuple[str, int, float]]) -> None:
    c, py = _both()
    clock = FakeClock()
    rings = [m.EventRing(capacity, min_capacity=min_capacity, max_capacity=max_capacity, fresh_s=fresh_s,
                         clock=clock) for m in (c, py)]

    def state(r: Any) -> tuple[int, int, int, int, list[int]]:
        return len(r), r.capacity, r.oldest_known, r.newest_revision, revs(r.events_after(r.oldest_known))

    for name, n, dt in ops:
        newest = rings[1].newest_revision
        if name == "append":
            clock.now += dt
            event = Ev(newest + n)
            for r in rings:
                r.append(event)
        elif name == "reset":
            for r in rings:
                r.reset(newest + n)
        elif name == "after":
            rv = rings[1].oldest_known + n
            assert _answer(rings[0], rv) == _answer(rings[1], rv)
        else:
            rv = rings[1].oldest_known + n
            assert rings[0].covers(rv) == rings[1].covers(rv)
        assert state(rings[0]) == state(rings[1])


# ------------------------------------------------------------ which twin is chosen


def _chosen(env: dict[str, str], block_compiled: bool = False) -> subprocess.CompletedProcess[str]:
    """The module kapi._fast takes EventRing from, in a fresh interpreter."""
    code = "import sys\n"
    if block_compiled:
        code += "sys.modules['kapi._fast.ring_c'] = None  # as if it had not been built\n"
    code += "import kapi._fast\nprint(kapi._fast.EventRing.__module__)\n"
    full = {k: v for k, v in os.environ.items() if not k.startswith("KAPI_")} | env
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full, capture_output=True, text=True,
                          timeout=60)


def test_no_extensions_chooses_the_pure_twin() -> None:
    proc = _chosen({"KAPI_NO_EXTENSIONS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "kapi._fast.ring_py"


def test_compiled_twin_chosen_when_built() -> None:
    _both()
    proc = _chosen({})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "kapi._fast.ring_c"


def test_missing_compiled_twin_falls_back_unless_required() -> None:
    proc = _chosen({}, block_compiled=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "kapi._fast.ring_py"
    proc = _chosen({"KAPI_REQUIRE_EXTENSIONS": "1"}, block_compiled=True)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr or "ModuleNotFoundError" in proc.stderr
