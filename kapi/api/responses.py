"""Response values and the writers for objects, lists and Status errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import orjson
import yaml

from kapi import errors
from kapi.encoding import protobuf
from kapi.api.negotiate import JSON, PROTOBUF, YAML, Output

Obj = dict[str, Any]


@dataclass(slots=True)
class Response:
    """What a handler answers: a body, or a stream of chunks."""

    status: int = 200
    body: bytes = b""
    content_type: str = JSON
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: AsyncIterator[bytes] | None = None
    length: int | None = None  # a stream's total size when known: sent as Content-Length, no chunked framing
    deadline: float | None = None  # trio time at which a stream ends cleanly (a watch's timeoutSeconds)


def encode(obj: Any, media_type: str = JSON) -> bytes:
    """A body in ``media_type``; JSON ends with a newline, as Go's ``json.Encoder`` in kube's serializer writes it."""
    if media_type == YAML:
        return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True).encode()
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


def object_response(obj: Any, out: Output | None = None, status: int = 200) -> Response:
    media = out.media_type if out else JSON
    return Response(status, encode(obj, media), media)


def status_response(err: errors.StatusError, proto: bool = False) -> Response:
    """The Status body of an error, in protobuf when that is what the client asked for; a ``Throttled``
    refusal as kube's tooManyRequests writes it (Go's http.Error: the message and a newline, plain text)."""
    if isinstance(err, errors.Throttled):
        resp = Response(err.code, (err.message + "\n").encode(), "text/plain; charset=utf-8",
                        [("X-Content-Type-Options", "nosniff")])
    elif proto:
        resp = Response(err.code, protobuf.encode_status(err.to_status()), PROTOBUF)
    else:
        try:
            body = encode(err.to_status())
        except TypeError:  # a message quoting the client's input can hold what JSON cannot (a lone surrogate)
            body = encode(_printable(err.to_status()))
        resp = Response(err.code, body, JSON)
    if err.retry_after_s > 0:
        resp.headers.append(("Retry-After", str(err.retry_after_s)))
    for k, v in err.headers.items():
        resp.headers.append((k, v))
    return resp


def _printable(value: Any) -> Any:
    """``value`` with every string made encodable (lone surrogates replaced)."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def success_status(*, name: str, group: str, kind: str, uid: str) -> Obj:
    """The Status a DELETE answers when the object is gone and the resource returns no object."""
    details: Obj = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8")


# kube's warning recorder (endpoints/filters/warning.go): past this many runes of warnings in all, each
# is cut to TRUNCATE_ITEM_RUNES, and once that total is reached again the rest are dropped.
TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """``Warning: 299 - "<text>"`` headers (RFC 7234 warn-code 299, agent "-"), the text quoted as Go's;
    as kube's recorder: empty and repeated warnings dropped, the whole bounded (see above)."""
    ordered: list[str] = []
    out: list[str] = []
    written, truncating = 0, False
    seen: set[str] = set()
    for text in warnings:
        if written >= TRUNCATE_AT_TOTAL_RUNES and truncating:
            break
        if not text or text in seen:
            continue
        seen.add(text)
        ordered.append(text)
        if truncating:
            text = text[:TRUNCATE_ITEM_RUNES]
        if written + len(text) <= TRUNCATE_AT_TOTAL_RUNES or truncating:
            written += len(text)
            out.append(text)
            continue
        truncating = True  # replay what was recorded, each warning cut short
        out = [w[:TRUNCATE_ITEM_RUNES] for w in ordered]
        written = sum(len(w) for w in out)
    return [("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"') for w in out]
