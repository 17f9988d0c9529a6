"""Streaming list body assembly: head, comma-joined item bytes, tail, in chunks."""

from __future__ import annotations

from typing import Iterator, Sequence


def encode_list_chunks(head: bytes, items: Sequence[bytes], tail: bytes, chunk_bytes: int) -> Iterator[bytes]:
    """Yield ``head + b",".join(items) + tail`` in chunks of about ``chunk_bytes``.

    The list is never joined whole: each chunk holds only the items that fit.
    """
    parts: list[bytes] = [head]
    size = len(head)
    first = True
    for item in items:
        if first:
            first = False
        else:
            parts.append(b",")
            size += 1
        parts.append(item)
        size += len(item)
        if size >= chunk_bytes:
            yield b"".join(parts)
            parts = []
            size = 0
    parts.append(tail)
    yield b"".join(parts)
