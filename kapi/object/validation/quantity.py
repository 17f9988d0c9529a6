"""Resource quantities (``resource.Quantity``) and resource names and requirements (cpu, memory,
hugepages-*, extended resources), as core validation checks them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType

from kapi.errors import Cause
from kapi.object.validation.fields import IS_NEGATIVE, _d, _render, field_invalid, field_required
from kapi.object.validation.names import is_qualified_name


_QUANTITY_RE = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_QUANTITY_SUFFIX: Mapping[str, Fraction] = MappingProxyType({
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
})
QUANTITY_FORMAT_ERROR = ("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def parse_quantity(value: object) -> Fraction | None:
    """A resource quantity (``"500m"``, ``"1Gi"``, ``2``) as an exact number; None if malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    m = _QUANTITY_RE.fullmatch(value)
    if not m:
        return None
    number, suffix = m.groups()
    sign = -1 if number.startswith("-") else 1
    digits = number.lstrip("+-")
    if digits.count(".") > 1 or not digits.replace(".", ""):
        return None
    try:
        amount = Fraction(digits) * sign
    except ValueError:
        return None
    if suffix in _QUANTITY_SUFFIX:
        return amount * _QUANTITY_SUFFIX[suffix]
    exp = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
    if exp:
        return amount * Fraction(10) ** int(exp.group(1))
    return None


def _quantity_text(value: object) -> str:
    return value if isinstance(value, str) else _render(value)


_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "storage", "requests.cpu", "requests.memory",
    "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
    "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _validate_resource_name(name: str, path: str) -> list[Cause]:
    errs = [field_invalid(path, name, m) for m in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not _is_hugepages(name):
            errs.append(field_invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(field_invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and (name.startswith("requests.") or is_qualified_name("requests." + name)):
        errs.append(field_invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_resources(resources: object, path: str) -> list[Cause]:
    res = _d(resources)
    limits, requests = _d(res.get("limits")), _d(res.get("requests"))
    errs: list[Cause] = []
    for prefix, items in (("limits", limits), ("requests", requests)):
        for name, value in items.items():
            p = f"{path}.{prefix}[{name}]"
            errs.extend(_validate_resource_name(str(name), p))
            qty = parse_quantity(value)
            if qty is None:
                errs.append(field_invalid(p, _quantity_text(value), QUANTITY_FORMAT_ERROR))
                continue
            if qty < 0:
                errs.append(field_invalid(p, _quantity_text(value), IS_NEGATIVE))
            if prefix == "requests":
                overcommit = _is_native_resource(str(name)) and not _is_hugepages(str(name))
                limit = parse_quantity(limits.get(name)) if name in limits else None
                if name in limits and limit is not None:
                    if qty != limit and not overcommit:
                        errs.append(field_invalid(f"{path}.requests", _quantity_text(value),
                                                  f"must be equal to {name} limit of {_quantity_text(limits[name])}"))
                    elif qty > limit:
                        errs.append(field_invalid(
                            f"{path}.requests", _quantity_text(value),
                            f"must be less than or equal to {name} limit of {_quantity_text(limits[name])}"))
                elif name not in limits and not overcommit:
                    errs.append(field_required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return errs
