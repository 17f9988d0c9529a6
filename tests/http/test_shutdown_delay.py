"""--shutdown-delay-duration on trio's clock: readiness fails at the signal, serving stops after the delay."""

from __future__ import annotations

import signal

import pytest
import trio
import trio.testing

from kapi.config import Config
from kapi.server.serve import _shutdown_on_signal

from .conftest import Api


async def test_readyz_fails_at_sigterm_and_serving_stops_exactly_after_the_delay(
        api: Api, autojump_clock: trio.testing.MockClock) -> None:
    app, shutdown = api.app, trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_shutdown_on_signal, Config(shutdown_delay_s=7.0), app, app.health, shutdown)
        await trio.testing.wait_all_tasks_blocked()  # the signal receiver is open: SIGTERM is caught
        assert (await api.request("GET", "/readyz", token=None)).status == 200
        signal.raise_signal(signal.SIGTERM)
        await trio.testing.wait_all_tasks_blocked()
        signalled = trio.current_time()
        r = await api.request("GET", "/readyz", token=None)
        assert r.status == 503 and b"[-]shutdown failed" in r.body
        assert (await api.request("GET", "/livez", token=None)).status == 200
        assert not app.closing.is_set() and not shutdown.is_set()  # still serving through the delay
        await trio.sleep(6.999)
        assert not app.closing.is_set() and not shutdown.is_set()
        await shutdown.wait()
        assert trio.current_time() - signalled == pytest.approx(7.0, abs=1e-9)
        assert app.closing.is_set()  # long requests (watches) are told to end when serving stops
