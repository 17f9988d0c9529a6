"""``copy_tree``: both twins copy every dict and list of a decoded JSON tree and share the rest."""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._needs import compiled_twin

POD = Path(__file__).resolve().parents[1] / "fixtures" / "pod.json"


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def jsontree(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "c":
        return compiled_twin("jsontree")
    return importlib.import_module("kapi._fast.jsontree_py")


def _containers(value: Any) -> list[Any]:
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (dict, list)):
            out.append(v)
            stack.extend(v.values() if isinstance(v, dict) else v)
    return out


def _assert_copy(original: Any, copied: Any) -> None:
    assert copied == original
    assert json.dumps(copied) == json.dumps(original)  # key order and types kept
    ids = {id(c) for c in _containers(original)}
    assert not ids & {id(c) for c in _containers(copied)}


def test_pod_copy_is_deep_and_equal(jsontree: ModuleType) -> None:
    pod = json.loads(POD.read_text())
    before = copy.deepcopy(pod)
    out = jsontree.copy_tree(pod)
    _assert_copy(pod, out)
    out["metadata"]["labels"]["x"] = "y"
    out["spec"]["containers"][0]["image"] = "changed"
    assert pod == before  # the original is untouched


@pytest.mark.parametrize("value", [None, True, 0, 1.5, "s", b"raw", [], {}, [[]], {"a": {}}])
def test_scalars_shared_and_empties_copied(jsontree: ModuleType, value: Any) -> None:
    out = jsontree.copy_tree(value)
    assert out == value and type(out) is type(value)
    if isinstance(value, (dict, list)):
        assert out is not value
    else:
        assert out is value


def test_subclasses_copy_as_base_types(jsontree: ModuleType) -> None:
    class D(dict):  # type: ignore[type-arg]
        pass

    out = jsontree.copy_tree(D(a=[1, D(b=2)]))
    assert out == {"a": [1, {"b": 2}]} and type(out) is dict and type(out["a"][1]) is dict


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                     max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_twins_agree(value: Any) -> None:
    py = importlib.import_module("kapi._fast.jsontree_py")
    _assert_copy(value, py.copy_tree(value))
    try:
        c = compiled_twin("jsontree")
    except pytest.skip.Exception:
        return
    out = c.copy_tree(value)
    _assert_copy(value, out)
    assert out == py.copy_tree(value)
