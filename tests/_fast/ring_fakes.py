"""What the event ring tests feed it: events that carry only a revision, and a settable clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ev:
    revision: int


class FakeClock:
    """A settable clock for the ring's freshness rules."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def revs(events: Any) -> list[int]:
    return [e.revision for e in events]
