"""kube's CEL environment: the conformance table (standard library, macros, optionals, time) and kube's
libraries (lists, regex, urls, ip/cidr, quantity, semver, format, strings) (issue 14)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kapi.object.cel import CelError, evaluate

ERR = object()
SELF = {"items": [1, 2, 3, 4, 5], "name": "alpha", "spec": {"x": 1}, "tags": ["b", "a"]}

TABLE: list[tuple[str, Any]] = [
    # arithmetic and overflow (kube: int64, overflow is an error)
    ("1 + 2 * 3", 7),
    ("9223372036854775807 + 1", ERR),
    ("-9223372036854775808 - 1", ERR),
    ("9223372036854775807 * 2", ERR),
    ("1 / 0", ERR),
    ("5 % 0", ERR),
    ("7 / 2", 3),
    ("7.0 / 2.0", 3.5),
    ("uint(1) + uint(2)", 3),
    ("'a' + 1", ERR),
    # strings
    ("'abc'.size()", 3),
    ("size('héllo')", 5),
    ("'hello'.contains('ell')", True),
    ("'hello'.startsWith('he')", True),
    ("'hello'.endsWith('lo')", True),
    ("'abc'.matches('^a.c$')", True),
    ("'ABC'.lowerAscii()", "abc"),
    ("'abc'.upperAscii()", "ABC"),
    ("'a,b,c'.split(',')", ["a", "b", "c"]),
    ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
    ("['a', 'b'].join('-')", "a-b"),
    ("['a', 'b'].join()", "ab"),
    ("'  x '.trim()", "x"),
    ("'hello'.substring(1, 3)", "el"),
    ("'hello'.substring(2)", "llo"),
    ("'hello'.substring(4, 9)", ERR),
    ("'hello'.indexOf('l')", 2),
    ("'hello'.indexOf('l', 3)", 3),
    ("'hello'.lastIndexOf('l')", 3),
    ("'hello'.charAt(1)", "e"),
    ("'hello'.replace('l', 'L')", "heLLo"),
    ("'hello'.replace('l', 'L', 1)", "heLlo"),
    ("'abc'.reverse()", "cba"),
    ("strings.quote('a\"b')", '"a\\"b"'),
    # lists
    ("[1, 2, 3].size()", 3),
    ("2 in [1, 2, 3]", True),
    ("[1, 2] + [3]", [1, 2, 3]),
    ("[1, 2, 3].isSorted()", True),
    ("['b', 'a'].isSorted()", False),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ("[3, 1, 2].min()", 1),
    ("[3, 1, 2].max()", 3),
    ("[].min()", ERR),
    ("[1, 2, 1].indexOf(1)", 0),
    ("[1, 2, 1].lastIndexOf(1)", 2),
    ("['a'].indexOf('z')", -1),
    # macros
    ("has(self.spec)", True),
    ("has(self.nope)", False),
    ("has(self.spec.x)", True),
    ("self.items.all(x, x > 0)", True),
    ("self.items.exists(x, x > 4)", True),
    ("self.items.exists_one(x, x > 3)", False),
    ("self.items.map(x, x * 2)", [2, 4, 6, 8, 10]),
    ("self.items.map(x, x > 2, x)", [3, 4, 5]),
    ("self.items.filter(x, x % 2 == 0)", [2, 4]),
    ("{'a': 1, 'b': 2}.all(k, k.size() == 1)", True),
    ("self.nope", ERR),
    ("self.items[9]", ERR),
    # optionals
    ("self.?nope.orValue(7)", 7),
    ("self.?spec.x.orValue(0)", 1),
    ("self.?spec.?y.hasValue()", False),
    ("optional.of(1).value()", 1),
    ("optional.none().hasValue()", False),
    ("self.items[?9].orValue(-1)", -1),
    # time
    ("duration('1h') > duration('59m')", True),
    ("duration('90s') == duration('1m30s')", True),
    ("duration('1h30m').getMinutes()", 90),
    ("timestamp('2024-01-01T00:00:00Z') < timestamp('2024-06-01T00:00:00Z')", True),
    ("timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')", True),
    ("timestamp('2024-03-05T10:00:00Z').getFullYear()", 2024),
    ("timestamp('not a time')", ERR),
    ("duration('1x')", ERR),
    # conversions, types
    ("int('42') + 1", 43),
    ("int('x')", ERR),
    ("string(12)", "12"),
    ("double(1) == 1.0", True),
    ("type(1) == int", True),
    ("1 == 1.0", ERR),  # no heterogeneous equality in checked expressions
    ("{'a': 1}['a']", 1),
    ("cel.bind(x, 2, x * x)", 4),
    # regex
    ("'abc123def456'.find('[0-9]+')", "123"),
    ("'abc'.find('[0-9]+')", ""),
    ("'a1b2c3'.findAll('[0-9]')", ["1", "2", "3"]),
    ("'a1b2c3'.findAll('[0-9]', 2)", ["1", "2"]),
    # urls
    ("url('https://user@example.com:8443/a/b?x=1&x=2').getScheme()", "https"),
    ("url('https://example.com:8443/a/b').getHost()", "example.com:8443"),
    ("url('https://example.com:8443/a/b').getHostname()", "example.com"),
    ("url('https://example.com:8443/a/b').getPort()", "8443"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('https://example.com/a%20b').getEscapedPath()", "/a%20b"),
    ("url('https://example.com/?x=1&x=2&y=').getQuery()", {"x": ["1", "2"], "y": [""]}),
    ("isURL('https://example.com')", True),
    ("isURL('not a url')", False),
    ("url('::bad')", ERR),
    # ip / cidr
    ("ip('10.0.0.1').family()", 4),
    ("ip('::1').family()", 6),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('8.8.8.8').isGlobalUnicast()", True),
    ("isIP('1.2.3')", False),
    ("ip('1.2.3')", ERR),
    ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", True),
    ("cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", False),
    ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
    ("cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", False),
    ("cidr('10.0.0.0/8').prefixLength()", 8),
    ("isCIDR('10.0.0.0')", False),
    # quantity
    ("quantity('1Gi').isGreaterThan(quantity('1000M'))", True),
    ("quantity('500m').isLessThan(quantity('1'))", True),
    ("quantity('1k').compareTo(quantity('1000'))", 0),
    ("quantity('2Ki').asInteger()", 2048),
    ("quantity('500m').isInteger()", False),
    ("quantity('500m').asApproximateFloat()", 0.5),
    ("quantity('1').add(quantity('500m')).asApproximateFloat()", 1.5),
    ("quantity('1').sub(2).sign()", -1),
    ("isQuantity('1Gi')", True),
    ("isQuantity('1GG')", False),
    ("quantity('x')", ERR),
    # semver
    ("semver('1.2.3').isLessThan(semver('1.10.0'))", True),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
    ("semver('2.0.0').compareTo(semver('2.0.0'))", 0),
    ("semver('1.2.3').major() + semver('1.2.3').minor() + semver('1.2.3').patch()", 6),
    ("isSemver('1.2')", False),
    ("semver('v1')", ERR),
    # format
    ("format.dns1123Label().validate('my-name').hasValue()", False),
    ("format.dns1123Label().validate('My_Name').hasValue()", True),
    ("format.dns1123Subdomain().validate('a.b.c').hasValue()", False),
    ("format.named('uuid').validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", False),
    ("format.named('uuid').validate('nope').hasValue()", True),
    ("format.labelValue().validate('a b').hasValue()", True),
    ("format.named('nonexistent')", ERR),
]


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    return got == want and type(got) is type(want) if not isinstance(want, (list, dict)) else got == want


@pytest.mark.parametrize("expr,want", TABLE, ids=[e for e, _ in TABLE])
def test_conformance(expr: str, want: Any) -> None:
    if want is ERR:
        with pytest.raises(CelError):
            evaluate(expr, SELF)
        return
    got = evaluate(expr, SELF)
    assert _same(got, want), f"{expr} = {got!r}, want {want!r}"


def test_format_errors_are_kubes() -> None:
    [msg] = evaluate("format.dns1123Label().validate('A').value()")
    assert msg.startswith("a lowercase RFC 1123 label must consist of lower case alphanumeric characters")


def test_timestamp_value_is_datetime() -> None:
    got = evaluate("timestamp('2024-01-01T00:00:00Z')")
    assert isinstance(got, datetime.datetime) and got.year == 2024


def test_compile_error_text() -> None:
    with pytest.raises(CelError, match=r"^ERROR: <input>:1:6: undeclared reference to 'bogus'"):
        evaluate("1 == bogus")
