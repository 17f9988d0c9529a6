"""Warning headers as kube's warning recorder writes them: quoted, deduplicated, empty ones dropped, and
bounded (past 4096 runes in all, each cut to 256 runes, then the rest dropped once 4096 is reached)."""

from __future__ import annotations

from kapi.api.responses import TRUNCATE_AT_TOTAL_RUNES, TRUNCATE_ITEM_RUNES, warning_headers


def test_quoted_deduplicated_and_empty_dropped() -> None:
    assert warning_headers(['a "b" \\c', 'a "b" \\c', "", "x"]) == [
        ("Warning", '299 - "a \\"b\\" \\\\c"'), ("Warning", '299 - "x"')]


def test_small_warnings_are_written_whole() -> None:
    texts = [f"unknown field spec.f{i}" for i in range(100)]  # 2,290 runes in all: under the bound
    assert warning_headers(texts) == [("Warning", f'299 - "{t}"') for t in texts]


def test_many_long_warnings_are_cut_and_bounded() -> None:
    texts = [f"w{i} " + "y" * 300 for i in range(1000)]
    headers = warning_headers(texts)
    bodies = [v[len('299 - "'):-1] for _, v in headers]
    assert all(len(b) == TRUNCATE_ITEM_RUNES for b in bodies)
    assert sum(len(b) for b in bodies) == TRUNCATE_AT_TOTAL_RUNES
    assert bodies[0].startswith("w0 ") and bodies[-1].startswith(f"w{len(bodies) - 1} ")
