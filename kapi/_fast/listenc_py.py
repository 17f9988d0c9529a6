"""Streaming list body assembly (head, comma-joined item bytes, tail, in chunks), watch event and bookmark lines."""

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


def list_body(head: bytes, items: Sequence[bytes], tail: bytes, chunk_bytes: int) -> tuple[int, Iterator[bytes]]:
    """The HTTP body of a JSON list: ``head + b",".join(items) + tail`` and the newline Go's
    ``json.Encoder`` ends kube-apiserver's JSON bodies with.

    Returns its length (a Content-Length sent before the body) and its chunks, as
    ``encode_list_chunks`` yields them.
    """
    tail += b"\n"
    size = len(head) + sum(map(len, items)) + max(0, len(items) - 1) + len(tail)
    return size, encode_list_chunks(head, items, tail, chunk_bytes)


def watch_line(event_type: bytes, type_prefix: bytes, item: bytes) -> bytes:
    """One JSON watch event line: ``{"type":T,"object":OBJ}`` and a newline.

    ``item`` is a cached list item (a JSON object without kind/apiVersion);
    ``type_prefix`` is ``{"kind":K,"apiVersion":V,`` which replaces its opening brace.
    """
    if not item.startswith(b"{"):
        raise ValueError("a watch event object must be a JSON object")
    return b'{"type":"%s","object":%s%s}\n' % (event_type, type_prefix, memoryview(item)[1:])


def bookmark_line(kind: bytes, api_version: bytes, rv: int, initial_events_end: bool) -> bytes:
    """A JSON BOOKMARK event line for ``rv`` (with the initial-events-end annotation if asked)."""
    if initial_events_end:
        return (b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"%d",'
                b'"annotations":{"k8s.io/initial-events-end":"true"}}}}\n' % (kind, api_version, rv))
    return (b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"%d"}}}\n'
            % (kind, api_version, rv))
