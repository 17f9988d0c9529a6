"""Values printed as Go prints them in kube's messages: ``%v`` of a float64 (``1e+06``), ``%#v`` of
unstructured JSON (``map[string]interface {}{"a":1}``), and field.Error's ``ErrorBody`` value.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from kapi.object.validation.fields import go_quote


def go_float(f: float) -> str:
    """``%v`` (``strconv.FormatFloat(f, 'g', -1, 64)``) of a float64."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(float(f))).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    # the shortest digits and the decimal point's position (Go's digs.nd, digs.dp)
    nd = len(ds)
    dp = len(digits) + int(exponent)
    neg = "-" if sign else ""
    exp = dp - 1
    eprec = 6  # strconv's %g decides with precision 6 when it prints the shortest digits
    if exp < -4 or exp >= eprec:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        e = abs(exp)
        return f"{neg}{mant}e{'-' if exp < 0 else '+'}{e:02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{ds}"
    if dp >= nd:
        return f"{neg}{ds}{'0' * (dp - nd)}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def go_number(v: int | float) -> str:
    """``%v`` of an int64 or float64."""
    return str(v) if isinstance(v, int) else go_float(v)


def go_sharp_v(v: Any) -> str:
    """``%#v`` of an unstructured JSON value (as nested in an ``interface{}``)."""
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_sharp_v(v[k])}" for k in sorted(v, key=str))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(v, (list, tuple)):
        return "[]interface {}{" + ", ".join(go_sharp_v(x) for x in v) + "}"
    return go_quote(str(v))


def go_body_value(v: Any) -> str:
    """The value of ``field.Error.ErrorBody``: null, ``%v`` for numbers and bools, ``%q`` for strings,
    ``%#v`` for the rest."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_number(v)
    if isinstance(v, str):
        return go_quote(v)
    return go_sharp_v(v)


def go_v(v: Any) -> str:
    """``%v`` of a JSON value (``[a b]``, ``map[a:1]``), as openapi's enum message prints its list."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_number(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_v(v[k])}" for k in sorted(v, key=str)) + "]"
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(go_v(x) for x in v) + "]"
    return str(v)
