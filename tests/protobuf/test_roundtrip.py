"""JSON -> protobuf -> JSON on realistic objects of every served kind, with both twins."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from kapi.encoding import protobuf
from kapi.encoding.protobuf import Codec
from kapi.object.schema import Schema

from . import objects
from .conftest import load_twin


def drop_empty(value: Any) -> Any:
    """``value`` without empty lists and maps, which protobuf cannot tell from absent ones."""
    if isinstance(value, dict):
        return {k: drop_empty(v) for k, v in value.items() if not (isinstance(v, (list, dict)) and not v)}
    if isinstance(value, list):
        return [drop_empty(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(objects.ALL))
def test_round_trip(codec: Codec, schema: Schema, name: str) -> None:
    obj = objects.ALL[name]()
    data = protobuf.encode_object(schema, obj, codec)
    assert data.startswith(protobuf.MAGIC)
    back = protobuf.decode_object(schema, data, codec)
    assert list(back)[:2] == ["apiVersion", "kind"]
    assert drop_empty(back) == drop_empty(obj)


@pytest.mark.parametrize("name", sorted(objects.ALL))
def test_twins_write_the_same_bytes(twins: tuple[ModuleType, ModuleType], schema: Schema, name: str) -> None:
    obj = objects.ALL[name]()
    py, c = Codec(twins[0]), Codec(twins[1])
    data = protobuf.encode_object(schema, obj, py)
    assert protobuf.encode_object(schema, obj, c) == data
    assert protobuf.decode_object(schema, data, c) == protobuf.decode_object(schema, data, py)


def test_zero_values_survive(codec: Codec, schema: Schema) -> None:
    obj = objects.deployment()
    back = protobuf.decode_object(schema, protobuf.encode_object(schema, obj, codec), codec)
    assert back["spec"]["replicas"] == 0
    assert back["spec"]["paused"] is False
    assert back["metadata"]["annotations"]["note"] == ""
    assert back["spec"]["template"]["metadata"]["creationTimestamp"] is None


def test_empty_messages_survive_and_empty_collections_vanish(codec: Codec, schema: Schema) -> None:
    obj = objects.service()
    obj["spec"]["externalIPs"] = []
    obj["metadata"]["labels"] = {}
    back = protobuf.decode_object(schema, protobuf.encode_object(schema, obj, codec), codec)
    assert back["status"] == {"loadBalancer": {}}
    assert "externalIPs" not in back["spec"]
    assert "labels" not in back["metadata"]


def test_unknown_keys_are_dropped(codec: Codec, schema: Schema) -> None:
    obj = objects.configmap()
    obj["bogus"] = {"x": 1}
    obj["metadata"]["alsoBogus"] = 3
    back = protobuf.decode_object(schema, protobuf.encode_object(schema, obj, codec), codec)
    assert "bogus" not in back and "alsoBogus" not in back["metadata"]


def test_inline_volume_source_is_flat_in_json(codec: Codec, schema: Schema) -> None:
    pod = objects.pod()
    name = protobuf.message_name(schema, ("", "v1", "Pod"))
    data = codec.encode_message(name, pod)
    back = codec.decode_message(name, data)
    assert back["spec"]["volumes"][0] == {"name": "config", "configMap": {"name": "cache-config", "defaultMode": 420}}
    probe = back["spec"]["containers"][0]["livenessProbe"]
    assert probe["httpGet"]["port"] == 8080 and probe["initialDelaySeconds"] == 10


def test_decode_with_the_other_twin(schema: Schema, wire: ModuleType) -> None:
    other = load_twin("py" if wire.__name__.endswith("_c") else "c")
    for make in objects.ALL.values():
        obj = make()
        data = protobuf.encode_object(schema, obj, Codec(wire))
        assert drop_empty(protobuf.decode_object(schema, data, Codec(other))) == drop_empty(obj)
