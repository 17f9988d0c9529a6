"""Key-range helpers shared by the backends."""

from __future__ import annotations

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def prefix_end(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix`` (None: no bound)."""
    while prefix:
        code = ord(prefix[-1]) + 1
        if code in _SURROGATES:
            # Surrogates cannot be encoded to UTF-8, so the next valid code point follows them.
            code = _SURROGATES.stop
        if code <= _MAX_CODE_POINT:
            return prefix[:-1] + chr(code)
        prefix = prefix[:-1]
    return None


def range_start(prefix: str, start: str | None) -> str:
    """Where a range read under ``prefix`` begins, honouring an inclusive ``start`` key."""
    return prefix if start is None or start < prefix else start
