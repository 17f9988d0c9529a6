"""List options (resourceVersion, resourceVersionMatch, limit, continue) and continue tokens."""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from dataclasses import dataclass

import orjson

from kapi import errors
from kapi.object.meta import parse_resource_version
from kapi.object.validation.fields import field_forbidden, field_not_supported

TOKEN_VERSION = "meta.k8s.io/v1"

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def parse_int64(value: str) -> int:
    """A query parameter as kube-apiserver's conversion reads an int64 (Go's ``strconv.ParseInt(s, 10, 64)``).

    Raises:
        BadRequest: with Go's message, for anything but an optionally signed run of ASCII
            digits, or a value outside int64 (Python's ``int()`` takes spaces, ``_`` and
            non-ASCII digits, and any size).
    """
    if not _DECIMAL.fullmatch(value):
        raise errors.BadRequest(f"strconv.ParseInt: parsing {_go_quote(value)}: invalid syntax")
    number = int(value)
    if not INT64_MIN <= number <= INT64_MAX:
        raise errors.BadRequest(f"strconv.ParseInt: parsing {_go_quote(value)}: value out of range")
    return number


def _go_quote(value: str) -> str:
    """Go's ``%q`` of a string, for the usual printable cases (kube's messages quote values so)."""
    return orjson.dumps(value[:1000]).decode()


@dataclass(frozen=True, slots=True)
class ContinueToken:
    """Where a paginated list resumes: the revision of page one and the next key."""

    revision: int  # -1: continue at the latest revision (inconsistent continuation)
    start: str  # the key to start from, relative to the list prefix


def encode_continue(revision: int, next_key: str, prefix: str) -> str:
    """kube-apiserver's token: base64url (no padding) of ``{"v","rv","start"}``."""
    start = next_key[len(prefix):] if next_key.startswith(prefix) else next_key
    raw = orjson.dumps({"v": TOKEN_VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str) -> ContinueToken:
    """Parse a continue token; 400 BadRequest when it was not made by this server's rules."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise errors.BadRequest("continue key is not valid: incorrect encoded start resourceVersion "
                                "(version meta.k8s.io/v1)") from None
    if not isinstance(data, dict) or data.get("v") != TOKEN_VERSION:
        raise errors.BadRequest("continue key is not valid: server does not recognize this encoded version")
    rv = data.get("rv")
    start = data.get("start")
    if not isinstance(rv, int) or rv == 0 or not INT64_MIN <= rv <= INT64_MAX:  # kube decodes it as int64
        raise errors.BadRequest("continue key is not valid: incorrect encoded start resourceVersion "
                                "(version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise errors.BadRequest("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    # As kube-apiserver, against path traversal: "/"+key must already be clean, so the key can
    # never range over anything less specific than the list's prefix.
    rooted = start if start.startswith("/") else "/" + start
    if _clean(rooted) != rooted:
        raise errors.BadRequest(f"continue key is not valid: {start}")
    return ContinueToken(revision=rv, start=rooted[1:])


def _clean(path: str) -> str:
    """Go's path.Clean for a rooted path (Python's normpath keeps a leading "//")."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


@dataclass(frozen=True, slots=True)
class ListOptions:
    """The parsed and validated list/watch query parameters."""

    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    label_selector: str = ""
    field_selector: str = ""
    watch: bool = False
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None


def query_bool(query: dict[str, str], name: str) -> bool:
    """A bool query parameter as kube reads it (``runtime.Convert_Slice_string_To_bool``): absent is
    false; present, anything but "0" or "false" (in any case) is true, the empty string included."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def query_int64(query: dict[str, str], name: str) -> int | None:
    """An int64 query parameter as kube reads it (``runtime.Convert_Slice_string_To_Pointer_int64``):
    absent is None; present, it must parse, so an empty value is refused as ParseInt("") refuses it.

    Raises:
        BadRequest: with Go's message, as kube-apiserver answers a conversion error.
    """
    value = query.get(name)
    return None if value is None else parse_int64(value)


def _validate(opts: ListOptions) -> list[errors.Cause]:
    """kube's ValidateListOptions (with WatchList on): every refusal, in kube's order."""
    match = opts.resource_version_match
    sie = opts.send_initial_events
    causes: list[errors.Cause] = []
    if opts.watch:
        if sie is not None and match != "NotOlderThan":
            causes.append(field_forbidden("resourceVersionMatch",
                                          "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if sie is None:
                causes.append(field_forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents "
                    "is provided"))
            if match != "NotOlderThan":
                causes.append(field_not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if opts.continue_token:
                causes.append(field_forbidden("resourceVersionMatch",
                                              "resourceVersionMatch is forbidden when continue is provided"))
        return causes
    if match:
        if not opts.resource_version:
            causes.append(field_forbidden("resourceVersionMatch",
                                          "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if opts.continue_token:
            causes.append(field_forbidden("resourceVersionMatch",
                                          "resourceVersionMatch is forbidden when continue is provided"))
        if match not in ("Exact", "NotOlderThan"):
            causes.append(field_not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if match == "Exact" and opts.resource_version == "0":
            causes.append(field_forbidden("resourceVersionMatch",
                                          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if sie is not None:
        causes.append(field_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def parse_list_options(query: dict[str, str]) -> ListOptions:
    """Build and validate ListOptions from a query (SEMANTICS §1.1).

    Raises:
        BadRequest: a parameter that does not convert (kube's ParameterCodec), then storage's refusals
            of resourceVersion and continue.
        Invalid: kube's ValidateListOptions, between the two.
    """
    # kube converts in its field order, timeoutSeconds before limit: the first refusal is the answer.
    timeout = query_int64(query, "timeoutSeconds")
    limit = query_int64(query, "limit") or 0
    opts = ListOptions(
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        limit=max(limit, 0),  # kube lists everything for a negative limit, as for none
        continue_token=query.get("continue", ""),
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        watch=query_bool(query, "watch"),
        allow_watch_bookmarks=query_bool(query, "allowWatchBookmarks"),
        send_initial_events=query_bool(query, "sendInitialEvents") if "sendInitialEvents" in query else None,
        timeout_seconds=timeout,
    )
    causes = _validate(opts)
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)
    if opts.resource_version and opts.resource_version != "0":
        parse_resource_version(opts.resource_version)
    if opts.continue_token and opts.resource_version not in ("", "0"):
        raise errors.BadRequest('specifying resource version is not allowed when using continue')
    return opts
