"""Chooses between the compiled (Cython) and pure-Python twins of the hot paths.

``KAPI_NO_EXTENSIONS=1`` or a non-CPython interpreter forces the pure twins;
otherwise the compiled module is used and the pure one is the fallback only
when it was not built (``ImportError``). ``KAPI_REQUIRE_EXTENSIONS=1`` turns
that fallback into an error.
"""

from __future__ import annotations

import os
import platform
from typing import TYPE_CHECKING

_want_c = os.environ.get("KAPI_NO_EXTENSIONS") != "1" and platform.python_implementation() == "CPython"
USING_EXTENSIONS = False

if TYPE_CHECKING or not _want_c:
    from .listenc_py import encode_list_chunks
else:
    try:
        from .listenc_c import encode_list_chunks  # type: ignore[no-redef]

        USING_EXTENSIONS = True
    except ImportError:
        if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
            raise
        from .listenc_py import encode_list_chunks

if TYPE_CHECKING or not _want_c:
    from .ring_py import EventRing
else:
    try:
        from .ring_c import EventRing  # type: ignore[assignment]
    except ImportError:
        if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
            raise
        from .ring_py import EventRing

if TYPE_CHECKING or not _want_c:
    from .match_py import MatchTable
else:
    try:
        from .match_c import MatchTable  # type: ignore[assignment]
    except ImportError:
        if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
            raise
        from .match_py import MatchTable

# The protobuf wire twin is chosen as a module: kapi.protobuf reads its plan classes and kind codes.
if TYPE_CHECKING or not _want_c:
    from . import protowire_py as protowire
else:
    try:
        from . import protowire_c as protowire  # type: ignore[no-redef]
    except ImportError:
        if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
            raise
        from . import protowire_py as protowire

__all__ = ["USING_EXTENSIONS", "EventRing", "MatchTable", "encode_list_chunks", "protowire"]
