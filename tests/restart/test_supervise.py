"""Issue 10: no background task's exception ends the process unnoticed (kapi.server.supervise)."""

from __future__ import annotations

import logging
from functools import partial

import pytest
import trio

from kapi.server.supervise import FatalError, one_line, supervise


async def test_a_crash_after_start_is_logged_by_name_and_restarted(autojump_clock: trio.abc.Clock,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    runs = 0

    async def flaky(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal runs
        runs += 1
        task_status.started()
        if runs < 3:
            raise KeyError("boom")
        await trio.sleep_forever()

    with caplog.at_level(logging.ERROR, "kapi"):
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(supervise, "watch cache of pods", flaky, restart=True))
            await trio.sleep(100)
            nursery.cancel_scope.cancel()
    assert runs == 3
    crashes = [r for r in caplog.records if "watch cache of pods crashed" in r.getMessage()]
    assert len(crashes) == 2 and "KeyError" in crashes[0].getMessage() and crashes[0].exc_info


async def test_a_crash_before_start_is_fatal_and_says_what_failed(autojump_clock: trio.abc.Clock) -> None:
    async def broken(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        raise ValueError("cannot open it")

    with pytest.raises(BaseExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(supervise, "storage", broken, restart=True))
    assert group.group_contains(FatalError)
    assert one_line(group.value) == "storage failed: ValueError: cannot open it"


async def test_a_service_that_must_not_restart_ends_the_server(autojump_clock: trio.abc.Clock) -> None:
    async def dies_later(*, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started("https://x")
        await trio.sleep(5)
        raise RuntimeError("listener lost")

    with pytest.raises(BaseExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            value = await nursery.start(partial(supervise, "HTTPS server", dies_later, restart=False))
            assert value == "https://x"  # what the service reported at start passes through
    assert one_line(group.value) == "HTTPS server failed: RuntimeError: listener lost"


async def test_a_fatal_error_keeps_its_own_words(autojump_clock: trio.abc.Clock) -> None:
    async def refuses(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        raise FatalError("cannot listen on 127.0.0.1:6443: Address already in use")

    with pytest.raises(BaseExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(supervise, "HTTPS server", refuses, restart=False))
    assert one_line(group.value) == "cannot listen on 127.0.0.1:6443: Address already in use"


def test_one_line_unwraps_groups_and_prefers_fatal_errors() -> None:
    group = BaseExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [FatalError("the reason\nhere")])])
    assert one_line(group) == "the reason here"
    assert one_line(ExceptionGroup("g", [KeyError("k")])) == "KeyError: 'k'"
