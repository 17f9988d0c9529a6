"""One priority level's queues: kube's fair queuing for server requests (fairqueuing/queueset).

A Limited level with queues has a deck of FIFO queues; each flow's hash deals it a hand of them
(``shufflesharding``) and a request joins the queue of its hand with the least work waiting.
Dispatching is fair queuing in *virtual time*: the meter R advances, in seat-seconds, by what
each active queue would have got since the last event (``min(seats asked, limit) / active
queues`` per second); each queue's ``next_dispatch_r`` is the virtual start of its head, and the
queue whose head would finish first in virtual time goes next (ties: round robin). A request's
work is its initial seats times an estimated 3 ms plus its final seats times its additional
latency; when it finishes, the queue is credited or charged for the difference between the 3 ms
and the real service time, and no queue's next start may precede its head's arrival (kube's
anti-windup bound). Seats are held while a request executes and, with final seats, for its
additional latency after ``finish``.

A request wider than the limit goes alone once nothing else executes (kube's
canAccommodateSeatsLocked). A level whose seats are all lent (current limit 0, a nominal limit
of its own) still dispatches when nothing occupies a seat, as KEP-1040 states the rule ("zero
or below the level's CurrentCL"): every request is wider than 0, and its lent seats come back
only at a borrowing adjustment, which may lend them again while the exempt level is busy. A
level with no seats of its own (nominal 0, kube's "jail") holds its requests until it borrows.

A Reject level (queues 0) only has the concurrency limit; an exempt level (``NoRestraint``)
has no limit at all. Both are counted for the metrics and the dumps like queued levels.

Beyond kube: each level keeps the heaviest flows (FlowSchema, distinguisher) with a decaying sum
of the seat-seconds they used, so ``dump_priority_levels`` can name who is making the load.

All of it is synchronous state changed between checkpoints of a single trio thread; the only
waiting is ``Ticket.wait`` on a trio.Event of its own.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections import OrderedDict, deque
from typing import Any

import trio

from kapi.chain.flowcontrol import (
    CANCELLED,
    CONCURRENCY_LIMIT,
    QUEUE_FULL,
    TIME_OUT,
    FlowDump,
    QueueDump,
    QueueSetDump,
    QueuingConfig,
    Rejected,
    RequestDump,
    WorkEstimate,
)
from kapi.chain.flowcontrol.shufflesharding import Dealer
from kapi.metrics import Metrics

__all__ = ["NoRestraint", "QueueSet", "SeatDemandStats", "Ticket"]

# Seat-seconds are integers of 1e-8 seat-seconds, as kube's SeatSeconds: sums of work stay exact
# (a queue's waiting work returns to exactly 0) and ties break as kube's do.
SS_SCALE = 100_000_000
# kube's estimatedServiceDuration: the work a request is charged for in advance, per seat
ESTIMATED_SERVICE_S = 0.003
_ESTIMATED_SERVICE_SS = round(ESTIMATED_SERVICE_S * SS_SCALE)
# kube's epoch: R is wound back by half its range when it reaches three quarters of it
_MAX_SEAT_SECONDS = (1 << 64) - 1
_R_DECREMENT = _MAX_SEAT_SECONDS // 2
_HIGH_R = _R_DECREMENT + _R_DECREMENT // 2

# The flows a level keeps for FlowDump (least recently seen evicted first), and the half-life of
# their seat-seconds sum.
MAX_FLOWS = 1000
FLOW_HALF_LIFE_S = 60.0
_DECAY_PER_S = math.log(2) / FLOW_HALF_LIFE_S

# A ticket's life
_WAITING, _EXECUTING, _FINISHED, _REJECTED = range(4)


@dataclasses.dataclass(frozen=True, slots=True)
class SeatDemandStats:
    """The seats a level could use (in use + waiting) since the last reading: kube's IntegratorResults."""

    average: float  # time-weighted
    stdev: float  # time-weighted standard deviation
    high_watermark: float
    duration_s: float = 0.0
    low_watermark: float = 0.0


class _Integrator:
    """kube's fairqueuing integrator: the moments of a value over (trio) time."""

    __slots__ = ("_t", "_x", "_elapsed", "_ix", "_ixx", "_min", "_max")

    def __init__(self, now: float) -> None:
        self._t = now
        self._x = 0.0
        self._elapsed = self._ix = self._ixx = 0.0
        self._min = self._max = 0.0

    def set(self, x: float, now: float) -> None:
        dt = now - self._t
        if dt > 0:
            old = self._x
            self._elapsed += dt
            self._ix += old * dt
            self._ixx += old * old * dt
            self._t = now
        self._x = x
        if x < self._min:
            self._min = x
        elif x > self._max:
            self._max = x

    def reset(self, now: float) -> SeatDemandStats:
        self.set(self._x, now)
        elapsed, x = self._elapsed, self._x
        if elapsed > 0:
            average = self._ix / elapsed
            # clamped at 0: a float rounding below zero is no deviation (kube answers NaN there)
            stdev = math.sqrt(max(self._ixx / elapsed - average * average, 0.0))
        else:  # no time passed: the value itself, where kube answers NaN
            average, stdev = x, 0.0
        stats = SeatDemandStats(average, stdev, self._max, elapsed, self._min)
        self._elapsed = self._ix = self._ixx = 0.0
        self._min = self._max = x
        return stats


class _FlowSchemaMetrics:
    """One FlowSchema's children of the level's metrics, looked up once (labels() costs a lock and a dict)."""

    __slots__ = ("_m", "_pl", "_fs", "dispatched", "inqueue_requests", "inqueue_seats", "queue_length",
                 "executing_requests", "executing_seats", "wait_executed", "_wait_rejected", "execution",
                 "_execution_watch", "_rejected", "_no_accommodation")

    def __init__(self, m: Metrics, pl: str, fs: str, exempt: bool) -> None:
        self._m, self._pl, self._fs = m, pl, fs
        self.dispatched = m.apf_dispatched.labels(pl, fs)
        # The four gauges are plain counts here, read by the gauges when scraped: no lock taken
        # per request for them
        self.executing_requests = self.executing_seats = self.inqueue_requests = self.inqueue_seats = 0
        m.apf_executing_requests.labels(pl, fs).set_function(lambda: self.executing_requests)
        m.apf_executing_seats.labels(pl, fs).set_function(lambda: self.executing_seats)
        if not exempt:  # an exempt level's requests never queue: no series of queuing for them
            m.apf_inqueue_requests.labels(pl, fs).set_function(lambda: self.inqueue_requests)
            m.apf_inqueue_seats.labels(pl, fs).set_function(lambda: self.inqueue_seats)
            self.queue_length = m.apf_queue_length_after_enqueue.labels(pl, fs)
            self.wait_executed = m.apf_wait_duration.labels(pl, fs, "true")
        self.execution = m.apf_execution_seconds.labels(pl, fs, "regular")
        self._wait_rejected: Any = None
        self._execution_watch: Any = None
        self._rejected: dict[str, Any] = {}
        self._no_accommodation: Any = None

    def rejected(self, reason: str) -> Any:
        child = self._rejected.get(reason)
        if child is None:
            child = self._rejected[reason] = self._m.apf_rejected.labels(self._pl, self._fs, reason)
        return child

    def wait_rejected(self) -> Any:
        if self._wait_rejected is None:
            self._wait_rejected = self._m.apf_wait_duration.labels(self._pl, self._fs, "false")
        return self._wait_rejected

    def execution_watch(self) -> Any:
        if self._execution_watch is None:
            self._execution_watch = self._m.apf_execution_seconds.labels(self._pl, self._fs, "watch")
        return self._execution_watch

    def no_accommodation(self) -> Any:
        if self._no_accommodation is None:
            self._no_accommodation = self._m.apf_no_accommodation.labels(self._pl, self._fs)
        return self._no_accommodation


class _Flow:
    """One flow's share of the level, for FlowDump; and its hand of queues, dealt once per dealer."""

    __slots__ = ("flow_schema", "distinguisher", "seat_seconds", "t", "executing", "waiting", "dispatched",
                 "rejected", "hand", "hand_hash", "hand_dealer")

    def __init__(self, flow_schema: str, distinguisher: str, now: float) -> None:
        self.flow_schema = flow_schema
        self.distinguisher = distinguisher
        self.seat_seconds = 0.0  # as of ``t``
        self.t = now
        self.executing = self.waiting = self.dispatched = self.rejected = 0
        self.hand: list[int] = []
        self.hand_hash = -1
        self.hand_dealer: Dealer | None = None

    def decayed(self, now: float) -> float:
        return self.seat_seconds * math.exp(-(now - self.t) * _DECAY_PER_S)

    def charge(self, seat_seconds: float, now: float) -> None:
        self.seat_seconds = self.decayed(now) + seat_seconds
        self.t = now


class _Queue:
    """One FIFO of waiting tickets (removed ones are skipped lazily), its virtual start, its executing set."""

    __slots__ = ("index", "waiting", "length", "next_dispatch_r", "executing", "seats_in_use",
                 "initial_seats_sum", "max_seats_sum", "total_work_sum")

    def __init__(self, index: int) -> None:
        self.index = index
        self.waiting: deque[Ticket] = deque()
        self.length = 0  # live tickets in ``waiting``
        self.next_dispatch_r = 0
        self.executing: set[Ticket] = set()
        self.seats_in_use = 0  # includes final seats held after finish
        self.initial_seats_sum = self.max_seats_sum = self.total_work_sum = 0

    def head(self) -> Ticket | None:
        waiting = self.waiting
        while waiting:
            ticket = waiting[0]
            if ticket._in_queue:
                return ticket
            waiting.popleft()
        return None

    def live(self) -> list[Ticket]:
        return [t for t in self.waiting if t._in_queue]


class Ticket:
    """One request's place in a level: ``wait`` for dispatch, ``finish`` when done (both safe to repeat)."""

    __slots__ = ("_qs", "_queue", "_flow", "_fsm", "descr", "initial_seats", "max_seats", "final_seats",
                 "additional_latency_s", "total_work", "final_work", "waiting_seats", "arrival_r", "arrive_t",
                 "start_t", "_state", "_in_queue", "_event", "_reason")

    def __init__(self, qs: QueueSet, estimate: WorkEstimate, descr: RequestDump, flow: _Flow,
                 fsm: _FlowSchemaMetrics, now: float) -> None:
        self._qs = qs
        self._queue: _Queue | None = None
        self._flow = flow
        self._fsm = fsm
        self.descr = descr
        self.initial_seats = initial = estimate.initial_seats
        self.final_seats = final = estimate.final_seats
        self.max_seats = initial if initial >= final else final
        self.additional_latency_s = latency = estimate.additional_latency_s
        self.final_work = round(final * latency * SS_SCALE) if final and latency > 0 else 0
        self.total_work = initial * _ESTIMATED_SERVICE_SS + self.final_work
        self.waiting_seats = 0
        self.arrival_r = 0
        self.arrive_t = now
        self.start_t = 0.0
        self._state = _WAITING
        self._in_queue = False
        self._event: trio.Event | None = None
        self._reason = ""

    @property
    def dispatched(self) -> bool:
        """It was given its seats (it may have finished since)."""
        return self._state == _EXECUTING or self._state == _FINISHED

    async def wait(self, deadline: float) -> None:
        """Return once dispatched; at ``deadline`` (trio time) leave the queue and raise Rejected(TIME_OUT).

        A ticket dispatched at once returns without a checkpoint (the request's own work checkpoints
        soon enough; this runs on every request). Cancelled while waiting (the client went away), the
        ticket leaves its queue, counted as cancelled, and the Cancelled propagates.
        """
        state = self._state
        if state == _EXECUTING or state == _FINISHED:
            return
        if state == _WAITING:
            event = self._event
            assert event is not None
            try:
                with trio.move_on_at(deadline):
                    await event.wait()
            except trio.Cancelled:
                if self._state == _WAITING:
                    self._qs._remove_waiting(self, CANCELLED)
                elif self._state == _EXECUTING:  # dispatched as the cancel came: give the seats back
                    self.finish()
                raise
            if self._state == _EXECUTING or self._state == _FINISHED:
                return
            if self._state == _WAITING:
                self._qs._remove_waiting(self, TIME_OUT)
        raise Rejected(self._reason)

    def finish(self) -> None:
        """Free the seats (final seats are held ``additional_latency_s`` more); a waiting ticket leaves its queue."""
        state = self._state
        if state == _EXECUTING:
            self._state = _FINISHED
            self._qs._finish(self)
        elif state == _WAITING:
            self._qs._remove_waiting(self, CANCELLED)

    def __repr__(self) -> str:
        state = ("waiting", "executing", "finished", "rejected")[self._state]
        return f"<Ticket {self.descr.flow_schema}/{self.descr.distinguisher} {state} seats={self.max_seats}>"


class QueueSet:
    """One priority level: its queues (or none for Reject), its concurrency limit, its counts and metrics."""

    _exempt = False

    def __init__(self, config: QueuingConfig, concurrency_limit: int, *, metrics: Metrics,
                 nursery: trio.Nursery | None = None, nominal_limit: int | None = None) -> None:
        now = trio.current_time()
        self.name = config.name
        self._metrics = metrics
        self._nursery = nursery
        self._config = QueuingConfig(config.name)
        self._limit = 0
        self._nominal = 0
        self._dealer: Dealer | None = None
        self._queues: list[_Queue] = []
        self._r = 0  # kube's currentR, in 1e-8 seat-seconds
        self._epochs = 0  # times R was wound back
        self._last_t = now
        self._robin = -1  # the index of the queue dispatched last
        self._active = 0  # queues with a request waiting or executing
        self._queue_demand = 0  # Σ over the queues of seats in use + the max seats of the waiting
        self._waiting = 0
        self._executing = 0
        self._seats_in_use = 0
        self._seats_waiting = 0
        self._queueless: set[Ticket] = set()
        self._enqueues = 0
        self._dispatched = self._rejected = self._timed_out = self._cancelled = 0
        self._quiescing = False
        self._integrator = _Integrator(now)
        self._fsm: dict[str, _FlowSchemaMetrics] = {}
        self._flows: OrderedDict[tuple[str, str], _Flow] = OrderedDict()
        self._lingering: list[tuple[float, int, Ticket]] = []
        self._linger_seq = 0
        self._linger_running = False
        self._linger_scope: trio.CancelScope | None = None
        self._set_config(config, concurrency_limit, nominal_limit, now)

    # ------------------------------------------------------------------ configuration

    @property
    def concurrency_limit(self) -> int:
        return self._limit

    @property
    def config(self) -> QueuingConfig:
        return self._config

    @property
    def is_idle(self) -> bool:
        """Nothing waiting nor executing (final seats may still be held, as in kube)."""
        return self._waiting == 0 and self._executing == 0

    @property
    def is_quiescing(self) -> bool:
        return self._quiescing

    def configure(self, config: QueuingConfig, concurrency_limit: int, nominal_limit: int | None = None) -> None:
        """Change the queuing and the limit live: queued and executing requests are kept.

        ``nominal_limit`` is the level's own seats (None: ``concurrency_limit``); with none, a
        current limit of 0 holds every request (kube's "jail").

        More queues are added at once; surplus queues go when they drain (kube's attrition).
        Going to Reject (queues 0) keeps the queue length limit and hand size for later.

        Raises:
            ValueError: when hand size and queues make no valid dealer (kube's checkConfig).
        """
        self._set_config(config, concurrency_limit, nominal_limit, self._sync())
        self._quiescing = False

    def _set_config(self, config: QueuingConfig, concurrency_limit: int, nominal_limit: int | None,
                    now: float) -> None:
        dealer = None
        if not self._exempt and config.queues > 0:
            dealer = self._dealer
            if dealer is None or (dealer.hand_size, dealer.deck_size) != (config.hand_size, config.queues):
                # a new dealer: every flow's hand is dealt again at its next request
                dealer = Dealer(hand_size=config.hand_size, deck_size=config.queues)
            if config.queues > len(self._queues):
                self._queues.extend(_Queue(i) for i in range(len(self._queues), config.queues))
            else:
                self._drop_empty_surplus(config.queues)
        elif not self._exempt:
            config = QueuingConfig(config.name, 0, self._config.queue_length_limit, self._config.hand_size)
            self._drop_empty_surplus(0)
        self._config = config
        self._limit = max(concurrency_limit, 0)
        self._nominal = self._limit if nominal_limit is None else max(nominal_limit, 0)
        self._dealer = dealer
        self._dispatch_as_much_as_possible(now)

    def _drop_empty_surplus(self, desired: int) -> None:
        """kube's attrition: queues beyond the desired number go once empty (the last ones first)."""
        queues = self._queues
        surplus = len(queues) - desired
        if surplus <= 0:
            return
        last = queues[self._robin] if 0 <= self._robin < len(queues) else None
        kept: list[_Queue] = []
        for queue in reversed(queues):
            if surplus and queue.length == 0 and not queue.executing:
                surplus -= 1
            else:
                kept.append(queue)
        kept.reverse()
        for index, queue in enumerate(kept):
            queue.index = index
        self._queues = kept
        self._robin = last.index if last is not None and last in kept else min(self._robin, len(kept) - 1)

    def quiesce(self) -> None:
        """Its level left the configuration: new requests are refused; the controller drops it once idle."""
        self._quiescing = True

    # ------------------------------------------------------------------ virtual time

    def _sync(self) -> float:
        """Advance R to now, as the state since the last event would have (kube's syncTimeLocked)."""
        now = trio.current_time()
        dt = now - self._last_t
        self._last_t = now
        if dt > 0 and self._active:
            demand = self._queue_demand
            limit = self._limit
            self._r += round((demand if demand < limit else limit) / self._active * dt * SS_SCALE)
            if self._r >= _HIGH_R:
                self._advance_epoch()
        return now

    def _advance_epoch(self) -> None:
        self._epochs += 1
        self._r -= _R_DECREMENT
        for queue in self._queues:
            if queue.length == 0 and not queue.executing:
                queue.next_dispatch_r = 0
                continue
            queue.next_dispatch_r -= _R_DECREMENT
            for ticket in queue.waiting:
                ticket.arrival_r -= _R_DECREMENT

    def _bound(self, queue: _Queue) -> None:
        """kube's anti-windup: a queue's next virtual start does not precede its head's arrival."""
        head = queue.head()
        if head is not None and queue.next_dispatch_r < head.arrival_r:
            queue.next_dispatch_r = head.arrival_r

    # ------------------------------------------------------------------ requests

    def _flow_schema_metrics(self, fs: str) -> _FlowSchemaMetrics:
        fsm = self._fsm[fs] = _FlowSchemaMetrics(self._metrics, self.name, fs, self._exempt)
        return fsm

    def _flow(self, fs: str, distinguisher: str, now: float) -> _Flow:
        key = (fs, distinguisher)
        flows = self._flows
        flow = flows.get(key)
        if flow is None:
            flow = flows[key] = _Flow(fs, distinguisher, now)
            if len(flows) > MAX_FLOWS:
                flows.popitem(last=False)
        else:
            flows.move_to_end(key)
        return flow

    def start(self, estimate: WorkEstimate, flow_hash: int, descr: RequestDump) -> Ticket:
        """Queue a request, or dispatch it at once when it can go first.

        Raises:
            Rejected: CONCURRENCY_LIMIT at once on a Reject level without room (or a quiescing one),
                QUEUE_FULL at once when seats are taken and its queue is at the length limit.
        """
        now = self._sync()
        fs = descr.flow_schema
        fsm = self._fsm.get(fs) or self._flow_schema_metrics(fs)
        flow = self._flow(fs, descr.distinguisher, now)
        ticket = Ticket(self, estimate, descr, flow, fsm, now)
        if self._quiescing:
            self._reject(ticket, CONCURRENCY_LIMIT)
        dealer = self._dealer
        if dealer is None:  # Reject (queues 0), or exempt: only the concurrency limit
            if not self._exempt and not self._can_accommodate(ticket.max_seats):
                self._reject(ticket, CONCURRENCY_LIMIT)
            self._dispatch_sans_queue(ticket, now)
            return ticket

        # shuffle sharding: the queue of the hand with the least work waiting, visited from a
        # rotating offset so that hands which overlap share their common queues
        if flow.hand_dealer is not dealer or flow.hand_hash != flow_hash:
            flow.hand = dealer.deal(flow_hash)
            flow.hand_dealer, flow.hand_hash = dealer, flow_hash
        hand = flow.hand
        size = len(hand)
        offset = self._enqueues % size
        self._enqueues += 1
        queues = self._queues
        if self._waiting == 0:  # every queue's waiting work is 0: the first visited wins
            queue = queues[hand[offset]]
        else:
            queue = queues[hand[offset]]
            least = queue.total_work_sum
            for i in range(1, size):
                candidate = queues[hand[(offset + i) % size]]
                if candidate.total_work_sum < least:
                    queue, least = candidate, candidate.total_work_sum
        if self._seats_in_use >= self._limit and queue.length >= self._config.queue_length_limit:
            self._reject(ticket, QUEUE_FULL)

        max_seats = ticket.max_seats
        if self._waiting == 0 and self._may_dispatch() and self._can_accommodate(max_seats):
            # Enqueued and dispatched at once, the same as kube's enqueue then dispatch with the
            # only non-empty queue, without the queue's bookkeeping
            ticket.arrival_r = r = self._r
            if queue.length == 0 and not queue.executing:
                queue.next_dispatch_r = r
                self._active += 1
            elif queue.next_dispatch_r < r:
                queue.next_dispatch_r = r
            ticket._queue = queue
            fsm.queue_length.observe(1)
            self._robin = queue.index
            self._dispatch(ticket, queue, now)
            return ticket

        # Enqueue (kube's enqueueToBoundLocked)
        ticket.arrival_r = self._r
        if queue.length == 0 and not queue.executing:
            queue.next_dispatch_r = self._r
            self._active += 1
        ticket._queue = queue
        ticket._in_queue = True
        ticket._event = trio.Event()
        ticket.waiting_seats = max_seats
        queue.waiting.append(ticket)
        queue.length += 1
        queue.initial_seats_sum += ticket.initial_seats
        queue.max_seats_sum += max_seats
        queue.total_work_sum += ticket.total_work
        self._queue_demand += max_seats
        self._waiting += 1
        self._seats_waiting += max_seats
        flow.waiting += 1
        fsm.inqueue_requests += 1
        fsm.inqueue_seats += max_seats
        self._bound(queue)
        fsm.queue_length.observe(queue.length)
        self._integrator.set(self._seats_in_use + self._seats_waiting, now)
        self._dispatch_as_much_as_possible(now)
        return ticket

    def _reject(self, ticket: Ticket, reason: str) -> None:
        self._rejected += 1
        ticket._state = _REJECTED
        ticket._reason = reason
        ticket._flow.rejected += 1
        ticket._fsm.rejected(reason).inc()
        if not self._exempt:
            ticket._fsm.wait_rejected().observe(0.0)
        raise Rejected(reason)

    def _may_dispatch(self) -> bool:
        """A seat is free, or none is occupied in a level with seats of its own (all of them lent)."""
        return self._seats_in_use < self._limit or (self._seats_in_use == 0 and self._nominal > 0)

    def _can_accommodate(self, seats: int) -> bool:
        if seats > self._limit:
            # wider than the level: it goes alone, once nothing else executes (kube's quick fix)
            return self._executing == 0
        return self._seats_in_use + seats <= self._limit

    def _dispatch_sans_queue(self, ticket: Ticket, now: float) -> None:
        self._queueless.add(ticket)
        self._start_executing(ticket, ticket.max_seats, now, None if self._exempt else 0.0)

    def _start_executing(self, ticket: Ticket, seats: int, now: float, waited_s: float | None) -> None:
        """The counts of a ticket given its seats (``waited_s``: observed as its wait, unless None)."""
        ticket._state = _EXECUTING
        ticket.start_t = now
        ticket.descr.start_time = time.time()
        self._executing += 1
        self._seats_in_use += seats
        self._dispatched += 1
        flow = ticket._flow
        flow.executing += 1
        flow.dispatched += 1
        fsm = ticket._fsm
        fsm.dispatched.inc()
        fsm.executing_requests += 1
        fsm.executing_seats += seats
        if waited_s is not None:
            fsm.wait_executed.observe(waited_s)
        self._integrator.set(self._seats_in_use + self._seats_waiting, now)

    def _dispatch(self, ticket: Ticket, queue: _Queue, now: float) -> None:
        """Give a ticket its seats: it leaves the waiting world (already off its queue's FIFO)."""
        limit = self._limit
        if ticket.final_seats > limit > 0:
            # final seats beyond the level: fewer seats for longer, the same work (kube)
            ticket.final_seats = limit
            ticket.additional_latency_s = ticket.final_work / limit / SS_SCALE
            ticket.max_seats = max(ticket.initial_seats, limit)
        seats = ticket.max_seats
        # the seats it asked for while waiting (none when dispatched at once) become seats in use
        self._queue_demand += seats - ticket.waiting_seats
        queue.executing.add(ticket)
        queue.seats_in_use += seats
        queue.next_dispatch_r += ticket.total_work
        self._start_executing(ticket, seats, now, now - ticket.arrive_t)
        event = ticket._event
        if event is not None:
            event.set()

    def _take_from_queue(self, ticket: Ticket, queue: _Queue) -> None:
        ticket._in_queue = False
        queue.length -= 1
        queue.initial_seats_sum -= ticket.initial_seats
        queue.max_seats_sum -= ticket.waiting_seats
        queue.total_work_sum -= ticket.total_work
        self._waiting -= 1
        self._seats_waiting -= ticket.waiting_seats
        ticket._flow.waiting -= 1
        fsm = ticket._fsm
        fsm.inqueue_requests -= 1
        fsm.inqueue_seats -= ticket.waiting_seats

    def _dispatch_as_much_as_possible(self, now: float) -> None:
        while self._waiting and self._may_dispatch() and self._dispatch_one(now):
            pass

    def _dispatch_one(self, now: float) -> bool:
        """kube's dispatchLocked: the head with the least virtual finish, round robin from the last one."""
        queues = self._queues
        n = len(queues)
        best: _Queue | None = None
        best_head: Ticket | None = None
        best_finish = 0
        robin = self._robin
        for _ in range(n):
            robin = (robin + 1) % n
            queue = queues[robin]
            if queue.length:
                head = queue.head()
                assert head is not None
                finish = queue.next_dispatch_r + head.total_work
                if best is None or finish < best_finish:
                    best, best_head, best_finish = queue, head, finish
        if best is None or best_head is None:
            return False
        # the robin index is left as it was when the head does not fit
        if not self._can_accommodate(best_head.max_seats):
            best_head._fsm.no_accommodation().inc()
            return False
        best.waiting.popleft()
        self._take_from_queue(best_head, best)
        self._robin = best.index
        self._dispatch(best_head, best, now)
        self._bound(best)
        return True

    def _remove_waiting(self, ticket: Ticket, reason: str) -> None:
        """A waiting ticket gives up: its deadline passed (TIME_OUT) or its client went away (CANCELLED)."""
        now = self._sync()
        queue = ticket._queue
        assert queue is not None
        self._take_from_queue(ticket, queue)
        self._queue_demand -= ticket.waiting_seats
        if queue.length == 0 and not queue.executing:
            self._active -= 1
        ticket._state = _REJECTED
        ticket._reason = reason
        ticket._flow.rejected += 1
        self._rejected += 1
        if reason == TIME_OUT:
            self._timed_out += 1
        else:
            self._cancelled += 1
        fsm = ticket._fsm
        fsm.rejected(reason).inc()
        fsm.wait_rejected().observe(now - ticket.arrive_t)
        if ticket._event is not None:
            ticket._event.set()
        self._bound(queue)
        self._integrator.set(self._seats_in_use + self._seats_waiting, now)
        # the head that left may have been too wide to fit: the next may fit
        self._dispatch_as_much_as_possible(now)

    def _finish(self, ticket: Ticket) -> None:
        """kube's finishRequestLocked then dispatchAsMuchAsPossibleLocked."""
        now = self._sync()
        self._executing -= 1
        fsm = ticket._fsm
        fsm.executing_requests -= 1
        service_s = now - ticket.start_t
        (fsm.execution_watch() if ticket.descr.verb == "watch" else fsm.execution).observe(service_s)
        ticket._flow.executing -= 1
        ticket._flow.charge(ticket.initial_seats * service_s + ticket.final_seats * ticket.additional_latency_s, now)
        queue = ticket._queue
        if queue is not None:
            queue.executing.discard(ticket)
            # the queue was charged 3 ms per seat in advance: credit or charge the difference
            queue.next_dispatch_r -= round(ticket.initial_seats * (ESTIMATED_SERVICE_S - service_s) * SS_SCALE)
            self._bound(queue)
            if queue.length == 0 and not queue.executing:
                self._active -= 1
        else:
            self._queueless.discard(ticket)
        if not (ticket.additional_latency_s > 0 and ticket.final_seats > 0 and self._linger(ticket, now)):
            self._release(ticket, now)
        self._dispatch_as_much_as_possible(now)

    def _release(self, ticket: Ticket, now: float) -> None:
        seats = ticket.max_seats
        self._seats_in_use -= seats
        ticket._fsm.executing_seats -= seats
        self._integrator.set(self._seats_in_use + self._seats_waiting, now)
        queue = ticket._queue
        if queue is not None:
            queue.seats_in_use -= seats
            self._queue_demand -= seats
            if len(self._queues) > self._config.queues and queue.length == 0 and not queue.executing:
                self._drop_empty_surplus(self._config.queues)

    # ------------------------------------------------------------------ final seats

    def _linger(self, ticket: Ticket, now: float) -> bool:
        """Hold the seats ``additional_latency_s`` more, in one task per level; False when no task can run."""
        if self._nursery is None:
            return False
        until = now + ticket.additional_latency_s
        self._linger_seq += 1
        heapq.heappush(self._lingering, (until, self._linger_seq, ticket))
        if not self._linger_running:
            try:
                self._nursery.start_soon(self._release_lingering)
            except RuntimeError:  # the nursery is closing
                heapq.heappop(self._lingering)
                return False
            self._linger_running = True
        elif self._linger_scope is not None and until < self._linger_scope.deadline:
            self._linger_scope.deadline = until
        return True

    async def _release_lingering(self) -> None:
        lingering = self._lingering
        try:
            while lingering:
                with trio.move_on_at(lingering[0][0]) as scope:
                    self._linger_scope = scope
                    await trio.sleep_forever()
                self._linger_scope = None
                now = self._sync()
                released = False
                while lingering and lingering[0][0] <= now:
                    self._release(heapq.heappop(lingering)[2], now)
                    released = True
                if released:
                    self._dispatch_as_much_as_possible(now)
        finally:
            self._linger_running = False
            self._linger_scope = None
            if lingering:  # cancelled (shutdown): nothing will wait for these seats any more
                now = self._sync()
                while lingering:
                    self._release(heapq.heappop(lingering)[2], now)

    # ------------------------------------------------------------------ readings

    def seat_demand_stats(self) -> SeatDemandStats:
        """The seats in use + waiting since the last call (average, stdev, high watermark), then reset."""
        return self._integrator.reset(trio.current_time())

    def flows(self, limit: int | None = None) -> list[FlowDump]:
        """The flows kept, heaviest first by seat-seconds (decaying; executing requests count so far)."""
        now = trio.current_time()
        running: dict[int, float] = {}
        for ticket in self._executing_tickets():
            key = id(ticket._flow)
            running[key] = running.get(key, 0.0) + ticket.initial_seats * (now - ticket.start_t)
        dumps = [FlowDump(flow.flow_schema, flow.distinguisher, flow.decayed(now) + running.get(id(flow), 0.0),
                          flow.executing, flow.waiting, flow.dispatched, flow.rejected)
                 for flow in self._flows.values()]
        dumps.sort(key=lambda f: (-f.seat_seconds, -f.rejected, f.flow_schema, f.distinguisher))
        return dumps if limit is None else dumps[:limit]

    def _executing_tickets(self) -> list[Ticket]:
        tickets = list(self._queueless)
        for queue in self._queues:
            tickets.extend(queue.executing)
        return tickets

    def dump(self, include_details: bool = False) -> QueueSetDump:
        """kube's QueueSetDump (requests' user, verb and path only with ``include_details``) and the flows."""
        def request(ticket: Ticket) -> RequestDump:
            d = ticket.descr
            estimate = WorkEstimate(ticket.initial_seats, ticket.final_seats, ticket.additional_latency_s)
            if include_details:
                return dataclasses.replace(d, estimate=estimate)
            return RequestDump(d.flow_schema, d.distinguisher, d.arrive_time, d.start_time, estimate)

        queues = [QueueDump(index=q.index, requests=[request(t) for t in q.live()],
                            next_dispatch_r=q.next_dispatch_r / SS_SCALE, executing_requests=len(q.executing),
                            seats_in_use=q.seats_in_use, waiting_seats=q.initial_seats_sum,
                            requests_executing=[request(t) for t in q.executing],
                            max_seats_sum=q.max_seats_sum, total_work_sum=q.total_work_sum / SS_SCALE)
                  for q in self._queues]
        return QueueSetDump(
            queues=queues, waiting=self._waiting, executing=self._executing, seats_in_use=self._seats_in_use,
            seats_waiting=self._seats_waiting, dispatched=self._dispatched, rejected=self._rejected,
            timed_out=self._timed_out, cancelled=self._cancelled, is_idle=self.is_idle,
            is_quiescing=self._quiescing, executing_requests=[request(t) for t in self._queueless],
            flows=self.flows())

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.name} limit={self._limit} queues={len(self._queues)} "
                f"waiting={self._waiting} executing={self._executing} seats={self._seats_in_use}>")


class NoRestraint(QueueSet):
    """An exempt level (kube's queueset with DesiredNumQueues -1): every request is dispatched at once.

    The concurrency limit is only reported; requests are counted for the metrics and dumps (no
    wait-duration observations, as kube's filter makes none for exempt levels).
    """

    _exempt = True
