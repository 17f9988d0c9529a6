"""duration.HumanDuration, ported case by case."""

from __future__ import annotations

import pytest

from kapi.encoding.tables import human_duration

M, H, D, Y = 60, 3600, 86400, 365 * 86400


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-2, "<invalid>"),
        (-1.5, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (9 * M + 59, "9m59s"),
        (10 * M + 30, "10m"),
        (179 * M, "179m"),
        (3 * H, "3h"),
        (5 * H + 30 * M, "5h30m"),
        (8 * H, "8h"),
        (47 * H, "47h"),
        (2 * D, "2d"),
        (2 * D + 3 * H, "2d3h"),
        (8 * D, "8d"),
        (45 * D, "45d"),
        (2 * Y - 1, "729d"),
        (2 * Y, "2y"),
        (3 * Y + 120 * D, "3y120d"),
        (8 * Y + 5 * D, "8y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text
