# cython: language_level=3
"""Compiled twin of listenc_py: streaming list body assembly, watch event and bookmark lines.

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
    return _sized_chunks(head, items, tail, chunk_bytes)[1]


def list_body(bytes head, items, bytes tail, Py_ssize_t chunk_bytes):
    """The HTTP body of a JSON list: ``head + b",".join(items) + tail`` and the newline Go's
    ``json.Encoder`` ends kube-apiserver's JSON bodies with.

    Returns its length (a Content-Length sent before the body) and its chunks, as
    ``encode_list_chunks`` yields them.
    """
    return _sized_chunks(head, items, tail + b"\n", chunk_bytes)


cdef tuple _sized_chunks(bytes head, items, bytes tail, Py_ssize_t chunk_bytes):
    """The length of ``head + b",".join(items) + tail`` and its chunks.

    One pass checks the items, sums their sizes and records where each chunk ends;
    the chunks are then filled one at a time as they are asked for.
    """
    cdef list lst = items if type(items) is list else list(items)
    cdef Py_ssize_t n = PyList_GET_SIZE(lst), i, step
    cdef Py_ssize_t total = PyBytes_GET_SIZE(head) + PyBytes_GET_SIZE(tail), chunk = PyBytes_GET_SIZE(head)
    cdef object item
    cdef list ends = []  # (end item index, chunk size) of every chunk but the last
    for i in range(n):
        item = <object>PyList_GET_ITEM(lst, i)
        if type(item) is not bytes:
            raise TypeError(f"list items must be bytes, not {type(item).__name__}")
        step = PyBytes_GET_SIZE(item) + (1 if i > 0 else 0)
        total += step
        chunk += step
        if chunk >= chunk_bytes:
            ends.append((i + 1, chunk))
            chunk = 0
    return total, _chunks(head, lst, tail, ends, chunk + PyBytes_GET_SIZE(tail))


def _chunks(bytes head, list lst, bytes tail, list ends, Py_ssize_t last_size):
    cdef Py_ssize_t lo = 0, hi, size, n = PyList_GET_SIZE(lst)
    cdef bint first = True
    for hi, size in ends:
        yield _fill(head if first else None, lst, lo, hi, not first and lo > 0, None, size)
        first = False
        lo = hi
    yield _fill(head if first else None, lst, lo, n, not first and lo > 0 and lo < n, tail, last_size)


cdef inline char* _put(char* p, const char* src, Py_ssize_t n) noexcept:
    memcpy(p, src, n)
    return p + n


def watch_line(bytes event_type, bytes type_prefix, bytes item):
    """One JSON watch event line: ``{"type":T,"object":OBJ}`` and a newline.

    ``item`` is a cached list item (a JSON object without kind/apiVersion);
    ``type_prefix`` is ``{"kind":K,"apiVersion":V,`` which replaces its opening brace.
    """
    cdef Py_ssize_t n_item = PyBytes_GET_SIZE(item)
    if n_item == 0 or PyBytes_AS_STRING(item)[0] != b"{":
        raise ValueError("a watch event object must be a JSON object")
    cdef Py_ssize_t size = (9 + PyBytes_GET_SIZE(event_type) + 11 + PyBytes_GET_SIZE(type_prefix)
                            + n_item - 1 + 2)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    cdef char* p = PyBytes_AS_STRING(out)
    p = _put(p, b'{"type":"', 9)
    p = _put(p, PyBytes_AS_STRING(event_type), PyBytes_GET_SIZE(event_type))
    p = _put(p, b'","object":', 11)
    p = _put(p, PyBytes_AS_STRING(type_prefix), PyBytes_GET_SIZE(type_prefix))
    p = _put(p, PyBytes_AS_STRING(item) + 1, n_item - 1)
    _put(p, b"}\n", 2)
    return out


cdef bytes _BM_HEAD = b'{"type":"BOOKMARK","object":{"kind":"'
cdef bytes _BM_VERSION = b'","apiVersion":"'
cdef bytes _BM_RV = b'","metadata":{"resourceVersion":"'
cdef bytes _BM_END = b'",' + b'"annotations":{"k8s.io/initial-events-end":"true"}}}}\n'
cdef bytes _BM_PLAIN = b'"}}}\n'


def bookmark_line(bytes kind, bytes api_version, long long rv, bint initial_events_end):
    """A JSON BOOKMARK event line for ``rv`` (with the initial-events-end annotation if asked)."""
    cdef char digits[24]
    cdef int nd = 0
    cdef unsigned long long v
    if rv < 0:
        raise ValueError("a resourceVersion is not negative")
    v = <unsigned long long>rv
    while True:  # digits, last first
        digits[nd] = <char>(48 + v % 10)
        nd += 1
        v //= 10
        if v == 0:
            break
    cdef bytes tail = _BM_END if initial_events_end else _BM_PLAIN
    cdef Py_ssize_t size = (PyBytes_GET_SIZE(_BM_HEAD) + PyBytes_GET_SIZE(kind) + PyBytes_GET_SIZE(_BM_VERSION)
                            + PyBytes_GET_SIZE(api_version) + PyBytes_GET_SIZE(_BM_RV) + nd + PyBytes_GET_SIZE(tail))
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    cdef char* p = PyBytes_AS_STRING(out)
    p = _put(p, PyBytes_AS_STRING(_BM_HEAD), PyBytes_GET_SIZE(_BM_HEAD))
    p = _put(p, PyBytes_AS_STRING(kind), PyBytes_GET_SIZE(kind))
    p = _put(p, PyBytes_AS_STRING(_BM_VERSION), PyBytes_GET_SIZE(_BM_VERSION))
    p = _put(p, PyBytes_AS_STRING(api_version), PyBytes_GET_SIZE(api_version))
    p = _put(p, PyBytes_AS_STRING(_BM_RV), PyBytes_GET_SIZE(_BM_RV))
    while nd > 0:
        nd -= 1
        p[0] = digits[nd]
        p += 1
    _put(p, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
    return out
