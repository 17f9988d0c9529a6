"""structured-merge-diff's merge/obsolete_versions tables: managers recorded in a version the converter
no longer knows are dropped."""

from __future__ import annotations

from typing import Any

from kapi.object.managedfields.updater import MissingVersion
from tests.managedfields.smd_harness import _NS, _P, Apply, DeducedParser, State, Update, load
from tests.managedfields.test_smd_set import setFieldsParser


class SpecificVersionConverter:
    """Returns the object unchanged, for the listed versions only."""

    def __init__(self, accepted: list[str]) -> None:
        self.accepted = accepted

    def convert(self, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        if api_version not in self.accepted:
            raise MissingVersion(f"Unknown version: {api_version}")
        return obj


def _managers(state: State) -> dict[str, tuple[Any, str]]:
    return {k.manager: (vs.fields, vs.api_version) for k, vs in state.managers.items() if vs.fields}


def test_obsolete_versions() -> None:
    converter = SpecificVersionConverter(["v1", "v2"])
    state = State(DeducedParser, converter=converter)
    state.run(Update("v1", "v1", '{"v1": 0}'))
    state.run(Update("v2", "v2", '{"v1": 0, "v2": 0}'))
    converter.accepted = ["v2", "v3"]  # v1 goes, v3 comes
    state.run(Update("v3", "v3", '{"v1": 0, "v2": 0, "v3": 0}'))
    assert _managers(state) == {"v2": (_NS(_P("v2")), "v2"), "v3": (_NS(_P("v3")), "v3")}


def test_apply_obsolete_version() -> None:
    converter = SpecificVersionConverter(["v1"])
    state = State(setFieldsParser, converter=converter)
    state.run(Apply("apply", "v1", '{"list": ["a", "b", "c", "d"]}'))
    converter.accepted = ["v2"]
    state.run(Apply("apply", "v2", '{"list": ["a"]}'))
    # The v1 entry was dropped, so nothing the applier had applied in v1 is pruned.
    assert state.live == load('{"list": ["a", "b", "c", "d"]}')
