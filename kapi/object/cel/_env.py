"""kube's CEL environment on cel-expr-python (cel-cpp): the standard library, the strings and
optional extensions, ``cel.bind``, and kube's libraries as custom functions.

One environment serves every rule (building one costs cel-cpp about 75 ms, so it is made once per
process, lazily); ``self`` and ``oldSelf`` are declared ``dyn`` (kube declares them with the
node's schema type; see the README for what that changes).

kube's opaque types (URL, IP, CIDR, Quantity, Semver) are maps ``{"kapi.cel.type": kind, "v": text}``
here: cel-cpp's Python bindings cannot return a foreign object from a function.
"""

from __future__ import annotations

import ipaddress
import re
import threading
import urllib.parse
from decimal import Decimal
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional

T = cel.Type
TAG = "kapi.cel.type"

_lock = threading.Lock()
_env: Any = None


def _opaque(kind: str, text: str) -> dict[str, str]:
    return {TAG: kind, "v": text}


def _val(o: Any, kind: str) -> str:
    if isinstance(o, dict) and o.get(TAG) == kind:
        return str(o["v"])
    raise ValueError(f"no such overload: expected {kind}")


# ----------------------------------------------------------------- lists


def _cmp_ok(lst: list[Any]) -> list[Any]:
    return list(lst)


def _is_sorted(lst: Any) -> bool:
    xs = list(lst)
    return all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1))


def _sum(lst: Any) -> Any:
    xs = list(lst)
    if not xs:
        return 0
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    if isinstance(total, int) and not isinstance(total, bool) and not -(1 << 63) <= total < (1 << 63):
        raise OverflowError("integer overflow")
    return total


def _min(lst: Any) -> Any:
    xs = list(lst)
    if not xs:
        raise ValueError("min called on empty list")
    return min(xs)


def _max(lst: Any) -> Any:
    xs = list(lst)
    if not xs:
        raise ValueError("max called on empty list")
    return max(xs)


def _list_index_of(lst: Any, v: Any) -> int:
    for i, x in enumerate(lst):
        if x == v and type(x) is type(v):
            return i
    return -1


def _list_last_index_of(lst: Any, v: Any) -> int:
    xs = list(lst)
    for i in range(len(xs) - 1, -1, -1):
        if xs[i] == v and type(xs[i]) is type(v):
            return i
    return -1


# ----------------------------------------------------------------- strings


def _cp_index(s: str, t: str, i: int) -> int:
    if i < 0 or i > len(s):
        raise IndexError(f"index out of range: {i}")
    return s.find(t, i)


def _cp_last_index(s: str, t: str, i: int) -> int:
    if i < 0 or i >= max(len(s), 1) and not (i == 0 and not s):
        raise IndexError(f"index out of range: {i}")
    return s.rfind(t, 0, i + len(t))


def _char_at(s: str, i: int) -> str:
    if i < 0 or i > len(s):
        raise IndexError(f"index out of range: {i}")
    return s[i:i + 1]


def _lower_ascii(s: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _upper_ascii(s: str) -> str:
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)


def _replace_n(s: str, a: str, b: str, n: int) -> str:
    return s.replace(a, b, n if n >= 0 else -1)


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        return chars if n < 0 or n >= len(chars) else chars[:n - 1] + ["".join(chars[n - 1:])]
    return s.split(sep) if n < 0 else s.split(sep, n - 1)


def _substring(s: str, a: int, b: int) -> str:
    if a < 0 or a > len(s):
        raise IndexError(f"index out of range: {a}")
    if b < a or b > len(s):
        raise IndexError(f"invalid substring range. start: {a}, end: {b}")
    return s[a:b]


def _quote(s: str) -> str:
    from kapi.object.validation.fields import go_quote
    return go_quote(s)


# ----------------------------------------------------------------- regex


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    out = [m.group(0) for m in re.finditer(pattern, s)]
    return out if n < 0 else out[:n]


# ----------------------------------------------------------------- urls


def _url(s: str) -> dict[str, str]:
    u = urllib.parse.urlsplit(s)
    if not (u.scheme or s.startswith("/")):
        raise ValueError(f"URL parse error during conversion from string: parse {s!r}: invalid URI for request")
    return _opaque("URL", s)


def _is_url(s: str) -> bool:
    try:
        _url(s)
        return True
    except ValueError:
        return False


def _u(o: Any) -> urllib.parse.SplitResult:
    return urllib.parse.urlsplit(_val(o, "URL"))


def _host(o: Any) -> str:
    """Go's ``url.URL.Host``: the host with its port, without user info."""
    return _u(o).netloc.rsplit("@", 1)[-1]


def _hostname(o: Any) -> str:
    n = _host(o)
    if n.startswith("["):
        return n[1:n.index("]")]
    return n.rsplit(":", 1)[0] if ":" in n else n


def _port(o: Any) -> str:
    n = _u(o).netloc.rsplit("@", 1)[-1]
    if n.startswith("["):
        rest = n[n.index("]") + 1:]
        return rest[1:] if rest.startswith(":") else ""
    return n.rsplit(":", 1)[1] if ":" in n else ""


def _query(o: Any) -> dict[str, list[str]]:
    return {k: v for k, v in urllib.parse.parse_qs(_u(o).query, keep_blank_values=True).items()}


# ----------------------------------------------------------------- ip / cidr


def _ip(s: str) -> dict[str, str]:
    if "%" in s:
        raise ValueError("IP Address with zone value is not allowed")
    try:
        a = ipaddress.ip_address(s)
    except ValueError:
        raise ValueError(f"IP Address {s!r} parse error during conversion from string") from None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped:
        raise ValueError("IPv4-mapped IPv6 address is not allowed")
    return _opaque("IP", str(a))


def _is_ip(s: str) -> bool:
    try:
        _ip(s)
        return True
    except ValueError:
        return False


def _ipa(o: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(_val(o, "IP"))


def _cidr(s: str) -> dict[str, str]:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        raise ValueError(f"network address {s!r} parse error during conversion from string") from None
    if "/" not in s:
        raise ValueError(f"network address {s!r} parse error during conversion from string")
    return _opaque("CIDR", s)


def _is_cidr(s: str) -> bool:
    try:
        _cidr(s)
        return True
    except ValueError:
        return False


def _net(o: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(_val(o, "CIDR"), strict=False)


def _cidr_contains_ip(c: Any, ip: Any) -> bool:
    a = _ipa(ip) if isinstance(ip, dict) else ipaddress.ip_address(_val(_ip(ip), "IP"))
    return a in _net(c)


def _cidr_contains_cidr(c: Any, other: Any) -> bool:
    o = _net(other) if isinstance(other, dict) else _net(_cidr(other))
    n = _net(c)
    return o.version == n.version and o.subnet_of(n)  # type: ignore[arg-type]


# ----------------------------------------------------------------- quantity

_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
           "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10**3, "M": 10**6,
           "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QTY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")


def _qty_dec(s: str) -> Decimal:
    m = _QTY.match(s)
    if not m:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    num, suf = Decimal(m.group(1)), m.group(2) or ""
    if suf[:1] in ("e", "E"):
        return num * (Decimal(10) ** int(suf[1:]))
    return num * Decimal(_SUFFIX[suf])


def _quantity(s: str) -> dict[str, str]:
    _qty_dec(s)
    return _opaque("Quantity", s)


def _is_quantity(s: str) -> bool:
    try:
        _qty_dec(s)
        return True
    except ValueError:
        return False


def _q(o: Any) -> Decimal:
    return _qty_dec(_val(o, "Quantity"))


def _q_of(x: Any) -> Decimal:
    return Decimal(x) if isinstance(x, int) else _q(x)


def _q_fmt(d: Decimal) -> dict[str, str]:
    text = format(d.normalize(), "f")
    return _opaque("Quantity", text)


def _as_integer(o: Any) -> int:
    d = _q(o)
    if d != d.to_integral_value() or not -(1 << 63) <= d < (1 << 63):
        raise ValueError("cannot convert value to integer")
    return int(d)


def _cmp(a: Decimal, b: Decimal) -> int:
    return (a > b) - (a < b)


# ----------------------------------------------------------------- semver

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


def _semver(s: str) -> dict[str, str]:
    if not _SEMVER.match(s):
        raise ValueError(f"Semver parse error: {s!r}")
    return _opaque("Semver", s)


def _is_semver(s: str) -> bool:
    return bool(_SEMVER.match(s))


def _sv(o: Any) -> tuple[int, int, int, str]:
    m = _SEMVER.match(_val(o, "Semver"))
    assert m
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def _sv_key(o: Any) -> tuple[Any, ...]:
    a, b, c, pre = _sv(o)
    parts: tuple[Any, ...] = (1,) if not pre else (0, *((0, int(p), "") if p.isdigit() else (1, 0, p)
                                                         for p in pre.split(".")))
    return (a, b, c, parts)


def _sv_cmp(x: Any, y: Any) -> int:
    kx, ky = _sv_key(x), _sv_key(y)
    return (kx > ky) - (kx < ky)


# ----------------------------------------------------------------- format

def _formats() -> dict[str, Any]:
    from kapi.object.cel import _formats as f
    return f.FORMATS


def _format_named(name: str) -> dict[str, str]:
    if name not in _formats():
        raise ValueError(f"Format {name!r} not found")
    return _opaque("Format", name)


def _format_validate(fmt: Any, s: str) -> Any:
    errs = _formats()[_val(fmt, "Format")](s)
    return errs  # a list; the rule reads it as optional-ish: empty means valid


# ----------------------------------------------------------------- declarations


def _ov(oid: str, ret: Any, params: list[Any], member: bool, impl: Any) -> Any:
    return cel.Overload(oid, ret, params, member, impl=impl)


def _ELEMS() -> list[tuple[str, Any]]:
    return [("int", T.INT), ("uint", T.UINT), ("double", T.DOUBLE), ("string", T.STRING), ("bool", T.BOOL),
            ("list", T.List(T.DYN)), ("map", T.Map(T.DYN, T.DYN))]


def _decls() -> list[Any]:
    L, M, S, I, B, D = T.List(T.DYN), T.Map(T.STRING, T.DYN), T.STRING, T.INT, T.BOOL, T.DYN
    LS = T.List(T.STRING)
    fd = cel.FunctionDecl
    out = [
        # lists
        fd("isSorted", [_ov("list_is_sorted", B, [L], True, _is_sorted)]),
        fd("sum", [_ov("list_sum", D, [L], True, _sum)]),
        fd("min", [_ov("list_min", D, [L], True, _min)]),
        fd("max", [_ov("list_max", D, [L], True, _max)]),
        fd("indexOf", [*(_ov(f"list_index_of_{n}", I, [L, t], True, _list_index_of) for n, t in _ELEMS()),
                       _ov("string_index_of", I, [S, S], True, lambda s, t: _cp_index(s, t, 0)),
                       _ov("string_index_of_int", I, [S, S, I], True, _cp_index)]),
        fd("lastIndexOf", [*(_ov(f"list_last_index_of_{n}", I, [L, t], True, _list_last_index_of) for n, t in _ELEMS()),
                           _ov("string_last_index_of", I, [S, S], True, lambda s, t: s.rfind(t)),
                           _ov("string_last_index_of_int", I, [S, S, I], True, _cp_last_index)]),
        # strings extension (kube's version 2 of cel-go's ext.Strings)
        fd("charAt", [_ov("string_char_at_int", S, [S, I], True, _char_at)]),
        fd("lowerAscii", [_ov("string_lower_ascii", S, [S], True, _lower_ascii)]),
        fd("upperAscii", [_ov("string_upper_ascii", S, [S], True, _upper_ascii)]),
        fd("replace", [_ov("string_replace_string_string", S, [S, S, S], True, lambda s, a, b: s.replace(a, b)),
                       _ov("string_replace_string_string_int", S, [S, S, S, I], True, _replace_n)]),
        fd("split", [_ov("string_split_string", LS, [S, S], True, _split),
                     _ov("string_split_string_int", LS, [S, S, I], True, _split)]),
        fd("substring", [_ov("string_substring_int", S, [S, I], True, lambda s, a: _substring(s, a, len(s))),
                         _ov("string_substring_int_int", S, [S, I, I], True, _substring)]),
        fd("trim", [_ov("string_trim", S, [S], True, lambda s: s.strip())]),
        fd("join", [_ov("list_join", S, [LS], True, lambda lst: "".join(lst)),
                    _ov("list_join_string", S, [LS, S], True, lambda lst, sep: sep.join(lst))]),
        fd("reverse", [_ov("string_reverse", S, [S], True, lambda s: s[::-1])]),
        fd("strings.quote", [_ov("strings_quote", S, [S], False, _quote)]),
        # regex
        fd("find", [_ov("string_find", S, [S, S], True, _find)]),
        fd("findAll", [_ov("string_find_all", LS, [S, S], True, lambda s, p: _find_all(s, p)),
                       _ov("string_find_all_n", LS, [S, S, I], True, _find_all)]),
        # urls
        fd("url", [_ov("string_to_url", M, [S], False, _url)]),
        fd("isURL", [_ov("is_url_string", B, [S], False, _is_url)]),
        fd("getScheme", [_ov("url_get_scheme", S, [M], True, lambda o: _u(o).scheme)]),
        fd("getHost", [_ov("url_get_host", S, [M], True, _host)]),
        fd("getHostname", [_ov("url_get_hostname", S, [M], True, _hostname)]),
        fd("getPort", [_ov("url_get_port", S, [M], True, _port)]),
        fd("getEscapedPath", [_ov("url_get_escaped_path", S, [M], True, lambda o: _u(o).path)]),
        fd("getQuery", [_ov("url_get_query", T.Map(S, LS), [M], True, _query)]),
        # ip / cidr
        fd("ip", [_ov("string_to_ip", M, [S], False, _ip)]),
        fd("isIP", [_ov("is_ip", B, [S], False, _is_ip)]),
        fd("family", [_ov("ip_family", I, [M], True, lambda o: _ipa(o).version if o.get(TAG) == "IP"
                          else _net(o).version)]),
        fd("isUnspecified", [_ov("ip_is_unspecified", B, [M], True, lambda o: _ipa(o).is_unspecified)]),
        fd("isLoopback", [_ov("ip_is_loopback", B, [M], True, lambda o: _ipa(o).is_loopback)]),
        fd("isLinkLocalMulticast", [_ov("ip_is_link_local_multicast", B, [M], True,
                                        lambda o: _ipa(o).is_multicast and _ipa(o).is_link_local)]),
        fd("isLinkLocalUnicast", [_ov("ip_is_link_local_unicast", B, [M], True,
                                      lambda o: _ipa(o).is_link_local and not _ipa(o).is_multicast)]),
        fd("isGlobalUnicast", [_ov("ip_is_global_unicast", B, [M], True,
                                   lambda o: not (_ipa(o).is_multicast or _ipa(o).is_loopback or _ipa(o).is_link_local
                                                  or _ipa(o).is_unspecified or str(_ipa(o)) == "255.255.255.255"))]),
        fd("cidr", [_ov("string_to_cidr", M, [S], False, _cidr)]),
        fd("isCIDR", [_ov("is_cidr", B, [S], False, _is_cidr)]),
        fd("containsIP", [_ov("cidr_contains_ip_string", B, [M, S], True, _cidr_contains_ip),
                          _ov("cidr_contains_ip_ip", B, [M, M], True, _cidr_contains_ip)]),
        fd("containsCIDR", [_ov("cidr_contains_cidr_string", B, [M, S], True, _cidr_contains_cidr),
                            _ov("cidr_contains_cidr", B, [M, M], True, _cidr_contains_cidr)]),
        fd("prefixLength", [_ov("cidr_prefix_length", I, [M], True, lambda o: _net(o).prefixlen)]),
        fd("masked", [_ov("cidr_masked", M, [M], True, lambda o: _opaque("CIDR", str(_net(o))))]),
        # quantity
        fd("quantity", [_ov("string_to_quantity", M, [S], False, _quantity)]),
        fd("isQuantity", [_ov("is_quantity", B, [S], False, _is_quantity)]),
        fd("sign", [_ov("quantity_sign", I, [M], True, lambda o: _cmp(_q(o), Decimal(0)))]),
        fd("isInteger", [_ov("quantity_is_integer", B, [M], True, lambda o: _q(o) == _q(o).to_integral_value())]),
        fd("asInteger", [_ov("quantity_as_integer", I, [M], True, _as_integer)]),
        fd("asApproximateFloat", [_ov("quantity_as_float", T.DOUBLE, [M], True, lambda o: float(_q(o)))]),
        fd("add", [_ov("quantity_add", M, [M, M], True, lambda a, b: _q_fmt(_q(a) + _q(b))),
                   _ov("quantity_add_int", M, [M, I], True, lambda a, b: _q_fmt(_q(a) + b))]),
        fd("sub", [_ov("quantity_sub", M, [M, M], True, lambda a, b: _q_fmt(_q(a) - _q(b))),
                   _ov("quantity_sub_int", M, [M, I], True, lambda a, b: _q_fmt(_q(a) - b))]),
        fd("isLessThan", [_ov("quantity_less_than", B, [M, M], True, lambda a, b: _less(a, b))]),
        fd("isGreaterThan", [_ov("quantity_greater_than", B, [M, M], True, lambda a, b: _less(b, a))]),
        fd("compareTo", [_ov("quantity_compare_to", I, [M, M], True, _compare_to)]),
        # semver
        fd("semver", [_ov("string_to_semver", M, [S], False, _semver)]),
        fd("isSemver", [_ov("is_semver", B, [S], False, _is_semver)]),
        fd("major", [_ov("semver_major", I, [M], True, lambda o: _sv(o)[0])]),
        fd("minor", [_ov("semver_minor", I, [M], True, lambda o: _sv(o)[1])]),
        fd("patch", [_ov("semver_patch", I, [M], True, lambda o: _sv(o)[2])]),
        # format
        fd("format.named", [_ov("format_named", M, [S], False, _format_named)]),
        fd("__validate", [_ov("format_validate", T.List(T.STRING), [M, S], True, _format_validate)]),
    ]
    for name in _formats_names():
        out.append(fd(f"format.{name}", [_ov(f"format_{name}", M, [], False, (lambda n: lambda: _opaque("Format", n))(name))]))
    return out


def _formats_names() -> list[str]:
    from kapi.object.cel._formats import CEL_NAMES
    return list(CEL_NAMES)


def _less(a: Any, b: Any) -> bool:
    if a.get(TAG) == "Semver":
        return _sv_cmp(a, b) < 0
    return _q(a) < _q(b)


def _compare_to(a: Any, b: Any) -> int:
    if a.get(TAG) == "Semver":
        return _sv_cmp(a, b)
    return _cmp(_q(a), _q(b))


_FORMAT_CALL = re.compile(r"format\.(?:named\(\s*(?:'[^']*'|\"[^\"]*\")\s*\)|[A-Za-z0-9]+\(\s*\))\.validate\(")


def _close(text: str, i: int) -> int:
    """The index of the ")" closing the "(" at text[i] (string literals skipped), or -1."""
    depth, j, quote = 0, i, ""
    while j < len(text):
        c = text[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def rewrite(text: str) -> str:
    """kube's ``format.X().validate(s)`` returns ``optional<list<string>>``; cel-cpp's Python bindings
    cannot return an optional from a function, so the call is rewritten to wrap a list-returning one."""
    n = 0
    while True:
        m = _FORMAT_CALL.search(text)
        if not m:
            return text
        open_at = m.end() - 1
        close = _close(text, open_at)
        if close < 0:
            return text
        recv = text[m.start():m.end() - len(".validate(")]
        arg = text[open_at + 1:close]
        v = f"__fmt{n}"
        n += 1
        text = (text[:m.start()] + f"cel.bind({v}, {recv}.__validate({arg}), "
                f"{v}.size() == 0 ? optional.none() : optional.of({v}))" + text[close + 1:])


def env() -> Any:
    """The process's one CEL environment (made on first use)."""
    global _env
    if _env is None:
        with _lock:
            if _env is None:
                _env = cel.NewEnv(
                    variables={"self": T.DYN, "oldSelf": T.DYN, "__oldSelf": T.DYN, "__hasOldSelf": T.BOOL},
                    extensions=[ext_optional.ExtOptional(), ext_bindings.ExtBindings()],
                    functions=_decls())
    return _env


def is_error(v: Any) -> bool:
    return v.type() == T.ERROR
