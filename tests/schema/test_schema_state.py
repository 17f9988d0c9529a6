"""The schema is per server, not per process (issue 11): each load is its own, with its own compiled tables."""

from __future__ import annotations

from kapi.encoding import protobuf
from kapi.object.schema import GVK, TypeDef, go_roundtrip, load_builtin, load_proto_messages

WIDGET = TypeDef(name="com.example.v1.Widget", type="object", gvks=(GVK("example.com", "v1", "Widget"),))


def test_two_loads_share_nothing() -> None:
    a, b = load_builtin(), load_builtin()
    assert a is not b and a.go is not b.go
    a.register([WIDGET])
    assert a.type_for("example.com", "v1", "Widget") is WIDGET
    assert b.type_for("example.com", "v1", "Widget") is None
    assert protobuf.codec_for(a) is protobuf.codec_for(a)
    assert protobuf.codec_for(a) is not protobuf.codec_for(b)


def test_register_and_unregister_move_the_generation() -> None:
    schema = load_builtin()
    before = schema.generation
    schema.register([WIDGET])
    assert schema.generation == before + 1 and WIDGET.name in schema
    schema.unregister([WIDGET.name])
    assert schema.generation == before + 2 and WIDGET.name not in schema
    assert schema.type_for("example.com", "v1", "Widget") is None


def test_go_plans_are_kept_on_the_loaded_table() -> None:
    schema = load_builtin()
    assert schema.go is not None
    obj = go_roundtrip(schema, ("", "v1", "ConfigMap"), {"metadata": {"name": "a"}, "data": None})
    assert obj == {"metadata": {"name": "a", "creationTimestamp": None}}  # Go writes a zero Time as null
    assert schema.go.plans() is schema.go.plans()


def test_status_messages_match_the_packaged_table() -> None:
    messages = load_proto_messages()
    for name, msg in protobuf.STATUS_MESSAGES.items():
        assert messages[name] == msg, name


def test_status_encodes_as_with_the_schema_codec() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "no",
              "reason": "NotFound", "details": {"name": "a", "kind": "pods",
                                                "causes": [{"reason": "r", "message": "m", "field": "f"}]},
              "code": 404}
    schema = load_builtin()
    assert protobuf.encode_status(status) == protobuf.encode_status(status, protobuf.codec_for(schema))
