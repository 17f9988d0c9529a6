"""kapi.testing's tests: every start of a ``kapi.testing.Server`` here must be in an ``e2e`` test."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kapi.testing import Server
from tests.conftest import require_e2e


@pytest.fixture(scope="session", autouse=True)
def _servers_need_e2e() -> Iterator[None]:
    """``Server.start`` checks the running test is marked ``e2e`` (tests/conftest.py require_e2e), as
    tests/e2e's start_server does: a fixture of any scope that starts one is checked too."""
    start = Server.start

    def guarded(self: Server) -> Server:
        require_e2e("a kapi.testing.Server")
        return start(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Server, "start", guarded)
        yield


def gone(pid: int, timeout_s: float = 10.0) -> bool:
    """No process ``pid`` (or only a zombie nobody has reaped yet) within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2][:1]
        except (ProcessLookupError, FileNotFoundError):
            return True
        if state == "Z":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
