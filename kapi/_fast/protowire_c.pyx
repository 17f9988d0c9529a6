# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of protowire_py: wire primitives and the plan-driven message walk.

Encoding writes into one growing C buffer: a nested message reserves one length
byte, is written in place, and is shifted only when its length needs more bytes.
Decoding walks the input with C pointers and builds the dicts directly.
"""

import binascii

import orjson

from kapi import errors

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

L_SINGLE, L_REPEATED, L_MAP, L_INLINE = 0, 1, 2, 3
K_STRING, K_INT32, K_INT64, K_BOOL, K_DOUBLE, K_BYTES, K_MESSAGE = 1, 2, 3, 4, 5, 6, 7
K_QUANTITY, K_INTORSTR, K_RAW, K_TIME, K_MICROTIME, K_STRLIST, K_CUSTOM = 8, 9, 10, 11, 12, 13, 14

cdef enum:
    C_SINGLE = 0
    C_REPEATED = 1
    C_MAP = 2
    C_INLINE = 3
    C_STRING = 1
    C_INT32 = 2
    C_INT64 = 3
    C_BOOL = 4
    C_DOUBLE = 5
    C_BYTES = 6
    C_MESSAGE = 7
    C_QUANTITY = 8
    C_INTORSTR = 9
    C_RAW = 10
    C_TIME = 11
    C_MICROTIME = 12
    C_STRLIST = 13
    C_CUSTOM = 14

cdef object _dumps = orjson.dumps
cdef object _loads = orjson.loads
cdef object _a2b = binascii.a2b_base64
cdef object _b2a = binascii.b2a_base64
cdef object _BadRequest = errors.BadRequest


# ------------------------------------------------------------------ buffer

cdef struct Buf:
    unsigned char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _grow(Buf* b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t cap = b.cap * 2
    cdef unsigned char* p
    if cap < b.n + extra:
        cap = b.n + extra + 256
    p = <unsigned char*>PyMem_Realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    return 0


cdef inline int _need(Buf* b, Py_ssize_t extra) except -1:
    if b.n + extra > b.cap:
        _grow(b, extra)
    return 0


cdef inline int _varint_len(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v > 0x7F:
        v >>= 7
        n += 1
    return n


cdef inline void _put_varint(Buf* b, uint64_t v) noexcept nogil:
    # The caller reserved ten bytes.
    while v > 0x7F:
        b.p[b.n] = <unsigned char>((v & 0x7F) | 0x80)
        b.n += 1
        v >>= 7
    b.p[b.n] = <unsigned char>v
    b.n += 1


cdef inline int _varint(Buf* b, uint64_t v) except -1:
    _need(b, 10)
    _put_varint(b, v)
    return 0


cdef inline int _bytes(Buf* b, const char* s, Py_ssize_t n) except -1:
    _need(b, n + 10)
    _put_varint(b, <uint64_t>n)
    memcpy(b.p + b.n, s, n)
    b.n += n
    return 0


cdef inline int _tag(Buf* b, const unsigned char* tag, int taglen) except -1:
    cdef int i
    _need(b, taglen)
    for i in range(taglen):
        b.p[b.n + i] = tag[i]
    b.n += taglen
    return 0


cdef inline int _byte(Buf* b, unsigned char c) except -1:
    _need(b, 1)
    b.p[b.n] = c
    b.n += 1
    return 0


cdef inline Py_ssize_t _open(Buf* b) except -1:
    """Reserve one length byte; returns where the content starts."""
    _need(b, 1)
    b.n += 1
    return b.n


cdef int _close(Buf* b, Py_ssize_t start) except -1:
    """Write the length of the content since ``start``, shifting it when the length needs more bytes."""
    cdef Py_ssize_t size = b.n - start
    cdef int extra
    cdef Py_ssize_t save
    if size < 128:
        b.p[start - 1] = <unsigned char>size
        return 0
    extra = _varint_len(<uint64_t>size) - 1
    _need(b, extra)
    memmove(b.p + start + extra, b.p + start, size)
    save = b.n + extra
    b.n = start - 1
    _put_varint(b, <uint64_t>size)
    b.n = save
    return 0


cdef inline int _str(Buf* b, object s) except -1:
    cdef Py_ssize_t n
    cdef const char* data
    if type(s) is not str:
        raise TypeError(f"protobuf: expected a string, not {type(s).__name__}")
    data = PyUnicode_AsUTF8AndSize(s, &n)
    return _bytes(b, data, n)


cdef bytes _finish(Buf* b):
    return PyBytes_FromStringAndSize(<char*>b.p, b.n)


# ------------------------------------------------------------------ primitives

def encode_varint(value):
    """Base-128 varint; negative numbers take ten bytes (two's complement), as Go writes int32/int64."""
    cdef unsigned char out[10]
    cdef int n = 0
    cdef uint64_t v = <uint64_t>(int(value) & 0xFFFFFFFFFFFFFFFF)
    while v > 0x7F:
        out[n] = <unsigned char>((v & 0x7F) | 0x80)
        n += 1
        v >>= 7
    out[n] = <unsigned char>v
    return PyBytes_FromStringAndSize(<char*>out, n + 1)


cdef inline int _read_varint(const unsigned char* p, Py_ssize_t* pos, Py_ssize_t end, uint64_t* out) except -1:
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef unsigned char byte
    cdef Py_ssize_t i = pos[0]
    while True:
        if i >= end:
            raise _BadRequest("protobuf: truncated varint")
        byte = p[i]
        i += 1
        if shift < 64:
            result |= (<uint64_t>(byte & 0x7F)) << shift
        if not byte & 0x80:
            pos[0] = i
            out[0] = result
            return 0
        shift += 7
        if shift >= 70:
            raise _BadRequest("protobuf: varint longer than ten bytes")


def decode_varint(const unsigned char[:] data, Py_ssize_t pos=0):
    """``(value, next position)`` of the unsigned varint at ``pos``; raises BadRequest."""
    cdef uint64_t v
    if pos < 0:
        raise ValueError("negative position")
    if data.shape[0] == 0:
        raise _BadRequest("protobuf: truncated varint")
    _read_varint(&data[0], &pos, data.shape[0], &v)
    return v, pos


def encode_message(fields):
    """One message from ``(number, wire type, value)`` in the given order.

    VARINT takes an int (negative ones sign-extended), LEN bytes or str, FIXED64 a
    float or 8 bytes, FIXED32 a float or 4 bytes.
    """
    cdef Buf b
    cdef int wire
    cdef uint64_t number
    cdef double d
    cdef float fl
    cdef uint64_t u64
    cdef uint32_t u32
    cdef int i
    cdef bytes raw
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        for item in fields:
            num_obj, wire_obj, value = item
            number = num_obj
            wire = wire_obj
            if wire not in (0, 1, 2, 5):
                raise ValueError(f"protobuf: unsupported wire type {wire}")
            _varint(&b, (number << 3) | <uint64_t>wire)
            if wire == 0:
                _varint(&b, <uint64_t>(int(value) & 0xFFFFFFFFFFFFFFFF))
            elif wire == 2:
                if type(value) is str:
                    _str(&b, value)
                else:
                    raw = bytes(value)
                    _bytes(&b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
            elif wire == 1:
                _need(&b, 8)
                if isinstance(value, float):
                    d = value
                    memcpy(&u64, &d, 8)
                    for i in range(8):
                        b.p[b.n + i] = <unsigned char>((u64 >> (8 * i)) & 0xFF)
                    b.n += 8
                else:
                    raw = bytes(value)
                    if len(raw) != 8:
                        raise ValueError("protobuf: fixed field needs 8 bytes")
                    memcpy(b.p + b.n, PyBytes_AS_STRING(raw), 8)
                    b.n += 8
            else:
                _need(&b, 4)
                if isinstance(value, float):
                    fl = value
                    memcpy(&u32, &fl, 4)
                    for i in range(4):
                        b.p[b.n + i] = <unsigned char>((u32 >> (8 * i)) & 0xFF)
                    b.n += 4
                else:
                    raw = bytes(value)
                    if len(raw) != 4:
                        raise ValueError("protobuf: fixed field needs 4 bytes")
                    memcpy(b.p + b.n, PyBytes_AS_STRING(raw), 4)
                    b.n += 4
        return _finish(&b)
    finally:
        PyMem_Free(b.p)


def iter_fields(bytes data not None):
    """Every top-level ``(number, wire type, value)`` of one message, in wire order.

    Varints come back unsigned, fixed64/fixed32 and LEN as bytes. Raises BadRequest.
    """
    cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t end = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t vs
    cdef uint64_t key, v
    cdef int wire
    while pos < end:
        _read_varint(p, &pos, end, &key)
        wire = key & 7
        if key >> 3 == 0:
            raise _BadRequest("protobuf: field number 0")
        if wire == 0:
            _read_varint(p, &pos, end, &v)
            yield key >> 3, 0, v
        else:
            vs = _skip(p, &pos, end, wire, &v)
            yield key >> 3, wire, PyBytes_FromStringAndSize(<const char*>p + vs, pos - vs)


cdef inline Py_ssize_t _skip(const unsigned char* p, Py_ssize_t* pos, Py_ssize_t end, int wire,
                             uint64_t* v) except -1:
    """Step over a non-varint value; returns where it starts (``pos`` ends up after it)."""
    cdef Py_ssize_t start
    cdef uint64_t size
    if wire == 2:
        _read_varint(p, pos, end, &size)
        if size > <uint64_t>(end - pos[0]):
            raise _BadRequest("protobuf: truncated length-delimited field")
    elif wire == 1:
        size = 8
        if end - pos[0] < 8:
            raise _BadRequest("protobuf: truncated fixed-width field")
    elif wire == 5:
        size = 4
        if end - pos[0] < 4:
            raise _BadRequest("protobuf: truncated fixed-width field")
    else:
        raise _BadRequest(f"protobuf: unsupported wire type {wire}")
    start = pos[0]
    pos[0] = start + <Py_ssize_t>size
    return start


def frame_watch_event(str type not None, bytes object_bytes not None):
    """A 4-byte big-endian length, then WatchEvent{type=1, object=2 RawExtension{raw=1}}."""
    cdef Py_ssize_t tn
    cdef const char* t = PyUnicode_AsUTF8AndSize(type, &tn)
    cdef Py_ssize_t on = PyBytes_GET_SIZE(object_bytes)
    cdef Py_ssize_t ext = 1 + _varint_len(on) + on
    cdef Py_ssize_t event = 1 + _varint_len(tn) + tn + 1 + _varint_len(ext) + ext
    cdef Buf b
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        _need(&b, event + 4)
        b.p[0] = <unsigned char>((event >> 24) & 0xFF)
        b.p[1] = <unsigned char>((event >> 16) & 0xFF)
        b.p[2] = <unsigned char>((event >> 8) & 0xFF)
        b.p[3] = <unsigned char>(event & 0xFF)
        b.n = 4
        b.p[b.n] = 0x0a
        b.n += 1
        _bytes(&b, t, tn)
        b.p[b.n] = 0x12
        b.n += 1
        _put_varint(&b, <uint64_t>ext)
        b.p[b.n] = 0x0a
        b.n += 1
        _bytes(&b, PyBytes_AS_STRING(object_bytes), on)
        return _finish(&b)
    finally:
        PyMem_Free(b.p)


def encoded_list_size(bytes list_meta not None, items):
    """The size of the List message ``encode_list`` yields (metadata=1, items=2)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(list_meta)
    cdef Py_ssize_t size = 1 + _varint_len(n) + n
    cdef bytes item
    for item in items:
        n = PyBytes_GET_SIZE(item)
        size += 1 + _varint_len(n) + n
    return size


def encode_list(bytes list_meta not None, items, bytes head=b"", bytes tail=b"", Py_ssize_t chunk_bytes=1 << 16):
    """``head`` + List{metadata=1, items=2...} + ``tail`` in chunks of about ``chunk_bytes``.

    Each item is an already-encoded message; the list is never joined whole.
    """
    cdef Buf b
    cdef bytes item
    cdef Py_ssize_t n
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        _need(&b, max(chunk_bytes, PyBytes_GET_SIZE(head)) + 64)
        memcpy(b.p, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        b.n = PyBytes_GET_SIZE(head)
        _byte(&b, 0x0a)
        _bytes(&b, PyBytes_AS_STRING(list_meta), PyBytes_GET_SIZE(list_meta))
        for item in items:
            n = PyBytes_GET_SIZE(item)
            _byte(&b, 0x12)
            _bytes(&b, PyBytes_AS_STRING(item), n)
            if b.n >= chunk_bytes:
                yield _finish(&b)
                b.n = 0
        _need(&b, PyBytes_GET_SIZE(tail))
        memcpy(b.p + b.n, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
        b.n += PyBytes_GET_SIZE(tail)
        yield _finish(&b)
    finally:
        PyMem_Free(b.p)


# ------------------------------------------------------------------ plans

cdef class _Field:
    """One compiled field of a MessagePlan."""

    cdef readonly object key
    cdef readonly int number
    cdef readonly int label
    cdef readonly int kind
    cdef readonly int wire
    cdef readonly MessagePlan sub
    cdef readonly object enc
    cdef readonly object dec
    cdef unsigned char tag[10]
    cdef int taglen

    def __init__(self, spec):
        key, number, label, kind, sub, enc, dec = spec
        self.key = key
        self.number = number
        self.label = label
        self.kind = kind
        self.sub = sub
        self.enc = enc
        self.dec = dec
        if label in (C_SINGLE, C_REPEATED) and kind in (C_INT32, C_INT64, C_BOOL):
            self.wire = 0
        elif label in (C_SINGLE, C_REPEATED) and kind == C_DOUBLE:
            self.wire = 1
        else:
            self.wire = 2
        cdef uint64_t v = (<uint64_t>number << 3) | <uint64_t>self.wire
        self.taglen = 0
        while v > 0x7F:
            self.tag[self.taglen] = <unsigned char>((v & 0x7F) | 0x80)
            self.taglen += 1
            v >>= 7
        self.tag[self.taglen] = <unsigned char>v
        self.taglen += 1


cdef class MessagePlan:
    """The compiled field table of one message; fields are set after creation (plans recurse)."""

    cdef public str name
    cdef public bint omit_empty_strings
    cdef tuple _fields
    cdef list _by_number
    cdef Py_ssize_t _max

    def __init__(self, str name, bint omit_empty_strings=False):
        self.name = name
        # Decoding leaves out "" of single string fields, as Go's JSON omitempty does.
        self.omit_empty_strings = omit_empty_strings
        self._fields = ()
        self._by_number = []
        self._max = -1

    @property
    def fields(self):
        return self._fields

    def set_fields(self, specs):
        """Install ``(key, number, label, kind, sub plan, enc, dec)`` tuples, ordered by number."""
        fields = sorted((_Field(s) for s in specs), key=lambda f: f.number)
        self._fields = tuple(fields)
        self._max = max([f.number for f in fields], default=0)
        self._by_number = [None] * (self._max + 1)
        for f in fields:
            self._by_number[f.number] = f


cdef unsigned char _MAPVAL[1]
_MAPVAL[0] = 0x12


def encode_plan(MessagePlan plan not None, obj):
    """The message bytes of the JSON-form dict ``obj``; keys the plan lacks are dropped.

    Raises:
        TypeError, ValueError: a value does not fit its field.
    """
    cdef Buf b
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        _grow(&b, 1024)
        _enc_msg(&b, plan, obj)
        return _finish(&b)
    finally:
        PyMem_Free(b.p)


cdef int _enc_msg(Buf* b, MessagePlan plan, object obj) except -1:
    cdef tuple fields = plan._fields
    cdef Py_ssize_t i, nf = len(fields)
    cdef _Field f
    cdef PyObject* vp
    cdef Py_ssize_t start, estart
    cdef object value, item, k
    cdef list keys
    if type(obj) is not dict:
        raise TypeError(f"protobuf: {plan.name} needs an object, not {type(obj).__name__}")
    for i in range(nf):
        f = <_Field>fields[i]
        if f.label == C_INLINE:
            _tag(b, f.tag, f.taglen)
            start = _open(b)
            _enc_msg(b, f.sub, obj)
            _close(b, start)
            continue
        vp = PyDict_GetItem(obj, f.key)
        if vp == NULL:
            continue
        value = <object>vp
        if value is None:
            if f.label == C_SINGLE and (f.kind == C_TIME or f.kind == C_MICROTIME):
                _tag(b, f.tag, f.taglen)
                _byte(b, 0)  # a null non-pointer Time: Go writes the empty message
            continue
        if f.label == C_SINGLE:
            _enc_value(b, f, value, f.tag, f.taglen)
        elif f.label == C_REPEATED:
            if type(value) is not list:
                raise TypeError(f"protobuf: {f.key} needs a list")
            for item in <list>value:
                if item is None:
                    # A null element of a message list is Go's zero struct: the empty message.
                    if f.kind == C_MESSAGE or f.kind == C_RAW:
                        _tag(b, f.tag, f.taglen)
                        _byte(b, 0)
                    continue
                _enc_value(b, f, item, f.tag, f.taglen)
        else:
            if type(value) is not dict:
                raise TypeError(f"protobuf: {f.key} needs an object")
            keys = sorted(<dict>value)
            for k in keys:
                _tag(b, f.tag, f.taglen)
                estart = _open(b)
                _byte(b, 0x0a)
                _str(b, k)
                item = (<dict>value)[k]
                if item is not None:
                    _enc_value(b, f, item, _MAPVAL, 1)
                _close(b, estart)
    return 0


cdef inline int64_t _as_int(object value) except? -1:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"protobuf: expected an integer, not {type(value).__name__}")


cdef int _enc_value(Buf* b, _Field f, object value, const unsigned char* tag, int taglen) except -1:
    cdef int kind = f.kind
    cdef Py_ssize_t start, n
    cdef int64_t iv
    cdef double d
    cdef uint64_t u64
    cdef int i
    cdef bytes raw
    cdef const char* s
    cdef int64_t secs = 0
    cdef int32_t nanos = 0
    if kind == C_STRING:
        _tag(b, tag, taglen)
        _str(b, value)
    elif kind == C_INT32 or kind == C_INT64:
        iv = _as_int(value)
        _tag(b, tag, taglen)
        _varint(b, <uint64_t>iv)
    elif kind == C_BOOL:
        if value is True:
            _tag(b, tag, taglen)
            _byte(b, 1)
        elif value is False:
            _tag(b, tag, taglen)
            _byte(b, 0)
        else:
            raise TypeError("protobuf: expected a boolean")
    elif kind == C_DOUBLE:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("protobuf: expected a number")
        d = float(value)
        memcpy(&u64, &d, 8)
        _tag(b, tag, taglen)
        _need(b, 8)
        for i in range(8):
            b.p[b.n + i] = <unsigned char>((u64 >> (8 * i)) & 0xFF)
        b.n += 8
    elif kind == C_MESSAGE:
        _tag(b, tag, taglen)
        start = _open(b)
        _enc_msg(b, f.sub, value)
        _close(b, start)
    elif kind == C_QUANTITY:
        if type(value) is not str:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            else:
                raise TypeError("protobuf: expected a quantity string")
        _tag(b, tag, taglen)
        start = _open(b)
        _byte(b, 0x0a)
        _str(b, value)
        _close(b, start)
    elif kind == C_INTORSTR:
        _tag(b, tag, taglen)
        start = _open(b)
        if type(value) is str:
            _need(b, 4)
            b.p[b.n] = 0x08
            b.p[b.n + 1] = 0x01
            b.p[b.n + 2] = 0x10
            b.p[b.n + 3] = 0x00
            b.n += 4
            _byte(b, 0x1a)
            _str(b, value)
        else:
            iv = _as_int(value)
            _need(b, 3)
            b.p[b.n] = 0x08
            b.p[b.n + 1] = 0x00
            b.p[b.n + 2] = 0x10
            b.n += 3
            _varint(b, <uint64_t>iv)
            _byte(b, 0x1a)
            _byte(b, 0x00)
        _close(b, start)
    elif kind == C_TIME or kind == C_MICROTIME:
        if type(value) is str and _parse_time(value, kind == C_MICROTIME, &secs, &nanos):
            _tag(b, tag, taglen)
            start = _open(b)
            _byte(b, 0x08)
            _varint(b, <uint64_t>secs)
            _byte(b, 0x10)
            _varint(b, <uint64_t><int64_t>nanos)
            _close(b, start)
        else:
            _enc_custom(b, f, value, tag, taglen)
    elif kind == C_RAW:
        raw = _dumps(value)
        _tag(b, tag, taglen)
        start = _open(b)
        _byte(b, 0x0a)
        _bytes(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
        _close(b, start)
    elif kind == C_BYTES:
        if type(value) is not str:
            raise TypeError("protobuf: expected a base64 string")
        raw = _a2b(value, strict_mode=True) if value else b""
        _tag(b, tag, taglen)
        _bytes(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    elif kind == C_STRLIST:
        if type(value) is not list:
            raise TypeError("protobuf: expected a list of strings")
        _tag(b, tag, taglen)
        start = _open(b)
        for item in <list>value:
            _byte(b, 0x0a)
            _str(b, item)
        _close(b, start)
    else:
        _enc_custom(b, f, value, tag, taglen)
    return 0


cdef int _enc_custom(Buf* b, _Field f, object value, const unsigned char* tag, int taglen) except -1:
    body = f.enc(value)
    if body is not None:
        _tag(b, tag, taglen)
        _bytes(b, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body))
    return 0


# ------------------------------------------------------------------ time

cdef inline int64_t _days_from_civil(int64_t y, int m, int d) nogil:
    cdef int64_t era, yoe, doy, doe
    if m <= 2:
        y -= 1
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline void _civil_from_days(int64_t z, int64_t* y, int* m, int* d) noexcept nogil:
    cdef int64_t era, doe, yoe, doy, mp
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d[0] = <int>(doy - (153 * mp + 2) // 5 + 1)
    m[0] = <int>(mp + 3 if mp < 10 else mp - 9)
    y[0] = yoe + era * 400 + (1 if m[0] <= 2 else 0)


cdef inline int _digits(const char* s, int n) nogil:
    cdef int v = 0
    cdef int i
    for i in range(n):
        if s[i] < 48 or s[i] > 57:
            return -1
        v = v * 10 + (s[i] - 48)
    return v


cdef int _month_days(int64_t y, int m) nogil:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    if m == 4 or m == 6 or m == 9 or m == 11:
        return 30
    return 31


cdef bint _parse_time(str value, bint micro, int64_t* secs, int32_t* nanos):
    """The common forms only (``...:SSZ`` for Time, ``...:SS.ffffffZ`` for MicroTime); else False."""
    cdef Py_ssize_t n
    cdef const char* s = PyUnicode_AsUTF8AndSize(value, &n)
    cdef int y, mo, d, h, mi, se, frac = 0
    if micro:
        if n != 27 or s[19] != 46 or s[26] != 90:  # '.', 'Z'
            return False
        frac = _digits(s + 20, 6)
        if frac < 0:
            return False
    elif n != 20 or s[19] != 90:
        return False
    if s[4] != 45 or s[7] != 45 or s[10] != 84 or s[13] != 58 or s[16] != 58:  # '-', 'T', ':'
        return False
    y = _digits(s, 4)
    mo = _digits(s + 5, 2)
    d = _digits(s + 8, 2)
    h = _digits(s + 11, 2)
    mi = _digits(s + 14, 2)
    se = _digits(s + 17, 2)
    if y < 0 or mo < 1 or mo > 12 or d < 1 or h < 0 or h > 23 or mi < 0 or mi > 59 or se < 0 or se > 59:
        return False
    if d > _month_days(y, mo):
        return False
    secs[0] = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se
    nanos[0] = frac * 1000
    return True


cdef object _format_time(int64_t secs, int32_t nanos, bint micro):
    """RFC 3339 as Go's Time/MicroTime JSON writes it, for years 1-9999; else None."""
    cdef int64_t days = secs // 86400
    cdef int64_t rem = secs - days * 86400
    cdef int64_t y
    cdef int m, d
    cdef char out[28]
    cdef int h, mi, se, us, i, n
    if secs < -62135596800 or secs > 253402300799 or nanos < 0 or nanos > 999999999:
        return None
    if rem < 0:
        rem += 86400
        days -= 1
    _civil_from_days(days, &y, &m, &d)
    h = <int>(rem // 3600)
    mi = <int>((rem // 60) % 60)
    se = <int>(rem % 60)
    out[0] = <char>(48 + y // 1000)
    out[1] = <char>(48 + (y // 100) % 10)
    out[2] = <char>(48 + (y // 10) % 10)
    out[3] = <char>(48 + y % 10)
    out[4] = 45
    out[5] = <char>(48 + m // 10)
    out[6] = <char>(48 + m % 10)
    out[7] = 45
    out[8] = <char>(48 + d // 10)
    out[9] = <char>(48 + d % 10)
    out[10] = 84
    out[11] = <char>(48 + h // 10)
    out[12] = <char>(48 + h % 10)
    out[13] = 58
    out[14] = <char>(48 + mi // 10)
    out[15] = <char>(48 + mi % 10)
    out[16] = 58
    out[17] = <char>(48 + se // 10)
    out[18] = <char>(48 + se % 10)
    if micro:
        out[19] = 46
        us = nanos // 1000
        for i in range(6):
            out[25 - i] = <char>(48 + us % 10)
            us //= 10
        out[26] = 90
        n = 27
    else:
        out[19] = 90
        n = 20
    return PyUnicode_DecodeUTF8(out, n, NULL)


# ------------------------------------------------------------------ decoding

def decode_plan(MessagePlan plan not None, bytes data not None, dict into=None):
    """The JSON-form dict of one message; unknown field numbers are skipped. Raises BadRequest."""
    cdef dict out = {} if into is None else into
    try:
        _dec_msg(plan, <const unsigned char*>PyBytes_AS_STRING(data), 0, PyBytes_GET_SIZE(data), out)
    except UnicodeDecodeError:
        raise _BadRequest("protobuf: invalid UTF-8 in a string field") from None
    return out


cdef int _dec_msg(MessagePlan plan, const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, dict out) except -1:
    cdef uint64_t key, v
    cdef int wire
    cdef uint64_t number
    cdef Py_ssize_t vs, n, ppos
    cdef _Field f
    cdef PyObject* cur
    cdef object items, entries, val
    while pos < end:
        _read_varint(p, &pos, end, &key)
        number = key >> 3
        wire = key & 7
        if number == 0:
            raise _BadRequest("protobuf: field number 0")
        v = 0
        vs = 0
        if wire == 0:
            _read_varint(p, &pos, end, &v)
        else:
            vs = _skip(p, &pos, end, wire, &v)
        if number > <uint64_t>plan._max:
            continue
        item = plan._by_number[number]
        if item is None:
            continue
        f = <_Field>item
        n = pos - vs
        if f.label == C_SINGLE:
            if n == 0 and wire == 2 and f.kind == C_STRING and plan.omit_empty_strings:
                if PyDict_GetItem(out, f.key) != NULL:
                    del out[f.key]
                continue
            PyDict_SetItem(out, f.key, _dec_value(f, wire, v, p, vs, n))
        elif f.label == C_INLINE:
            if wire != 2:
                raise _BadRequest("protobuf: expected a length-delimited field")
            _dec_msg(f.sub, p, vs, pos, out)
        elif f.label == C_REPEATED:
            cur = PyDict_GetItem(out, f.key)
            if cur == NULL:
                items = []
                PyDict_SetItem(out, f.key, items)
            else:
                items = <object>cur
            if wire == 2 and f.wire != 2:  # packed scalars, as proto3 writers send
                ppos = vs
                while ppos < pos:
                    if f.wire == 0:
                        _read_varint(p, &ppos, pos, &v)
                        PyList_Append(items, _dec_value(f, 0, v, p, 0, 0))
                    else:
                        if pos - ppos < 8:
                            raise _BadRequest("protobuf: truncated packed field")
                        PyList_Append(items, _dec_value(f, 1, 0, p, ppos, 8))
                        ppos += 8
            else:
                PyList_Append(items, _dec_value(f, wire, v, p, vs, n))
        else:
            if wire != 2:
                raise _BadRequest("protobuf: expected a length-delimited field")
            cur = PyDict_GetItem(out, f.key)
            if cur == NULL:
                entries = {}
                PyDict_SetItem(out, f.key, entries)
            else:
                entries = <object>cur
            _dec_entry(f, p, vs, pos, <dict>entries)
    return 0


cdef int _dec_entry(_Field f, const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, dict entries) except -1:
    cdef uint64_t key, v
    cdef int wire
    cdef Py_ssize_t vs
    cdef object k = ""
    cdef object val = None
    cdef bint found = False
    while pos < end:
        _read_varint(p, &pos, end, &key)
        wire = key & 7
        v = 0
        vs = 0
        if wire == 0:
            _read_varint(p, &pos, end, &v)
        else:
            vs = _skip(p, &pos, end, wire, &v)
        if key >> 3 == 1:
            if wire != 2:
                raise _BadRequest("protobuf: expected a length-delimited field")
            k = PyUnicode_DecodeUTF8(<const char*>p + vs, pos - vs, NULL)
        elif key >> 3 == 2:
            val = _dec_value(f, wire, v, p, vs, pos - vs)
            found = True
    if not found:
        if f.kind == C_BOOL:
            val = False
        elif f.kind == C_INT32 or f.kind == C_INT64 or f.kind == C_DOUBLE:
            val = 0
        else:
            val = _dec_value(f, 2, 0, p, 0, 0)
    PyDict_SetItem(entries, k, val)
    return 0


cdef object _dec_value(_Field f, int wire, uint64_t v, const unsigned char* p, Py_ssize_t vs, Py_ssize_t n):
    cdef int kind = f.kind
    cdef double d
    cdef uint64_t u64 = 0
    cdef int i
    cdef dict sub
    if kind == C_INT32 or kind == C_INT64 or kind == C_BOOL:
        if wire != 0:
            raise _BadRequest(f"protobuf: field {f.key} expects a varint")
        if kind == C_BOOL:
            return v != 0
        if kind == C_INT32:
            return <int32_t>v
        return <int64_t>v
    if kind == C_DOUBLE:
        if wire != 1:
            raise _BadRequest(f"protobuf: field {f.key} expects a double")
        for i in range(8):
            u64 |= (<uint64_t>p[vs + i]) << (8 * i)
        memcpy(&d, &u64, 8)
        # Go's JSON writes integral doubles without a fraction.
        if d == <double>(<int64_t>d) and -1e18 < d < 1e18:
            return <int64_t>d
        if d.is_integer() and abs(d) < 1e21:
            return int(d)
        return d
    if wire != 2:
        raise _BadRequest("protobuf: expected a length-delimited field")
    if kind == C_STRING:
        return PyUnicode_DecodeUTF8(<const char*>p + vs, n, NULL)
    if kind == C_MESSAGE:
        sub = {}
        _dec_msg(f.sub, p, vs, vs + n, sub)
        return sub
    if kind == C_QUANTITY or kind == C_INTORSTR or kind == C_TIME or kind == C_MICROTIME or kind == C_RAW:
        return _dec_small(f, p, vs, vs + n)
    if kind == C_BYTES:
        return _b2a(PyBytes_FromStringAndSize(<const char*>p + vs, n), newline=False).decode("ascii")
    if kind == C_STRLIST:
        return _dec_strlist(p, vs, vs + n)
    return f.dec(PyBytes_FromStringAndSize(<const char*>p + vs, n))


cdef list _dec_strlist(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end):
    cdef list out = []
    cdef uint64_t key, v
    cdef int wire
    cdef Py_ssize_t vs
    while pos < end:
        _read_varint(p, &pos, end, &key)
        wire = key & 7
        if wire == 0:
            _read_varint(p, &pos, end, &v)
            continue
        vs = _skip(p, &pos, end, wire, &v)
        if key >> 3 == 1:
            if wire != 2:
                raise _BadRequest("protobuf: expected a length-delimited field")
            out.append(PyUnicode_DecodeUTF8(<const char*>p + vs, pos - vs, NULL))
    return out


cdef object _dec_small(_Field f, const unsigned char* p, Py_ssize_t pos, Py_ssize_t end):
    """Quantity, IntOrString, Time, MicroTime and RawExtension-like messages."""
    cdef Py_ssize_t start = pos
    cdef uint64_t key, v
    cdef int wire
    cdef Py_ssize_t vs
    cdef uint64_t f1 = 0, f2 = 0
    cdef Py_ssize_t s_at = -1, s_len = 0  # field 1 (or 3 for IntOrString) bytes
    cdef int kind = f.kind
    cdef uint64_t number
    if pos == end and (kind == C_TIME or kind == C_MICROTIME or kind == C_RAW):
        return None
    while pos < end:
        _read_varint(p, &pos, end, &key)
        wire = key & 7
        number = key >> 3
        v = 0
        vs = 0
        if wire == 0:
            _read_varint(p, &pos, end, &v)
        else:
            vs = _skip(p, &pos, end, wire, &v)
        if kind == C_INTORSTR:
            if number == 1 and wire == 0:
                f1 = v
            elif number == 2 and wire == 0:
                f2 = v
            elif number == 3:
                if wire != 2:
                    raise _BadRequest("protobuf: expected a length-delimited field")
                s_at = vs
                s_len = pos - vs
        elif kind == C_TIME or kind == C_MICROTIME:
            if number == 1 and wire == 0:
                f1 = v
            elif number == 2 and wire == 0:
                f2 = v
        elif number == 1:
            if wire != 2:
                raise _BadRequest("protobuf: expected a length-delimited field")
            s_at = vs
            s_len = pos - vs
    if kind == C_QUANTITY:
        return PyUnicode_DecodeUTF8(<const char*>p + s_at, s_len, NULL) if s_at >= 0 else ""
    if kind == C_INTORSTR:
        if f1 == 1:
            return PyUnicode_DecodeUTF8(<const char*>p + s_at, s_len, NULL) if s_at >= 0 else ""
        return <int32_t>f2
    if kind == C_RAW:
        if s_at < 0 or s_len == 0:
            return None
        try:
            return _loads(PyBytes_FromStringAndSize(<const char*>p + s_at, s_len))
        except orjson.JSONDecodeError:
            raise _BadRequest(f"protobuf: field {f.key} holds no JSON") from None
    text = _format_time(<int64_t>f1, <int32_t>f2, kind == C_MICROTIME)
    if text is None:
        return f.dec(PyBytes_FromStringAndSize(<const char*>p + start, end - start))
    return text
