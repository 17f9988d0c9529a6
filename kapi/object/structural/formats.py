"""The string formats kube validates in custom resources (kube-openapi's ``strfmt.Default`` registry,
less what apiextensions strips: ``StripUnsupportedFormatsPostProcess``).

A format kube does not know for the node's type is dropped (not validated, as kube), so
``format_checker(type, format)`` is None for it. Names are normalized as strfmt does
(``date-time`` is ``datetime``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from datetime import date

try:  # Go's regexp is RE2; use it where installed (linear time, the same syntax)
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None

__all__ = ["SUPPORTED_STRING_FORMATS", "format_checker", "supported_format", "compile_pattern"]

# apiextensions-apiserver pkg/apiserver/validation/formats.go, kube 1.33 (k8s-short-name and
# k8s-long-name came in 1.34).
SUPPORTED_STRING_FORMATS = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
    "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte",
    "password", "date", "duration", "datetime",
})


def supported_format(type_: str, fmt: str, int_or_string: bool = False) -> str:
    """``fmt`` if kube keeps it for a node of ``type_`` (StripUnsupportedFormatsPostProcessor), else ""."""
    if not fmt:
        return ""
    t = "" if int_or_string else type_
    if t in ("", "string"):
        return fmt if fmt.replace("-", "") in SUPPORTED_STRING_FORMATS else ""
    if t == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if t == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


# ------------------------------------------------------------------ patterns

class _Pattern:
    """A compiled ``pattern``: ``search`` as Go's ``MatchString`` (unanchored)."""

    __slots__ = ("search", "error")

    def __init__(self, search: Callable[[str], object] | None, error: str = "") -> None:
        self.search = search
        self.error = error


_PATTERNS: dict[str, _Pattern] = {}


def compile_pattern(pattern: str) -> _Pattern:
    """``pattern`` compiled once (memoized). RE2 when available (as kube: no catastrophic
    backtracking); Python's ``re`` otherwise."""
    p = _PATTERNS.get(pattern)
    if p is not None:
        return p
    try:
        if _re2 is not None:
            opts = _re2.Options()
            opts.log_errors = False
            rx = _re2.compile(pattern, opts)
        else:
            rx = re.compile(pattern)
        p = _Pattern(rx.search)
    except Exception as e:  # noqa: BLE001 - any compile failure is the pattern's fault
        p = _Pattern(None, str(e) or "invalid pattern")
    if len(_PATTERNS) > 4096:
        _PATTERNS.clear()
    _PATTERNS[pattern] = p
    return p


# ------------------------------------------------------------------- formats

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$", re.ASCII)
_DATETIME_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", re.ASCII)
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)$", re.ASCII)
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_EMAIL_ADDR = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\[\]:-]+$")
_EMAIL_NAMED = re.compile(r"^[^<>]*<([^<>]+)>\s*$")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CREDITCARD = re.compile(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|"
                         r"27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                         r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$")
_MAC = re.compile(r"^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){7}|"
                  r"[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){19}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2}|"
                  r"[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){3}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){9})$")
_GO_DURATION = re.compile(r"^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"((\d+)\s*([A-Za-zµ]+))")
_TIME_UNITS = (("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
               ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))


def _is_date(s: str) -> bool:
    m = _DATE.match(s)
    if not m:
        return False
    try:
        date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    # strfmt.IsDateTime: the date before the first "t", the time after it
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _DATETIME_TIME.match(parts[1])
    if not m:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _is_duration(s: str) -> bool:
    if s == "0" or (s and _GO_DURATION.match(s)):
        return True
    for m in _DURATION_PART.finditer(s):
        unit = m.group(3).strip().lower()
        for variants in _TIME_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or variant.lower() == unit:
                    return True
    return False


def _sloppy_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    # netutils.ParseIPSloppy: Go's parser before 1.17 (IPv4 octets may have leading zeros)
    try:
        return ipaddress.ip_address(s)
    except ValueError:
        pass
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", s, re.ASCII):
        parts = [int(p) for p in s.split(".")]
        if all(p < 256 for p in parts):
            return ipaddress.IPv4Address(".".join(map(str, parts)))
        return None
    if ":" in s and "." in s:  # an IPv6 with a sloppy IPv4 tail
        head, _, tail = s.rpartition(":")
        v4 = _sloppy_ip(tail)
        if isinstance(v4, ipaddress.IPv4Address):
            try:
                return ipaddress.ip_address(f"{head}:{v4}")
            except ValueError:
                return None
    return None


def _is_ipv4(s: str) -> bool:
    return _sloppy_ip(s) is not None and "." in s


def _is_ipv6(s: str) -> bool:
    return _sloppy_ip(s) is not None and ":" in s


def _is_cidr(s: str) -> bool:
    addr, sep, bits = s.partition("/")
    if not sep or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        return False
    ip = _sloppy_ip(addr)
    if ip is None:
        return False
    limit = 32 if isinstance(ip, ipaddress.IPv4Address) and ":" not in addr else 128
    return int(bits) <= limit


def _is_email(s: str) -> bool:
    m = _EMAIL_NAMED.match(s)
    addr = m.group(1) if m else s
    if not _EMAIL_ADDR.match(addr):
        return False
    local, _, domain = addr.rpartition("@")
    return bool(local) and bool(domain) and not local.startswith(".") and not local.endswith(".") and ".." not in local


def _is_request_uri(s: str) -> bool:
    # url.ParseRequestURI: an absolute URI or an absolute path, no control characters or spaces in it
    if not s or any(ord(c) < 0x20 or c == "\x7f" for c in s):
        return False
    if s.startswith("/"):
        return True
    if not _URI_SCHEME.match(s):
        return False
    rest = s.split(":", 1)[1]
    if rest.startswith("//"):
        authority = rest[2:].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        host = authority.rpartition("@")[2]
        if " " in host or "%" in host and not re.search(r"%[0-9A-Fa-f]{2}", host):
            return False
    return True


_HOSTNAME_LABEL = re.compile(r"^[^\W_](?:[\w-]{0,61}[^\W_])?$")


_HOSTNAME_RE2 = None
if _re2 is not None:
    try:
        _opts = _re2.Options()
        _opts.log_errors = False
        _opts.max_mem = 64 << 20  # the Unicode classes make a large DFA
        _HOSTNAME_RE2 = _re2.compile(
            r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}"
            r"\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$", _opts)
    except Exception:  # noqa: BLE001 - an RE2 build without Unicode classes: the fallback below
        _HOSTNAME_RE2 = None


def _is_hostname(s: str) -> bool:
    # strfmt.IsHostname: letters, digits and symbols, dot-separated labels, the last alphabetic
    if _HOSTNAME_RE2 is not None:
        return bool(_HOSTNAME_RE2.search(s)) and len(s) <= 255 and all(len(p) <= 63 for p in s.split("."))
    if not s or len(s) > 255:
        return False
    parts = s.split(".")
    if any(len(p) > 63 for p in parts):
        return False
    if len(parts) == 1:
        p = parts[0]
        return bool(re.fullmatch(r"[^\W_](-?[^\W_]{0,62})?", p)) or bool(_sym_label(p))
    *labels, tld = parts
    if not (2 <= len(tld) <= 63) or not all(c.isalpha() for c in tld):
        return False
    return all(_HOSTNAME_LABEL.match(p) or _sym_label(p) for p in labels)


def _sym_label(p: str) -> bool:
    # labels may hold Unicode symbols (\p{S}) too
    import unicodedata
    if not p:
        return False
    def ok(c: str, inner: bool) -> bool:
        return c.isalnum() or unicodedata.category(c).startswith("S") or (inner and c == "-")
    return ok(p[0], False) and ok(p[-1], False) and all(ok(c, True) for c in p[1:-1])


def _isbn10(s: str) -> bool:
    s = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{9}[\dX]", s):
        return False
    total = sum((10 - i) * int(c) for i, c in enumerate(s[:9]))
    total += 10 if s[9] == "X" else int(s[9])
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    s = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{13}", s):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s[:12]))
    return (10 - total % 10) % 10 == int(s[12])


def _creditcard(s: str) -> bool:
    digits = re.sub(r"[^0-9]+", "", s)
    if not _CREDITCARD.match(digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        d = int(c)
        if double:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        double = not double
    return total % 10 == 0


_CHECKERS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON.match(s)),
    "uri": _is_request_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID3.match(s)),
    "uuid4": lambda s: bool(_UUID4.match(s)),
    "uuid5": lambda s: bool(_UUID5.match(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": lambda s: len(s) == 11 and bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": lambda s: bool(_BASE64.match(s)),
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}


def format_checker(fmt: str) -> Callable[[str], bool] | None:
    """The string check of a (kept) format, None if strfmt has none (int32, float, ...)."""
    return _CHECKERS.get(fmt.replace("-", "")) if fmt else None
