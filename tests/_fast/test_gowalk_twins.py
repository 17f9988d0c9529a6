"""``walk``, Go's decode and encode along gozero's plans: both twins leave objects alike."""

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

from kapi.object.schema import gozero, load_builtin
from tests._needs import compiled_twin

POD = Path(__file__).resolve().parents[1] / "fixtures" / "pod.json"
SCHEMA = load_builtin()


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def gowalk(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "c":
        return compiled_twin("gowalk")
    return importlib.import_module("kapi._fast.gowalk_py")


def _plan(group: str, version: str, kind: str) -> Any:
    t = SCHEMA.type_for(group, version, kind)
    assert t is not None and SCHEMA.go is not None
    return SCHEMA.go.plans()[t.name]


def test_action_codes_are_gozeros(gowalk: ModuleType) -> None:
    for name in ("SCALAR", "SCALAR_OMIT", "STRUCT", "OPAQUE", "NIL", "NIL_OMIT", "COLL", "COLL_OMIT",
                 "INTO_NONE", "INTO_ONE", "INTO_ITEMS", "INTO_VALUES"):
        assert getattr(gowalk, name) == getattr(gozero, "_" + name), name


def test_pod_fixture_is_go_shaped_already(gowalk: ModuleType) -> None:
    pod = json.loads(POD.read_text())
    out = copy.deepcopy(pod)
    gowalk.walk(_plan("", "v1", "Pod"), out)
    assert json.dumps(out) == json.dumps(pod)


def test_a_client_body_takes_gos_shape(gowalk: ModuleType) -> None:
    body = {"metadata": {"name": "p", "labels": {}, "annotations": None},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [], "resources": None,
                                     "env": [{"name": "A", "value": ""}]}, None],
                     "nodeSelector": {"a": "b"}, "priority": 0, "hostNetwork": False,
                     "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": None}
    out = copy.deepcopy(body)
    gowalk.walk(_plan("", "v1", "Pod"), out)
    assert out["status"] == {}  # a value struct: null is the zero struct
    assert "labels" not in out["metadata"] and "annotations" not in out["metadata"]  # omitempty
    assert out["metadata"]["creationTimestamp"] is None  # a zero Time is written as null
    assert "hostNetwork" not in out["spec"]
    ctr = out["spec"]["containers"][0]
    assert "ports" not in ctr and ctr["resources"] == {} and ctr["env"] == [{"name": "A"}]
    assert SCHEMA.go is not None
    assert out["spec"]["containers"][1] == SCHEMA.go.plans()["io.k8s.api.core.v1.Container"].zero
    py = importlib.import_module("kapi._fast.gowalk_py")
    again = copy.deepcopy(body)
    py.walk(_plan("", "v1", "Pod"), again)
    assert json.dumps(out) == json.dumps(again)


def test_copy_zero_copies_nested_dicts(gowalk: ModuleType) -> None:
    template = {"a": {"b": {}}, "c": 0, "d": None}
    out = gowalk.copy_zero(template)
    assert out == template and out is not template and out["a"] is not template["a"]
    assert out["a"]["b"] is not template["a"]["b"]


_leaf = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", 0.0, 1.5])
_tree = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["name", "image", "ports", "resources", "env", "value", "containerPort", "protocol",
                     "limits", "requests", "x"]), inner, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["metadata", "spec", "status", "containers", "initContainers",
                                        "nodeName", "priority", "hostNetwork", "labels", "extra"]),
                       _tree, max_size=6))
def test_twins_agree(body: dict[str, Any]) -> None:
    py = importlib.import_module("kapi._fast.gowalk_py")
    try:
        c = compiled_twin("gowalk")
    except pytest.skip.Exception:
        return
    for kind_plan in (_plan("", "v1", "Pod"), _plan("apps", "v1", "Deployment")):
        a, b = copy.deepcopy(body), copy.deepcopy(body)
        spec = {"containers": [copy.deepcopy(body)], **{k: v for k, v in body.items() if k != "containers"}}
        sa, sb = copy.deepcopy(spec), copy.deepcopy(spec)
        py.walk(kind_plan, a)
        c.walk(kind_plan, b)
        assert json.dumps(a) == json.dumps(b)
        py.walk(kind_plan, {"spec": sa})
        c.walk(kind_plan, {"spec": sb})
        assert json.dumps(sa) == json.dumps(sb)
