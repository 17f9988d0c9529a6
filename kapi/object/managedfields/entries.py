"""``metadata.managedFields`` entries: who manages which fields, decoded, validated and encoded.

``decode_managed_fields`` reads and checks the list as kube's ``DecodeManagedFields``;
``encode_managed_fields`` writes it back sorted; ``manager_name`` names the manager of a
request (the ``fieldManager`` option or the User-Agent prefix).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import unicodedata
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from kapi.object.managedfields.fieldpath import FieldSet, go_json

__all__ = [
    "FIELD_MANAGER_MAX_LENGTH",
    "Managed",
    "ManagerKey",
    "VersionedSet",
    "decode_managed_fields",
    "encode_managed_fields",
    "manager_name",
    "normalize_time",
    "prefix_from_user_agent",
    "unix_seconds",
]

FIELD_MANAGER_MAX_LENGTH = 128


@dataclass(frozen=True, slots=True)
class ManagerKey:
    """Who owns a set: manager, operation, apiVersion (empty for Apply) and subresource."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    @property
    def identifier(self) -> str:
        """kube's manager identifier: the Go JSON of the entry without fields and time."""
        parts = []
        if self.manager:
            parts.append('"manager":' + go_json(self.manager))
        if self.operation:
            parts.append('"operation":' + go_json(self.operation))
        if self.api_version:
            parts.append('"apiVersion":' + go_json(self.api_version))
        if self.subresource:
            parts.append('"subresource":' + go_json(self.subresource))
        return "{" + ",".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class VersionedSet:
    """A manager's fields, with the apiVersion they were recorded in."""

    fields: FieldSet
    api_version: str
    applied: bool = False


@dataclass(slots=True)
class Managed:
    """Decoded managedFields: each manager's set and the time of its last change."""

    fields: dict[ManagerKey, VersionedSet] = dataclass_field(default_factory=dict)
    times: dict[ManagerKey, str | None] = dataclass_field(default_factory=dict)


_RFC3339_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def _parse_time(value: str) -> _dt.datetime:
    if not isinstance(value, str) or not _RFC3339_RE.fullmatch(value):
        raise ValueError(f"invalid time {value!r}")
    return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def normalize_time(value: str) -> str:
    """metav1.Time as it is written back: UTC, whole seconds."""
    if not isinstance(value, str):
        _parse_time(value)  # raises
    return _normalized(value)


def unix_seconds(value: str | None) -> int:
    if not value:
        return 0
    if not isinstance(value, str):
        _parse_time(value)  # raises
    return _unix_seconds(value)


# Kept: an object's entries come back with their times at each of its writes.
@functools.lru_cache(maxsize=4096)
def _normalized(value: str) -> str:
    return _parse_time(value).astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=4096)
def _unix_seconds(value: str) -> int:
    return int(_parse_time(value).timestamp() // 1)


def decode_managed_fields(entries: Any) -> Managed:
    """Decode ``metadata.managedFields`` as kube's ``DecodeManagedFields`` does.

    Raises:
        ValueError: an entry is invalid (bad operation, empty apiVersion, fieldsType other
            than FieldsV1, malformed fieldsV1 or time).
    """
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion") or ""
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if fields_type != "FieldsV1":
            raise ValueError(f"missing fieldsType in managed fields entry {i}" if not fields_type
                             else f"invalid fieldsType {fields_type!r} in managed fields entry {i}")
        manager = entry.get("manager") or ""
        subresource = entry.get("subresource") or ""
        if not isinstance(manager, str) or not isinstance(subresource, str):
            raise ValueError(f"invalid managed fields entry {i}")
        time = entry.get("time")
        time = normalize_time(time) if time is not None else None
        applied = operation == "Apply"
        key = ManagerKey(manager, operation, "" if applied else api_version, subresource)
        managed.fields[key] = VersionedSet(FieldSet.from_fields_v1_kept(entry.get("fieldsV1")), api_version, applied)
        managed.times[key] = time
    return managed


def encode_managed_fields(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` list, sorted as kube sorts it (empty means: omit it)."""
    entries: list[dict[str, Any]] = []
    for key, vs in managed.fields.items():
        entry: dict[str, Any] = {}
        if key.manager:
            entry["manager"] = key.manager
        entry["operation"] = "Apply" if vs.applied else key.operation
        if vs.api_version:
            entry["apiVersion"] = vs.api_version
        time = managed.times.get(key)
        if time:
            entry["time"] = time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = vs.fields.to_fields_v1()
        if key.subresource:
            entry["subresource"] = key.subresource
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], unix_seconds(e.get("time")), e.get("manager", ""),
                                e.get("apiVersion", ""), e.get("subresource", "")))
    return entries



def _printable(ch: str) -> bool:
    """Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def prefix_from_user_agent(user_agent: str) -> str:
    """The User-Agent before its first ``/``, printable characters only, at most 128 bytes."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not _printable(ch):
            continue
        n = len(ch.encode("utf-8", "surrogatepass"))
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


def manager_name(field_manager: str, user_agent: str) -> str:
    """The ``fieldManager`` option, or else the User-Agent prefix (managerOrUserAgent)."""
    return field_manager or prefix_from_user_agent(user_agent)
