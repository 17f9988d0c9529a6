"""The string formats kube validates in custom resources (strfmt.Default less what apiextensions
strips), and Go's printing of values in the messages."""

from __future__ import annotations

import pytest

from kapi.object.structural import from_props, validate
from kapi.object.structural._gofmt import go_body_value, go_float
from kapi.object.structural.formats import format_checker, supported_format

FORMATS = [
    ("bsonobjectid", "507f1f77bcf86cd799439011", "507f1f77bcf86cd79943901"),
    ("uri", "https://example.com/a?b=c", "example.com"),
    ("email", "a@example.com", "not-an-email"),
    ("hostname", "my-host.example.com", "-bad-.com"),
    ("ipv4", "192.168.0.1", "::1"),
    ("ipv6", "2001:db8::1", "192.168.0.1"),
    ("cidr", "2001:db8::/32", "10.0.0.1"),
    ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ("uuid3", "a3bb189e-8bf9-3888-9912-ace4e6543002", "a3bb189e-8bf9-4888-9912-ace4e6543002"),
    ("uuid4", "9b2c8a0e-4c7e-4f7a-9b1d-2f6e8c3a5d10", "9b2c8a0e-4c7e-3f7a-9b1d-2f6e8c3a5d10"),
    ("uuid5", "886313e1-3b8a-5372-9b90-0c9aee199e5d", "886313e1-3b8a-4372-9b90-0c9aee199e5d"),
    ("isbn10", "0321751043", "0321751044"),
    ("isbn13", "978-0321751041", "978-0321751042"),
    ("isbn", "0321751043", "123"),
    ("creditcard", "4111 1111 1111 1111", "4111 1111 1111 1112"),
    ("ssn", "123-45-6789", "123456789"),
    ("hexcolor", "#ffaa00", "#ffaa0"),
    ("rgbcolor", "rgb(255, 0, 10)", "rgb(256,0,0)"),
    ("byte", "aGVsbG8gd29ybGQ=", "aGVsbG8gd29ybGQ"),
    ("date", "2024-02-29", "2024-2-29"),
    ("date-time", "2024-02-29T23:59:59.123+02:00", "2024-02-29T24:00:00Z"),
    ("datetime", "2024-02-29t10:00:00z", "2024-02-29 10:00:00Z"),
    ("duration", "1h2m3.5s", "forever"),
    ("duration", "3 days", "12"),
]


@pytest.mark.parametrize("fmt,good,bad", FORMATS, ids=[f"{f[0]}-{f[1]}" for f in FORMATS])
def test_format(fmt: str, good: str, bad: str) -> None:
    check = format_checker(supported_format("string", fmt))
    assert check is not None
    assert check(good)
    assert not check(bad)


def test_password_is_any_string() -> None:
    check = format_checker("password")
    assert check is not None and check("")


@pytest.mark.parametrize("type_,fmt,kept", [
    ("string", "uuid", "uuid"), ("string", "int32", ""), ("", "date-time", "date-time"),
    ("integer", "int32", "int32"), ("integer", "uuid", ""), ("number", "double", "double"),
    ("number", "int64", ""), ("boolean", "byte", ""), ("string", "k8s-short-name", ""),
])
def test_formats_kube_strips(type_: str, fmt: str, kept: str) -> None:
    assert supported_format(type_, fmt) == kept


def test_a_stripped_format_is_not_validated() -> None:
    s = from_props({"type": "object", "properties": {"f": {"type": "string", "format": "k8s-short-name"}}})
    assert validate(s, {"f": "NOT_A_NAME"}) == []


def test_format_of_a_wrong_type() -> None:
    # kube-openapi's type check reports the format when the value is not of the node's type
    s = from_props({"type": "object", "properties": {"f": {"type": "string", "format": "uuid"}}})
    (c,) = validate(s, {"f": 5})
    assert (c.reason, c.message) == ("FieldValueTypeInvalid",
                                     'Invalid value: "int64": f in body must be of type uuid: "int64"')


@pytest.mark.parametrize("value,text", [
    (1.0, "1"), (0.5, "0.5"), (1e6, "1e+06"), (123456.0, "123456"), (1e-5, "1e-05"), (0.0001, "0.0001"),
    (-2.5, "-2.5"), (1.23456789e8, "1.23456789e+08"),
])
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


def test_go_body_value() -> None:
    assert go_body_value({"b": [1, None], "a": "x"}) == \
        'map[string]interface {}{"a":"x", "b":[]interface {}{1, interface {}(nil)}}'
    assert go_body_value(None) == "null"
    assert go_body_value("q\"") == '"q\\""'
