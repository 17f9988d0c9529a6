"""The watch cache's event window: a resizing ring of events in revision order.

Reproduces kube-apiserver's watchCache event buffer (SEMANTICS §3): capacity
starts at the configured size, doubles (up to ``max_capacity``) when full while
its oldest event is younger than the fresh duration, and halves (down to
``min_capacity``) when full while the event a quarter of the way from the end
is older than it. It answers "events after rv N", or says N is too old.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from kapi.errors import Gone


class EventRing:
    """Events with strictly increasing ``revision`` attributes, oldest first."""

    def __init__(self, capacity: int = 100, *, min_capacity: int = 100, max_capacity: int = 102_400,
                 fresh_s: float = 75.0, clock: Callable[[], float] | None = None) -> None:
        self._capacity = max(1, capacity)
        self._min = max(1, min(min_capacity, self._capacity))
        self._max = max(self._capacity, max_capacity)
        self._fresh_s = fresh_s
        self._clock = clock or time.monotonic
        self._buf: list[Any] = [None] * self._capacity
        self._times: list[float] = [0.0] * self._capacity
        self._start = 0  # index (unbounded counter) of the oldest event
        self._end = 0  # index one past the newest event
        # Every event after this revision is in the ring: the last relist's revision, or the
        # revision of the newest event evicted since.
        self._origin = 0

    # ------------------------------------------------------------- state

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._end - self._start

    def reset(self, revision: int) -> None:
        """Forget every event: the ring now knows everything after ``revision`` (a relist)."""
        self._buf = [None] * self._capacity
        self._times = [0.0] * self._capacity
        self._start = self._end = 0
        self._origin = revision

    @property
    def oldest_known(self) -> int:
        """The lowest rv N for which "events after N" can be answered."""
        return self._origin

    @property
    def newest_revision(self) -> int:
        if self._end > self._start:
            return int(self._buf[(self._end - 1) % self._capacity].revision)
        return self._origin

    # ------------------------------------------------------------ append

    def append(self, event: Any) -> None:
        """Add the newest event, resizing or evicting the oldest as the window rules say."""
        now = self._clock()
        self._resize(now)
        if self._end - self._start == self._capacity:
            evicted = self._buf[self._start % self._capacity]
            self._origin = int(evicted.revision)
            self._buf[self._start % self._capacity] = None
            self._start += 1
        i = self._end % self._capacity
        self._buf[i] = event
        self._times[i] = now
        self._end += 1

    def _resize(self, now: float) -> None:
        if self._end - self._start != self._capacity:
            return
        oldest_time = self._times[self._start % self._capacity]
        if now - oldest_time < self._fresh_s:
            if self._capacity < self._max:
                self._set_capacity(min(self._capacity * 2, self._max))
            return
        quarter_time = self._times[(self._end - self._capacity // 4) % self._capacity]
        if now - quarter_time > self._fresh_s and self._capacity > self._min:
            self._set_capacity(max(self._capacity // 2, self._min))

    def _set_capacity(self, capacity: int) -> None:
        keep = min(self._end - self._start, capacity)
        first = self._end - keep
        if first > self._start:
            # Halving drops the oldest events; the window is complete after the newest dropped.
            self._origin = int(self._buf[(first - 1) % self._capacity].revision)
        events = [self._buf[i % self._capacity] for i in range(first, self._end)]
        times = [self._times[i % self._capacity] for i in range(first, self._end)]
        self._capacity = capacity
        self._buf = events + [None] * (capacity - keep)
        self._times = times + [0.0] * (capacity - keep)
        self._start, self._end = 0, keep

    # ------------------------------------------------------------- reads

    def events_after(self, revision: int) -> Sequence[Any]:
        """Events with revision > ``revision``, oldest first; 410 Gone if the window no longer reaches it."""
        oldest = self.oldest_known
        if revision < oldest:
            raise Gone(f"too old resource version: {revision} ({oldest})")
        n = self._end - self._start
        lo, hi = 0, n
        while lo < hi:  # first event with revision > revision
            mid = (lo + hi) // 2
            if self._buf[(self._start + mid) % self._capacity].revision <= revision:
                lo = mid + 1
            else:
                hi = mid
        return [self._buf[(self._start + k) % self._capacity] for k in range(lo, n)]

    def covers(self, revision: int) -> bool:
        """Whether "events after ``revision``" can be answered."""
        return revision >= self.oldest_known
