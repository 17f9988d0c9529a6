"""The filter chain as data (issue 11): CHAIN's order, and each filter running exactly when it should."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi import errors
from kapi.chain import filters
from kapi.chain.authn import Authenticator
from kapi.chain.authz import from_modes
from kapi.chain.context import RequestContext, parse_go_duration
from kapi.object.access import UserInfo

ADMIN = UserInfo("admin", "1", ("system:masters", "system:authenticated"))
ALICE = UserInfo("alice", "2", ("developers", "system:authenticated"))
TOKENS = {"admin-token": ADMIN, "alice-token": ALICE}
CM = "/api/v1/namespaces/default/configmaps"


def test_chain_reads_top_down_in_kubes_order() -> None:
    """Issue 11: outermost first, as kube's DefaultBuildHandlerChain (impersonation where kube has it;
    issue 12: audit after authentication, its failures audited around it)."""
    assert [f.__name__ for f in filters.CHAIN] == [
        "recover", "request_info", "deadline", "audit_failed_authentication", "authenticate", "audit",
        "impersonation", "flowcontrol", "authorize"]


class Run:
    """The chain with every filter recorded as it is entered; the innermost handler records too."""

    def __init__(self, *, modes: tuple[str, ...] = ("AlwaysAllow",), timeout_s: float = 60.0,
                 reads: int = 0, handler: Any = None) -> None:
        self.chain = filters.Chain(Authenticator(dict(TOKENS), anonymous=False), from_modes(modes),
                                   request_timeout_s=timeout_s, max_requests_inflight=reads)
        self.entered: list[str] = []
        self.seen: list[RequestContext] = []
        self._handler = handler
        spied = [self._spy(f) for f in filters.CHAIN]
        self.serve = filters.build(self.chain, self._inner, spied)

    def _spy(self, f: filters.Filter) -> filters.Filter:
        async def spy(chain: filters.Chain, ctx: RequestContext, inner: filters.Handler) -> Any:
            self.entered.append(f.__name__)
            return await f(chain, ctx, inner)

        spy.__name__ = f.__name__
        return spy

    async def _inner(self, ctx: RequestContext) -> Any:
        self.entered.append("handler")
        self.seen.append(ctx)
        if self._handler is not None:
            return await self._handler(ctx)
        return "answered"

    async def __call__(self, method: str, path: str, token: str = "alice-token", **headers: str) -> Any:
        query = dict(q.split("=", 1) for q in path.partition("?")[2].split("&") if q)
        hdrs = {"authorization": f"Bearer {token}"} if token else {}
        hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
        return await self.serve(RequestContext(method, path.partition("?")[0], query, hdrs))


ALL = ["recover", "request_info", "deadline", "audit_failed_authentication", "authenticate", "audit",
       "impersonation", "flowcontrol", "authorize", "handler"]


async def test_an_allowed_request_passes_every_filter_in_order_and_is_resolved() -> None:
    run = Run()
    assert await run("GET", f"{CM}/x") == "answered"
    assert run.entered == ALL
    ctx = run.seen[0]
    assert (ctx.info.verb, ctx.info.resource, ctx.info.namespace, ctx.info.name) == ("get", "configmaps",
                                                                                      "default", "x")
    assert ctx.user == ALICE
    assert ctx.deadline is not None
    assert not ctx.body_read  # the chain never reads the body: the handlers do, after it


async def test_an_unauthenticated_request_stops_at_authenticate() -> None:
    run = Run()
    with pytest.raises(errors.Unauthorized):
        await run("POST", CM, token="wrong")
    assert run.entered == ALL[:5]
    with pytest.raises(errors.Unauthorized):  # anonymous is off here
        await run("POST", CM, token="")
    assert run.entered == ALL[:5] * 2


async def test_impersonation_stops_before_the_in_flight_limit() -> None:
    """Issue 12: a refused impersonation ends at the impersonation filter; an allowed one goes on as the
    impersonated user."""
    run = Run(modes=("AlwaysDeny",))
    with pytest.raises(errors.Forbidden, match='users "bob" is forbidden: User "alice" cannot impersonate'):
        await run("GET", CM, impersonate_user="bob")
    assert run.entered == ALL[:7]
    run = Run()
    assert await run("GET", CM, impersonate_user="bob") == "answered"
    assert (run.seen[0].user.name, run.seen[0].impersonator) == ("bob", ALICE)


async def test_a_full_in_flight_limit_stops_before_authorize_and_masters_pass() -> None:
    hold = trio.Event()

    async def wait(ctx: RequestContext) -> str:
        await hold.wait()
        return "slow"

    run = Run(reads=1, handler=wait)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "GET", CM)
        await trio.testing.wait_all_tasks_blocked()
        assert run.chain.inflight[False] == 1
        run.entered.clear()
        with pytest.raises(errors.TooManyRequests):
            await run("GET", CM)
        assert run.entered == ALL[:8]
        run.entered.clear()
        hold.set()  # the master's request and the first one both finish
        assert await run("GET", CM, token="admin-token") == "slow"
        assert run.entered == ALL
    # The place is held until the answer is sent: the app runs on_done then.
    for done in run.seen[0].on_done:
        done()
    assert run.chain.inflight[False] == 0


async def test_a_forbidden_request_stops_at_authorize() -> None:
    run = Run(modes=("AlwaysDeny",))
    with pytest.raises(errors.Forbidden, match='User "alice" cannot create resource "configmaps"'):
        await run("POST", CM)
    assert run.entered == ALL[:9]
    assert await run("POST", CM, token="admin-token") == "answered"  # system:masters always may


async def test_a_crash_below_recover_is_a_500_status_error() -> None:
    async def crash(ctx: RequestContext) -> None:
        raise KeyError("boom")

    run = Run(handler=crash)
    with pytest.raises(errors.InternalError):
        await run("GET", CM)
    assert run.entered == ALL


async def test_a_request_past_its_deadline_is_504(autojump_clock: trio.testing.MockClock) -> None:
    """Issue 11: --request-timeout bounds a non-long-running request (kube's timeout filter message)."""
    finished = []

    async def slow(ctx: RequestContext) -> str:
        await trio.sleep(10)
        finished.append(ctx)
        return "late"

    run = Run(timeout_s=3, handler=slow)
    with pytest.raises(errors.ServerTimeout) as caught:
        await run("GET", f"{CM}/x")
    status = caught.value.to_status()
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["message"] == "Timeout: request did not complete within the allotted timeout"
    assert not finished
    fast = Run(timeout_s=30, handler=slow)
    assert await fast("GET", f"{CM}/x") == "late"


async def test_a_watch_gets_no_request_deadline(autojump_clock: trio.testing.MockClock) -> None:
    """Issue 11: watches are long-running; they keep their own timeout, not --request-timeout."""

    async def long(ctx: RequestContext) -> str:
        await trio.sleep(10)
        return "streamed"

    run = Run(timeout_s=3, reads=1, handler=long)
    for path in (f"{CM}?watch=true", "/api/v1/watch/namespaces/default/configmaps"):
        assert await run("GET", path) == "streamed"
        assert run.seen[-1].info.verb == "watch" and run.seen[-1].deadline is None
    assert run.chain.inflight == {False: 0, True: 0}  # not counted in flight either
    assert not run.seen[-1].on_done


async def test_a_shorter_timeout_asked_in_the_url_is_honoured(autojump_clock: trio.testing.MockClock) -> None:
    """Issue 11: kube's WithRequestDeadline takes ``?timeout=`` when it is shorter than --request-timeout."""
    async def slow(ctx: RequestContext) -> float:
        await trio.sleep(10)
        assert ctx.deadline is not None
        return ctx.deadline

    run = Run(timeout_s=60, handler=slow)
    with pytest.raises(errors.ServerTimeout):
        await run("GET", f"{CM}/x?timeout=5s")
    for longer in ("0", "2m", "-1s"):  # none, longer than the server's, negative: the server's 60 s
        started = trio.current_time()
        assert await run("GET", f"{CM}/x?timeout={longer}") == started + 60


@pytest.mark.parametrize(("value", "message"), [
    ("abc", 'time: invalid duration "abc"'),
    ("5", 'time: missing unit in duration "5"'),
    ("5x", 'time: unknown unit "x" in duration "5x"'),
])
async def test_a_timeout_that_is_no_go_duration_is_400(value: str, message: str) -> None:
    run = Run()
    with pytest.raises(errors.BadRequest) as caught:
        await run("GET", f"{CM}?timeout={value}")
    assert caught.value.message == f"invalid timeout specified in the request URL - {message}"
    assert "handler" not in run.entered


@pytest.mark.parametrize(("text", "ns"), [
    ("0", 0), ("300ms", 300_000_000), ("-1.5h", -5_400_000_000_000), ("2h45m", 9_900_000_000_000),
    ("1\u00b5s", 1000), ("1\u03bcs", 1000), ("1us", 1000), (".5s", 500_000_000), ("1.s", 1_000_000_000),
    ("9223372036854775807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
])
def test_go_durations(text: str, ns: int) -> None:
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'), ("-", 'time: invalid duration "-"'), (".s", 'time: invalid duration ".s"'),
    ("1.2.3s", 'time: missing unit in duration "1.2.3s"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ('"\x01', 'time: invalid duration "\\"\\x01"'),
])
def test_go_duration_errors_read_as_gos(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_go_duration(text)
    assert str(caught.value) == message
