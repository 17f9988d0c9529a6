"""Label selector parsing, matching, canonical form and error texts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapi.errors import BadRequest
from kapi.object.selectors import LabelSelector, Requirement, parse_label_selector

LABELS = {"app": "web", "tier": "front", "n": "5", "empty": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),  # != matches objects without the key
        ("app in (db,web)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("missing in (web)", False),
        ("n>4", True),
        ("n>5", False),
        ("n<6", True),
        ("app>1", False),  # not an integer label
        ("missing<9", False),
        ("empty=", True),
        ("empty in ()", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("", True),
    ],
)
def test_matches(text: str, expected: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is expected


def test_requirements_sorted_by_key_with_values_sorted() -> None:
    sel = parse_label_selector("z notin (b,a), a in (y,,x)")
    assert sel.requirements == (
        Requirement("a", "in", ("", "x", "y")),
        Requirement("z", "notin", ("a", "b")),
    )
    assert str(sel) == "a in (,x,y),z notin (a,b)"


def test_in_is_a_value_in_value_position() -> None:
    sel = parse_label_selector("in in (in, notin)")
    assert sel.requirements == (Requirement("in", "in", ("in", "notin")),)


def test_empty_and_exact_value() -> None:
    assert parse_label_selector("").empty
    sel = parse_label_selector("app=web,env in (prod),tier!=x")
    assert not sel.empty
    assert sel.exact_value("app") == "web"
    assert sel.exact_value("env") == "prod"
    assert sel.exact_value("tier") is None
    assert sel.exact_value("other") is None


def test_prefixed_keys() -> None:
    sel = parse_label_selector("app.kubernetes.io/name=cache")
    assert sel.matches({"app.kubernetes.io/name": "cache"})


VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("! =a", "unable to parse requirement: found '=', expected: identifier"),
        ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
        ("n>x", "unable to parse requirement: values[0]: Invalid value: \"x\": "
                "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("app=-x", f"unable to parse requirement: values[0][app]: Invalid value: \"-x\": {VALUE_MSG}"),
        ("app in (a_, -b)",
         "unable to parse requirement: ["
         f"values[0][app]: Invalid value: \"-b\": {VALUE_MSG}, "
         f"values[1][app]: Invalid value: \"a_\": {VALUE_MSG}]"),
        ("-app", f"unable to parse requirement: <nil>: Invalid value: \"-app\": {NAME_MSG}"),
        ("app=" + "v" * 64, "unable to parse requirement: values[0][app]: Invalid value: "
                            f"\"{'v' * 64}\": must be no more than 63 characters"),
        ("Example.com/x", "unable to parse requirement: <nil>: Invalid value: \"Example.com/x\": "
                          "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                          "alphanumeric characters, '-' or '.', and must start and end with an "
                          "alphanumeric character (e.g. 'example.com', regex used for validation "
                          "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ],
)
def test_error_messages(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector(text)
    assert info.value.message == message
    assert info.value.code == 400


_name = st.from_regex(r"[a-z0-9]([-a-z0-9_.]{0,10}[a-z0-9])?", fullmatch=True)
_key = st.one_of(_name, st.builds(lambda p, n: f"{p}.io/{n}", st.from_regex(r"[a-z]{1,8}", fullmatch=True), _name))
_value = st.one_of(st.just(""), _name)
_requirement = st.one_of(
    st.builds(lambda k, op: Requirement(k, op), _key, st.sampled_from(["exists", "!"])),
    st.builds(lambda k, op, v: Requirement(k, op, (v,)), _key, st.sampled_from(["=", "==", "!="]), _value),
    st.builds(lambda k, op, vs: Requirement(k, op, tuple(sorted(vs))), _key,
              st.sampled_from(["in", "notin"]), st.sets(_value, min_size=1, max_size=4)),
    st.builds(lambda k, op, n: Requirement(k, op, (str(n),)), _key, st.sampled_from(["gt", "lt"]),
              st.integers(0, 10**9)),
)


@given(st.lists(_requirement, max_size=5))
def test_string_form_round_trips(reqs: list[Requirement]) -> None:
    sel = LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))
    assert parse_label_selector(str(sel)) == sel
