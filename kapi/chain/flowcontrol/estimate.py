"""The work (seats) a request is estimated to take: kube's flowcontrol ``request`` package.

LIST (and a WATCH that sends initial events) by the memory its answer takes (1.34's
SizeBasedListCostEstimate: objects times their average size, 100,000 bytes a seat) or, with that
gate off, by the objects it reads (100 a seat); a mutation by the watchers its event will be
offered to (10 a seat, held a few milliseconds after it finishes); anything else one seat.
The numbers come from what kapi knows for real: the watch caches' object counts and sizes and
their registered watchers (``ObjectStats``, which the registry implements).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from kapi import errors
from kapi.chain.context import RequestInfo
from kapi.chain.flowcontrol import Classification, WorkEstimate
from kapi.metrics import Metrics
from kapi.object.listopts import query_bool, query_int64

# kube's request/config.go
MINIMUM_SEATS = 1
MAXIMUM_LIST_SEATS_BY_SIZE = 100  # with SizeBasedListCostEstimate (1.34: on by default)
MAXIMUM_LIST_SEATS_BY_COUNT = 10
MAXIMUM_MUTATING_SEATS = 10
OBJECTS_PER_SEAT = 100
WATCHES_PER_SEAT = 10
EVENT_ADDITIONAL_DURATION_S = 0.005
# kube's request/list_work_estimator.go
BYTES_PER_SEAT = 100_000
CACHE_MAX_MEMORY_BYTES = 1_000_000  # a LIST from the cache streams: at most this much at once
MAX_OBJECT_SIZE = 1_500_000  # the average assumed when objects are known but their size is not

MUTATING_VERBS = frozenset({"create", "update", "patch", "delete"})  # not deletecollection: as kube


class ObjectStats(Protocol):
    """What the estimates read about a resource (``kapi.registry.store.Registry`` implements it)."""

    def object_stats(self, group: str, resource: str) -> tuple[int, int] | None:
        """(objects, average bytes); None when unknown."""

    def watch_count(self, group: str, resource: str, namespace: str, name: str) -> int:
        """How many watchers a write of that object would be offered to."""

    def lists_from_cache(self, group: str, resource: str, query: dict[str, str]) -> bool:
        """Whether a LIST with ``query`` would be answered by the watch cache."""


class Estimator:
    """kube's WorkEstimator: ``estimate`` per request, after classification (exempt levels need none)."""

    def __init__(self, stats: ObjectStats, metrics: Metrics, *, size_based: bool = True) -> None:
        self.stats = stats
        self.metrics = metrics
        self.size_based = size_based
        self.maximum_list_seats = MAXIMUM_LIST_SEATS_BY_SIZE if size_based else MAXIMUM_LIST_SEATS_BY_COUNT
        # The metrics' children by (priority level, flow schema): ``labels()`` costs more than the estimate
        # (as many as prometheus keeps anyway)
        self._seats: dict[tuple[str, str], Any] = {}
        self._watch_counts: dict[tuple[str, str], Any] = {}

    def estimate(self, info: RequestInfo, query: dict[str, str], cls: Classification,
                 max_seats: int) -> WorkEstimate:
        """The request's work estimate; ``max_seats`` is its priority level's (0: no limit of its own).

        Observes ``apiserver_flowcontrol_work_estimated_seats`` (and, for a mutation, the watch
        count sample), as kube's filter does when it estimates. An exempt level's request is not
        estimated (kube dispatches it before asking): one seat, nothing observed.
        """
        if cls.exempt:
            return WorkEstimate(MINIMUM_SEATS)
        verb = info.verb if info.is_resource else ""
        if verb == "list" or verb == "watch":
            estimate = self._list(info, query, max_seats)
        elif verb in MUTATING_VERBS:
            estimate = self._mutating(info, cls, max_seats)
        else:
            estimate = WorkEstimate(MINIMUM_SEATS)
        key = (cls.priority_level, cls.flow_schema)
        observer = self._seats.get(key)
        if observer is None:
            observer = self._seats[key] = self.metrics.apf_work_estimated_seats.labels(*key)
        observer.observe(estimate.max_seats)
        return estimate

    # ------------------------------------------------------------------ LIST, WATCH

    def _list(self, info: RequestInfo, query: dict[str, str], max_seats: int) -> WorkEstimate:
        if max_seats <= 0 or max_seats > self.maximum_list_seats:
            max_seats = self.maximum_list_seats
        try:
            limit = query_int64(query, "limit") or 0
        except errors.BadRequest:
            return WorkEstimate(max_seats)  # kube: options it cannot convert cost the most
        if info.verb == "watch":
            # Only a watch that sends the current state first costs a LIST (kube with WatchList on).
            send_initial_events = "sendInitialEvents" in query and query_bool(query, "sendInitialEvents")
            legacy = query.get("resourceVersion", "") in ("", "0")
            if not send_initial_events and not legacy:
                return WorkEstimate(MINIMUM_SEATS)
        stats = self.stats.object_stats(info.group, info.resource)
        if stats is None:
            return WorkEstimate(MINIMUM_SEATS)  # kube: an unknown count costs the least
        from_cache = info.verb == "watch" or self.stats.lists_from_cache(info.group, info.resource, query)
        selected = bool(query.get("labelSelector") or query.get("fieldSelector"))
        single = info.name != ""
        if self.size_based:
            seats = seats_by_size(stats, limit, from_cache, single, selected)
        else:
            seats = seats_by_count(stats[0], limit, from_cache, single, selected)
        return WorkEstimate(min(max(seats, MINIMUM_SEATS), max_seats))

    # --------------------------------------------------------------- mutations

    def _mutating(self, info: RequestInfo, cls: Classification, max_seats: int) -> WorkEstimate:
        if max_seats <= 0 or max_seats > MAXIMUM_MUTATING_SEATS:
            max_seats = MAXIMUM_MUTATING_SEATS
        if info.resource == "serviceaccounts" and info.subresource == "token":
            return WorkEstimate(MINIMUM_SEATS)  # a token request makes no event
        watchers = self.stats.watch_count(info.group, info.resource, info.namespace, info.name)
        key = (cls.priority_level, cls.flow_schema)
        observer = self._watch_counts.get(key)
        if observer is None:
            observer = self._watch_counts[key] = self.metrics.apf_watch_count_samples.labels(*key)
        observer.observe(watchers)
        if watchers < WATCHES_PER_SEAT:
            return WorkEstimate(1)
        final_seats = math.ceil(watchers / WATCHES_PER_SEAT)
        final_work = final_seats * EVENT_ADDITIONAL_DURATION_S  # seat-seconds, kept when the seats are capped
        final_seats = min(final_seats, max_seats)
        return WorkEstimate(1, final_seats, final_work / final_seats)


def seats_by_size(stats: tuple[int, int], limit: int, from_cache: bool, single: bool, selected: bool) -> int:
    """kube 1.34's seatsBasedOnObjectSize: the bytes a LIST holds at once, 100,000 a seat (not capped)."""
    count, average = stats
    if average <= 0 and count != 0:
        average = MAX_OBJECT_SIZE
    limited = limit if 0 < limit < count else count
    if single:
        loaded = 1
    elif from_cache:
        loaded = limited
    elif selected:
        loaded = max(limited, count // 2)  # etcd reads pages until the selector fills the limit
    else:
        loaded = limited
    memory = loaded * average
    if from_cache:
        memory = min(memory, CACHE_MAX_MEMORY_BYTES)
    return math.ceil(memory / BYTES_PER_SEAT)


def seats_by_count(count: int, limit: int, from_cache: bool, single: bool, selected: bool) -> int:
    """kube's seatsBasedOnObjectCount: the objects a LIST processes, 100 a seat (not capped)."""
    limited = limit if 0 < limit < count else count
    if single:
        processed = 1
    elif from_cache:
        processed = count
    elif selected:
        processed = count + limited
    else:
        processed = 2 * limited
    return math.ceil(processed / OBJECTS_PER_SEAT)
