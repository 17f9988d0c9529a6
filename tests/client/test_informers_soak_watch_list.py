"""The informer soak test, watch-list case (its own module: xdist's loadfile runs the two cases on two workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.client.test_informers_e2e import soak_ten_informers

pytestmark = [pytest.mark.e2e, pytest.mark.soak]  # once, in the compiled pass (the pure pass deselects soak)


async def test_ten_informers_follow_random_writes_a_restart_and_a_forced_410(tmp_path: Path) -> None:
    await soak_ten_informers(tmp_path, watch_list=True)
