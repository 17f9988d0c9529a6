"""Metadata-only decoding of stored objects."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kapi.encoding import codec

POD = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pod.json").read_text())


def test_metadata_of_a_realistic_pod_without_managed_fields() -> None:
    got = codec.decode_metadata(codec.encode_value(POD))
    want = {k: v for k, v in POD["metadata"].items() if k != "managedFields"}
    assert got == {"metadata": want}
    assert "ownerReferences" in got["metadata"]


def test_an_object_without_metadata() -> None:
    assert codec.decode_metadata(codec.encode_value({"kind": "X", "spec": {"a": [1, 2]}})) == {"metadata": {}}


values = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                   max_size=3), max_leaves=10)


@given(st.dictionaries(st.text(max_size=6), values, max_size=4), st.dictionaries(st.text(max_size=6), values,
                                                                                  max_size=4))
def test_agrees_with_a_full_decode(md: dict, rest: dict) -> None:
    obj = {**{k: v for k, v in rest.items() if k != "metadata"}, "metadata": md}
    full = codec.decode_value(codec.encode_value(obj))
    want = {k: v for k, v in full["metadata"].items() if k != "managedFields"}
    assert codec.decode_metadata(codec.encode_value(obj)) == {"metadata": want}
