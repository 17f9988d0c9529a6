"""kubectl-style JSONPath (kapi.object.jsonpath) and the custom resource Table printer's cells by column type."""

from __future__ import annotations

import time

import pytest

from kapi.encoding.tables.custom import custom_printer
from kapi.object.jsonpath import JSONPathError, compile_path, print_value

OBJ = {"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z", "labels": {"a.b/c": "x"}},
       "spec": {"n": 3, "f": 2.5, "b": True, "list": [1, 2, 3], "m": {"k": "v", "j": [1, "x"]}},
       "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}}


@pytest.mark.parametrize("path,want", [
    (".spec.n", [3]),
    ("spec.n", [3]),
    ("{.spec.n}", [3]),
    (".spec.missing", []),
    (".spec.list[1]", [2]),
    (".spec.list[-1]", [3]),
    (".spec.list[0:2]", [1, 2]),
    (".spec.list[*]", [1, 2, 3]),
    (".spec.list[9]", []),
    (".metadata.labels['a.b/c']", ["x"]),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    ('.status.conditions[?(@.type!="Ready")].type', ["Synced"]),
    (".status.conditions[?(@.status)].type", ["Synced", "Ready"]),
    (".spec.list[?(@ > 1)]", [2, 3]),
    ("..type", ["Synced", "Ready"]),
])
def test_find(path: str, want: list[object]) -> None:
    assert compile_path(path).find(OBJ) == want


@pytest.mark.parametrize("bad", [".spec[", ".spec.list[x]", ".[?(@.a ~ 1)]", "..", ".spec.."])
def test_malformed(bad: str) -> None:
    with pytest.raises(JSONPathError):
        compile_path(bad)


@pytest.mark.parametrize("value,want", [
    (None, "<nil>"), (True, "true"), (3, "3"), (2.0, "2"), (2.5, "2.5"), (1e21, "1e+21"), (1e-7, "1e-07"),
    ("s", "s"), ([1, "x"], '[1,"x"]'), ({"b": 1, "a": [True, 1.5, "<"]}, '{"a":[true,1.5,"\\u003c"],"b":1}'),
])
def test_print_value_as_go(value: object, want: str) -> None:
    assert print_value(value) == want


def test_cells_by_type() -> None:
    cols = [{"name": "N", "type": "integer", "jsonPath": ".spec.f"},
            {"name": "F", "type": "number", "jsonPath": ".spec.n"},
            {"name": "B", "type": "boolean", "jsonPath": ".spec.b"},
            {"name": "BadB", "type": "boolean", "jsonPath": ".spec.n"},
            {"name": "S", "type": "string", "jsonPath": ".spec.m"},
            {"name": "Missing", "type": "string", "jsonPath": ".spec.nope"},
            {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            {"name": "BadDate", "type": "date", "jsonPath": ".metadata.name"},
            {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
             "description": "is it ready", "format": "x", "priority": 2}]
    printer = custom_printer(cols)
    defs = printer.column_definitions()
    assert defs[0]["name"] == "Name" and defs[0]["format"] == "name"
    assert defs[-1] == {"name": "Ready", "type": "string", "format": "x", "description": "is it ready", "priority": 2}
    assert defs[1]["description"] == "Custom resource definition column (in JSONPath format): .spec.f"
    now = time.mktime(time.strptime("2020-01-03 00:00:00", "%Y-%m-%d %H:%M:%S")) - time.timezone
    cells = printer.cells(OBJ, now)
    assert cells == ["a", 2, 3.0, True, None, '{"j":[1,"x"],"k":"v"}', None, "2d", "<invalid>", "True"]


def test_default_columns() -> None:
    printer = custom_printer(None)
    assert [c["name"] for c in printer.column_definitions()] == ["Name", "Age"]
    assert printer.column_definitions()[1]["type"] == "date"
    assert printer.cells({"metadata": {"name": "x"}}, 0)[0] == "x"
    assert printer.cells({"metadata": {"name": "x"}}, 0)[1] is None
