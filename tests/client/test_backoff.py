"""Backoff: client-go's reflector numbers, the jitter that spreads a herd, and the reset."""

from __future__ import annotations

import random
import statistics

from kapi.client.backoff import Backoff


def test_doubles_from_the_initial_delay_up_to_the_cap_without_jitter() -> None:
    b = Backoff(jitter=0.0)
    delays = [b.next_delay(now=float(i)) for i in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_jitter_adds_up_to_one_more_delay() -> None:
    b = Backoff(rand=lambda: 1.0)
    assert b.next_delay(0.0) == 1.6
    b = Backoff(rand=lambda: 0.0)
    assert b.next_delay(0.0) == 0.8


def test_starts_over_after_a_quiet_period_or_a_reset() -> None:
    b = Backoff(jitter=0.0)
    b.next_delay(0.0)
    b.next_delay(1.0)
    assert b.next_delay(2.0) == 3.2
    assert b.next_delay(2.0 + 121.0) == 0.8  # two quiet minutes
    b.next_delay(124.0)
    b.reset()
    assert b.next_delay(125.0) == 0.8


def test_a_herd_of_first_retries_is_spread_over_the_whole_window() -> None:
    rng = random.Random(7)
    firsts = [Backoff(rand=rng.random).next_delay(0.0) for _ in range(200)]
    assert min(firsts) >= 0.8 and max(firsts) <= 1.6
    # Uniform over [0.8, 1.6): no 100 ms window holds more than a fraction of them.
    busiest = max(sum(1 for d in firsts if lo <= d < lo + 0.1) for lo in sorted(firsts))
    assert busiest < 60
    assert statistics.pstdev(firsts) > 0.15
