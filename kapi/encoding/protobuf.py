"""The Kubernetes protobuf encoding of the built-in types (``application/vnd.kubernetes.protobuf``).

Objects stay plain JSON-form dicts; the message schema comes from the server's schema
(``Schema.proto_messages``). Each message is compiled once into a ``MessagePlan`` of the
wire twin (``kapi._fast.protowire``), which walks the dict; ``codec_for(schema)`` keeps
the compiled codec with that schema, so each server compiles its own.

Wire rules, as Go's generated marshallers write them: fields in ascending number,
map entries sorted by key (key=1, value=2), repeated scalars unpacked (proto2),
every field the JSON has is written (zero values too), absent or null ones are not
(a null ``Time`` is written as the empty message a non-pointer Go ``Time`` gives).
Special JSON forms: Time/MicroTime <-> Timestamp{seconds, nanos} (Time drops the
nanoseconds, MicroTime keeps microseconds), Duration <-> int64 nanoseconds,
IntOrString <-> {type, intVal, strVal}, Quantity <-> {string}, RawExtension/FieldsV1/
apiextensions JSON <-> {raw: JSON bytes}, ``bytes`` fields <-> base64 strings, inline
(``json:",inline"``) messages flattened into their parent, and the JSONSchemaProps
wrappers (OrArray, OrBool, OrStringArray).

Whole objects travel in an envelope: ``MAGIC`` + runtime.Unknown{typeMeta=1
{apiVersion=1, kind=2}, raw=2, contentEncoding=3, contentType=4}. Watch streams
carry 4-byte big-endian length-prefixed WatchEvent messages whose object is the
enveloped object. Lossy by nature: empty lists and maps are not distinguishable
from absent ones, and keys the schema does not know are dropped.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import Any

from kapi import _fast, errors
from kapi.object.schema import GVK, FieldDef, ProtoField, ProtoMessage, Schema, TypeDef, load_proto_messages

__all__ = [
    "CONTENT_TYPE",
    "MAGIC",
    "STREAM_CONTENT_TYPE",
    "Codec",
    "decode",
    "decode_object",
    "codec_for",
    "encode",
    "encode_list",
    "encode_list_sized",
    "encode_object",
    "encode_status",
    "encode_watch_event",
    "iter_watch_frames",
    "message_name",
    "split_api_version",
    "supports",
    "unwrap",
    "watch_frame",
    "wrap",
]

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
STREAM_CONTENT_TYPE = "application/vnd.kubernetes.protobuf;stream=watch"

META = "k8s.io.apimachinery.pkg.apis.meta.v1."
STATUS_MESSAGE = META + "Status"
LIST_META_MESSAGE = META + "ListMeta"
_ENVELOPE_TAIL = b"\x1a\x00\x22\x00"
_CODEC_KEY = "protobuf.codec"  # where codec_for keeps a schema's codec (Schema.compiled)


def _meta_message(message: str, /, **fields: tuple[int, str, str]) -> ProtoMessage:
    return ProtoMessage(name=META + message, json_type_name="io.k8s.apimachinery.pkg.apis.meta.v1." + message,
                        fields=MappingProxyType({k: ProtoField(*v) for k, v in fields.items()}))


# meta/v1 Status and what it holds, as generated.proto numbers them: a Status is written where no
# schema is at hand (an error response, a watch's ERROR event). A test checks them against the table.
STATUS_MESSAGES: Mapping[str, ProtoMessage] = MappingProxyType({m.name: m for m in (
    _meta_message("Status", metadata=(1, META + "ListMeta", "optional"), status=(2, "string", "optional"),
                  message=(3, "string", "optional"), reason=(4, "string", "optional"),
                  details=(5, META + "StatusDetails", "optional"), code=(6, "int32", "optional")),
    _meta_message("ListMeta", selfLink=(1, "string", "optional"), resourceVersion=(2, "string", "optional"),
                  **{"continue": (3, "string", "optional")}, remainingItemCount=(4, "int64", "optional"),
                  shardInfo=(5, META + "ShardInfo", "optional")),
    _meta_message("StatusDetails", name=(1, "string", "optional"), group=(2, "string", "optional"),
                  kind=(3, "string", "optional"), causes=(4, META + "StatusCause", "repeated"),
                  retryAfterSeconds=(5, "int32", "optional"), uid=(6, "string", "optional")),
    _meta_message("StatusCause", reason=(1, "string", "optional"), message=(2, "string", "optional"),
                  field=(3, "string", "optional")),
    ProtoMessage(name=META + "ShardInfo", fields=MappingProxyType({"selector": ProtoField(1, "string", "optional")})),
)})  # contentEncoding="" and contentType="", as Go always writes them

_SCALAR_KINDS = {"string": 1, "int32": 2, "int64": 3, "bool": 4, "double": 5, "bytes": 6}


# ------------------------------------------------------------------ envelopes


_varint = _fast.protowire.encode_varint


def _len_field(tag: int, body: bytes) -> bytes:
    return bytes((tag,)) + _varint(len(body)) + body


def _fields(wire: ModuleType, data: bytes) -> Iterator[tuple[int, int, Any]]:
    return wire.iter_fields(data)  # type: ignore[no-any-return]


# ------------------------------------------------------------------ time and duration

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})\Z")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def parse_time(value: str) -> tuple[int, int]:
    """``(unix seconds, nanoseconds)`` of an RFC 3339 time; raises ValueError."""
    m = _RFC3339.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"protobuf: {value!r} is not an RFC 3339 time")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    when = dt.datetime(y, mo, d, h, mi, s)  # checks the ranges
    secs = calendar.timegm(when.timetuple())
    zone = m.group(8)
    if zone != "Z":
        offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        secs -= offset if zone[0] == "+" else -offset
    frac = m.group(7) or ""
    return secs, int(frac.ljust(9, "0")) if frac else 0


def format_time(secs: int, nanos: int, micro: bool) -> str:
    """Go's Time (seconds) or MicroTime (six fraction digits) JSON form, in UTC."""
    try:
        when = _EPOCH + dt.timedelta(seconds=secs)
    except OverflowError:
        raise errors.BadRequest("protobuf: time out of range") from None
    text = f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}"
    if micro:
        return f"{text}.{(nanos // 1000) % 1_000_000:06d}Z"
    return text + "Z"


def _timestamp(wire: ModuleType, body: bytes) -> tuple[int, int] | None:
    if not body:
        return None
    secs = nanos = 0
    for number, w, v in _fields(wire, body):
        if number == 1 and w == 0:
            secs = v - (1 << 64) if v >> 63 else v
        elif number == 2 and w == 0:
            v &= 0xFFFFFFFF
            nanos = v - (1 << 32) if v >> 31 else v
    return secs, nanos


_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def parse_duration(value: str) -> int:
    """Nanoseconds of a Go duration string (``"1h2m3.5s"``, ``"300ms"``, ``"0"``); raises ValueError."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"protobuf: {value!r} is not a duration")
    text = value
    sign = 1
    if text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f"protobuf: {value!r} is not a duration")
    total = 0
    pos = 0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None or not (m.group(1) or m.group(2)):
            raise ValueError(f"protobuf: {value!r} is not a duration")
        unit = _UNITS[m.group(3)]
        total += int(m.group(1) or 0) * unit
        frac = m.group(2) or ""
        if frac:
            total += int(frac) * unit // 10 ** len(frac)
        pos = m.end()
    return sign * total


def format_duration(nanos: int) -> str:
    """Go's ``time.Duration.String()``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    u = abs(nanos)
    if u < 10**9:
        unit, size, digits = ("ns", 1, 0) if u < 1_000 else ("µs", 1_000, 3) if u < 1_000_000 else ("ms", 1_000_000, 6)
        whole, frac = divmod(u, size)
        text = str(whole) + ("." + f"{frac:0{digits}d}".rstrip("0") if frac else "") + unit
        return sign + text
    secs, frac = divmod(u, 10**9)
    hours, rem = divmod(secs, 3600)
    minutes, seconds = divmod(rem, 60)
    text = str(seconds) + ("." + f"{frac:09d}".rstrip("0") if frac else "") + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


# ------------------------------------------------------------------ the codec


class Codec:
    """Compiled message plans over one wire twin (the chosen one unless given).

    ``omit_empty_strings`` makes decoding leave out ``""`` of single string fields, as
    Go's JSON of the decoded struct would (nearly all are non-pointer ``omitempty``);
    encoding is the same either way.
    """

    def __init__(
        self,
        wire: ModuleType | None = None,
        messages: Mapping[str, ProtoMessage] | None = None,
        *,
        omit_empty_strings: bool = False,
    ) -> None:
        self.wire: ModuleType = wire if wire is not None else _fast.protowire
        self.messages = messages if messages is not None else load_proto_messages()
        self.omit_empty_strings = omit_empty_strings
        self._plans: dict[str, Any] = {}

    def plan(self, name: str) -> Any:
        """The MessagePlan of the message ``name`` (compiled on first use); raises KeyError."""
        plan = self._plans.get(name)
        if plan is None:
            msg = self.messages[name]
            plan = self._plans[name] = self.wire.MessagePlan(name, self.omit_empty_strings)
            plan.set_fields([s for key, pf in msg.fields.items() if (s := self._spec(msg, key, pf)) is not None])
        return plan

    def encode_message(self, name: str, obj: dict[str, Any]) -> bytes:
        """The bytes of message ``name`` for the JSON-form ``obj``; raises TypeError/ValueError."""
        return self.wire.encode_plan(self.plan(name), obj)  # type: ignore[no-any-return]

    def decode_message(self, name: str, data: bytes) -> dict[str, Any]:
        """The JSON-form dict of message ``name``; raises BadRequest."""
        return self.wire.decode_plan(self.plan(name), bytes(data))  # type: ignore[no-any-return]

    # -- compiling

    def _spec(self, msg: ProtoMessage, key: str, pf: ProtoField) -> tuple[Any, ...] | None:
        w = self.wire
        if key in msg.inline:
            return (key, pf.number, w.L_INLINE, w.K_MESSAGE, self.plan(pf.type), None, None)
        label = {"optional": w.L_SINGLE, "repeated": w.L_REPEATED, "map": w.L_MAP}[pf.label]
        type_name = pf.value if pf.label == "map" else pf.type
        if type_name in _SCALAR_KINDS:
            return (key, pf.number, label, _SCALAR_KINDS[type_name], None, None, None)
        target = self.messages.get(type_name)
        if target is None:
            return None  # a message outside the table: the field cannot be written
        form = target.json
        if not form or form == "unknown":
            return (key, pf.number, label, w.K_MESSAGE, self.plan(type_name), None, None)
        simple = {"quantity": w.K_QUANTITY, "int-or-string": w.K_INTORSTR, "raw": w.K_RAW, "list": w.K_STRLIST}
        if form in simple:
            return (key, pf.number, label, simple[form], None, None, None)
        enc, dec = self._special(form)
        kind = {"time": w.K_TIME, "microtime": w.K_MICROTIME}.get(form, w.K_CUSTOM)
        return (key, pf.number, label, kind, None, enc, dec)

    def _special(self, form: str) -> tuple[Callable[[Any], bytes | None], Callable[[bytes], Any]]:
        """The JSON value <-> message body callables of a special form."""
        wire = self.wire
        if form in ("time", "microtime"):
            micro = form == "microtime"

            def enc_time(value: Any) -> bytes:
                secs, nanos = parse_time(value)
                nanos = nanos // 1000 * 1000 if micro else 0  # Go's ProtoTime drops Time's nanoseconds
                return b"\x08" + _varint(secs) + b"\x10" + _varint(nanos)

            def dec_time(body: bytes) -> str | None:
                ts = _timestamp(wire, body)
                return None if ts is None else format_time(ts[0], ts[1], micro)

            return enc_time, dec_time
        if form == "duration":

            def enc_duration(value: Any) -> bytes:
                return b"\x08" + _varint(parse_duration(value))

            def dec_duration(body: bytes) -> str:
                n = 0
                for number, w, v in _fields(wire, body):
                    if number == 1 and w == 0:
                        n = v - (1 << 64) if v >> 63 else v
                return format_duration(n)

            return enc_duration, dec_duration
        props = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
        if form == "schema-or-array":
            # JSONSchemaPropsOrArray{schema=1, jSONSchemas=2}: JSON is a schema or a list of schemas.
            def enc_or_array(value: Any) -> bytes:
                if isinstance(value, list):
                    return b"".join(_len_field(0x12, self.encode_message(props, v)) for v in value)
                return _len_field(0x0A, self.encode_message(props, value))

            def dec_or_array(body: bytes) -> Any:
                schema, many = None, []
                for number, _w, v in _fields(wire, body):
                    if number == 1:
                        schema = self.decode_message(props, v)
                    elif number == 2:
                        many.append(self.decode_message(props, v))
                return many if many else schema

            return enc_or_array, dec_or_array
        if form == "schema-or-bool":
            # JSONSchemaPropsOrBool{allows=1, schema=2}: JSON is a bool or a schema (which allows).
            def enc_or_bool(value: Any) -> bytes:
                if isinstance(value, bool):
                    return b"\x08" + (b"\x01" if value else b"\x00")
                return b"\x08\x01" + _len_field(0x12, self.encode_message(props, value))

            def dec_or_bool(body: bytes) -> Any:
                allows, schema = False, None
                for number, _w, v in _fields(wire, body):
                    if number == 1:
                        allows = bool(v)
                    elif number == 2:
                        schema = self.decode_message(props, v)
                return schema if schema is not None else allows

            return enc_or_bool, dec_or_bool
        if form == "schema-or-string-array":
            # JSONSchemaPropsOrStringArray{schema=1, property=2}: JSON is a schema or a list of names.
            def enc_or_strings(value: Any) -> bytes:
                if isinstance(value, list):
                    return b"".join(_len_field(0x12, s.encode()) for s in value)
                return _len_field(0x0A, self.encode_message(props, value))

            def dec_or_strings(body: bytes) -> Any:
                schema, names = None, []
                for number, _w, v in _fields(wire, body):
                    if number == 1:
                        schema = self.decode_message(props, v)
                    elif number == 2:
                        names.append(v.decode())
                return names if names else schema

            return enc_or_strings, dec_or_strings
        raise KeyError(f"protobuf: no codec for the special form {form!r}")


def codec_for(schema: Schema) -> Codec:
    """The codec over the chosen wire twin and the schema's messages (built once per schema, kept on it).

    It decodes without the ``""`` strings Go's non-pointer fields always put on the wire
    (kubectl sends ``generateName: ""``, ``uid: ""``...), so request bodies read as the
    JSON kube-apiserver would show.
    """
    codec = schema.compiled.get(_CODEC_KEY)
    if codec is None:
        codec = schema.compiled[_CODEC_KEY] = Codec(messages=schema.proto_messages, omit_empty_strings=True)
    return codec  # type: ignore[no-any-return]


# ------------------------------------------------------------------ objects


def _gvk(gvk: GVK | tuple[str, str, str]) -> GVK:
    return gvk if isinstance(gvk, GVK) else GVK(*gvk)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``("apps", "v1")`` from ``"apps/v1"``, ``("", "v1")`` from ``"v1"``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def message_name(schema: Schema, gvk: GVK | tuple[str, str, str]) -> str:
    """The protobuf message of a kind, or ``""`` when it has none (custom resources)."""
    g = _gvk(gvk)
    t = schema.type_for(g.group, g.version, g.kind)
    return t.proto if t is not None else ""


def supports(schema: Schema, gvk: GVK | tuple[str, str, str]) -> bool:
    """True when the kind has a protobuf encoding (kube-apiserver answers 406/415 otherwise)."""
    return bool(message_name(schema, gvk))


def encode(schema: Schema, gvk: GVK | tuple[str, str, str], obj: dict[str, Any], codec: Codec | None = None) -> bytes:
    """The message bytes of ``obj`` (no envelope).

    Raises:
        NotAcceptable: the kind has no protobuf encoding.
        InternalError: a value does not fit its field.
    """
    name = message_name(schema, gvk)
    if not name:
        raise errors.NotAcceptable(f"the kind {_gvk(gvk).kind} has no protobuf encoding")
    try:
        return (codec or codec_for(schema)).encode_message(name, obj)
    except (TypeError, ValueError, OverflowError) as exc:
        raise errors.InternalError(f"protobuf encoding of {_gvk(gvk).kind} failed: {exc}") from exc


def decode(schema: Schema, gvk: GVK | tuple[str, str, str], data: bytes, codec: Codec | None = None) -> dict[str, Any]:
    """The JSON-form dict of one message (no apiVersion/kind); unknown fields are dropped.

    Raises:
        UnsupportedMediaType: the kind has no protobuf encoding.
        BadRequest: the bytes are not a valid message of the kind.
    """
    name = message_name(schema, gvk)
    if not name:
        raise errors.UnsupportedMediaType(f"the kind {_gvk(gvk).kind} has no protobuf encoding")
    return (codec or codec_for(schema)).decode_message(name, data)


def drop_go_zero_values(schema: Schema, obj: dict[str, Any]) -> dict[str, Any]:
    """A decoded request body as kube-apiserver's JSON would show it: Go's omitted zeros removed (in place)."""
    group, version = split_api_version(obj.get("apiVersion", ""))
    root = schema.type_for(group, version, obj.get("kind", ""))
    if root is not None:
        _drop_go_zero_values(schema, root, obj)
    return obj


def _drop_go_zero_values(schema: Schema, t: TypeDef, obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    # Go value-typed (non-pointer) ``omitempty`` scalars that clients' marshallers always write: a
    # zero that arrives for one of these is what Go's JSON would omit. Pointer fields (replicas,
    # suspend, ...) keep an explicit zero: the generated Go table tells the two apart.
    omit = schema.go.value_omitempty(t.name) if schema.go is not None else frozenset()
    for key in list(obj):
        value = obj[key]
        if key in omit and value in (0, False) and not isinstance(value, float):
            del obj[key]
            continue
        f = t.fields.get(key)
        if f is None or value is None:
            continue
        _drop_in_shape(schema, f, value)


def _drop_in_shape(schema: Schema, f: FieldDef, value: Any) -> None:
    if f.ref:
        sub = schema.get(f.ref)
        if sub is not None:
            _drop_go_zero_values(schema, sub, value)
    elif f.items is not None and isinstance(value, list):
        for item in value:
            _drop_in_shape(schema, f.items, item)
    elif f.values is not None and isinstance(value, dict):
        for item in value.values():
            _drop_in_shape(schema, f.values, item)


def wrap(api_version: str, kind: str, raw: bytes) -> bytes:
    """``MAGIC`` + runtime.Unknown{typeMeta, raw, contentEncoding="", contentType=""}."""
    type_meta = _len_field(0x0A, api_version.encode()) + _len_field(0x12, kind.encode())
    return b"".join((MAGIC, _len_field(0x0A, type_meta), _len_field(0x12, raw), _ENVELOPE_TAIL))


def unwrap(data: bytes, codec: Codec | None = None) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of an enveloped object.

    Raises:
        BadRequest: no magic prefix, a malformed envelope, or a content encoding.
    """
    if not data.startswith(MAGIC):
        raise errors.BadRequest("protobuf: the body does not start with the k8s protobuf magic")
    wire = codec.wire if codec is not None else _fast.protowire
    api_version = kind = encoding = ""
    raw = b""
    for number, w, v in _fields(wire, bytes(data[len(MAGIC) :])):
        if w != 2:
            continue
        if number == 1:
            for n, w2, v2 in _fields(wire, v):
                if n == 1 and w2 == 2:
                    api_version = _text(v2)
                elif n == 2 and w2 == 2:
                    kind = _text(v2)
        elif number == 2:
            raw = v
        elif number == 3:
            encoding = _text(v)
    if encoding:
        raise errors.BadRequest(f"protobuf: unsupported content encoding {encoding!r}")
    return api_version, kind, raw


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise errors.BadRequest("protobuf: invalid UTF-8 in the envelope") from None


def encode_object(schema: Schema, obj: dict[str, Any], codec: Codec | None = None) -> bytes:
    """The enveloped bytes of ``obj``; its apiVersion and kind pick the message."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    group, version = split_api_version(api_version)
    return wrap(api_version, kind, encode(schema, (group, version, kind), obj, codec))


def decode_object(schema: Schema, data: bytes, codec: Codec | None = None) -> dict[str, Any]:
    """The JSON-form dict of an enveloped object, with apiVersion and kind set first.

    Raises:
        BadRequest: not an enveloped object, or the envelope names no kind.
        UnsupportedMediaType: the kind has no protobuf encoding.
    """
    api_version, kind, raw = unwrap(data, codec)
    if not api_version or not kind:
        raise errors.BadRequest("protobuf: the envelope names no apiVersion and kind")
    group, version = split_api_version(api_version)
    body = decode(schema, (group, version, kind), raw, codec)
    return {"apiVersion": api_version, "kind": kind, **body}


def encode_list(
    schema: Schema,
    list_gvk: GVK | tuple[str, str, str],
    list_meta: dict[str, Any],
    items: Sequence[bytes],
    *,
    chunk_bytes: int = 1 << 16,
    codec: Codec | None = None,
) -> Iterator[bytes]:
    """The enveloped list (``PodList``...) in chunks; ``items`` are message bytes from ``encode``.

    Raises:
        NotAcceptable: the list kind has no protobuf encoding.
    """
    return encode_list_sized(schema, list_gvk, list_meta, items, chunk_bytes=chunk_bytes, codec=codec)[1]


def encode_list_sized(
    schema: Schema,
    list_gvk: GVK | tuple[str, str, str],
    list_meta: dict[str, Any],
    items: Sequence[bytes],
    *,
    chunk_bytes: int = 1 << 16,
    codec: Codec | None = None,
) -> tuple[int, Iterator[bytes]]:
    """``encode_list``'s chunks with their total length, known before the first byte (a Content-Length)."""
    g = _gvk(list_gvk)
    if not message_name(schema, g):
        raise errors.NotAcceptable(f"the kind {g.kind} has no protobuf encoding")
    c = codec or codec_for(schema)
    meta = c.encode_message(LIST_META_MESSAGE, list_meta)
    size = c.wire.encoded_list_size(meta, items)
    type_meta = _len_field(0x0A, g.api_version.encode()) + _len_field(0x12, g.kind.encode())
    head = MAGIC + _len_field(0x0A, type_meta) + b"\x12" + _varint(size)
    chunks = c.wire.encode_list(meta, items, head, _ENVELOPE_TAIL, chunk_bytes)
    return len(head) + size + len(_ENVELOPE_TAIL), chunks


def encode_status(status: dict[str, Any], codec: Codec | None = None) -> bytes:
    """The enveloped meta/v1 Status (apiVersion ``v1``, kind ``Status``, as kube-apiserver sends it)."""
    # The Status messages are a constant table: no schema is needed (nor at hand, for an error).
    c = codec if codec is not None else Codec(messages=STATUS_MESSAGES)
    body = c.encode_message(STATUS_MESSAGE, status)
    return wrap(status.get("apiVersion") or "v1", "Status", body)


def watch_frame(event_type: str, object_bytes: bytes, codec: Codec | None = None) -> bytes:
    """One length-prefixed WatchEvent frame around an already-enveloped object."""
    return (codec.wire if codec is not None else _fast.protowire).frame_watch_event(event_type, object_bytes)  # type: ignore[no-any-return]


def encode_watch_event(schema: Schema, event_type: str, obj: dict[str, Any], codec: Codec | None = None) -> bytes:
    """One WatchEvent frame for ``obj`` (a Status for ERROR events)."""
    if obj.get("kind") == "Status":
        body = encode_status(obj, codec)
    else:
        body = encode_object(schema, obj, codec)
    return watch_frame(event_type, body, codec)


def iter_watch_frames(stream: bytes, codec: Codec | None = None) -> Iterator[tuple[str, bytes]]:
    """``(type, enveloped object bytes)`` of each complete frame of a watch stream; raises BadRequest."""
    wire = codec.wire if codec is not None else _fast.protowire
    pos = 0
    while pos + 4 <= len(stream):
        size = int.from_bytes(stream[pos : pos + 4], "big")
        frame = bytes(stream[pos + 4 : pos + 4 + size])
        if len(frame) < size:
            raise errors.BadRequest("protobuf: truncated watch frame")
        pos += 4 + size
        event_type, obj = "", b""
        for number, w, v in _fields(wire, frame):
            if number == 1 and w == 2:
                event_type = _text(v)
            elif number == 2 and w == 2:
                for n, w2, v2 in _fields(wire, v):
                    if n == 1 and w2 == 2:
                        obj = v2
        yield event_type, obj
    if pos != len(stream):
        raise errors.BadRequest("protobuf: truncated watch frame")
