"""API Priority and Fairness (kube's ``k8s.io/apiserver/pkg/util/flowcontrol``): the values its parts share.

The parts, each a module of this package:

- ``shufflesharding``: the flow hash and kube's dealer of hands of queues.
- ``queueset``: one priority level's queues: fair queuing by virtual seat-seconds, queue limits,
  time-outs in queue, seats held while a request executes (``NoRestraint`` for exempt levels).
- ``match``: FlowSchema subjects and rules against a request (kube's rule.go).
- ``controller``: the configuration digested from the FlowSchema and PriorityLevelConfiguration
  informers, classification, the concurrency limits with lending and borrowing (kube's
  apf_controller.go and conc_alloc.go), FlowSchema status conditions.
- ``estimate``: the work (seats) a request is estimated to take (kube's request package).
- ``debug``: the ``/debug/api_priority_and_fairness/dump_*`` answers.

The ``flowcontrol`` filter in ``kapi.chain.filters`` puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# kube's rejection reasons, as in apiserver_flowcontrol_rejected_requests_total{reason}
QUEUE_FULL = "queue-full"
CONCURRENCY_LIMIT = "concurrency-limit"
TIME_OUT = "time-out"
CANCELLED = "cancelled"

# The body and headers of a rejected request (kube's tooManyRequests: plain text, not a Status)
TOO_MANY_REQUESTS_MESSAGE = "Too many requests, please try again later."
FLOW_SCHEMA_UID_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"


class Rejected(Exception):
    """A request APF will not execute: ``reason`` is one of the four above."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class WorkEstimate:
    """kube's WorkEstimate: seats held while executing, then ``final_seats`` for ``additional_latency_s`` more."""

    initial_seats: int = 1
    final_seats: int = 0
    additional_latency_s: float = 0.0

    @property
    def max_seats(self) -> int:
        return max(self.initial_seats, self.final_seats)

    def seat_seconds(self, execution_s: float) -> float:
        """The work this estimate makes of an execution of ``execution_s`` (queueset's virtual-time charge)."""
        return self.initial_seats * execution_s + self.final_seats * self.additional_latency_s


@dataclass(frozen=True, slots=True)
class QueuingConfig:
    """A Limited priority level's queuing (``limitResponse``): queues == 0 means Reject (no queuing)."""

    name: str  # the priority level's name
    queues: int = 0
    queue_length_limit: int = 0
    hand_size: int = 0


@dataclass(frozen=True, slots=True)
class Classification:
    """What classification found for a request: the FlowSchema, its priority level, the flow."""

    flow_schema: str
    flow_schema_uid: str
    priority_level: str
    priority_level_uid: str
    distinguisher: str  # "" when the FlowSchema has no distinguisherMethod
    exempt: bool  # the priority level is type Exempt

    @property
    def headers(self) -> list[tuple[str, str]]:
        """The two response headers kube sets on every classified request, answered or rejected."""
        return [(FLOW_SCHEMA_UID_HEADER, self.flow_schema_uid), (PRIORITY_LEVEL_UID_HEADER, self.priority_level_uid)]


# ------------------------------------------------------------------ dumps (kube's debug package)


@dataclass(slots=True)
class RequestDump:
    """One request in a queue or executing (kube's debug.RequestDump)."""

    flow_schema: str
    distinguisher: str
    arrive_time: float  # wall-clock seconds (time.time())
    start_time: float | None  # None while waiting
    estimate: WorkEstimate
    user: str = ""  # the user name (dump_requests ?includeRequestDetails=1)
    verb: str = ""
    path: str = ""
    namespace: str = ""  # the rest of kube's RequestInfo columns in dump_requests' details
    name: str = ""
    api_version: str = ""  # group/version ("v1" for the core group; "" for a non-resource request)
    resource: str = ""
    subresource: str = ""


@dataclass(slots=True)
class QueueDump:
    """One queue of a priority level (kube's debug.QueueDump)."""

    index: int
    requests: list[RequestDump] = field(default_factory=list)  # waiting, oldest first
    next_dispatch_r: float = 0.0  # the virtual start time of its head, seat-seconds
    executing_requests: int = 0
    seats_in_use: int = 0
    waiting_seats: int = 0  # QueueSum.InitialSeatsSum
    max_seats_sum: int = 0  # QueueSum.MaxSeatsSum: the waiting requests' max(initial, final) seats
    total_work_sum: float = 0.0  # QueueSum.TotalWorkSum: the waiting requests' estimated work, seat-seconds
    requests_executing: list[RequestDump] = field(default_factory=list)  # dispatched from this queue


@dataclass(slots=True)
class FlowDump:
    """Beyond kube: one flow's share of a priority level (who is making the load)."""

    flow_schema: str
    distinguisher: str
    seat_seconds: float  # a decaying sum over the last minutes
    executing: int = 0
    waiting: int = 0
    dispatched: int = 0  # totals since the level was made
    rejected: int = 0


@dataclass(slots=True)
class QueueSetDump:
    """One priority level's state (kube's debug.QueueSetDump), with its heaviest flows."""

    queues: list[QueueDump] = field(default_factory=list)
    waiting: int = 0
    executing: int = 0
    seats_in_use: int = 0
    seats_waiting: int = 0
    dispatched: int = 0
    rejected: int = 0
    timed_out: int = 0
    cancelled: int = 0
    is_idle: bool = True
    is_quiescing: bool = False
    executing_requests: list[RequestDump] = field(default_factory=list)
    flows: list[FlowDump] = field(default_factory=list)  # heaviest first
