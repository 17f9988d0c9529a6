# cython: language_level=3
"""Compiled twin of listenc_py: streaming list body assembly.

Chunk boundaries are found and each chunk is filled with one C loop of memcpy
into a bytes object of exactly its size: no per-item Python work.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.string cimport memcpy


cdef bytes _fill(bytes head, list items, Py_ssize_t lo, Py_ssize_t hi, bint comma_first, bytes tail,
                 Py_ssize_t size):
    """Bytes of head + items[lo:hi] comma-separated (with a leading comma if asked) + tail."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    cdef char* p = PyBytes_AS_STRING(out)
    cdef Py_ssize_t i, n
    cdef object item
    if head is not None:
        n = PyBytes_GET_SIZE(head)
        memcpy(p, PyBytes_AS_STRING(head), n)
        p += n
    for i in range(lo, hi):
        if i > lo or comma_first:
            p[0] = b","
            p += 1
        item = <object>PyList_GET_ITEM(items, i)
        n = PyBytes_GET_SIZE(item)
        memcpy(p, PyBytes_AS_STRING(item), n)
        p += n
    if tail is not None:
        n = PyBytes_GET_SIZE(tail)
        memcpy(p, PyBytes_AS_STRING(tail), n)
    return out


def encode_list_chunks(bytes head, items, bytes tail, Py_ssize_t chunk_bytes):
    """Yield ``head + b",".join(items) + tail`` in chunks of about ``chunk_bytes``."""
    cdef list lst = items if type(items) is list else list(items)
    cdef Py_ssize_t n = PyList_GET_SIZE(lst)
    cdef Py_ssize_t i, lo = 0, size
    cdef object item
    for item in lst:
        if type(item) is not bytes:
            raise TypeError(f"list items must be bytes, not {type(item).__name__}")
    size = PyBytes_GET_SIZE(head)
    cdef bint first_chunk = True
    i = 0
    while i < n:
        size += PyBytes_GET_SIZE(<bytes>PyList_GET_ITEM(lst, i)) + (1 if i > 0 else 0)
        i += 1
        if size >= chunk_bytes:
            yield _fill(head if first_chunk else None, lst, lo, i, not first_chunk and lo > 0, None, size)
            first_chunk = False
            lo = i
            size = 0
    size += PyBytes_GET_SIZE(tail)
    yield _fill(head if first_chunk else None, lst, lo, n, not first_chunk and lo > 0 and lo < n, tail, size)
