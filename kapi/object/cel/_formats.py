"""kube's CEL format library (``format.dns1123Label().validate(s)`` etc.): each format's checks,
returning kube's error strings (an empty list when valid)."""

from __future__ import annotations

import base64
import datetime
import re
import uuid as _uuid
from typing import Callable
from urllib.parse import urlsplit

from kapi.object.validation.names import (is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
                                          is_qualified_name, is_valid_label_value)


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    # a name prefix (generateName): may end with "-", checked with a char appended
    return lambda s: check(s[:-1] if s.endswith("-") else s) if s else check(s)


def _uri(s: str) -> list[str]:
    try:
        u = urlsplit(s)
    except ValueError as e:
        return [f"invalid URI: {e}"]
    return [] if u.scheme else ["invalid URI"]


def _uuid_check(s: str) -> list[str]:
    try:
        _uuid.UUID(s)
        return [] if len(s) == 36 else ["does not match the UUID format"]
    except ValueError:
        return ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
        return []
    except ValueError:
        return ["invalid base64"]


def _date(s: str) -> list[str]:
    try:
        datetime.date.fromisoformat(s)
        return [] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s) else ["invalid date"]
    except ValueError:
        return ["invalid date"]


def _datetime(s: str) -> list[str]:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", s):
        return ["invalid datetime"]
    try:
        datetime.datetime.fromisoformat(s.replace("z", "Z").replace("Z", "+00:00"))
        return []
    except ValueError:
        return ["invalid datetime"]


FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": _prefix(is_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(is_dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(is_dns1035_label),
    "labelValue": is_valid_label_value,
    "uri": _uri,
    "uuid": _uuid_check,
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}
CEL_NAMES = tuple(FORMATS)
