"""The filter chain as data: ``CHAIN``, read top-down, outermost first (kube's DefaultBuildHandlerChain).

Each filter is a small coroutine over the chain's settings, the request context and the next
handler; ``build`` folds them around the innermost handler (the router). A filter answers by
returning what the next handler returned, or refuses by raising a ``StatusError`` (the app at the
edge writes it as a Status).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

import trio

from kapi import errors
from kapi.chain.audit import Audit
from kapi.chain.audit.filter import audit, audit_failed_authentication
from kapi.chain.authn import Authenticator
from kapi.chain.authz import Authorizer, forbidden
from kapi.chain.context import RequestContext, new_request_info, parse_go_duration
from kapi.chain.flowcontrol import CANCELLED, TOO_MANY_REQUESTS_MESSAGE, Rejected, RequestDump
from kapi.chain.impersonation import impersonate
from kapi.metrics import Metrics
from kapi.object.access import Attributes
from kapi.object.listopts import query_int64
from kapi.object.selectors import parse_field_terms, parse_label_selector
from kapi.registry.store import storage_fault

if TYPE_CHECKING:
    from kapi.chain.flowcontrol.controller import Controller
    from kapi.chain.flowcontrol.estimate import Estimator
    from kapi.chain.flowcontrol.queueset import Ticket

log = logging.getLogger("kapi.chain")

Handler = Callable[[RequestContext], Awaitable[Any]]

# kube's WithTimeoutForNonLongRunningRequests answers a request past its deadline with this Status.
TIMEOUT_MESSAGE = "Timeout: request did not complete within the allotted timeout"


@dataclass
class Chain:
    """What the filters need, built once per server: authenticator, authorizer, limits, timeouts."""

    authn: Authenticator
    authz: Authorizer
    metrics: Metrics = field(default_factory=Metrics)
    request_timeout_s: float = 60.0  # --request-timeout: the deadline of a non-long-running request
    max_requests_inflight: int = 0  # 0: no limit
    max_mutating_requests_inflight: int = 0
    inflight: dict[bool, int] = field(default_factory=lambda: {False: 0, True: 0})  # by mutating
    audit: Audit | None = None  # --audit-policy-file and its backends; None: nothing is audited
    flowcontrol: FlowControl | None = None  # API Priority and Fairness; None: max-in-flight limits instead


@dataclass(frozen=True, slots=True)
class FlowControl:
    """API Priority and Fairness as the chain uses it: the controller (classification, queues) and the estimator."""

    controller: Controller
    estimator: Estimator
    # kube's defaultRequestWaitLimit (--request-timeout / 4): how long a request without a deadline (a
    # watch) may wait in its queue; one with a deadline waits a quarter of it. Never more than a minute.
    default_wait_s: float = 15.0


Filter = Callable[[Chain, RequestContext, Handler], Awaitable[Any]]


async def recover(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithPanicRecovery: a crash below is logged with its request and answered 500, never raw.

    Storage that did not answer is no crash: whatever path below met it (the registry, admission's or
    authorization's reads), it is the registry's Status for it (``storage_fault``: 503 or 504 with
    Retry-After), a Status the client can act on.
    """
    try:
        return await inner(ctx)
    except errors.StatusError:
        raise
    except Exception as exc:
        fault = _storage_fault(exc)
        if fault is not None:
            log.debug("storage fault serving %s %s: %s", ctx.method, ctx.path, exc)
            raise storage_fault(fault) from None
        log.exception("internal error serving %s %s", ctx.method, ctx.path)
        raise errors.InternalError("an error on the server has prevented the request from succeeding") from None


def _storage_fault(exc: Exception) -> errors.StorageUnavailable | None:
    """``exc`` as storage that did not answer (alone, or every error of a group), else None."""
    if isinstance(exc, BaseExceptionGroup):
        faults, rest = exc.split(errors.StorageUnavailable)
        if faults is None or rest is not None:
            return None
        while isinstance(faults, BaseExceptionGroup):
            faults = faults.exceptions[0]
        exc = faults  # type: ignore[assignment]
    return exc if isinstance(exc, errors.StorageUnavailable) else None


async def request_info(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithRequestInfo: what the path and method address (verb, group, resource, name, ...)."""
    ctx.info = new_request_info(ctx.method, ctx.path, ctx.query)
    return await inner(ctx)


async def deadline(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithRequestDeadline and timeout filter: a non-long-running request gets --request-timeout
    (or the client's shorter ``?timeout=``), and one not answered by then is a 504 Timeout. Watches keep
    their own timeout (timeoutSeconds, or a random time from --min-request-timeout), which the response
    stream keeps.

    The deadline covers reading the body (a body sent a byte at a time ends here too) and the handler
    making its answer; a LIST body streamed after it is not cut off (its length is already promised).
    """
    if ctx.info.long_running:
        return await inner(ctx)
    timeout_s = chain.request_timeout_s
    if ctx.query.get("timeout"):
        try:
            asked_ns = parse_go_duration(ctx.query["timeout"])
        except ValueError as exc:
            raise errors.BadRequest(f"invalid timeout specified in the request URL - {exc}") from None
        if 0 < asked_ns < timeout_s * 1e9:  # 0 or more than the server's: the server's
            timeout_s = asked_ns / 1e9
    ctx.deadline = trio.current_time() + timeout_s
    with trio.move_on_at(ctx.deadline):
        return await inner(ctx)
    raise errors.ServerTimeout(TIMEOUT_MESSAGE)


async def authenticate(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithAuthentication: the authenticator union (the proxy's headers, x509, bearer tokens,
    then anonymous if allowed); 401 when a credential fails or none is sent without anonymous."""
    ctx.user = await chain.authn.authenticate(ctx)
    return await inner(ctx)


async def impersonation(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithImpersonation: Impersonate-User/-Group/-Uid/-Extra-*, each allowed by the authorizer
    (verb impersonate), make the request the impersonated user's; the authenticated one stays on
    ``ctx.impersonator``. A refusal is kube's 403 for the first part not allowed."""
    await impersonate(chain.authz, ctx)
    return await inner(ctx)


async def limit_in_flight(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's max-in-flight filter (WithMaxInFlightLimit), when API Priority and Fairness is off.

    At most ``max_requests_inflight`` reads and ``max_mutating_requests_inflight`` writes are served
    at once; one more is refused at once with 429, ``Retry-After: 1`` and kube's plain-text body
    (tooManyRequests, as APF's refusals). Long-running requests
    (watches) and system:masters are not counted. A request holds its place until its whole
    answer is sent (released by ``on_done``).
    """
    info = ctx.info
    if info.long_running or "system:masters" in ctx.user.groups:
        return await inner(ctx)
    mutating = info.verb not in ("get", "list")
    limit = chain.max_mutating_requests_inflight if mutating else chain.max_requests_inflight
    if limit and chain.inflight[mutating] >= limit:
        chain.metrics.rejected_inflight.labels(request_kind="mutating" if mutating else "readOnly").inc()
        raise errors.Throttled(TOO_MANY_REQUESTS_MESSAGE, retry_after_s=1)
    chain.inflight[mutating] += 1

    def release() -> None:
        chain.inflight[mutating] -= 1

    ctx.on_done.append(release)
    return await inner(ctx)


_MAX_WAIT_S = 60.0  # kube: no request waits in a queue longer than a minute


async def flowcontrol(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithPriorityAndFairness: classify, estimate, queue fairly, then serve; max-in-flight when off.

    Long-running requests other than watches bypass it. A classified request's answer, refused or
    not, carries the FlowSchema's and priority level's UIDs. It waits in its queue until a quarter of
    its deadline has passed since it arrived (watches: a quarter of --request-timeout; never more than
    a minute), or until its client goes away, then is refused: 429, ``Retry-After`` from the level's
    recent refusals (kube's dropped-requests tracker) and kube's plain-text body. Its seats are given
    back when its answer is sent; a watch's when its initial events are handed off (whichever first).
    """
    apf = chain.flowcontrol
    if apf is None:
        return await limit_in_flight(chain, ctx, inner)
    info = ctx.info
    watch = info.verb == "watch"
    if info.long_running and not watch:
        return await inner(ctx)
    controller = apf.controller
    user = ctx.user
    cls = controller.classify(user, info)
    ctx.response_headers += cls.headers
    level = cls.priority_level
    estimate = apf.estimator.estimate(info, ctx.query, cls, controller.max_seats(level))
    descr = RequestDump(cls.flow_schema, cls.distinguisher, ctx.received_ns / 1e9, None, estimate, user.name,
                        info.verb, info.path, info.namespace, info.name, _api_version(info.group, info.version)
                        if info.is_resource else "", info.resource, info.subresource)
    try:
        ticket = controller.start(cls, estimate, descr)
        ctx.on_done.append(ticket.finish)
        if not ticket.dispatched:
            await _wait_in_queue(ticket, _wait_deadline(ctx, apf.default_wait_s), ctx.until_disconnect)
    except Rejected:
        controller.note_rejected(level)
        mutating = info.verb not in ("get", "list", "watch")  # kube's nonMutatingRequestVerbs
        chain.metrics.rejected_inflight.labels(request_kind="mutating" if mutating else "readOnly").inc()
        raise errors.Throttled(TOO_MANY_REQUESTS_MESSAGE, retry_after_s=controller.retry_after_s(level)) from None
    if watch:
        ctx.on_watch_initialized.append(ticket.finish)
    return await inner(ctx)


def _api_version(group: str, version: str) -> str:
    """Go's schema.GroupVersion.String(): ``group/version``, or the version alone for the core group."""
    return f"{group}/{version}" if group else version


def _wait_deadline(ctx: RequestContext, default_wait_s: float) -> float:
    """kube's getRequestWaitContext: arrival + a quarter of the time to the request's deadline, or +
    the default wait for one without a deadline (a watch), at most a minute; in trio time."""
    now = trio.current_time()
    arrival = now - max(0.0, (time.time_ns() - ctx.received_ns) / 1e9) if ctx.received_ns else now
    limit = (ctx.deadline - arrival) / 4 if ctx.deadline is not None else default_wait_s
    return arrival + min(limit, _MAX_WAIT_S)


async def _wait_in_queue(ticket: Ticket, deadline: float, until_disconnect: Callable[[], Awaitable[None]]) -> None:
    """Wait for ``ticket``'s dispatch while watching for the client to go away (it then leaves its queue,
    counted as cancelled, and is refused as kube refuses it); Rejected(TIME_OUT) at ``deadline``."""
    gone = False
    rejected: Rejected | None = None
    async with trio.open_nursery() as nursery:

        async def watch_disconnect() -> None:
            nonlocal gone
            await until_disconnect()
            gone = True
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch_disconnect)
        try:
            await ticket.wait(deadline)
        except Rejected as exc:  # raised here, not through the nursery: no exception group to split
            rejected = exc
        nursery.cancel_scope.cancel()
    if rejected is not None:
        raise rejected
    if gone:  # even if dispatched as the client left (its seats may be back already): nobody to answer
        raise Rejected(CANCELLED)


def attributes(ctx: RequestContext) -> Attributes:
    """kube's GetAuthorizerAttributes: the request's user and what its path and verb address."""
    info = ctx.info
    if info.is_resource:
        name, fields, labels = info.name, "", ""
        if info.verb in _SELECTING_VERBS:  # kube's AuthorizeWithSelectors: what a list narrows itself to
            fields, labels = ctx.query.get("fieldSelector", ""), ctx.query.get("labelSelector", "")
            if not name and info.verb != "deletecollection" and fields and _list_options_convert(ctx.query):
                name = _selected_name(fields)
        return Attributes(ctx.user, info.verb, True, info.group, info.version, info.resource, info.subresource,
                          info.namespace, name, ctx.path, fields, labels)
    return Attributes(ctx.user, info.verb, False, path=ctx.path)


_SELECTING_VERBS = frozenset(("list", "watch", "deletecollection"))


def _list_options_convert(query: dict[str, str]) -> bool:
    """Whether kube's RequestInfoFactory decodes the query into ListOptions: its int64s parse and its
    selectors parse. When they do not, kube takes no name from ``metadata.name=<n>`` (the verb stays
    watch if ``watch`` is set to anything but "0" or "false", as kapi's request info reads it)."""
    try:
        query_int64(query, "timeoutSeconds")
        query_int64(query, "limit")
        parse_label_selector(query.get("labelSelector", ""))
        parse_field_terms(query.get("fieldSelector", ""))
    except errors.StatusError:
        return False
    return True


def _selected_name(fields: str) -> str:
    """kube's RequestInfoFactory: a list or watch with ``metadata.name=<n>`` addresses the object <n>
    (so ``resourceNames`` rules and the Node authorizer see its name); none if the selector does not parse."""
    try:
        name = parse_field_terms(fields).exact_value("metadata.name")
    except errors.StatusError:
        return ""
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return ""
    return name


async def authorize(chain: Chain, ctx: RequestContext, inner: Handler) -> Any:
    """kube's WithAuthorization: 403 unless the union allows the request.

    No path is exempt, as in kube-apiserver: /healthz, /livez, /readyz and /version are public
    because the bootstrap policy's system:public-info-viewer allows them to everyone, and a server
    whose modes allow nothing (AlwaysDeny) refuses them too."""
    attrs = attributes(ctx)
    if ctx.annotations is None:  # not audited: the union's check (403, or 500 when it could not decide)
        await chain.authz.check(attrs)
        return await inner(ctx)
    # Audited: kube records the decision and its reason as the event's annotations.
    decision = await chain.authz.authorize(attrs)
    if not decision.allowed and decision.error:
        ctx.annotate("authorization.k8s.io/reason", "internal error")
        raise errors.InternalError(f"Internal error occurred: {decision.error}")
    ctx.annotate("authorization.k8s.io/decision", "allow" if decision.allowed else "forbid")
    ctx.annotate("authorization.k8s.io/reason", decision.reason)
    if not decision.allowed:
        raise forbidden(attrs, decision.reason)
    return await inner(ctx)


# Outermost first. Request info before the deadline (a watch is long-running: no deadline);
# authenticate inside the deadline (a slow token check is bounded too) and before flow control
# (APF classifies by the user, impersonated if so, as kube's WithPriorityAndFairness sits inside
# WithImpersonation; max-in-flight exempts system:masters); authorize last, so a user exists. The body is read by the
# handlers, after all of these: an unauthenticated or forbidden client never gets its body read.
# Audit where kube's WithAudit is: after authentication (the event's user is the authenticated one;
# a 401 is audited by audit_failed_authentication around it), before impersonation and authorization
# (which add impersonatedUser and the decision's annotations).
CHAIN: tuple[Filter, ...] = (recover, request_info, deadline, audit_failed_authentication, authenticate, audit,
                             impersonation, flowcontrol, authorize)


def build(chain: Chain, handler: Handler, filters: Sequence[Filter] = CHAIN) -> Handler:
    """``handler`` wrapped in ``filters``, the first outermost."""
    for f in reversed(filters):
        handler = _wrap(f, chain, handler)
    return handler


def _wrap(f: Filter, chain: Chain, inner: Handler) -> Handler:
    async def filtered(ctx: RequestContext) -> Any:
        return await f(chain, ctx, inner)

    filtered.__qualname__ = f.__name__
    return filtered
