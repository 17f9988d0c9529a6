"""Audit (kube's advanced auditing): the policy, the event of each request, and where events go.

``Audit`` is what the chain's audit filters hold: the policy read from ``--audit-policy-file`` and
the backends (``--audit-log-path``, ``--audit-webhook-config-file``); ``run`` keeps the backends'
writers going for the server's life. The filters are in ``kapi.chain.audit.filter``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import trio

from kapi.chain.audit.policy import LEVELS, Policy, PolicyError, load_policy, parse_policy
from kapi.metrics import Metrics

__all__ = ["Audit", "Backend", "Policy", "PolicyError", "load_policy", "parse_policy"]

Obj = dict[str, Any]


class Backend(Protocol):
    """Where events go: ``process_nowait`` queues a stage's dict (never changed afterwards); ``process``
    may wait for it to be delivered (the webhook's blocking modes); ``run`` is the writer task."""

    name: str
    blocking: bool
    on_error: Callable[[str, int], None] | None  # set by Audit: events a backend failed to store

    def process_nowait(self, event: Obj) -> bool: ...

    async def process(self, event: Obj) -> bool: ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None: ...


@dataclass
class Audit:
    """The policy and its backends; ``schema`` decodes protobuf bodies for the Request levels; ``metrics``
    gets kube's apiserver_audit_* counters."""

    policy: Policy
    backends: Sequence[Backend]
    schema: Any = None
    metrics: Metrics | None = None
    blocking: bool = field(init=False)  # some backend wants the request to wait for delivery
    strict: bool = field(init=False)  # a RequestReceived event that cannot be stored fails the request

    def __post_init__(self) -> None:
        self.blocking = any(b.blocking for b in self.backends)
        self.strict = any(getattr(b, "strict", False) for b in self.backends)
        self._levels: dict[str, Any] = {}
        self._events: Any = None
        if self.metrics is not None:  # the counters' children resolved once, not per request
            self._levels = {level: self.metrics.audit_level_total.labels(level=level) for level in LEVELS}
            self._events = self.metrics.audit_event_total
        for backend in self.backends:
            backend.on_error = self._error

    def observe_level(self, level: str) -> None:
        """apiserver_audit_level_total: one per request the policy was asked about."""
        counter = self._levels.get(level)
        if counter is not None:
            counter.inc()

    def rejected(self) -> None:
        if self.metrics is not None:
            self.metrics.audit_requests_rejected_total.inc()

    def _error(self, plugin: str, count: int) -> None:
        if self.metrics is not None:
            self.metrics.audit_error_total.labels(plugin=plugin).inc(count)

    def emit_nowait(self, event: Obj) -> None:
        """Queue ``event`` in every backend (the stages after a streamed answer; every stage when none blocks)."""
        if self._events is not None:
            self._events.inc()
        for backend in self.backends:
            backend.process_nowait(event)

    async def emit(self, event: Obj) -> bool:
        """Hand ``event`` to every backend; False when a blocking one could not deliver it."""
        if not self.blocking:
            self.emit_nowait(event)
            return True
        if self._events is not None:
            self._events.inc()
        ok = True
        for backend in self.backends:
            ok = await backend.process(event) and ok
        return ok

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Every backend's writer, until cancelled (each writes what is queued on the way out)."""
        async with trio.open_nursery() as nursery:
            for backend in self.backends:
                await nursery.start(backend.run)
            task_status.started()
