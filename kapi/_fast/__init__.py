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

USING_EXTENSIONS = _listenc.__name__.endswith("_c") if not TYPE_CHECKING else False

__all__ = ["USING_EXTENSIONS", "EventRing", "MatchTable", "bookmark_line", "encode_list_chunks", "list_body",
           "protowire", "watch_line"]
