"""Guard: when CI requires the compiled twins, they are the ones in use (no silent fallback)."""

from __future__ import annotations

import os

import pytest

import kapi._fast


def test_compiled_twins_loaded_when_required() -> None:
    if os.environ.get("KAPI_REQUIRE_EXTENSIONS") != "1" or os.environ.get("KAPI_NO_EXTENSIONS") == "1":
        pytest.skip("KAPI_REQUIRE_EXTENSIONS is not set (or KAPI_NO_EXTENSIONS forces the pure twins)")
    assert kapi._fast.USING_EXTENSIONS
    assert not kapi._fast.EXTENSIONS_MISSING  # no start-up warning of the pure twins
    assert kapi._fast.encode_list_chunks.__module__ == "kapi._fast.listenc_c"
    assert kapi._fast.EventRing.__module__ == "kapi._fast.ring_c"
    assert kapi._fast.MatchTable.__module__ == "kapi._fast.match_c"
    assert kapi._fast.protowire.__name__ == "kapi._fast.protowire_c"
    assert kapi._fast.copy_tree.__module__ == "kapi._fast.jsontree_c"
    assert kapi._fast.go_walk.__module__ == "kapi._fast.gowalk_c"


def test_pure_twins_when_extensions_are_off() -> None:
    if os.environ.get("KAPI_NO_EXTENSIONS") != "1":
        pytest.skip("KAPI_NO_EXTENSIONS is not set")
    assert not kapi._fast.USING_EXTENSIONS
    assert not kapi._fast.EXTENSIONS_MISSING  # chosen: kapi serve does not warn about it
    assert kapi._fast.EventRing.__module__ == "kapi._fast.ring_py"
    assert kapi._fast.MatchTable.__module__ == "kapi._fast.match_py"
    assert kapi._fast.protowire.__name__ == "kapi._fast.protowire_py"
    assert kapi._fast.copy_tree.__module__ == "kapi._fast.jsontree_py"
    assert kapi._fast.go_walk.__module__ == "kapi._fast.gowalk_py"
