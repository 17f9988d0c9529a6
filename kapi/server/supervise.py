"""Background services under a name: restarted with backoff, or fatal with a one-line reason."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

import trio

from kapi import errors

__all__ = ["FatalError", "HEALTHY_RUN_S", "RESTART_BACKOFF_S", "one_line", "supervise"]

log = logging.getLogger("kapi")

RESTART_BACKOFF_S = (0.5, 30.0)  # a crashed background service restarts after this, doubling to the cap
HEALTHY_RUN_S = 60.0  # a service that ran this long before crashing starts again from the shortest backoff


class FatalError(errors.KapiError):
    """The server cannot start or go on; the message is the one line ``kapi serve`` prints before exiting."""


def one_line(exc: BaseException) -> str:
    """An exception as one line: its message (its type when it has none), groups unwrapped."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in _leaves(exc) if not isinstance(e, trio.Cancelled)]
        fatal = [e for e in leaves if isinstance(e, FatalError)]
        if fatal or leaves:
            return one_line((fatal or leaves)[0])
    text = " ".join(str(exc).split())
    if isinstance(exc, (FatalError, errors.StorageError)):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


async def supervise(name: str, run: Callable[..., Awaitable[Any]], *, restart: bool, reports_started: bool = True,
                    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    """Run one background service under a name; no exception of it ends the server unnoticed.

    A failure before the service is up is fatal (the server cannot start). Later, a service
    that may ``restart`` (a watch cache relists, as kube's reflector does; a controller starts
    over from a fresh watch) is logged with its traceback and started again with backoff; one
    that may not (storage, the HTTPS listener) ends the server with a ``FatalError`` naming it.
    ``reports_started``: ``run`` takes ``task_status`` (else it counts as up once called).
    """
    backoff = RESTART_BACKOFF_S[0]
    started = False
    while True:
        began = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                value = None
                if reports_started:
                    value = await nursery.start(run)
                else:
                    nursery.start_soon(run)
                if not started:
                    started = True
                    task_status.started(value)
            if not restart:
                return
            log.error("%s stopped; starting it again in %.1fs", name, backoff)
        except Exception as exc:
            if not started or not restart:
                fatal = exc.split(FatalError)[0] if isinstance(exc, BaseExceptionGroup) else exc
                if isinstance(fatal, BaseExceptionGroup):
                    fatal = _leaves(fatal)[0]
                if isinstance(fatal, FatalError):
                    raise fatal from exc  # it says what failed already
                raise FatalError(f"{name} failed: {one_line(exc)}") from exc
            log.error("%s crashed; starting it again in %.1fs: %s", name, backoff, one_line(exc), exc_info=exc)
        if trio.current_time() - began >= HEALTHY_RUN_S:
            backoff = RESTART_BACKOFF_S[0]
        await trio.sleep(backoff)
        backoff = min(backoff * 2, RESTART_BACKOFF_S[1])
