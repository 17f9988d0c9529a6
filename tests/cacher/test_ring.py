"""EventRing: the watch cache's event window (SEMANTICS §2.1, §3)."""

from __future__ import annotations

import pytest

from kapi.errors import Gone
from kapi._fast.ring_py import EventRing
from tests._fast.ring_fakes import Ev, FakeClock, revs



def fixed(capacity: int, clock: FakeClock | None = None) -> EventRing:
    """A ring that never resizes."""
    return EventRing(capacity, min_capacity=capacity, max_capacity=capacity, clock=clock or FakeClock())


def test_append_keeps_order_and_reports_newest() -> None:
    ring = fixed(4)
    ring.reset(10)
    assert len(ring) == 0 and ring.newest_revision == 10
    for rv in (11, 13, 17):
        ring.append(Ev(rv))
    assert len(ring) == 3
    assert ring.newest_revision == 17
    assert ring.oldest_known == 10
    assert revs(ring.events_after(10)) == [11, 13, 17]


def test_full_ring_evicts_oldest_and_moves_the_window() -> None:
    ring = fixed(4)
    for rv in range(1, 8):
        ring.append(Ev(rv))
    assert len(ring) == 4 and ring.capacity == 4
    assert revs(ring.events_after(3)) == [4, 5, 6, 7]
    # Every event after the newest evicted one (3) is still held.
    assert ring.oldest_known == 3
    assert ring.covers(3) and not ring.covers(2)


def test_wraparound_many_times() -> None:
    ring = fixed(3)
    for rv in range(1, 101):
        ring.append(Ev(rv * 2))
    assert revs(ring.events_after(ring.oldest_known)) == [196, 198, 200]
    assert revs(ring.events_after(197)) == [198, 200]
    assert ring.newest_revision == 200


def test_events_after_boundaries_with_gaps() -> None:
    ring = fixed(8)
    ring.reset(5)
    for rv in (10, 20, 30):
        ring.append(Ev(rv))
    assert revs(ring.events_after(5)) == [10, 20, 30]
    assert revs(ring.events_after(9)) == [10, 20, 30]
    assert revs(ring.events_after(10)) == [20, 30]
    assert revs(ring.events_after(15)) == [20, 30]
    assert revs(ring.events_after(29)) == [30]
    assert revs(ring.events_after(30)) == []
    assert revs(ring.events_after(1000)) == []  # a future rv: nothing yet, no error


def test_rv_exactly_oldest_known_is_served() -> None:
    ring = fixed(2)
    for rv in (1, 2, 3, 4):
        ring.append(Ev(rv))
    assert ring.oldest_known == 2
    assert revs(ring.events_after(2)) == [3, 4]


def test_one_below_oldest_known_is_gone_with_kube_message() -> None:
    """kube-apiserver: ``too old resource version: N (oldest-1)``, oldest-1 being the lowest rv it accepts."""
    ring = fixed(4)
    ring.reset(7)  # a relist at 7, nothing evicted: kube's oldest = 8, lowest accepted = 7
    with pytest.raises(Gone) as info:
        ring.events_after(6)
    assert info.value.code == 410
    assert info.value.message == "too old resource version: 6 (7)"


def test_gone_after_eviction_names_the_lowest_accepted_rv() -> None:
    ring = fixed(2)
    for rv in (1, 2, 3, 4):
        ring.append(Ev(rv))
    with pytest.raises(Gone) as info:
        ring.events_after(1)
    assert info.value.message == f"too old resource version: 1 ({ring.oldest_known})"


def test_reset_forgets_events() -> None:
    ring = fixed(4)
    for rv in (1, 2, 3):
        ring.append(Ev(rv))
    ring.reset(50)
    assert len(ring) == 0
    assert ring.oldest_known == 50 and ring.newest_revision == 50
    assert revs(ring.events_after(50)) == []
    with pytest.raises(Gone):
        ring.events_after(3)
    ring.append(Ev(51))
    assert revs(ring.events_after(50)) == [51]


def test_reset_keeps_capacity() -> None:
    clock = FakeClock()
    ring = EventRing(2, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 4):
        ring.append(Ev(rv))
    assert ring.capacity == 4
    ring.reset(10)
    assert ring.capacity == 4


# ------------------------------------------------------------ resizing


def test_doubles_when_full_and_oldest_is_fresh() -> None:
    clock = FakeClock()
    ring = EventRing(4, min_capacity=4, max_capacity=16, clock=clock)
    for rv in range(1, 5):
        clock.now = rv
        ring.append(Ev(rv))
    assert ring.capacity == 4
    clock.now = 70.0  # the oldest event (t=1) is 69 s old: younger than 75 s
    ring.append(Ev(5))
    assert ring.capacity == 8
    assert len(ring) == 5
    assert ring.oldest_known == 0  # nothing was dropped
    assert revs(ring.events_after(0)) == [1, 2, 3, 4, 5]


def test_doubling_stops_at_max_then_evicts() -> None:
    clock = FakeClock()
    ring = EventRing(2, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 10):
        ring.append(Ev(rv))
    assert ring.capacity == 8
    assert revs(ring.events_after(ring.oldest_known)) == list(range(2, 10))
    assert ring.oldest_known == 1


def test_no_doubling_when_oldest_is_75s_old() -> None:
    clock = FakeClock()
    ring = EventRing(4, min_capacity=4, max_capacity=16, clock=clock)
    for rv in range(1, 5):
        ring.append(Ev(rv))
    clock.now = 75.0  # not younger than the fresh duration: evict instead
    ring.append(Ev(5))
    assert ring.capacity == 4
    assert revs(ring.events_after(1)) == [2, 3, 4, 5]


def test_no_resize_when_not_full() -> None:
    clock = FakeClock()
    ring = EventRing(8, min_capacity=2, max_capacity=16, clock=clock)
    for rv in range(1, 5):
        ring.append(Ev(rv))
    clock.now = 1000.0
    ring.append(Ev(5))
    assert ring.capacity == 8
    assert ring.oldest_known == 0


def test_halves_when_full_and_quarter_event_is_old() -> None:
    clock = FakeClock()
    ring = EventRing(8, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 9):
        clock.now = float(rv)
        ring.append(Ev(rv))
    clock.now = 200.0  # the event at end - capacity/4 (rv 7, t=7) is 193 s old
    ring.append(Ev(9))
    assert ring.capacity == 4
    # Halving kept the newest 4 (5..8); the append then evicted 5.
    assert revs(ring.events_after(ring.oldest_known)) == [6, 7, 8, 9]
    assert ring.oldest_known == 5
    for rv in (1, 4):
        with pytest.raises(Gone):
            ring.events_after(rv)


def test_halving_drops_events_so_older_rvs_are_gone() -> None:
    clock = FakeClock()
    ring = EventRing(16, min_capacity=4, max_capacity=16, clock=clock)
    for rv in range(1, 17):
        ring.append(Ev(rv * 10))
    before = ring.oldest_known
    assert revs(ring.events_after(before)) == [rv * 10 for rv in range(1, 17)]
    clock.now = 100.0
    ring.append(Ev(170))
    assert ring.capacity == 8
    assert revs(ring.events_after(ring.oldest_known)) == [100, 110, 120, 130, 140, 150, 160, 170]
    with pytest.raises(Gone):
        ring.events_after(80)
    assert revs(ring.events_after(90)) == [100, 110, 120, 130, 140, 150, 160, 170]


def test_no_halving_when_quarter_event_is_fresh() -> None:
    clock = FakeClock()
    ring = EventRing(8, min_capacity=2, max_capacity=8, clock=clock)
    for rv in range(1, 7):
        ring.append(Ev(rv))  # t=0
    clock.now = 190.0
    for rv in (7, 8):
        ring.append(Ev(rv))
    clock.now = 200.0  # oldest is old (no doubling), the event at end-2 (rv 7) is 10 s old
    ring.append(Ev(9))
    assert ring.capacity == 8
    assert revs(ring.events_after(ring.oldest_known)) == list(range(2, 10))


def test_halving_not_below_min() -> None:
    clock = FakeClock()
    ring = EventRing(8, min_capacity=6, max_capacity=8, clock=clock)
    for rv in range(1, 9):
        ring.append(Ev(rv))
    clock.now = 500.0
    ring.append(Ev(9))
    assert ring.capacity == 6
    for rv in range(10, 20):
        clock.now += 100.0  # stale events only: the ring would halve if it could
        ring.append(Ev(rv))
    assert ring.capacity == 6
    assert revs(ring.events_after(ring.oldest_known)) == list(range(14, 20))


def test_grow_then_shrink_back() -> None:
    clock = FakeClock()
    ring = EventRing(4, min_capacity=4, max_capacity=64, clock=clock)
    for rv in range(1, 34):
        ring.append(Ev(rv))  # a burst: 4 -> 8 -> 16 -> 32 -> 64
    assert ring.capacity == 64
    rv = 34
    for _ in range(200):  # a slow trickle: every append comes 100 s after the previous one
        if ring.capacity == 4:
            break
        clock.now += 100.0
        ring.append(Ev(rv))
        rv += 1
    assert ring.capacity == 4
    # The window is contiguous: every rv after oldest_known is there exactly once.
    got = revs(ring.events_after(ring.oldest_known))
    assert got == list(range(ring.oldest_known + 1, rv))
