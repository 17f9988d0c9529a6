"""Object metadata helpers: storage keys, resourceVersions, timestamps, uids, names."""

from __future__ import annotations

import datetime as _dt
import posixpath
import secrets
import uuid
from typing import Any

import orjson

from kapi import errors

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet (no vowels, no confusables)
GENERATE_NAME_SUFFIX = 5
MAX_GENERATED_NAME_LENGTH = 63 - GENERATE_NAME_SUFFIX


def key_root(etcd_prefix: str) -> str:
    """The root of every storage key under ``--etcd-prefix``, joined as kube's etcd3 store joins it
    (``path.Join("/", prefix)``): "registry/" and "//registry" are "/registry", "/" is the empty root."""
    root = posixpath.normpath("/" + etcd_prefix.lstrip("/"))
    return "" if root == "/" else root


def storage_key(root: str, prefix: str, namespace: str, name: str) -> str:
    """``/registry/<prefix>/<ns>/<name>`` (namespaced) or ``/registry/<prefix>/<name>``."""
    if namespace:
        return f"{root}/{prefix}/{namespace}/{name}"
    return f"{root}/{prefix}/{name}"


def list_prefix(root: str, prefix: str, namespace: str) -> str:
    """The key prefix under which a list in ``namespace`` (or all) lives, ending in ``/``."""
    if namespace:
        return f"{root}/{prefix}/{namespace}/"
    return f"{root}/{prefix}/"


def parse_resource_version(value: str, *, what: str = "resourceVersion") -> int:
    """Parse a non-empty resourceVersion; 400 BadRequest if it is not a decimal uint64."""
    try:
        rv = int(value)
    except ValueError:
        raise errors.BadRequest(f"invalid {what}: {value!r}"[:200]) from None
    if rv < 0 or not value.isdigit():
        raise errors.BadRequest(f"invalid {what}: {value!r}"[:200])
    if rv >= 1 << 64:  # storage parses it with Go's strconv.ParseUint(s, 10, 64)
        quoted = orjson.dumps(value[:1000]).decode()
        raise errors.BadRequest(f"invalid resource version: {what}: Invalid value: {quoted}: "
                                f"strconv.ParseUint: parsing {quoted}: value out of range")
    return rv


def now_rfc3339() -> str:
    """Now, in the second-precision RFC 3339 form Kubernetes uses for metav1.Time."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """Now as metav1.MicroTime (microsecond precision)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_after(seconds: float) -> str:
    """``now + seconds`` as metav1.Time."""
    t = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> float:
    """metav1.Time/MicroTime string to a POSIX timestamp; 0.0 if unparseable."""
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return 0.0


def parse_time_or_none(value: str) -> float | None:
    """An RFC 3339 timestamp (any offset) as POSIX seconds truncated to whole seconds, as metav1.Time
    keeps it; None if unparseable."""
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return float(int(t.timestamp())) if t.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(base: str) -> str:
    """``generateName`` + 5 random characters, truncating the base as apimachinery does."""
    if len(base) > MAX_GENERATED_NAME_LENGTH:
        base = base[:MAX_GENERATED_NAME_LENGTH]
    return base + "".join(secrets.choice(_ALNUM) for _ in range(GENERATE_NAME_SUFFIX))


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's metadata dict, created if missing or not a dict."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
        obj["metadata"] = md
    return md
