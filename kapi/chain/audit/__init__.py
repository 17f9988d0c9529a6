"""Audit (kube's advanced auditing): the policy, the event of each request, and where events go.

``Audit`` is what the chain's audit filters hold: the policy read from ``--audit-policy-file`` and
the backends (``--audit-log-path``, ``--audit-webhook-config-file``); ``run`` keeps the backends'
writers going for the server's life. The filters are in ``kapi.chain.audit.filter``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import trio

from kapi.chain.audit.policy import Policy, PolicyError, load_policy, parse_policy

__all__ = ["Audit", "Backend", "Policy", "PolicyError", "load_policy", "parse_policy"]

Obj = dict[str, Any]


class Backend(Protocol):
    """Where events go: ``process_nowait`` queues a stage's dict (never changed afterwards); ``process``
    may wait for it to be delivered (the webhook's blocking modes); ``run`` is the writer task."""

    name: str
    blocking: bool

    def process_nowait(self, event: Obj) -> bool: ...

    async def process(self, event: Obj) -> bool: ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None: ...


@dataclass
class Audit:
    """The policy and its backends; ``schema`` (set by the server) decodes protobuf bodies for Request levels."""

    policy: Policy
    backends: Sequence[Backend]
    schema: Any = None
    blocking: bool = field(init=False)  # some backend wants the request to wait for delivery
    strict: bool = field(init=False)  # a RequestReceived event that cannot be stored fails the request

    def __post_init__(self) -> None:
        self.blocking = any(b.blocking for b in self.backends)
        self.strict = any(getattr(b, "strict", False) for b in self.backends)

    def emit_nowait(self, event: Obj) -> None:
        """Queue ``event`` in every backend (the stages after a streamed answer; every stage when none blocks)."""
        for backend in self.backends:
            backend.process_nowait(event)

    async def emit(self, event: Obj) -> bool:
        """Hand ``event`` to every backend; False when a blocking one could not deliver it."""
        if not self.blocking:
            for backend in self.backends:
                backend.process_nowait(event)
            return True
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
