"""APF's configuration controller (kube's apf_controller.go): the FlowSchemas and
PriorityLevelConfigurations digested into what every request reads, classification, the levels'
queue sets and their concurrency limits with lending and borrowing, FlowSchema status.

A digest reads every object of both informers (kube: on any change, the whole configuration at
once): levels with a broken spec are ignored; a FlowSchema whose level is missing is left out and
marked ``Dangling``; the mandatory ``exempt`` and ``catch-all`` objects are imagined when absent;
a level that left the configuration keeps its queue set, quiescing, until it is idle, then goes.
A level's queue set lives as long as the level: a change reconfigures it live and keeps its queued
requests. Every 10 s the current limits are redistributed from the levels' seat demand
(``concurrency.update_borrowing``). ``classify`` walks FlowSchemas compiled at digest time
(``match``), in matchingPrecedence order then name.

FlowSchema status is written as kube's apiserver writes it through its loopback client: a server-side
apply of the ``Dangling`` condition to ``flowschemas/<name>/status``, forced, by the field manager
``api-priority-and-fairness-config-consumer-v1``. The controller is given what it writes with
(``StatusWriter``, to ``run``): the server gives its ``system:apiserver`` writer, so each write is
admitted and audited; alone (tests) it writes through the registry. A refused or failed write is
logged and tried again, as any failed sync in kube is requeued.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol

import trio

from kapi import errors
from kapi.apis import flowcontrolbootstrap as boot
from kapi.chain.flowcontrol import Classification, QueueSetDump, QueuingConfig, RequestDump, WorkEstimate
from kapi.chain.flowcontrol.concurrency import (LevelLimits, LevelState, go_round, level_limits, max_seats,
                                                update_borrowing)
from kapi.chain.flowcontrol.match import (FlowSchemaMatcher, PolicyRuleMatcher, compile_flow_schema,
                                          request_namespace)
from kapi.chain.flowcontrol.queueset import NoRestraint, QueueSet, Ticket
from kapi.chain.flowcontrol.shufflesharding import Dealer, hash_flow
from kapi.object.meta import now_rfc3339
from kapi.object.validation import go_quote
from kapi.registry.store import WriteOptions

if TYPE_CHECKING:
    from kapi.chain.context import RequestInfo
    from kapi.metrics import Metrics
    from kapi.object.access import UserInfo
    from kapi.registry.informer import Informer, Informers, Item
    from kapi.registry.resources import Resource
    from kapi.registry.store import Registry

__all__ = ["Controller", "DroppedRequests", "PriorityLevel", "StatusWriter", "BORROWING_PERIOD_S", "FIELD_MANAGER"]

log = logging.getLogger("kapi.chain.flowcontrol")
Obj = dict[str, Any]
GROUP = "flowcontrol.apiserver.k8s.io"
FIELD_MANAGER = "api-priority-and-fairness-config-consumer-v1"  # kube's ConfigConsumerAsFieldManager
BORROWING_PERIOD_S = 10.0  # kube's borrowingAdjustmentPeriod
DEMAND_SAMPLE_S = 1.0  # how often the demand_seats histogram samples each level
REAP_POLL_S = 1.0  # how often a quiescing level is looked at (kube: when its last request finishes)
STATUS_RETRY_S = 1.0  # a failed status write is tried again after this
STATUS_UPDATES_PER_MINUTE = 5  # kube's shouldDelayUpdate: after more than 5 writes of one FlowSchema in a minute, wait
MAX_RETRY_AFTER_S = 32  # kube's maxRetryAfter
MEMO_LIMIT = 4096  # users whose candidate FlowSchemas classify() keeps between digests

# v1's defaults, for an object stored before defaulting
_DEFAULT_SHARES = 30
_DEFAULT_QUEUING = {"queues": 64, "handSize": 8, "queueLengthLimit": 50}


class StatusWriter(Protocol):
    """What FlowSchema status is written with: a server-side apply (kube's ``ApplyStatus``), as
    ``Registry.apply``. The server gives a ``Writer`` of ``system:apiserver`` (kapi.controllers.writes),
    which admits and audits each write; a refusal raises the ``StatusError`` an API client would get."""

    async def apply(self, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions, *,
                    force: bool, subresource: str = "") -> tuple[Obj, bool]: ...


class _Broken(ValueError):
    """A PriorityLevelConfiguration this package cannot use (kube's queueSetCompleterForPL errors)."""


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True, slots=True)
class _LevelSpec:
    """What a PriorityLevelConfiguration prescribes, read and checked once."""

    name: str
    uid: str
    exempt: bool
    shares: int
    lendable_percent: int | None
    borrowing_limit_percent: int | None
    queuing: QueuingConfig  # queues 0: Reject (or exempt)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> _LevelSpec:
        """Raises _Broken with kube's reasons for a spec whose unions do not line up."""
        md = obj.get("metadata") or {}
        name, uid = str(md.get("name") or ""), str(md.get("uid") or "")
        spec = obj.get("spec") or {}
        kind = spec.get("type")
        limited, exempt = spec.get("limited"), spec.get("exempt")
        if (kind == "Limited") != isinstance(limited, dict):
            raise _Broken("broken union structure at the top, for Limited")
        if (kind == "Exempt") != isinstance(exempt, dict):
            raise _Broken("broken union structure at the top, for Exempt")
        if (kind == "Exempt") != (name == boot.PL_EXEMPT):
            raise _Broken("non-alignment between name and type")
        if isinstance(exempt, dict):
            return cls(name, uid, True, max(_int(exempt.get("nominalConcurrencyShares"), 0) or 0, 0),
                       _int(exempt.get("lendablePercent"), None), None, QueuingConfig(name))
        assert isinstance(limited, dict)
        response = limited.get("limitResponse") or {}
        queuing = response.get("queuing")
        if (response.get("type") == "Reject") != (not isinstance(queuing, dict)):
            raise _Broken("broken union structure for limit response")
        config = QueuingConfig(name)
        if isinstance(queuing, dict):
            queues = _int(queuing.get("queues"), _DEFAULT_QUEUING["queues"]) or 0
            hand = _int(queuing.get("handSize"), _DEFAULT_QUEUING["handSize"]) or 0
            length = _int(queuing.get("queueLengthLimit"), _DEFAULT_QUEUING["queueLengthLimit"]) or 0
            try:
                Dealer(hand_size=hand, deck_size=queues)
            except ValueError as exc:
                raise _Broken(f"priority level {name!r} has QueuingConfiguration {queues=} {hand=} {length=}, "
                              f"which is invalid: {exc}") from None
            config = QueuingConfig(name, queues, length, hand)
        return cls(name, uid, False, max(_int(limited.get("nominalConcurrencyShares"), _DEFAULT_SHARES) or 0, 0),
                   _int(limited.get("lendablePercent"), None), _int(limited.get("borrowingLimitPercent"), None),
                   config)


@dataclass(eq=False)
class PriorityLevel:
    """One priority level as the controller keeps it (kube's priorityLevelState)."""

    spec: _LevelSpec
    queues: QueueSet  # a NoRestraint for the exempt level
    alloc: LevelState
    homed: bool  # its queue set was made with the controller's nursery (final seats can be held)
    quiescing: bool = False
    max_seats: int = 0  # kube's MaxSeatsTracker: 0 for exempt and Reject levels (the estimator's own cap)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def uid(self) -> str:
        return self.spec.uid

    @property
    def exempt(self) -> bool:
        return self.spec.exempt

    @property
    def limits(self) -> LevelLimits:
        return self.alloc.limits

    @property
    def current_limit(self) -> int:
        return self.alloc.current


@dataclass(frozen=True, slots=True)
class _Route:
    """A FlowSchema in matching order, with what its classification answers."""

    schema: FlowSchemaMatcher
    level: str
    level_uid: str
    exempt: bool

    def classification(self, user: UserInfo, namespace: str) -> Classification:
        fs = self.schema
        return Classification(fs.name, fs.uid, self.level, self.level_uid, fs.distinguisher(user, namespace),
                              self.exempt)


_Candidates = tuple[tuple[_Route, tuple[PolicyRuleMatcher, ...], Classification | None], ...]


@dataclass(frozen=True, slots=True)
class _StatusUpdate:
    name: str
    condition: Obj


class DroppedRequests:
    """kube's droppedRequestsTracker: per level, a Retry-After (1..32 s) that doubles when at least
    3·retryAfter requests were refused in the last retryAfter seconds (at most once per retryAfter)
    and shrinks by one when fewer than retryAfter were."""

    @dataclass(slots=True)
    class _Stats:
        history: deque[tuple[int, int]] = field(default_factory=deque)  # (unix second, refused)
        current_unix: int = 0
        current_count: int = 0
        retry_after: int = 1
        retry_after_update_unix: int = 0

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._levels: dict[str, DroppedRequests._Stats] = {}

    def record(self, level: str) -> None:
        unix = int(self._now())
        stats = self._levels.get(level)
        if stats is None:
            stats = self._levels[level] = self._Stats()
        if stats.current_unix == unix:
            stats.current_count += 1
            return
        self._update_history(stats, stats.current_unix, stats.current_count)
        stats.current_unix, stats.current_count = unix, 1
        self._update_retry_after(stats, unix)

    @staticmethod
    def _update_history(stats: DroppedRequests._Stats, unix: int, count: int) -> None:
        stats.history.append((unix, count))
        keep = min(2 * stats.retry_after, MAX_RETRY_AFTER_S)  # older entries are never needed again
        while stats.history and unix - stats.history[0][0] > keep:
            stats.history.popleft()

    @staticmethod
    def _update_retry_after(stats: DroppedRequests._Stats, unix: int) -> None:
        retry_after = stats.retry_after
        dropped = 0
        for second, count in reversed(stats.history):
            if unix - second > retry_after:
                break
            if second < unix:
                dropped += count
        if unix - stats.retry_after_update_unix >= retry_after and dropped >= 3 * retry_after:
            stats.retry_after = min(retry_after * 2, MAX_RETRY_AFTER_S)
            stats.retry_after_update_unix = unix
        elif dropped < retry_after and retry_after > 1:
            stats.retry_after = retry_after - 1

    def retry_after(self, level: str) -> int:
        stats = self._levels.get(level)
        return stats.retry_after if stats is not None else 1

    def forget(self, level: str) -> None:
        self._levels.pop(level, None)


class Controller:
    """API Priority and Fairness's configuration, classification and queues, kept from the two informers."""

    def __init__(self, informers: Informers, registry: Registry, *, server_concurrency_limit: int,
                 metrics: Metrics) -> None:
        self.registry = registry
        self.status_writer: StatusWriter = registry  # run() is given the server's
        self.metrics = metrics
        self.server_concurrency_limit = server_concurrency_limit
        self._fs_informer: Informer = informers.informer(GROUP, "flowschemas")
        self._pl_informer: Informer = informers.informer(GROUP, "prioritylevelconfigurations")
        # kube reloads on a PriorityLevelConfiguration's spec change and a FlowSchema's spec or status change
        self._pl_informer.add_handler(on_add=self._note_change, on_update=self._on_update(("spec",)),
                                      on_delete=self._note_change)
        self._fs_informer.add_handler(on_add=self._note_change, on_update=self._on_update(("spec", "status")),
                                      on_delete=self._note_change)
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._levels: dict[str, PriorityLevel] = {}
        self._routes: tuple[_Route, ...] = ()
        self._catch_all: _Route | None = None
        self._memo: dict[tuple[str, tuple[str, ...]], _Candidates] = {}
        self._nominal_sum = 0
        self._dropped = DroppedRequests()
        self._recent_updates: deque[tuple[float, str]] = deque()  # (trio time, FlowSchema) of status writes
        self._pending_status: list[_StatusUpdate] = []
        self.digests = 0  # configurations digested so far
        # kube's constructor digests the mandatory configuration: classification works before run()
        self._digest([], [])

    # ------------------------------------------------------------------ the request path

    def classify(self, user: UserInfo, info: RequestInfo) -> Classification:
        """The first FlowSchema matching the request, in matching order; the catch-all one if none does.

        The FlowSchemas (and their rules) whose subjects name a user are memoised per user (name and
        groups, at most MEMO_LIMIT users, until the next digest): a request then checks only their rules.
        """
        namespace = request_namespace(info)
        groups = user.groups
        key = (user.name, groups if type(groups) is tuple else tuple(groups))
        candidates = self._memo.get(key)
        if candidates is None:
            candidates = self._candidates(user, key)
        for route, rules, cls in candidates:
            for rule in rules:
                if rule.matches_request(info, namespace):
                    if cls is not None:
                        return cls
                    return route.classification(user, namespace)
        # Only when no FlowSchema matches system:authenticated / system:unauthenticated (kube warns)
        assert self._catch_all is not None
        return self._catch_all.classification(user, namespace)

    def _candidates(self, user: UserInfo, key: tuple[str, tuple[str, ...]]) -> _Candidates:
        found = []
        for route in self._routes:
            rules = route.schema.rules_for(user)
            if rules:  # the answer made once when it does not depend on the request's namespace
                cls = None if route.schema.distinguisher_method == "ByNamespace" else route.classification(user, "")
                found.append((route, rules, cls))
        candidates = tuple(found)
        memo = self._memo
        if len(memo) >= MEMO_LIMIT:
            del memo[next(iter(memo))]  # the oldest entry
        memo[key] = candidates
        return candidates

    def max_seats(self, priority_level: str) -> int:
        """kube's GetMaxSeats: max(1, min(ceil(0.15·nominal), nominal div handSize)) for a queuing level;
        0 (the estimator's own cap applies) for the exempt level, a Reject level, or an unknown one."""
        level = self._levels.get(priority_level)
        return level.max_seats if level is not None else 0

    def start(self, cls: Classification, estimate: WorkEstimate, descr: RequestDump) -> Ticket:
        """Queue (or dispatch) a classified request in its level.

        Raises:
            Rejected: at once, as the level's queue set refuses it (Reject level full, queue full).
        """
        level = self._levels.get(cls.priority_level)
        if level is None:  # gone since classification (it cannot be, without an await between): catch-all
            level = self._levels[boot.PL_CATCH_ALL]
        # kube hashes the flow only for a level with more than one queue (the hash picks the queue)
        flow_hash = hash_flow(cls.flow_schema, cls.distinguisher) if level.spec.queuing.queues > 1 else 0
        return level.queues.start(estimate, flow_hash, descr)

    def note_rejected(self, priority_level: str) -> None:
        """A request of ``priority_level`` was refused (kube's RecordDroppedRequest)."""
        self._dropped.record(priority_level)

    def retry_after_s(self, priority_level: str) -> int:
        """The Retry-After for a refusal at ``priority_level`` now (1..32 s)."""
        return self._dropped.retry_after(priority_level)

    # ------------------------------------------------------------------ debugging

    def dump(self, include_details: bool = False) -> dict[str, QueueSetDump]:
        """Every level's queue set, by name (sorted)."""
        return {name: self._levels[name].queues.dump(include_details) for name in sorted(self._levels)}

    @property
    def priority_levels(self) -> dict[str, PriorityLevel]:
        """The levels in use, quiescing ones included, by name (a copy)."""
        return dict(self._levels)

    @property
    def flow_schemas(self) -> tuple[FlowSchemaMatcher, ...]:
        """The FlowSchemas classification uses, in matching order (imagined mandatory ones included)."""
        return tuple(r.schema for r in self._routes)

    # ------------------------------------------------------------------ running

    def _note_change(self, _item: Any = None) -> None:
        self._changed.set()

    def _on_update(self, parts: tuple[str, ...]) -> Callable[[Item, Item], None]:
        def on_update(old: Item, new: Item) -> None:
            try:
                before, after = old.object(), new.object()
            except Exception:  # undecodable (the informer logs it): digest, which leaves it out
                self._changed.set()
                return
            if any(before.get(part) != after.get(part) for part in parts):
                self._changed.set()
        return on_update

    async def run(self, *, status_writer: StatusWriter | None = None,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Digest the configuration once both informers have synced (``started()`` then), again on every
        change; redistribute the concurrency limits every 10 s; write FlowSchema status with
        ``status_writer`` (the server's ``system:apiserver`` writer; None: the registry, unadmitted)."""
        if status_writer is not None:
            self.status_writer = status_writer
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for level in self._levels.values():  # made before, or by a run that ended: remade once idle
                level.homed = False
            try:
                await self._run(nursery, task_status)
            finally:
                self._nursery = None

    async def _run(self, nursery: trio.Nursery, task_status: trio.TaskStatus[None]) -> None:
        await self._fs_informer.wait_for_sync()
        await self._pl_informer.wait_for_sync()
        self._changed = trio.Event()
        self._digest_informers()
        task_status.started()
        nursery.start_soon(self._adjust_borrowing)
        while True:
            wait = await self._write_status()  # None, or after a failure or kube's per-minute bound
            if any(level.quiescing for level in self._levels.values()):
                wait = REAP_POLL_S if wait is None else min(wait, REAP_POLL_S)
            with trio.move_on_after(math.inf if wait is None else wait):
                await self._changed.wait()
            self._changed = trio.Event()
            self._digest_informers()

    async def _adjust_borrowing(self) -> None:
        adjust_at = trio.current_time() + BORROWING_PERIOD_S
        while True:
            await trio.sleep(DEMAND_SAMPLE_S)
            self._sample_demand()
            if trio.current_time() >= adjust_at:
                adjust_at += BORROWING_PERIOD_S
                self._update_borrowing()

    def _sample_demand(self) -> None:
        """apiserver_flowcontrol_demand_seats: each level's seats in use + waiting ÷ its current limit (kube's
        denominator; SCL/10 for a level at 0), sampled every second where kube integrates over time."""
        fallback = max(1, go_round(self.server_concurrency_limit / 10))
        for level in self._levels.values():
            dump = level.queues.dump()
            denominator = level.current_limit if level.current_limit > 0 else fallback
            self.metrics.apf_demand_seats.labels(priority_level=level.name).observe(
                (dump.seats_in_use + dump.seats_waiting) / denominator)

    # ------------------------------------------------------------------ digestion

    def _digest_informers(self) -> None:
        self._digest(_objects(self._pl_informer), _objects(self._fs_informer))

    def _digest(self, pl_objects: Iterable[Obj], fs_objects: Iterable[Obj]) -> None:
        """kube's lockAndDigestConfigObjects: the new levels, FlowSchemas, limits and status updates."""
        self.digests += 1
        old = self._levels
        new: dict[str, PriorityLevel] = {}
        specs: dict[str, _LevelSpec] = {}
        for obj in pl_objects:
            try:
                spec = _LevelSpec.from_object(obj)
            except _Broken as exc:
                log.warning("ignoring PriorityLevelConfiguration %s: %s", (obj.get("metadata") or {}).get("name"),
                            exc)
                continue
            specs[spec.name] = spec

        # FlowSchemas: those pointing at a missing level are left out (and Dangling)
        routes: list[FlowSchemaMatcher] = []
        updates: list[_StatusUpdate] = []
        for obj in fs_objects:
            fs = compile_flow_schema(obj)
            found = fs.priority_level in specs
            update = _dangling_update(obj, fs, found)
            if update is not None:
                updates.append(update)
            if found:
                routes.append(fs)
        routes.sort(key=lambda f: f.sort_key)
        if not any(f.name == boot.FS_EXEMPT for f in routes):
            routes.insert(0, compile_flow_schema(_mandatory(boot.mandatory_flow_schemas(), boot.FS_EXEMPT)))
        if not any(f.name == boot.FS_CATCH_ALL for f in routes):
            routes.append(compile_flow_schema(_mandatory(boot.mandatory_flow_schemas(), boot.FS_CATCH_ALL)))

        for name, spec in specs.items():
            new[name] = self._level_for(spec, old.get(name))
        # Levels that left the configuration: the mandatory ones stay as they were, the others quiesce
        # until idle (kube's processOldPLsLocked), still counted in the shares so that they drain
        for name, level in old.items():
            if name in new:
                continue
            if name in (boot.PL_EXEMPT, boot.PL_CATCH_ALL):
                new[name] = self._level_for(level.spec, level)  # retained without an object (kube)
                continue
            if level.queues.is_idle:
                log.info("removing priority level %s", name)
                self._dropped.forget(name)
                self._forget_metrics(name)
                continue
            if not level.quiescing:
                log.info("priority level %s became undesired", name)
                level.quiescing = True
                level.queues.quiesce()
            new[name] = level
        for name in (boot.PL_EXEMPT, boot.PL_CATCH_ALL):
            if name not in new:
                new[name] = self._level_for(
                    _LevelSpec.from_object(_mandatory(boot.mandatory_priority_level_configurations(), name)), None)

        share_sum = float(sum(level.spec.shares for level in new.values()))
        nominal_sum = 0
        for name, level in new.items():
            spec = level.spec
            limits = level_limits(self.server_concurrency_limit, spec.shares, share_sum, spec.lendable_percent,
                                  spec.borrowing_limit_percent)
            m = self.metrics
            m.apf_nominal_limit_seats.labels(priority_level=name).set(limits.nominal)
            m.apf_lower_limit_seats.labels(priority_level=name).set(limits.lower)
            m.apf_upper_limit_seats.labels(priority_level=name).set(limits.upper)
            fresh = level.alloc.current < 0
            level.alloc.limits = limits
            if fresh:
                level.alloc.current = limits.initial
            nominal_sum += limits.nominal
            queuing = spec.queuing
            level.max_seats = max_seats(limits.nominal, queuing.hand_size) if queuing.queues > 0 else 0

        self._levels = new
        self._nominal_sum = nominal_sum
        self._routes = tuple(_Route(fs, fs.priority_level, new[fs.priority_level].uid, new[fs.priority_level].exempt)
                             for fs in routes)
        self._catch_all = next(r for r in self._routes if r.schema.name == boot.FS_CATCH_ALL)
        self._memo = {}
        self._pending_status = updates
        self._update_borrowing()

    def _level_for(self, spec: _LevelSpec, level: PriorityLevel | None) -> PriorityLevel:
        """The level's state for ``spec``: the existing one, respecified (its queues kept), or a new one."""
        if level is not None and level.exempt == spec.exempt and (level.homed or not level.queues.is_idle
                                                                  or self._nursery is None):
            if level.quiescing:
                log.info("priority level %s was undesired and has become desired again", spec.name)
                level.quiescing = False
            level.spec = spec
            return level
        # A new level (or one made before run() had a nursery, still unused): its queue set, at the
        # limit its configuration starts with; the borrowing adjustment sets the real one at once
        kind = NoRestraint if spec.exempt else QueueSet
        queues = kind(spec.queuing, 0, metrics=self.metrics, nursery=self._nursery)
        return PriorityLevel(spec, queues, LevelState(spec.name, spec.exempt, LevelLimits(0, 0, 0, 0), -1),
                             homed=self._nursery is not None)

    def _update_borrowing(self) -> None:
        """kube's updateBorrowingLocked: fold in each level's seat demand, redistribute, apply the limits."""
        levels = list(self._levels.values())
        for level in levels:
            stats = level.queues.seat_demand_stats()
            level.alloc.demand.update(stats.average, stats.stdev, stats.high_watermark, stats.duration_s)
        allocation = update_borrowing([level.alloc for level in levels], self._nominal_sum)
        m = self.metrics
        m.apf_seat_fair_frac.set(allocation.fair_frac)
        if allocation.backstop:
            log.error("unable to derive new concurrency limits: the previous ones are kept")
        for level in levels:
            current = allocation.current[level.name]
            level.alloc.current = current
            demand = level.alloc.demand
            name = level.name
            m.apf_current_limit_seats.labels(priority_level=name).set(current)
            m.apf_demand_seats_high_watermark.labels(priority_level=name).set(demand.high_watermark)
            m.apf_demand_seats_average.labels(priority_level=name).set(demand.average)
            m.apf_demand_seats_stdev.labels(priority_level=name).set(demand.stdev)
            m.apf_demand_seats_smoothed.labels(priority_level=name).set(demand.smoothed)
            m.apf_target_seats.labels(priority_level=name).set(level.alloc.target)
            level.queues.configure(level.spec.queuing, current, level.alloc.limits.nominal)
            if level.quiescing:  # configure() takes a level out of quiescing: it stays in
                level.queues.quiesce()

    def _forget_metrics(self, name: str) -> None:
        m = self.metrics
        for gauge in (m.apf_demand_seats, m.apf_nominal_limit_seats, m.apf_lower_limit_seats, m.apf_upper_limit_seats,
                      m.apf_current_limit_seats, m.apf_demand_seats_high_watermark, m.apf_demand_seats_average,
                      m.apf_demand_seats_stdev, m.apf_demand_seats_smoothed, m.apf_target_seats):
            try:
                gauge.remove(name)
            except KeyError:
                pass

    # ------------------------------------------------------------------ FlowSchema status

    async def _write_status(self) -> float | None:
        """Write the pending Dangling conditions; the seconds after which to digest again (None: no need)."""
        updates, self._pending_status = self._pending_status, []
        now = trio.current_time()
        while self._recent_updates and self._recent_updates[0][0] < now - 60:
            self._recent_updates.popleft()
        delay: float | None = None
        res = self._fs_informer.res
        opts = WriteOptions(field_manager=FIELD_MANAGER)
        for update in updates:
            if sum(1 for _, name in self._recent_updates if name == update.name) > STATUS_UPDATES_PER_MINUTE:
                delay = delay or float(30 + random.randrange(45))  # kube: 30..74 s
                continue
            self._recent_updates.append((now, update.name))
            try:
                await self.status_writer.apply(res, "", update.name, _status_apply_configuration(res, update), opts,
                                               force=True, subresource="status")
            except errors.NotFound:
                continue  # deleted meanwhile: its deletion is coming
            except Exception as err:  # refused by admission, a webhook down, a conflict, storage: again later
                log.warning("failed to set a status.condition for FlowSchema %s: %s", update.name, err,
                            exc_info=not isinstance(err, errors.KapiError))
                delay = STATUS_RETRY_S if delay is None else min(delay, STATUS_RETRY_S)
        return delay


def _objects(informer: Informer) -> list[Obj]:
    """The informer's objects, decoded; an undecodable one is left out (the informer logs it)."""
    out = []
    for item in informer.items():
        try:
            out.append(item.object())
        except Exception:
            continue
    return out


def _mandatory(objects: list[Obj], name: str) -> Obj:
    return next(o for o in objects if o["metadata"]["name"] == name)


def _dangling_update(obj: Obj, fs: FlowSchemaMatcher, found: bool) -> _StatusUpdate | None:
    """kube's presyncFlowSchemaStatus: the Dangling condition to write, or None when it is already so."""
    if found:
        status, reason = "False", "Found"
        message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
                   f"{go_quote(fs.priority_level)} and it exists")
    else:
        status, reason = "True", "NotFound"
        message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
                   f"{go_quote(fs.priority_level)} but there is no such object")
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Dangling":
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (status, reason, message):
                return None
            break
    return _StatusUpdate(fs.name, {"type": "Dangling", "status": status, "lastTransitionTime": now_rfc3339(),
                                   "reason": reason, "message": message})


def _status_apply_configuration(res: Resource, update: _StatusUpdate) -> Obj:
    """kube's toFlowSchemaApplyConfiguration: the FlowSchema's name and its one condition, the whole
    intent of the field manager (the other conditions, keyed by type, are left to their owners)."""
    return {"apiVersion": f"{res.group}/{res.version}", "kind": res.kind, "metadata": {"name": update.name},
            "status": {"conditions": [dict(update.condition)]}}
