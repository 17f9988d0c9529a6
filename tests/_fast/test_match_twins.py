"""Label selector matching over interned rows: both twins answer as ``LabelSelector.matches``."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi.object.selectors import LabelSelector, Requirement, parse_label_selector

from .conftest import _load

POD_LABELS = [
    {"app": "web", "tier": "gold", "env": "prod", "replicas": "3"},
    {"app": "web", "tier": "silver", "env": "dev", "replicas": "10"},
    {"app": "db", "env": "dev"},
    {"app": "db", "tier": "gold", "replicas": "x"},
    {},
]


def _expected(rows: dict[int, dict[str, str]], selector: LabelSelector) -> list[int]:
    return sorted(slot for slot, labels in rows.items() if selector.matches(labels))


def _table(match: ModuleType) -> tuple[object, dict[int, dict[str, str]]]:
    table = match.MatchTable()
    return table, {table.add(labels): labels for labels in POD_LABELS}


@pytest.mark.parametrize("text", [
    "", "tier=gold", "tier==gold", "tier!=gold", "tier in (gold,silver)", "tier notin (gold)",
    "tier", "!tier", "replicas>5", "replicas<5", "replicas>2,replicas<4", "tier=gold,env!=dev",
    "app=web,env=prod", "missing", "!missing", "missing!=x", "missing notin (a,b)", "missing=x",
    "tier=bronze", "tier!=bronze", "tier notin (bronze)", "missing>1", "app in (web,unknown)",
])
def test_operators_match_the_reference(match: ModuleType, text: str) -> None:
    table, rows = _table(match)
    selector = parse_label_selector(text)
    assert table.select(selector) == _expected(rows, selector)


def test_gt_lt_need_an_integer_on_both_sides(match: ModuleType) -> None:
    table, rows = _table(match)
    for req in (Requirement("replicas", "gt", ("x",)), Requirement("replicas", "lt", ("1", "2")),
                Requirement("replicas", "gt", ("99999999999999999999",))):
        assert table.select(LabelSelector((req,))) == []
    assert table.select(LabelSelector((Requirement("replicas", "gt", ("-5",)),))) == [0, 1]


def test_unknown_operator_matches_nothing(match: ModuleType) -> None:
    table, _ = _table(match)
    assert table.select(LabelSelector((Requirement("app", "~", ("web",)),))) == []


def test_update_remove_and_slot_reuse(match: ModuleType) -> None:
    table, rows = _table(match)
    table.update(0, {"tier": "silver", "extra": "1", "more": "2", "andmore": "3", "last": "4"})
    assert table.labels(0) == {"tier": "silver", "extra": "1", "more": "2", "andmore": "3", "last": "4"}
    assert table.select(parse_label_selector("tier=gold")) == [3]
    table.remove(3)
    assert len(table) == 4
    with pytest.raises(KeyError):
        table.remove(3)
    with pytest.raises(KeyError):
        table.update(3, {})
    assert table.select(parse_label_selector("tier=gold")) == []
    assert table.add({"tier": "gold"}) == 3
    assert table.select(parse_label_selector("tier=gold")) == [3]


def test_compiled_selector_follows_later_rows(match: ModuleType) -> None:
    table = match.MatchTable()
    table.add({"tier": "silver"})
    compiled = table.compile(parse_label_selector("tier=gold"))
    assert table.scan(compiled) == []
    slot = table.add({"tier": "gold"})  # "gold" was unknown when compiled
    assert table.scan(compiled) == [slot]


def test_compaction_and_reinterning_keep_answers(match: ModuleType) -> None:
    table = match.MatchTable()
    rows: dict[int, dict[str, str]] = {}
    for i in range(300):
        labels = {"app": f"a{i % 7}", "tier": "gold" if i % 20 == 0 else "std"}
        rows[table.add(labels)] = labels
    compiled = table.compile(parse_label_selector("tier=gold,app!=a0"))
    # Churning values and growing rows force both kinds of rebuild many times.
    for n in range(12000):
        slot = n % 300
        labels = {"app": f"a{slot % 7}", "tier": "gold" if slot % 20 == 0 else "std", "hash": f"h{n}"}
        if n % 5 == 0:
            labels.update({f"k{j}": str(j) for j in range(n % 4)})
        table.update(slot, labels)
        rows[slot] = labels
    assert table.scan(compiled) == _expected(rows, compiled.selector)
    assert all(table.labels(slot) == labels for slot, labels in rows.items())


KEYS = ["app", "tier", "env", "n", "team"]
VALUES = ["", "a", "b", "gold", "0", "1", "7", "-3", "12", "x1"]
OPERATORS = ["exists", "!", "=", "==", "!=", "in", "notin", "gt", "lt"]

label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=5)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    op = draw(st.sampled_from(OPERATORS))
    key = draw(st.sampled_from(KEYS + ["never-seen"]))
    if op in ("exists", "!"):
        values: tuple[str, ...] = ()
    elif op in ("gt", "lt"):
        values = (draw(st.sampled_from(["0", "5", "-1", "x"])),)
    elif op in ("in", "notin"):
        values = tuple(draw(st.lists(st.sampled_from(VALUES + ["unseen"]), max_size=3, unique=True)))
    else:
        values = (draw(st.sampled_from(VALUES + ["unseen"])),)
    return Requirement(key, op, values)


selectors = st.lists(requirements(), max_size=3).map(lambda rs: LabelSelector(tuple(rs)))

# Each step: ("add", labels) | ("update", index, labels) | ("remove", index)
steps = st.lists(st.one_of(
    st.tuples(st.just("add"), label_sets),
    st.tuples(st.just("update"), st.integers(0, 50), label_sets),
    st.tuples(st.just("remove"), st.integers(0, 50)),
), max_size=40)


def _apply(match: ModuleType, ops: list[tuple]) -> tuple[object, dict[int, dict[str, str]]]:
    table = match.MatchTable()
    rows: dict[int, dict[str, str]] = {}
    for op in ops:
        if op[0] == "add":
            rows[table.add(op[1])] = op[1]
        elif rows and op[0] == "update":
            slot = sorted(rows)[op[1] % len(rows)]
            table.update(slot, op[2])
            rows[slot] = op[2]
        elif rows:
            slot = sorted(rows)[op[1] % len(rows)]
            table.remove(slot)
            del rows[slot]
    return table, rows


@pytest.mark.parametrize("impl", [pytest.param("c", marks=pytest.mark.c_twin), "py"])
@settings(max_examples=300)
@given(steps, st.lists(selectors, min_size=1, max_size=4))
def test_twins_agree_with_the_reference(impl: str, ops: list[tuple], sels: list[LabelSelector]) -> None:
    twin = _load("match", impl)  # the compiled one skipped or failed as the fixture does
    table, rows = _apply(twin, ops)
    assert len(table) == len(rows)
    for selector in sels:
        assert table.select(selector) == _expected(rows, selector), (twin.__name__, str(selector))
