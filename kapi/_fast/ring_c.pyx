# cython: language_level=3
"""Compiled twin of ring_py: the watch cache's event window, a resizing ring of events in revision order.

Same rules as the pure twin (see its docstring): capacity doubles (up to
``max_capacity``) when full while the oldest event is younger than the fresh
duration, and halves (down to ``min_capacity``) when full while the event a
quarter of the way from the end is older than it. Revisions and record times
live in C arrays so "events after rv N" is a C binary search and a list slice.
Revisions must fit in a signed 64-bit integer (etcd's and kapi's do).
"""

import time

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t
from libc.string cimport memset

from kapi.errors import Gone


@cython.final
cdef class EventRing:
    """Events with strictly increasing ``revision`` attributes, oldest first."""

    cdef Py_ssize_t _capacity
    cdef Py_ssize_t _min
    cdef Py_ssize_t _max
    cdef double _fresh_s
    cdef object _clock
    cdef list _buf  # the event objects; slot i pairs with _revs[i] and _times[i]
    cdef int64_t* _revs
    cdef double* _times
    cdef Py_ssize_t _head  # slot of the oldest event, in [0, _capacity)
    cdef Py_ssize_t _n  # number of events held
    # Every event after this revision is in the ring: the last relist's revision, or the
    # revision of the newest event evicted since.
    cdef int64_t _origin

    def __cinit__(self) -> None:
        self._revs = NULL
        self._times = NULL

    def __init__(self, Py_ssize_t capacity=100, *, Py_ssize_t min_capacity=100, Py_ssize_t max_capacity=102_400,
                 double fresh_s=75.0, clock=None) -> None:
        self._capacity = max(1, capacity)
        self._min = max(1, min(min_capacity, self._capacity))
        self._max = max(self._capacity, max_capacity)
        self._fresh_s = fresh_s
        self._clock = clock or time.monotonic
        self._alloc(self._capacity)
        self._head = 0
        self._n = 0
        self._origin = 0

    def __dealloc__(self) -> None:
        PyMem_Free(self._revs)
        PyMem_Free(self._times)

    cdef void _alloc(self, Py_ssize_t capacity) except *:
        """Replace the arrays with empty ones of ``capacity`` slots."""
        cdef int64_t* revs = <int64_t*> PyMem_Malloc(capacity * sizeof(int64_t))
        cdef double* times = <double*> PyMem_Malloc(capacity * sizeof(double))
        if revs == NULL or times == NULL:
            PyMem_Free(revs)
            PyMem_Free(times)
            raise MemoryError()
        memset(times, 0, capacity * sizeof(double))
        PyMem_Free(self._revs)
        PyMem_Free(self._times)
        self._revs = revs
        self._times = times
        self._buf = [None] * capacity

    # ------------------------------------------------------------- state

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._n

    def reset(self, int64_t revision) -> None:
        """Forget every event: the ring now knows everything after ``revision`` (a relist)."""
        self._alloc(self._capacity)
        self._head = 0
        self._n = 0
        self._origin = revision

    @property
    def oldest_known(self) -> int:
        """The lowest rv N for which "events after N" can be answered."""
        return self._origin

    @property
    def newest_revision(self) -> int:
        if self._n:
            return self._revs[(self._head + self._n - 1) % self._capacity]
        return self._origin

    # ------------------------------------------------------------ append

    def append(self, event) -> None:
        """Add the newest event, resizing or evicting the oldest as the window rules say."""
        cdef int64_t revision = event.revision  # read first: a bad event changes nothing
        cdef double now = self._clock()
        self._resize(now)
        if self._n == self._capacity:
            self._origin = self._revs[self._head]
            self._buf[self._head] = None
            self._head += 1
            if self._head == self._capacity:
                self._head = 0
            self._n -= 1
        cdef Py_ssize_t i = self._head + self._n
        if i >= self._capacity:
            i -= self._capacity
        self._buf[i] = event
        self._revs[i] = revision
        self._times[i] = now
        self._n += 1

    cdef void _resize(self, double now) except *:
        if self._n != self._capacity:
            return
        cdef double oldest_time = self._times[self._head]
        if now - oldest_time < self._fresh_s:
            if self._capacity < self._max:
                self._set_capacity(min(self._capacity * 2, self._max))
            return
        cdef double quarter_time = self._times[(self._head + self._capacity - self._capacity // 4) % self._capacity]
        if now - quarter_time > self._fresh_s and self._capacity > self._min:
            self._set_capacity(max(self._capacity // 2, self._min))

    cdef void _set_capacity(self, Py_ssize_t capacity) except *:
        cdef Py_ssize_t keep = min(self._n, capacity)
        cdef Py_ssize_t first = self._n - keep  # logical index of the oldest event kept
        cdef Py_ssize_t old_capacity = self._capacity
        cdef Py_ssize_t k, j
        if first > 0:
            # Halving drops the oldest events; the window is complete after the newest dropped.
            self._origin = self._revs[(self._head + first - 1) % old_capacity]
        cdef list old_buf = self._buf
        cdef int64_t* old_revs = self._revs
        cdef double* old_times = self._times
        # Detach the old arrays so _alloc does not free them before they are copied.
        self._revs = NULL
        self._times = NULL
        try:
            self._alloc(capacity)
            for k in range(keep):
                j = (self._head + first + k) % old_capacity
                self._buf[k] = old_buf[j]
                self._revs[k] = old_revs[j]
                self._times[k] = old_times[j]
        finally:
            if self._revs == NULL:  # allocation failed: keep the old state
                self._revs = old_revs
                self._times = old_times
                self._buf = old_buf
            else:
                PyMem_Free(old_revs)
                PyMem_Free(old_times)
        self._capacity = capacity
        self._head = 0
        self._n = keep

    # ------------------------------------------------------------- reads

    def events_after(self, int64_t revision) -> list:
        """Events with revision > ``revision``, oldest first; 410 Gone if the window no longer reaches it."""
        if revision < self._origin:
            raise Gone(f"too old resource version: {revision} ({self._origin})")
        cdef Py_ssize_t lo = 0, hi = self._n, mid, slot
        cdef Py_ssize_t capacity = self._capacity, head = self._head
        cdef int64_t* revs = self._revs
        while lo < hi:  # first event with revision > revision
            mid = (lo + hi) >> 1
            slot = head + mid
            if slot >= capacity:
                slot -= capacity
            if revs[slot] <= revision:
                lo = mid + 1
            else:
                hi = mid
        cdef Py_ssize_t count = self._n - lo
        if count == 0:
            return []
        cdef Py_ssize_t start = head + lo
        if start >= capacity:
            start -= capacity
        if start + count <= capacity:
            return self._buf[start:start + count]
        # The answer wraps round the end of the ring: two slices.
        return self._buf[start:] + self._buf[:start + count - capacity]

    def covers(self, int64_t revision) -> bool:
        """Whether "events after ``revision``" can be answered."""
        return revision >= self._origin
