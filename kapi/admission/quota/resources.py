"""Resource lists as quota counts them (kube's ``resource.Quantity`` arithmetic and apiserver/pkg/quota/v1).

A quantity is kept as an exact number with the format it was written in (decimal SI, binary SI,
decimal exponent), as Go's ``resource.Quantity``: sums keep the first term's format unless it is
zero, and ``str`` gives kube's canonical form ("500m", "1Gi", "1500", "2k"). A resource list maps a
resource name to a quantity; the helpers are kube's ``quota.Add``, ``Subtract``, ``Mask``,
``LessThanOrEqual`` and the message printers of quota admission.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Iterable, Mapping

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_RE = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v // 10: k for k, v in _BINARY.items()}
_NANO = Fraction(1, 10**9)


class Quantity:
    """An exact amount and its format; immutable."""

    __slots__ = ("value", "format")

    def __init__(self, value: Fraction | int = 0, fmt: str = DECIMAL_SI) -> None:
        self.value = Fraction(value)
        self.format = fmt

    @classmethod
    def parse(cls, raw: Any) -> Quantity | None:
        """A stored quantity (a string, or a JSON number); None if malformed. Amounts finer than a
        nano are rounded up, as kube parses them."""
        if isinstance(raw, Quantity):
            return raw
        if isinstance(raw, bool):
            return None
        if isinstance(raw, (int, float)):
            if not math.isfinite(raw):
                return None
            return cls(_round_nano(Fraction(raw)), DECIMAL_SI)
        if not isinstance(raw, str):
            return None
        m = _RE.fullmatch(raw.strip())
        if not m:
            return None
        number, suffix = m.groups()
        digits = number.lstrip("+-")
        if digits.count(".") > 1 or not digits.replace(".", ""):
            return None
        try:
            amount = Fraction(digits) * (-1 if number.startswith("-") else 1)
        except ValueError:
            return None
        if suffix in _DECIMAL:
            return cls(_round_nano(amount * Fraction(10) ** _DECIMAL[suffix]), DECIMAL_SI)
        if suffix in _BINARY:
            return cls(_round_nano(amount * 2 ** _BINARY[suffix]), BINARY_SI)
        exp = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
        if exp:
            return cls(_round_nano(amount * Fraction(10) ** int(exp.group(1))), DECIMAL_EXPONENT)
        return None

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, other.format if self.value == 0 else self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, other.format if self.value == 0 else self.format)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def round_up(self) -> Quantity:
        """Whole units (kube's ``RoundUp(0)``)."""
        return self if self.value.denominator == 1 else Quantity(math.ceil(self.value), self.format)

    def __str__(self) -> str:
        """kube's canonical form (``Quantity.String``)."""
        v = self.value
        if v == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (-1024 < v < 1024 or v.denominator != 1):
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            n, exp = int(v), 0
            while n % 1024 == 0 and exp < 6:
                n //= 1024
                exp += 1
            return f"{n}{_BINARY_SUFFIX[exp] if exp else ''}"
        # the mantissa as an integer at nano scale, its factors of ten moved into a multiple-of-3 exponent
        n, exp = int(v / _NANO), -9
        while n % 10 == 0:
            n //= 10
            exp += 1
        while exp % 3:
            n *= 10
            exp -= 1
        if fmt == DECIMAL_EXPONENT:
            return f"{n}e{exp}" if exp else str(n)
        if exp in _DECIMAL_SUFFIX:
            return f"{n}{_DECIMAL_SUFFIX[exp]}"
        return f"{n}e{exp}"


def _round_nano(value: Fraction) -> Fraction:
    if (value / _NANO).denominator == 1:
        return value
    return Fraction(math.ceil(value / _NANO)) * _NANO


ZERO = Quantity(0)
ONE = Quantity(1)

ResourceList = dict[str, Quantity]


def parse_list(raw: Any) -> ResourceList:
    """A stored ``ResourceList`` (``spec.hard``, ``status.used``, a container's ``requests``); malformed
    entries are left out (validation refuses them before they are stored)."""
    out: ResourceList = {}
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            q = Quantity.parse(value)
            if q is not None:
                out[str(key)] = q
    return out


def render(rl: Mapping[str, Quantity]) -> dict[str, str]:
    """The list as stored and served: each quantity in its canonical form, in key order."""
    return {key: str(rl[key]) for key in sorted(rl)}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for key, value in b.items():
        out[key] = out[key] + value if key in out else value
    return out


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """kube's ``SubtractWithNonNegativeResult``."""
    out: ResourceList = {}
    for key, value in a.items():
        q = value - b[key] if key in b else value
        out[key] = q if q.value > 0 else ZERO
    for key in b:
        out.setdefault(key, ZERO)
    return out


def mask(a: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    return {name: a[name] for name in names if name in a}


def remove_zeros(a: Mapping[str, Quantity]) -> ResourceList:
    return {key: value for key, value in a.items() if value.value != 0}


def negative(a: Mapping[str, Quantity]) -> list[str]:
    return [key for key, value in a.items() if value.value < 0]


def less_than_or_equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> tuple[bool, list[str]]:
    """Whether every quantity of ``a`` named in ``b`` is at most ``b``'s; the names that exceed."""
    exceeded = [key for key, value in a.items() if key in b and value.value > b[key].value]
    return not exceeded, exceeded


def equals(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    return len(a) == len(b) and all(key in b and b[key].value == value.value for key, value in a.items())


def pretty_print(rl: Mapping[str, Quantity]) -> str:
    """``key=value`` by key, comma-separated (quota admission's messages)."""
    return ",".join(f"{key}={rl[key]}" for key in sorted(rl))


def pretty_print_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))
