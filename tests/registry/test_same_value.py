"""The registry's no-op write check: two stored values hold the same object (any key order), or not."""

from __future__ import annotations

import json
from pathlib import Path

from kapi.encoding import codec
from kapi.registry.store import _same_value

POD = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pod.json").read_text())


def _reordered(value: object) -> object:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def test_the_same_object_in_another_key_order_is_the_same() -> None:
    a, b = codec.encode_value(POD), codec.encode_value(_reordered(POD))  # type: ignore[arg-type]
    assert a != b and len(a) == len(b)
    assert _same_value(a, b) and _same_value(a, a)


def test_a_change_of_the_same_length_is_a_change() -> None:
    changed = json.loads(json.dumps(POD))
    changed["metadata"]["annotations"]["prometheus.io/port"] = "9091"
    a, b = codec.encode_value(POD), codec.encode_value(changed)
    assert len(a) == len(b) and not _same_value(a, b)
    swapped = json.loads(json.dumps(POD))  # the same bytes counted, moved between values: decoded to tell
    swapped["metadata"]["labels"]["tier"], swapped["metadata"]["labels"]["app"] = "cache", "a"
    assert not _same_value(codec.encode_value(POD), codec.encode_value(swapped))


def test_true_is_not_one_nor_one_point_zero_one() -> None:
    assert not _same_value(codec.encode_value({"a": True, "b": 1}), codec.encode_value({"a": 1, "b": True}))
    assert not _same_value(codec.encode_value({"a": 1}), codec.encode_value({"a": True}))
