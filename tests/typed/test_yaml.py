"""Issue 10: YAML is decoded as sigs.k8s.io/yaml (go-yaml v2, then JSON) decodes it: JSON values only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi import errors
from kapi.object import typed


@pytest.mark.parametrize("text,value", [
    ("a: !!binary aGVsbG8=", {"a": "hello"}),
    ("a: !!binary /w==", {"a": "\ufffd"}),  # invalid UTF-8 becomes U+FFFD, as Go's JSON encoder writes it
    ("a: 2024-01-01", {"a": "2024-01-01"}),
    ("a: 2001-12-14t21:59:43.10-05:00", {"a": "2001-12-14t21:59:43.10-05:00"}),
    ("a: !!timestamp 2024-01-01", {"a": "2024-01-01"}),
    ("a: !!set {p, q}", {"a": {"p": None, "q": None}}),
    ("a: !!omap [{p: 1}, {q: 2}]", {"a": [{"p": 1}, {"q": 2}]}),
    ("a: 1:20", {"a": "1:20"}),  # no base 60 in go-yaml v2
    ("a: 1e3", {"a": "1e3"}),
    ("a: 1e+3", {"a": 1000}),
    ("a: 1.0", {"a": 1}),
    ("a: 1.5", {"a": 1.5}),
    ("a: 0x1F", {"a": 31}),
    ("a: 017", {"a": 15}),
    ("a: 1_000", {"a": 1000}),
    ("a: y", {"a": True}),
    ("a: off", {"a": False}),
    ("a: ~", {"a": None}),
    ("1: x", {"1": "x"}),
    ("1.5: x", {"1.5": "x"}),
    ("true: x", {"true": "x"}),
    ("y: x", {"true": "x"}),
    ("a: !custom value", {"a": "value"}),
    ("a: !!python/object/apply:os.system [ls]", {"a": ["ls"]}),
    ("b: &b {c: 1}\na: {<<: *b, d: 2}", {"b": {"c": 1}, "a": {"c": 1, "d": 2}}),
    ("first: 1\n---\nsecond: 2\n", {"first": 1}),
    ("", None),
    ("# only a comment\n", None),
])
def test_json_compatible_values(text: str, value: Any) -> None:
    assert typed.load_yaml(text.encode()) == value


@pytest.mark.parametrize("text,fragment", [
    ("a: .nan", "json: unsupported value: NaN"),
    ("a: .inf", "json: unsupported value: +Inf"),
    ("a: -.Inf", "json: unsupported value: -Inf"),
    ("a: !!binary '!!'", "invalid base64"),
    ("a: !!int abc", "cannot decode !!str `abc` as a !!int"),
    ("~: x", "unsupported map key"),
    ("? [a, b]\n: x", "unsupported map key"),
    ("? {a: b}\n: x", "unsupported map key"),
    ("a: &x [*x]", "contains itself"),
    ("a: *nope", "error converting YAML to JSON"),
    ("a: [", "error converting YAML to JSON"),
])
def test_refused(text: str, fragment: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        typed.load_yaml(text.encode())
    assert info.value.message.startswith("error converting YAML to JSON: ")
    assert fragment in info.value.message


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    with pytest.raises(errors.BadRequest) as info:
        typed.load_yaml("\n".join(lines).encode())
    assert "excessive aliasing" in info.value.message


def test_few_aliases_are_fine() -> None:
    doc = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(100))
    loaded = typed.load_yaml(doc.encode())
    assert len(loaded) == 101 and loaded["k99"] == {"x": 1}


def test_depth() -> None:
    for opener, closer in (("[", "]"), ("{a: ", "}")):
        deep = "x: " + opener * 1000 + "1" + closer * 1000
        with pytest.raises(errors.BadRequest) as info:
            typed.load_yaml(deep.encode())
        assert "nested more than" in info.value.message
    block = "".join("  " * i + "a:\n" for i in range(1000)) + "  " * 1000 + "b: 1\n"
    with pytest.raises(errors.BadRequest):
        typed.load_yaml(block.encode())
    ok = "x: " + "[" * 50 + "]" * 50
    assert typed.load_yaml(ok.encode()) is not None


@pytest.mark.parametrize("doc", [b'a: "\\ud800"', b'"\\ud89f\\udcf6k": 1', b'a: ["x\\udc00"]'])
def test_surrogate_escapes_are_refused_as_go_yaml_refuses_them(doc: bytes) -> None:
    """go-yaml (libyaml's scanner) refuses a \\u escape of a surrogate, pair halves included; PyYAML
    took them, and a key holding one later failed to encode in the Status (a fuzz finding)."""
    with pytest.raises(errors.BadRequest, match="invalid Unicode character escape code"):
        typed.load_yaml(doc)
    assert typed.load_yaml('a: "\\U0001F600 \\u00e9"'.encode()) == {"a": "\U0001F600 \u00e9"}


# A JSON object that YAML reads the same way is read by the JSON reader (apply bodies are mostly
# JSON); what it reads must be what the YAML reader makes of the same text, and anything the two
# might read differently must go to the YAML reader.

def _yaml_reading(text: str) -> Any:
    """What the YAML reader alone makes of ``text`` (the JSON reader refused), or the error's message."""
    loader = typed._Loader(text.encode())
    try:
        node = loader.get_node() if loader.check_node() else None
        return loader.construct_document(node) if node is not None else None
    except Exception as exc:  # noqa: BLE001 - compared as text
        return f"error: {type(exc).__name__}"
    finally:
        loader.dispose()


@pytest.mark.parametrize("text", [
    '{"a":1}', '{"a":1.0,"b":1.5e+3,"c":-2.50,"d":1.5E-3}', '{"a":"é😀"}', ' \n{"x": {"<<": {"b": 1}}}',
    '{"a":-0}', '{"a":-0.0}', '{"a":true,"b":null,"c":false,"d":[],"e":{}}',
    '{"a":"yes","b":"1","c":"~","d":"","e":"#x &y *z !t"}', '{"a":"x\\ny\\"\\\\ \\/ \\t \\b \\f \\r"}',
    '{"a":12345678901234567890}', '{"a" : 1 , "b" :[ 1 ,2 ] }',
])
def test_json_reader_reads_as_yaml(text: str) -> None:
    assert typed._load_plain_json(text) == _yaml_reading(text)
    assert repr(typed.load_yaml(text)) == repr(_yaml_reading(text))


@pytest.mark.parametrize("text", [
    '{"a":1e5}',  # a string to go-yaml v2
    '{"a":18446744073709551616}', '{"a":-9223372036854775809}',  # floats to go-yaml
    '{"a":NaN}', '{"a":"\\u00e9"}', '{"a":"\\ud83d\\ude00"}',  # escapes: go-yaml refuses surrogates
    '{"a":"x\u0085y"}', '{"a":"x\u2028y"}', '{"a":"\x7f"}', '{"a":"\ufeff"}', '{"a":\t1}',
    '{"a":1} x', '[1]', '{"a":' * 101 + '1' + '}' * 101,
    '{"a":1,"a":2}',  # a repeated key: the YAML reader says on which line (strict decoding)
])
def test_json_reader_leaves_to_yaml_what_it_might_read_otherwise(text: str) -> None:
    with pytest.raises(typed._NotPlainJson):
        typed._load_plain_json(text)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                                     max_size=4), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(st.text(max_size=5), _JSON_VALUES, max_size=5), ascii_only=st.booleans(),
       spaced=st.booleans())
def test_json_reader_agrees_with_yaml_reader(value: dict[str, Any], ascii_only: bool, spaced: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":"))
    try:
        fast = typed._load_plain_json(text)
    except typed._NotPlainJson:
        return
    assert repr(fast) == repr(_yaml_reading(text))


def test_repeated_keys_as_go_yaml_strict_reports_them() -> None:
    value, repeated = typed.load_yaml_strict('{"a":1,"b":{"c":1,"c":2},"a":3}')
    assert value == {"a": 3, "b": {"c": 2}}  # the last one wins, as go-yaml's non-strict decoder
    assert repeated == ['line 1: key "c" already set in map', 'line 1: key "a" already set in map']
    value, repeated = typed.load_yaml_strict("x: &m {p: 1}\nz: *m\n1: a\n'1': b\n1: c\ntrue: d\nyes: e\n")
    # an aliased mapping is looked at once; 1 and "1" differ, true and yes are one key to go-yaml v2
    assert repeated == ['line 5: key 1 already set in map', 'line 7: key true already set in map']
    assert typed.load_yaml_strict('{"a": 1}') == ({"a": 1}, [])
