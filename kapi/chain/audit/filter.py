"""The audit filters: kube's WithAudit (after authentication) and WithFailedAuthenticationAudit.

Per request: the policy's level for the authenticated user and the request's attributes (None:
nothing more is done); RequestReceived before the request is served; ResponseStarted when a
long-running answer (a watch) starts; ResponseComplete when the answer is done, or Panic when it
crashed. Request and response bodies are read only at the Request and RequestResponse levels, so
at Metadata nothing of an object (a Secret's data) is ever written.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

import orjson
import yaml

from kapi import errors
from kapi.chain.audit import Audit
from kapi.chain.audit.events import Event, complete_object_ref, object_ref, source_ips, user_agent
from kapi.chain.audit.policy import (NONE, PANIC, REQUEST, REQUEST_RECEIVED, REQUEST_RESPONSE, RESPONSE_COMPLETE,
                                     RESPONSE_STARTED, RequestAuditConfig, at_least)
from kapi.chain.context import RequestContext

if TYPE_CHECKING:
    from kapi.chain.filters import Chain

Handler = Callable[[RequestContext], Awaitable[Any]]
Obj = dict[str, Any]

_WRITE_VERBS = frozenset(("create", "update"))  # their request object names what the path may not
_PROTOBUF = "application/vnd.kubernetes.protobuf"


async def audit(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithAudit, where kube has it: after authentication (the event's user is the authenticated
    one), before impersonation (which adds impersonatedUser) and authorization (its annotations)."""
    auditor = chain.audit
    if auditor is None:
        return await inner(ctx)
    user = ctx.user
    rac = auditor.policy.evaluate(user, ctx.info)
    auditor.observe_level(rac.level)
    if rac.level == NONE:
        return await inner(ctx)
    ev = new_event(ctx, rac.level)
    ctx.annotations = ev.annotations  # the authorizer's and others' annotations land in the event
    omit = rac.omit_stages
    if REQUEST_RECEIVED not in omit:
        if not auditor.blocking:  # the usual case: queued, no await
            auditor.emit_nowait(ev.snapshot(REQUEST_RECEIVED, ev.received_ns))
        elif not await auditor.emit(ev.snapshot(REQUEST_RECEIVED, ev.received_ns)) and auditor.strict:
            auditor.rejected()
            raise errors.InternalError("Internal error occurred: failed to store audit event")
    try:
        resp = await inner(ctx)
    except errors.StatusError as err:
        _impersonated(ctx, ev, user)
        status = err.to_status()
        ev.response_status = _status_fields(status)
        if at_least(rac.level, REQUEST_RESPONSE):  # kube's LogResponseObject logs the Status written, too
            ev.response_object = status
        await _complete(auditor, ctx, ev, rac, err.code)
        raise
    except Exception as exc:
        _impersonated(ctx, ev, user)
        ev.response_status = {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {exc}",
                              "reason": "InternalError", "code": 500}
        if PANIC not in omit:
            auditor.emit_nowait(ev.snapshot(PANIC, time.time_ns()))
        raise
    except BaseException:  # cancelled (the request's deadline): completed with what the client was sent
        _impersonated(ctx, ev, user)
        ctx.on_done.append(functools.partial(_complete_nowait, auditor, ctx, ev, rac, 0))
        raise
    _impersonated(ctx, ev, user)
    if resp.stream is None:
        if at_least(rac.level, REQUEST_RESPONSE) and resp.body:
            ev.response_object = _decode(resp.body, resp.content_type, auditor.schema, rac)
        await _complete(auditor, ctx, ev, rac, resp.status)
        return resp
    if ctx.info.long_running:
        ev.response_status = {"metadata": {}, "code": resp.status}
        if RESPONSE_STARTED not in omit:
            await auditor.emit(ev.snapshot(RESPONSE_STARTED, time.time_ns()))
    elif at_least(rac.level, REQUEST_RESPONSE):  # a LIST streamed: its body is kept for the event
        chunks: list[bytes] = []
        resp.stream = _tee(resp.stream, chunks)
        ctx.on_done.append(functools.partial(_decode_streamed, auditor, ev, resp.content_type, chunks, rac))
    ctx.on_done.append(functools.partial(_complete_nowait, auditor, ctx, ev, rac, resp.status))
    return resp


async def audit_failed_authentication(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithFailedAuthenticationAudit: a request refused 401 by authentication is audited (no user)
    with one ResponseStarted event, when the policy audits it."""
    try:
        return await inner(ctx)
    except errors.Unauthorized as err:
        auditor = chain.audit
        if auditor is None or ctx.has_user:  # refused 401 further in: audited there
            raise
        rac = auditor.policy.evaluate(None, ctx.info)
        auditor.observe_level(rac.level)
        if rac.level != NONE and RESPONSE_STARTED not in rac.omit_stages:
            ev = new_event(ctx, rac.level, authenticated=False)
            # The Unauthorized Status written replaces the attempted-methods message, as kube's does.
            ev.response_status = _status_fields(err.to_status())
            await auditor.emit(ev.snapshot(RESPONSE_STARTED, time.time_ns()))
        raise


def new_event(ctx: RequestContext, level: str, *, authenticated: bool = True) -> Event:
    """kube's LogRequestMetadata: who, from where, what (verb, URI, object reference)."""
    info = ctx.info
    uri = (ctx.raw_path or ctx.path.encode("utf-8", "replace")).decode("latin-1")
    if ctx.query_string:
        uri = f"{uri}?{ctx.query_string.decode('latin-1')}"
    ref = (object_ref(info.resource, info.namespace, info.name, info.group, info.version, info.subresource)
           if info.is_resource else None)
    return Event(level, ctx.audit_id, uri, info.verb, ctx.user if authenticated else None,
                 _source_ips(ctx.headers.get("x-forwarded-for", ""), ctx.headers.get("x-real-ip", ""),
                             ctx.client[0] if ctx.client else ""),
                 user_agent(ctx.headers.get("user-agent", "")), ctx.received_ns or time.time_ns(), ref)


@functools.lru_cache(maxsize=1024)
def _source_ips(forwarded: str, real: str, host: str) -> list[str]:
    # Cached by what decides it (most requests come from a few peers); the list is only read.
    headers = {"x-forwarded-for": forwarded, "x-real-ip": real}
    return source_ips(headers, (host, 0) if host else None)


def _impersonated(ctx: RequestContext, ev: Event, authenticated: Any) -> None:
    """kube's LogImpersonatedUser: the user the request was served as, when impersonation changed it."""
    if ctx.has_user and ctx.user is not authenticated:
        ev.impersonated_user = ctx.user


def _status_fields(status: Obj) -> Obj:
    """kube's LogResponseObject for a Status: the bounded fields only."""
    out: Obj = {"metadata": {}}
    for key in ("status", "message", "reason", "details", "code"):
        value = status.get(key)
        if value:
            out[key] = value
    return out


async def _complete(auditor: Audit, ctx: RequestContext, ev: Event, rac: RequestAuditConfig, code: int) -> None:
    _request_parts(auditor, ctx, ev, rac)
    if ev.response_status is None:
        ev.response_status = {"metadata": {}, "code": code}
    if RESPONSE_COMPLETE in rac.omit_stages:
        return
    if auditor.blocking:
        await auditor.emit(ev.snapshot(RESPONSE_COMPLETE, time.time_ns()))
    else:
        auditor.emit_nowait(ev.snapshot(RESPONSE_COMPLETE, time.time_ns()))


def _complete_nowait(auditor: Audit, ctx: RequestContext, ev: Event, rac: RequestAuditConfig, code: int) -> None:
    _request_parts(auditor, ctx, ev, rac)
    if ev.response_status is None:  # a watch's was set when it started; 0: what the app sent (a time-out's 504)
        ev.response_status = {"metadata": {}, "code": code or ctx.response_code or 200}
    if RESPONSE_COMPLETE not in rac.omit_stages:
        auditor.emit_nowait(ev.snapshot(RESPONSE_COMPLETE, time.time_ns()))


def _request_parts(auditor: Audit, ctx: RequestContext, ev: Event, rac: RequestAuditConfig) -> None:
    """kube's LogRequestObject: the object reference completed from the request's object (create and
    update name what their path may not), and at Request or more, the object itself."""
    if not ctx.body_read or not ctx.body or not ctx.has_info or not ctx.info.is_resource:
        return
    verb = ctx.info.verb
    with_object = at_least(rac.level, REQUEST)
    if not with_object and verb not in _WRITE_VERBS:
        return
    obj = _decode(ctx.body, ctx.header("content-type"), auditor.schema, rac)
    if isinstance(obj, dict) and verb in _WRITE_VERBS and ev.object_ref is not None:
        ev.object_ref = complete_object_ref(ev.object_ref, obj.get("metadata"))
    if with_object and obj is not None:
        ev.request_object = obj


def _decode(body: bytes, content_type: str, schema: Any, rac: RequestAuditConfig) -> Any:
    """A body as the JSON object the event holds (managed fields dropped when the policy says so); None
    when it is none of JSON, YAML or a protobuf kapi knows."""
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        if media == _PROTOBUF:
            if schema is None:
                return None
            from kapi.encoding import protobuf

            obj = protobuf.decode_object(schema, body)
        elif media.endswith("yaml"):
            obj = yaml.safe_load(body)
        else:
            obj = orjson.loads(body)
    except Exception:  # a body the handler refused (400) is not the event's to judge
        return None
    if rac.omit_managed_fields:
        obj = _without_managed_fields(obj)
    return obj


def _without_managed_fields(obj: Any) -> Any:
    """kube's copyWithoutManagedFields: an object's, a list's items' and a Table's rows' managedFields dropped."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [_without_managed_fields(item) for item in items]
    rows = out.get("rows")
    if out.get("kind") == "Table" and isinstance(rows, list):
        out["rows"] = [dict(row, object=_without_managed_fields(row["object"]))
                       if isinstance(row, dict) and isinstance(row.get("object"), dict) else row for row in rows]
    return out


async def _tee(stream: AsyncIterator[bytes], chunks: list[bytes]) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            chunks.append(chunk)
            yield chunk
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _decode_streamed(auditor: Audit, ev: Event, content_type: str, chunks: list[bytes],
                     rac: RequestAuditConfig) -> None:
    if chunks:
        ev.response_object = _decode(b"".join(chunks), content_type, auditor.schema, rac)
