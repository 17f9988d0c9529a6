"""Chooses between the compiled (Cython) and pure-Python twins of the hot paths.

``KAPI_NO_EXTENSIONS=1`` or a non-CPython interpreter forces the pure twins;
otherwise the compiled module is used and the pure one is the fallback only
when it was not built (``ImportError``). ``KAPI_REQUIRE_EXTENSIONS=1`` turns
that fallback into an error.
"""

from __future__ import annotations

import importlib
import os
import platform
from types import ModuleType
from typing import TYPE_CHECKING

_want_c = os.environ.get("KAPI_NO_EXTENSIONS") != "1" and platform.python_implementation() == "CPython"


def _choose(name: str) -> ModuleType:
    """The compiled twin ``<name>_c`` when wanted and built, else the pure ``<name>_py``."""
    if _want_c:
        try:
            return importlib.import_module(f"{__package__}.{name}_c")
        except ImportError:
            if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
                raise
    return importlib.import_module(f"{__package__}.{name}_py")


if TYPE_CHECKING:
    # Type checkers see the pure twins: they are the typed, documented reference.
    from kapi._fast import protowire_py as protowire
    from kapi._fast.gowalk_py import copy_zero as go_copy_zero
    from kapi._fast.gowalk_py import walk as go_walk
    from kapi._fast.jsontree_py import copy_tree
    from kapi._fast.listenc_py import bookmark_line, encode_list_chunks, list_body, watch_line
    from kapi._fast.match_py import MatchTable
    from kapi._fast.ring_py import EventRing
else:
    _listenc = _choose("listenc")
    encode_list_chunks = _listenc.encode_list_chunks
    list_body = _listenc.list_body
    watch_line = _listenc.watch_line
    bookmark_line = _listenc.bookmark_line
    EventRing = _choose("ring").EventRing
    MatchTable = _choose("match").MatchTable
    # The protobuf wire twin is chosen as a module: kapi.protobuf reads its plan classes and kind codes.
    protowire = _choose("protowire")
    copy_tree = _choose("jsontree").copy_tree
    _gowalk = _choose("gowalk")
    go_walk = _gowalk.walk
    go_copy_zero = _gowalk.copy_zero

USING_EXTENSIONS = _listenc.__name__.endswith("_c") if not TYPE_CHECKING else False
# The compiled twins were wanted but are not there: not built (setup.py found no C compiler when kapi
# was installed) or not importable. ``kapi serve`` warns about it at start-up; a choice (the variable,
# another interpreter) is not warned about.
EXTENSIONS_MISSING = _want_c and not USING_EXTENSIONS


def twins() -> str:
    """Whether the compiled twins are loaded, and why not when they are not (``kapi version``'s words)."""
    if USING_EXTENSIONS:
        return "loaded"
    if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
        return "not loaded: KAPI_NO_EXTENSIONS=1 chose the pure twins"
    if not _want_c:
        return f"not loaded: {platform.python_implementation()} runs the pure twins (the compiled ones are CPython's)"
    return "not loaded: not built (no C compiler when kapi was installed?); running on the pure twins, slower"


__all__ = ["EXTENSIONS_MISSING", "USING_EXTENSIONS", "EventRing", "MatchTable", "bookmark_line", "copy_tree",
           "encode_list_chunks", "go_copy_zero", "go_walk", "list_body", "protowire", "twins", "watch_line"]
