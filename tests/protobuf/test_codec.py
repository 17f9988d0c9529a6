"""Special JSON forms, the envelope, lists, Status and watch frames, and real kubectl bytes."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.e2e.conftest import kubectl_binary
from hypothesis import given
from hypothesis import strategies as st

from kapi import errors
from kapi.encoding import protobuf
from kapi.encoding.protobuf import Codec
from kapi.object.schema import Schema

from . import capture, objects

DATA = Path(__file__).parent / "data"
LEASE = ("coordination.k8s.io", "v1", "Lease")


def _lease_time(codec: Codec, schema: Schema, field: str, value: str | None) -> tuple[bytes, object]:
    obj = {"metadata": {"name": "l"}, "spec": {field: value}}
    data = protobuf.encode(schema, LEASE, obj, codec)
    return data, protobuf.decode(schema, LEASE, data, codec)["spec"].get(field, "<absent>")


@pytest.mark.parametrize(
    ("text", "seconds", "nanos", "back"),
    [
        ("2024-05-14T10:00:03.123456Z", 1715680803, 123456000, "2024-05-14T10:00:03.123456Z"),
        ("2024-05-14T10:00:03.000000Z", 1715680803, 0, "2024-05-14T10:00:03.000000Z"),
        ("2024-05-14T10:00:03Z", 1715680803, 0, "2024-05-14T10:00:03.000000Z"),
        ("2024-05-14T12:00:03.1234567+02:00", 1715680803, 123456000, "2024-05-14T10:00:03.123456Z"),
        ("1969-12-31T23:59:59.500000Z", -1, 500000000, "1969-12-31T23:59:59.500000Z"),
    ],
)
def test_microtime(codec: Codec, schema: Schema, text: str, seconds: int, nanos: int, back: str) -> None:
    data, decoded = _lease_time(codec, schema, "renewTime", text)
    ts = codec.wire.encode_message([(1, 0, seconds), (2, 0, nanos)])
    assert ts in data
    assert decoded == back


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("2024-05-14T10:00:03Z", "2024-05-14T10:00:03Z"),
        ("2024-05-14T10:00:03.999Z", "2024-05-14T10:00:03Z"),  # Go's ProtoTime drops nanoseconds
        ("2024-05-14T05:00:03-05:00", "2024-05-14T10:00:03Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ],
)
def test_time(codec: Codec, schema: Schema, text: str, back: str) -> None:
    obj = {"metadata": {"name": "n", "creationTimestamp": text}}
    data = protobuf.encode(schema, ("", "v1", "ConfigMap"), obj, codec)
    assert protobuf.decode(schema, ("", "v1", "ConfigMap"), data, codec)["metadata"]["creationTimestamp"] == back


def test_null_time_is_the_empty_message(codec: Codec, schema: Schema) -> None:
    data = protobuf.encode(schema, ("", "v1", "ConfigMap"), {"metadata": {"creationTimestamp": None}}, codec)
    assert data == b"\x0a\x02\x42\x00"
    assert protobuf.decode(schema, ("", "v1", "ConfigMap"), data, codec) == {"metadata": {"creationTimestamp": None}}


def test_bad_time_is_an_internal_error(codec: Codec, schema: Schema) -> None:
    with pytest.raises(errors.InternalError):
        protobuf.encode(schema, ("", "v1", "ConfigMap"), {"metadata": {"creationTimestamp": "yesterday"}}, codec)


_times = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59))


@given(_times, st.booleans())
def test_twins_agree_on_times(twins: tuple[ModuleType, ModuleType], when: dt.datetime, micro: bool) -> None:
    py, c = Codec(twins[0]), Codec(twins[1])
    field = "renewTime" if micro else "creationTimestamp"
    text = when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{when.microsecond:06d}Z" if micro else "Z")
    text = text.rjust(len(text) + 4 - len(text.split("-")[0]), "0")  # strftime does not pad years < 1000
    obj = {"metadata": {"name": "x"}, "spec": {field: text}} if micro else {"metadata": {field: text}}
    from kapi.object.schema import load_builtin

    schema = load_builtin()
    gvk = LEASE if micro else ("", "v1", "ConfigMap")
    data = protobuf.encode(schema, gvk, obj, py)
    assert protobuf.encode(schema, gvk, obj, c) == data
    decoded_py = protobuf.decode(schema, gvk, data, py)
    assert protobuf.decode(schema, gvk, data, c) == decoded_py
    assert decoded_py == obj


def test_int_or_string_bytes(codec: Codec, schema: Schema) -> None:
    w = codec.wire
    gvk = ("apps", "v1", "Deployment")

    def deployment(value: object) -> dict:
        return {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": value}}}}

    def wrapped(ios: bytes) -> bytes:  # spec=2 / strategy=4 / rollingUpdate=2 / maxUnavailable=1
        return w.encode_message([(2, 2, w.encode_message([(4, 2, w.encode_message([(2, 2, w.encode_message(
            [(1, 2, ios)]))]))]))])

    assert protobuf.encode(schema, gvk, deployment(1), codec) == wrapped(b"\x08\x00\x10\x01\x1a\x00")
    as_str = protobuf.encode(schema, gvk, deployment("25%"), codec)
    assert as_str == wrapped(b"\x08\x01\x10\x00\x1a\x0325%")
    assert protobuf.decode(schema, gvk, as_str, codec) == deployment("25%")
    assert protobuf.decode(schema, gvk, wrapped(b"\x10\xff\xff\xff\xff\x0f"), codec) == deployment(-1)


def test_quantity_and_secret_bytes(codec: Codec, schema: Schema) -> None:
    w = codec.wire
    data = protobuf.encode(schema, ("", "v1", "Secret"), {"data": {"k": "AAE="}}, codec)
    assert data == w.encode_message([(2, 2, w.encode_message([(1, 2, b"k"), (2, 2, b"\x00\x01")]))])
    rq = protobuf.encode(schema, ("", "v1", "ResourceQuota"), {"spec": {"hard": {"pods": "10", "cpu": 2}}}, codec)
    back = protobuf.decode(schema, ("", "v1", "ResourceQuota"), rq, codec)
    assert back == {"spec": {"hard": {"cpu": "2", "pods": "10"}}}
    assert list(back["spec"]["hard"]) == ["cpu", "pods"]  # map entries sorted by key


def test_negative_int32_takes_ten_bytes(codec: Codec, schema: Schema) -> None:
    job = objects.job()
    data = protobuf.encode(schema, ("batch", "v1", "Job"), job, codec)
    assert b"\x18\x01\x18\x02\x18\xfd\xff\xff\xff\xff\xff\xff\xff\xff\x01" in data  # values=3: 1, 2, -3 unpacked
    back = protobuf.decode(schema, ("batch", "v1", "Job"), data, codec)
    assert back["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [1, 2, -3]


def test_packed_repeated_ints_are_read(codec: Codec, schema: Schema) -> None:
    w = codec.wire
    packed = w.encode_varint(1) + w.encode_varint(2) + w.encode_varint(-3)
    # spec=2 / securityContext=14 / runAsUser=2, supplementalGroups=4 packed
    ctx = w.encode_message([(2, 0, 1000), (4, 2, packed), (4, 0, 7)])
    data = w.encode_message([(2, 2, w.encode_message([(14, 2, ctx)]))])
    back = protobuf.decode(schema, ("", "v1", "Pod"), data, codec)
    assert back == {"spec": {"securityContext": {"runAsUser": 1000, "supplementalGroups": [1, 2, -3, 7]}}}


def test_unknown_fields_are_skipped(codec: Codec, schema: Schema) -> None:
    w = codec.wire
    data = w.encode_message([(1, 2, w.encode_message([(1, 2, "n"), (999, 0, 5)])), (77, 2, b"junk"), (78, 1, 1.0)])
    assert protobuf.decode(schema, ("", "v1", "ConfigMap"), data, codec) == {"metadata": {"name": "n"}}


@pytest.mark.parametrize("data", [b"\x0a\x05ab", b"\x0a\x02\x0a\xff", b"\x0a\x01\x38"])
def test_garbage_is_bad_request(codec: Codec, schema: Schema, data: bytes) -> None:
    with pytest.raises(errors.BadRequest):
        protobuf.decode(schema, ("", "v1", "ConfigMap"), data, codec)


def test_crd_schema_wrappers(codec: Codec, schema: Schema) -> None:
    crd = objects.crd()
    back = protobuf.decode_object(schema, protobuf.encode_object(schema, crd, codec), codec)
    props = back["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert props["properties"]["tags"]["items"] == {"type": "string"}
    assert props["properties"]["pairs"]["items"] == [{"type": "string"}, {"type": "integer"}]
    assert props["properties"]["closed"]["additionalProperties"] is False
    assert props["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert props["dependencies"] == {"a": ["b", "c"], "d": {"required": ["e"]}}
    assert props["properties"]["mode"]["enum"] == ["fast", "slow", None]
    assert props["properties"]["size"]["default"] == 3 and props["properties"]["size"]["maximum"] == 10.5


@pytest.mark.parametrize(
    ("text", "nanos", "back"),
    [("0s", 0, "0s"), ("0", 0, "0s"), ("1h2m3.5s", 3723500000000, "1h2m3.5s"), ("90s", 90 * 10**9, "1m30s"),
     ("1h", 3600 * 10**9, "1h0m0s"), ("300ms", 300_000_000, "300ms"), ("1.5us", 1500, "1.5µs"),
     ("-2m", -120 * 10**9, "-2m0s"), ("7ns", 7, "7ns")],
)
def test_durations(text: str, nanos: int, back: str) -> None:
    assert protobuf.parse_duration(text) == nanos
    assert protobuf.format_duration(nanos) == back


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "--1s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        protobuf.parse_duration(text)


# ------------------------------------------------------------------ envelope, lists, status, watch


def test_envelope(codec: Codec) -> None:
    data = protobuf.wrap("apps/v1", "Deployment", b"\x0a\x00")
    assert data == b"k8s\x00\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment\x12\x02\x0a\x00\x1a\x00\x22\x00"
    assert protobuf.unwrap(data, codec) == ("apps/v1", "Deployment", b"\x0a\x00")


@pytest.mark.parametrize("data", [b"", b"{}", b"k8s\x01\x0a\x00", b"k8s\x00\x0a\x09", b"k8s\x00\x1a\x04gzip"])
def test_bad_envelopes(codec: Codec, schema: Schema, data: bytes) -> None:
    with pytest.raises(errors.BadRequest):
        protobuf.decode_object(schema, data, codec)


def test_kinds_without_protobuf(schema: Schema) -> None:
    assert not protobuf.supports(schema, ("example.com", "v1", "Widget"))
    with pytest.raises(errors.NotAcceptable):
        protobuf.encode(schema, ("example.com", "v1", "Widget"), {})
    with pytest.raises(errors.UnsupportedMediaType):
        protobuf.decode(schema, ("example.com", "v1", "Widget"), b"")


def test_list(codec: Codec, schema: Schema) -> None:
    pods = [objects.pod() for _ in range(30)]
    for i, p in enumerate(pods):
        p["metadata"]["name"] = f"p{i}"
    items = [protobuf.encode(schema, ("", "v1", "Pod"), p, codec) for p in pods]
    meta = {"resourceVersion": "1000", "continue": "abc", "remainingItemCount": 0}
    length, sized = protobuf.encode_list_sized(schema, ("", "v1", "PodList"), meta, items, chunk_bytes=4096,
                                               codec=codec)
    chunks = list(sized)
    assert len(chunks) > 10
    assert length == sum(len(c) for c in chunks)  # sent as the Content-Length
    assert chunks == list(protobuf.encode_list(schema, ("", "v1", "PodList"), meta, items, chunk_bytes=4096,
                                               codec=codec))
    back = protobuf.decode_object(schema, b"".join(chunks), codec)
    assert back["kind"] == "PodList" and back["metadata"] == meta
    assert [p["metadata"]["name"] for p in back["items"]] == [f"p{i}" for i in range(30)]
    assert back["items"][3] == protobuf.decode(schema, ("", "v1", "Pod"), items[3], codec)


def test_status(codec: Codec) -> None:
    status = objects.status_object()
    data = protobuf.encode_status(status, codec)
    assert protobuf.unwrap(data, codec)[:2] == ("v1", "Status")
    back = codec.decode_message(protobuf.STATUS_MESSAGE, protobuf.unwrap(data, codec)[2])
    assert back == {k: v for k, v in status.items() if k not in ("kind", "apiVersion")}


def test_watch_stream(codec: Codec, schema: Schema) -> None:
    cm = objects.configmap()
    stream = b"".join([
        protobuf.encode_watch_event(schema, "ADDED", cm, codec),
        protobuf.encode_watch_event(schema, "ERROR", objects.status_object(), codec),
    ])
    frames = list(protobuf.iter_watch_frames(stream, codec))
    assert [t for t, _ in frames] == ["ADDED", "ERROR"]
    assert protobuf.decode_object(schema, frames[0][1], codec) == protobuf.decode_object(
        schema, protobuf.encode_object(schema, cm, codec), codec)
    assert protobuf.unwrap(frames[1][1], codec)[1] == "Status"
    with pytest.raises(errors.BadRequest):
        list(protobuf.iter_watch_frames(stream[:-3], codec))


# ------------------------------------------------------------------ what kubectl sends


def test_recorded_kubectl_bytes(schema: Schema) -> None:
    faithful = Codec()
    for name in ("namespace", "configmap"):
        data = (DATA / f"kubectl-create-{name}.bin").read_bytes()
        obj = protobuf.decode_object(schema, data)
        # Our encoder writes exactly what kubectl wrote, from the zero-keeping decode.
        assert protobuf.encode_object(schema, protobuf.decode_object(schema, data, faithful), faithful) == data
        if name == "namespace":
            assert obj == {"apiVersion": "v1", "kind": "Namespace", "spec": {}, "status": {},
                           "metadata": {"name": "x", "generation": 0, "creationTimestamp": None}}
        else:
            assert obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "c" and obj["data"] == {"a": "1"}


@pytest.mark.parametrize(
    ("args", "kind", "check"),
    [
        (["create", "namespace", "x"], "Namespace", {"metadata": {"name": "x", "generation": 0,
                                                                  "creationTimestamp": None}}),
        (["create", "configmap", "c", "--from-literal=a=1"], "ConfigMap", {"data": {"a": "1"}}),
        (["create", "secret", "generic", "s", "--from-literal=k=v"], "Secret", {"data": {"k": "dg=="}}),
    ],
)
def test_live_kubectl_bodies(schema: Schema, tmp_path: Path, args: list[str], kind: str, check: dict) -> None:
    """The exact bytes kubectl 1.33 sends for `create <type>`, captured now, decode as they should."""
    binary = kubectl_binary("1.33")
    server = capture.start(tmp_path)
    try:
        config = capture.kubeconfig(tmp_path, server.url)
        proc = subprocess.run([binary, *args, "--kubeconfig", str(config)], capture_output=True, timeout=60)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr.decode()
    posts = [r for r in server.recorded if r.method == "POST"]
    assert len(posts) == 1
    assert posts[0].content_type == protobuf.CONTENT_TYPE
    obj = protobuf.decode_object(schema, posts[0].body)
    assert obj["kind"] == kind
    for key, value in check.items():
        assert {k: obj[key].get(k) for k in value} == value
