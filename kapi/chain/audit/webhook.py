"""The webhook backend: events POSTed as an audit.k8s.io/v1 EventList to the kubeconfig's server.

``batch`` (kube's default) queues events in a bounded buffer (10,000; a full one drops the event
with an error, as kube's buffered backend) and sends a batch when ``max_batch_size`` events are
collected or ``max_batch_wait_s`` has passed, at most ``throttle_burst`` batches in flight;
``blocking`` sends each event while the request waits; ``blocking-strict`` also fails the request
when its RequestReceived event cannot be sent. Every failed send is retried (kube's retryOnError)
with kube's backoff (10 s, x1.5, 20 % jitter, 5 attempts).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import trio

from kapi.chain.webhookclient import Backoff, WebhookClient, WebhookError, load_webhook_kubeconfig

log = logging.getLogger("kapi.audit")

Obj = dict[str, Any]
BUFFER_SIZE = 10_000  # kube's --audit-webhook-batch-buffer-size default
THROTTLE_BURST = 15  # kube's --audit-webhook-batch-throttle-burst default
INITIAL_BACKOFF_S = 10.0  # kube's --audit-webhook-initial-backoff default
MODES = ("batch", "blocking", "blocking-strict")


def event_list(events: list[Obj]) -> Obj:
    return {"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": events}


class WebhookBackend:
    """``--audit-webhook-config-file`` with ``--audit-webhook-mode`` and the batch flags."""

    name = "webhook"
    on_error: Callable[[str, int], None] | None = None

    def __init__(self, client: WebhookClient, mode: str = "batch", max_batch_size: int = 400,
                 max_batch_wait_s: float = 30.0, buffer_size: int = BUFFER_SIZE) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown audit webhook mode {mode!r}; known: {', '.join(MODES)}")
        self.client = client
        self.mode = mode
        self.blocking = mode != "batch"
        self.strict = mode == "blocking-strict"
        self.max_batch_size = max(1, max_batch_size)
        self.max_batch_wait_s = max_batch_wait_s
        self._send, self._receive = trio.open_memory_channel[Obj](max(1, buffer_size))
        self.dropped = 0

    @classmethod
    def from_kubeconfig(cls, path: str, mode: str = "batch", max_batch_size: int = 400,
                        max_batch_wait_s: float = 30.0, initial_backoff_s: float = INITIAL_BACKOFF_S
                        ) -> WebhookBackend:
        """Raises kapi.chain.webhookclient.WebhookConfigError for a kubeconfig kube would refuse."""
        client = load_webhook_kubeconfig(path, backoff=Backoff(initial_backoff_s, 1.5, 0.2, 5))
        return cls(client, mode, max_batch_size, max_batch_wait_s)

    async def send_events(self, events: list[Obj]) -> bool:
        """POST ``events``, retried on any error as kube's audit webhook; False (logged) when every try failed."""
        body = event_list(events)
        delays = self.client.backoff.delays()
        while True:
            try:
                await self.client.post_once(body)
                return True
            except WebhookError as exc:
                if 200 <= exc.code < 300:  # an answer that is no JSON object: kube reads only the status
                    return True
                delay = next(delays, None)
                if delay is None:
                    self._failed(len(events))
                    log.error("audit webhook: %d events not sent: %s", len(events), exc)
                    return False
            await trio.sleep(delay)

    def process_nowait(self, event: Obj) -> bool:
        """Queue ``event`` for a batch (blocking modes too, for the stages sent after the answer)."""
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            self._failed(1)
            log.error("audit webhook: event dropped: audit buffer queue blocked")
        return True

    def _failed(self, count: int) -> None:
        self.dropped += count
        if self.on_error is not None:
            self.on_error(self.name, count)

    async def process(self, event: Obj) -> bool:
        """Blocking modes: send ``event`` now; batch mode: queue it."""
        if not self.blocking:
            return self.process_nowait(event)
        return await self.send_events([event])

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Collect batches and send them until cancelled; what is queued then is sent on the way out
        (bounded by a few seconds)."""
        limiter = trio.Semaphore(THROTTLE_BURST)  # released by the batch's own task
        try:
            async with trio.open_nursery() as nursery:
                task_status.started()
                while True:
                    batch = await self._collect()
                    if batch:
                        await limiter.acquire()
                        nursery.start_soon(self._send_batch, batch, limiter)
        finally:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + 5.0
                rest: list[Obj] = []
                while True:
                    try:
                        rest.append(self._receive.receive_nowait())
                    except trio.WouldBlock:
                        break
                for i in range(0, len(rest), self.max_batch_size):
                    await self.send_events(rest[i:i + self.max_batch_size])
                await self.client.aclose()

    async def _collect(self) -> list[Obj]:
        """kube's collectEvents: up to max_batch_size events, or what came within max_batch_wait_s."""
        batch: list[Obj] = []
        with trio.move_on_after(self.max_batch_wait_s):
            while len(batch) < self.max_batch_size:
                batch.append(await self._receive.receive())
        return batch

    async def _send_batch(self, batch: list[Obj], limiter: trio.Semaphore) -> None:
        try:
            await self.send_events(batch)
        finally:
            limiter.release()
