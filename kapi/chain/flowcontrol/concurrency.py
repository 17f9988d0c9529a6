"""The concurrency limits of the priority levels: nominal shares, lending and borrowing (kube's
apf_controller.go ``finishQueueSetReconfigsLocked`` and ``updateBorrowingLocked``, conc_alloc.go).

The server's concurrency limit (SCL) is divided by ``nominalConcurrencyShares``: nominal
``ceil(SCL·NCS/ΣNCS)``; a level may lend ``round(nominal·lendablePercent/100)`` of it (its lower
bound is the rest) and borrow up to ``round(nominal·borrowingLimitPercent/100)`` more (none set:
SCL). Every adjustment period the current limits are redistributed from each level's smoothed
seat demand: every level gets at least its lower bound, or its demand's high watermark when that
is below its nominal limit, and the rest of the sum of nominal limits is shared in proportion to
the smoothed demands, within the levels' bounds (``compute_concurrency_allocation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

__all__ = ["AllocItem", "Allocation", "LevelLimits", "LevelState", "SeatDemand", "MIN_TARGET",
           "compute_concurrency_allocation", "go_round", "level_limits", "max_seats", "update_borrowing"]

MIN_TARGET = 0.001  # kube's MinTarget: a target below it counts as it (no division by zero)
_EPSILON = 0.0000001
SEAT_DEMAND_SMOOTHING = 0.977  # kube's seatDemandSmoothingCoefficient: a half-life of 5 minutes at 10 s periods
MAX_SEATS_PERCENT = 0.15  # kube's priorityLevelMaxSeatsPercent


def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


@dataclass(frozen=True, slots=True)
class LevelLimits:
    """A level's configured limits: ``nominal``, ``lower`` (nominal less the lendable seats), ``upper``."""

    nominal: int
    lower: int
    upper: int
    lendable: int

    @property
    def initial(self) -> int:
        """The current limit a new level starts with (kube: nominal − lendable/2, Go's integer division)."""
        return self.nominal - self.lendable // 2


def level_limits(server_limit: int, shares: int, share_sum: float, lendable_percent: int | None,
                 borrowing_limit_percent: int | None) -> LevelLimits:
    """kube's finishQueueSetReconfigsLocked for one level (``share_sum`` over every level, exempt included)."""
    nominal = math.ceil(server_limit * shares / share_sum) if share_sum > 0 else 0
    lendable = go_round(nominal * lendable_percent / 100) if lendable_percent is not None else 0
    borrowing = go_round(nominal * borrowing_limit_percent / 100) if borrowing_limit_percent is not None \
        else server_limit
    return LevelLimits(nominal, nominal - lendable, nominal + borrowing, lendable)


def max_seats(nominal: int, hand_size: int) -> int:
    """kube's max seats of a queuing level: max(1, min(ceil(0.15·nominal), nominal div handSize))."""
    by_hand = int(nominal / hand_size) if hand_size > 0 else nominal  # Go's int32 division truncates
    return int(max(1, min(math.ceil(nominal * MAX_SEATS_PERCENT), by_hand)))


@dataclass(slots=True)
class SeatDemand:
    """kube's seatDemandStats: the last period's average, deviation and high watermark, and the smoothed envelope."""

    average: float = 0.0
    stdev: float = 0.0
    high_watermark: int = 0
    smoothed: float = 0.0

    def update(self, average: float, stdev: float, high_watermark: float, duration_s: float) -> None:
        """One period's integrator results folded in (kube's seatDemandStats.update)."""
        self.high_watermark = go_round(high_watermark)
        if duration_s <= 0:
            return
        if math.isnan(stdev):
            stdev = 0.0
        self.average = average
        self.stdev = stdev
        envelope = average + stdev
        self.smoothed = max(envelope, SEAT_DEMAND_SMOOTHING * self.smoothed + (1 - SEAT_DEMAND_SMOOTHING) * envelope)


@dataclass(slots=True)
class LevelState:
    """What the borrowing adjustment reads and writes of one level."""

    name: str
    exempt: bool
    limits: LevelLimits
    current: int
    demand: SeatDemand = field(default_factory=SeatDemand)
    target: float = 0.0  # the allocation's target, the last time (metrics' target_seats)


@dataclass(frozen=True, slots=True)
class AllocItem:
    """One class of computeConcurrencyAllocation: ``target >= lower_bound >= 0``, ``upper_bound >= lower_bound``."""

    target: float
    lower_bound: float
    upper_bound: float


def compute_concurrency_allocation(required_sum: int, classes: Sequence[AllocItem]) -> tuple[list[float], float]:
    """kube's computeConcurrencyAllocation: allocations summing to ``required_sum``, each within its bounds and,
    where the bounds allow, ``fair_prop·target``; returns (allocations, fair_prop).

    Raises:
        ValueError: with kube's messages, when the bounds make it impossible.
    """
    if required_sum < 0:
        raise ValueError("negative sums are not supported")
    required = float(required_sum)
    low_sum = high_sum = target_sum = 0.0
    ub_min = lb_min = float(3.4028234663852886e38)  # Go's math.MaxFloat32
    ub_max = lb_max = 0.0  # kube's minMax starts its max at 0
    targets: list[float] = []
    rel_lower: list[float] = []
    rel_upper: list[float] = []
    for idx, item in enumerate(classes):
        target = item.target
        if item.lower_bound < 0:
            raise ValueError(f"lower bound {idx} is {item.lower_bound} but negative lower bounds are not allowed")
        if target < item.lower_bound:
            raise ValueError(f"target {idx} is {target}, which is below its lower bound of {item.lower_bound}")
        if item.upper_bound < item.lower_bound:
            raise ValueError(f"upper bound {idx} is {item.upper_bound} but should not be less than the lower "
                             f"bound {item.lower_bound}")
        target = max(target, MIN_TARGET)
        low_sum += item.lower_bound
        high_sum += item.upper_bound
        target_sum += target
        lo, hi = item.lower_bound / target, item.upper_bound / target
        targets.append(target)
        rel_lower.append(lo)
        rel_upper.append(hi)
        ub_min, ub_max = min(ub_min, hi), max(ub_max, hi)
        lb_min, lb_max = min(lb_min, lo), max(lb_max, lo)
    if lb_max > 1:
        raise ValueError(f"lbRange.max-1={lb_max - 1}, which is impossible because lbRange.max can not be "
                         "greater than 1")
    if low_sum - required > _EPSILON:
        raise ValueError(f"lower bounds sum to {low_sum}, which is higher than the required sum of {required_sum}")
    if required - high_sum > _EPSILON:
        raise ValueError(f"upper bounds sum to {high_sum}, which is lower than the required sum of {required_sum}")
    if required_sum == 0:
        return [0.0] * len(classes), 0.0
    if low_sum - required > -_EPSILON:  # no wiggle room, constrained from below
        return [c.lower_bound for c in classes], lb_min
    if required - high_sum > -_EPSILON:  # no wiggle room, constrained from above
        return [c.upper_bound for c in classes], ub_max
    fair_prop = required / target_sum
    if lb_max <= fair_prop <= ub_min:  # no bounds matter
        return [t * fair_prop for t in targets], fair_prop
    # Some bounds matter: consider the bounds in increasing order, raising fair_prop from the lowest
    # one; between two bounds, the classes whose allocation follows fair_prop are the "sensitive" ones.
    bounds = sorted(range(2 * len(classes)),
                    key=lambda packed: rel_upper[packed // 2] if packed % 2 else rel_lower[packed // 2])
    sum_so_far = low_sum
    fair_prop = lb_min
    sensitive_target_sum = delta_target_sum = 0.0
    sensitive = delta_sensitive = 0
    next_idx = 0
    while sum_so_far < required:
        while True:
            sensitive_target_sum += delta_target_sum
            sensitive += delta_sensitive
            if next_idx >= len(bounds):
                raise ValueError("impossible: ran out of bounds to consider in bound-constrained problem")
            packed = bounds[next_idx]
            item_idx, upper = divmod(packed, 2)
            if upper:
                next_bound = rel_upper[item_idx]
                delta_sensitive, delta_target_sum = -1, -targets[item_idx]
            else:
                next_bound = rel_lower[item_idx]
                delta_sensitive, delta_target_sum = 1, targets[item_idx]
            next_idx += 1
            if next_bound > fair_prop:
                break
        if sensitive == 0:
            fair_prop = next_bound  # no class changes in this range: skip past it
            continue
        next_prop = fair_prop + (required - sum_so_far) / sensitive_target_sum
        if next_prop <= next_bound:
            fair_prop = next_prop
            break
        sum_so_far += (next_bound - fair_prop) * sensitive_target_sum
        fair_prop = next_bound
    return [max(c.lower_bound, min(c.upper_bound, fair_prop * t)) for c, t in zip(classes, targets)], fair_prop


@dataclass(frozen=True, slots=True)
class Allocation:
    """One adjustment's outcome: the current limit of every level, the fair fraction, whether it fell back."""

    current: dict[str, int]
    fair_frac: float
    backstop: bool  # the allocation failed: the previous current limits were kept (kube logs it)


def update_borrowing(levels: Iterable[LevelState], nominal_sum: int) -> Allocation:
    """kube's updateBorrowingLocked after the seat demands were folded in: every level's new current limit.

    Exempt levels take max(lower, high watermark) off the top; the others share what remains of the
    sum of the nominal limits, each at least max(lower, min(nominal, high watermark)).
    """
    levels = list(levels)
    items: list[AllocItem] = []
    limited: list[LevelState] = []
    min_sum = min_current_sum = 0
    remaining = nominal_sum
    current: dict[str, int] = {}
    for lvl in levels:
        if lvl.exempt:
            current[lvl.name] = max(lvl.limits.lower, lvl.demand.high_watermark)
            remaining -= current[lvl.name]
            continue
        min_current = max(lvl.limits.lower, min(lvl.limits.nominal, lvl.demand.high_watermark))
        lvl.target = max(float(min_current), lvl.demand.smoothed)
        items.append(AllocItem(lvl.target, float(min_current), float(lvl.limits.upper)))
        limited.append(lvl)
        min_sum += lvl.limits.lower
        min_current_sum += min_current
    fair_frac, backstop = 0.0, False
    if remaining <= min_sum:
        for lvl in limited:
            current[lvl.name] = lvl.limits.lower
    elif remaining <= min_current_sum:
        share = (remaining - min_sum) / (min_current_sum - min_sum)
        for lvl in limited:
            min_current = max(lvl.limits.lower, min(lvl.limits.nominal, lvl.demand.high_watermark))
            current[lvl.name] = lvl.limits.lower + go_round((min_current - lvl.limits.lower) * share)
    else:
        try:
            allocs, fair_frac = compute_concurrency_allocation(nominal_sum, items)
        except ValueError:
            allocs, backstop = [float(lvl.current) for lvl in limited], True
        for lvl, alloc in zip(limited, allocs):
            current[lvl.name] = go_round(alloc)
    return Allocation(current, fair_frac, backstop)
