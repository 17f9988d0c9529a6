"""Jittered exponential backoff, as client-go's reflector uses it.

client-go: ``NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`` — the delay
doubles from 0.8 s up to 30 s, each wait is the delay plus up to one more delay
at random (jitter 1.0), and the delay starts over once the connection has been
good for two minutes. The jitter is what spreads a herd of clients that lost the
same server at the same moment.
"""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Delays for successive failures; ``reset`` after a success that lasted."""

    def __init__(self, initial_s: float = 0.8, max_s: float = 30.0, factor: float = 2.0, jitter: float = 1.0,
                 reset_after_s: float = 120.0, rand: Callable[[], float] = random.random) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.factor = factor
        self.jitter = jitter
        self.reset_after_s = reset_after_s
        self._rand = rand
        self._delay = 0.0
        self._last_failure: float | None = None

    def next_delay(self, now: float) -> float:
        """The wait before the next attempt after a failure at ``now``."""
        if self._last_failure is not None and now - self._last_failure > self.reset_after_s:
            self._delay = 0.0
        self._last_failure = now
        self._delay = self.initial_s if self._delay == 0 else min(self.max_s, self._delay * self.factor)
        return self._delay + self._rand() * self.jitter * self._delay

    def reset(self) -> None:
        self._delay = 0.0
        self._last_failure = None
