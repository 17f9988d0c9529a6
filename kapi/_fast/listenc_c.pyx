# cython: language_level=3
"""Compiled twin of listenc_py: streaming list body assembly."""

from cpython.bytes cimport PyBytes_GET_SIZE


def encode_list_chunks(bytes head, items, bytes tail, Py_ssize_t chunk_bytes):
    """Yield ``head + b",".join(items) + tail`` in chunks of about ``chunk_bytes``."""
    cdef list parts = [head]
    cdef Py_ssize_t size = PyBytes_GET_SIZE(head)
    cdef bint first = True
    cdef bytes item
    for item in items:
        if first:
            first = False
        else:
            parts.append(b",")
            size += 1
        parts.append(item)
        size += PyBytes_GET_SIZE(item)
        if size >= chunk_bytes:
            yield b"".join(parts)
            parts = []
            size = 0
    parts.append(tail)
    yield b"".join(parts)
