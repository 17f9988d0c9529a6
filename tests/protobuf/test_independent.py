"""An independent check: the google.protobuf runtime parses our bytes and writes them back identically.

Descriptors are built from the same message table the codec uses, but the parsing,
field ordering, map sorting and scalar encoding are the protobuf runtime's own.
``protoc --decode_raw`` (grpcio-tools', from the test extra) must accept the bytes as well.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # the test extra's protobuf

from kapi.encoding import protobuf
from kapi.encoding.protobuf import Codec
from kapi.object.schema import ProtoMessage, Schema, load_proto_messages
from tests._needs import protoc

from . import objects


PACKAGE = "kapitest"
_SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
}


def _mangle(name: str) -> str:
    return name.replace(".", "_")


def _set_type(field: Any, type_name: str) -> None:
    if type_name in _SCALARS:
        field.type = _SCALARS[type_name]
    else:
        field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        field.type_name = f".{PACKAGE}.{_mangle(type_name)}"


def _file(messages: Mapping[str, ProtoMessage]) -> Any:
    """One proto2 file holding every message, field names ``f<number>`` (JSON names are not identifiers)."""
    fd = descriptor_pb2.FileDescriptorProto(name="kapitest.proto", package=PACKAGE, syntax="proto2")
    for msg in messages.values():
        m = fd.message_type.add(name=_mangle(msg.name))
        for pf in sorted(msg.fields.values(), key=lambda f: f.number):
            field = m.field.add(name=f"f{pf.number}", number=pf.number)
            if pf.label == "map":
                entry = m.nested_type.add(name=f"F{pf.number}Entry")
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
                _set_type(key, pf.key)
                value = entry.field.add(name="value", number=2,
                                        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
                _set_type(value, pf.value)
                field.label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{_mangle(msg.name)}.F{pf.number}Entry"
            else:
                field.label = (descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if pf.label == "repeated"
                               else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
                _set_type(field, pf.type)
    return fd


@pytest.fixture(scope="module")
def message_class() -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file(load_proto_messages()))

    def get(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{_mangle(name)}"))

    return get


def test_protobuf_runtime_reads_and_rewrites_identically(codec: Codec, schema: Schema) -> None:
    # The pure-Python runtime, in a child process: upb's deterministic map order puts "app.x"
    # before "app", unlike Go's sort.Strings, which the pure runtime and kapi follow.
    cases = []
    for make in objects.ALL.values():
        obj = make()
        group, version = protobuf.split_api_version(obj["apiVersion"])
        gvk = (group, version, obj["kind"])
        data = protobuf.encode(schema, gvk, obj, codec)
        cases.append({"message": protobuf.message_name(schema, gvk), "data": base64.b64encode(data).decode()})
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(cases).encode(), capture_output=True, env=env,
        cwd=Path(__file__).resolve().parents[2], check=True,
    )
    rewritten = json.loads(proc.stdout)
    assert rewritten["implementation"] == "python"
    assert rewritten["data"] == [c["data"] for c in cases]


_CHILD = """
import base64, json, sys
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.internal import api_implementation
from kapi.object.schema import load_proto_messages
from tests.protobuf.test_independent import PACKAGE, _file, _mangle
pool = descriptor_pool.DescriptorPool()
pool.Add(_file(load_proto_messages()))
out = []
for case in json.load(sys.stdin):
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{_mangle(case['message'])}"))
    msg = cls()
    msg.ParseFromString(base64.b64decode(case["data"]))
    out.append(base64.b64encode(msg.SerializeToString(deterministic=True)).decode())
print(json.dumps({"implementation": api_implementation.Type(), "data": out}))
"""


def test_protobuf_runtime_sees_the_values(codec: Codec, schema: Schema, message_class: Any) -> None:
    obj = objects.service()
    data = protobuf.encode(schema, ("", "v1", "Service"), obj, codec)
    svc = message_class("k8s.io.api.core.v1.Service")()
    svc.ParseFromString(data)
    assert svc.f1.f1 == "web"  # metadata.name
    assert (svc.f1.f8.f1, svc.f1.f8.f2) == (1715680803, 0)  # creationTimestamp seconds, nanos
    ports = svc.f2.f1
    assert [p.f3 for p in ports] == [80, 443, 53]  # port
    assert (ports[0].f4.f1, ports[0].f4.f2) == (0, 8080)  # targetPort: type int, intVal
    assert (ports[1].f4.f1, ports[1].f4.f3) == (1, "https")  # type string, strVal
    assert dict(svc.f2.f2) == {"app": "web"}  # selector


def test_protobuf_runtime_bytes_decode_with_our_codec(codec: Codec, schema: Schema, message_class: Any) -> None:
    cls = message_class("k8s.io.api.core.v1.Secret")
    secret = cls()
    secret.f1.f1 = "made-elsewhere"
    secret.f2["key"] = b"\x00\xffvalue"
    secret.f3 = "Opaque"
    obj = protobuf.decode(schema, ("", "v1", "Secret"), secret.SerializeToString(), codec)
    assert obj == {"metadata": {"name": "made-elsewhere"}, "data": {"key": "AP92YWx1ZQ=="}, "type": "Opaque"}


def test_protoc_decode_raw_accepts_the_bytes(codec: Codec, schema: Schema) -> None:
    data = protobuf.encode(schema, ("", "v1", "Pod"), objects.pod(), codec)
    out = subprocess.run([*protoc(), "--decode_raw"], input=data, capture_output=True, check=True).stdout.decode()
    assert '1: "cache-0-ad76507bdc-43f83"' in out
    assert '1: "registry.example.com/cache/server:v1.3.3"' not in out  # nested deeper, not at top level
    assert "registry.example.com/cache/server:v1.3.3" in out
