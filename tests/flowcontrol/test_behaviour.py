"""API Priority and Fairness end to end over real HTTPS (issue 13), in the spirit of kube's own integration tests
(test/integration/apiserver/flowcontrol: priority-level isolation, fairness within a level, borrowing).

One ``kapi serve`` with a small server concurrency limit (20 reads + 10 writes = 30 seats) serves every test.
Each test creates its own PriorityLevelConfigurations with one share (so one seat: the bootstrap levels'
shares sum to 245) and ``borrowingLimitPercent: 0`` / ``lendablePercent: 0`` (so that limit stays one seat
whatever borrowing does), and FlowSchemas matching its own users (precedence 500, before the bootstrap
catch-alls). Saturation is cheap and exact: a *holder* is a POST whose last body byte is held back, so it
occupies its seat until the test sends that byte. Nothing here measures time: the tests count answers,
who got 429, and the order in which queued requests finished.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import pytest

from kapi.chain.flowcontrol.shufflesharding import Dealer, hash_flow
from tests.e2e.conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e

FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"
PROBE = CMS + "?limit=1"
TOO_MANY = b"Too many requests, please try again later."
FS_UID, PL_UID = "x-kubernetes-pf-flowschema-uid", "x-kubernetes-pf-prioritylevel-uid"  # as hypercorn writes them
GROUP = "h6-users"
USERS = ["h6-rej", "h6-elephant", "h6-mouse", "h6-flooder", "h6-bystander", "h6-lendee", "h6-reconf",
         "h6-heavy", *(f"h6-light-{i}" for i in range(40))]
WAIT_S = 30.0  # the longest any condition is waited for (not an assertion on time: a deadline for failing)


def token(user: str) -> str:
    return f"token-{user}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("apf-behaviour")
    tokens = root / "tokens.csv"
    tokens.write_text("".join(f'{token(u)},{u},uid-{u},"{GROUP}"\n' for u in USERS))
    srv = start_server(root / "data", "--authorization-mode", "AlwaysAllow", "--token-auth-file", str(tokens),
                       "--max-requests-inflight", "20", "--max-mutating-requests-inflight", "10",
                       # a queued request may wait a quarter of this: long enough for a borrowing period
                       "--request-timeout", "2m", "--log-level", "warning")
    try:
        wait_for(lambda: srv.request("GET", "/readyz")[0] == 200, "the server to be ready")
        wait_for(lambda: srv.request("GET", f"{FC}/flowschemas/exempt")[0] == 200, "the bootstrap FlowSchemas")
        # APF is wired: a classified answer names its FlowSchema and priority level
        wait_for(lambda: headers_of(srv.request("GET", PROBE, token=token("h6-mouse"))).get(FS_UID),
                 "classified answers")
        yield srv
    finally:
        stop_server(srv)


# ---------------------------------------------------------------- helpers


def headers_of(answer: tuple[int, dict[str, str], bytes]) -> dict[str, str]:
    return {k.lower(): v for k, v in answer[1].items()}


def wait_for(cond: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """Poll ``cond`` until it is truthy; fail naming ``what`` past the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric(srv: Server, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (0 when there are none)."""
    status, _, body = srv.request("GET", "/metrics")
    assert status == 200, body[:300]
    total = 0.0
    for line in body.decode().splitlines():
        m = _SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        have = dict(_LABEL.findall(m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def create(srv: Server, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    status, _, body = srv.request("POST", path, json.dumps(obj).encode(), {"Content-Type": "application/json"})
    assert status == 201, body[:500]
    return json.loads(body)


def level(srv: Server, name: str, *, shares: int = 1, reject: bool = False, queues: int = 8, hand: int = 2,
          queue_length: int = 50, lendable: int = 0, borrowing: int | None = 0) -> dict[str, Any]:
    """A Limited PriorityLevelConfiguration; one share is one seat on this server."""
    limited: dict[str, Any] = {"nominalConcurrencyShares": shares, "lendablePercent": lendable}
    if borrowing is not None:
        limited["borrowingLimitPercent"] = borrowing
    limited["limitResponse"] = ({"type": "Reject"} if reject else {
        "type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": queue_length}})
    return create(srv, f"{FC}/prioritylevelconfigurations", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name}, "spec": {"type": "Limited", "limited": limited}})


def schema(srv: Server, name: str, level_name: str, subjects: list[dict[str, Any]], *, precedence: int = 500,
           by_user: bool = False) -> dict[str, Any]:
    """A FlowSchema sending every request of ``subjects`` to ``level_name``."""
    spec: dict[str, Any] = {
        "priorityLevelConfiguration": {"name": level_name}, "matchingPrecedence": precedence,
        "rules": [{"subjects": subjects,
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                      "clusterScope": True, "namespaces": ["*"]}],
                   "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}
    if by_user:
        spec["distinguisherMethod"] = {"type": "ByUser"}
    return create(srv, f"{FC}/flowschemas", {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                                             "kind": "FlowSchema", "metadata": {"name": name}, "spec": spec})


def users(*names: str) -> list[dict[str, Any]]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def wait_classified(srv: Server, user: str, fs: dict[str, Any]) -> None:
    """Until the server's APF configuration has the new FlowSchema: ``user``'s request is classified by it."""
    uid = fs["metadata"]["uid"]
    wait_for(lambda: headers_of(srv.request("GET", PROBE, token=token(user))).get(FS_UID) == uid,
             f"{user} classified by FlowSchema {fs['metadata']['name']}")


def get(srv: Server, user: str, path: str = PROBE) -> tuple[int, dict[str, str], bytes]:
    answer = srv.request("GET", path, token=token(user))
    return answer[0], headers_of(answer), answer[2]


class Holder:
    """A POST of a ConfigMap whose last body byte is held back: once dispatched, it holds its seat until
    ``release`` sends that byte (the body is read by the handler, after APF let the request in)."""

    def __init__(self, srv: Server, user: str) -> None:
        self.name = f"h6-hold-{uuid.uuid4().hex[:8]}"
        self.body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": self.name}}).encode()
        url = urllib.parse.urlsplit(srv.url)
        ctx = ssl.create_default_context(cafile=str(srv.ca_file))
        ctx.set_alpn_protocols(["http/1.1"])
        raw = socket.create_connection((url.hostname, url.port), timeout=WAIT_S * 3)
        self.sock = ctx.wrap_socket(raw, server_hostname=url.hostname)
        head = (f"POST {CMS} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {token(user)}\r\n"
                f"Content-Type: application/json\r\nAccept: application/json\r\n"
                f"Content-Length: {len(self.body)}\r\n\r\n").encode()
        self.sock.sendall(head + self.body[:-1])
        self.released = False

    def release(self) -> int:
        """Send the last byte; the answer's status."""
        self.released = True
        self.sock.sendall(self.body[-1:])
        data = b""
        while b"\r\n" not in data:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            data += chunk
        self.sock.close()
        return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else -1

    def close(self) -> None:
        if not self.released:
            self.released = True
            self.sock.close()


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    """Holders a test opened, closed at its end whatever happened."""
    opened: list[Holder] = []
    yield opened
    for h in opened:
        h.close()


def hold(srv: Server, user: str, holders: list[Holder]) -> Holder:
    h = Holder(srv, user)
    holders.append(h)
    return h


def executing(srv: Server, pl: str) -> float:
    return metric(srv, "apiserver_flowcontrol_current_executing_requests", priority_level=pl)


def inqueue(srv: Server, pl: str) -> float:
    return metric(srv, "apiserver_flowcontrol_current_inqueue_requests", priority_level=pl)


# ---------------------------------------------------------------- the tests


def test_reject_level_answers_429_at_once(server: Server, holders: list[Holder]) -> None:
    """A ``limitResponse: Reject`` level with its seat taken refuses at once: 429, Retry-After, kube's body."""
    pl = level(server, "h6-reject", reject=True)
    fs = schema(server, "h6-reject", "h6-reject", users("h6-rej"))
    wait_classified(server, "h6-rej", fs)
    holder = hold(server, "h6-rej", holders)
    wait_for(lambda: executing(server, "h6-reject") == 1, "the holder to execute")

    # Each answer comes back while the seat is still held: nothing waited for it.
    for _ in range(5):
        status, headers, body = get(server, "h6-rej")
        assert status == 429, body[:300]
        assert body.strip() == TOO_MANY
        assert 1 <= int(headers["retry-after"]) <= 32
        assert headers[FS_UID] == fs["metadata"]["uid"]
        assert headers[PL_UID] == pl["metadata"]["uid"]
    assert executing(server, "h6-reject") == 1 and inqueue(server, "h6-reject") == 0
    assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="h6-reject",
                  reason="concurrency-limit") == 5

    assert holder.release() == 201
    assert get(server, "h6-rej")[0] == 200


def test_elephant_cannot_push_the_mouse_below_its_share(server: Server, holders: list[Holder]) -> None:
    """Priority-level isolation: an elephant flooding its level gets 429s; the mouse in its own level gets
    every request through meanwhile."""
    level(server, "h6-elephant", queues=4, hand=1, queue_length=2)
    level(server, "h6-mouse")
    fs_e = schema(server, "h6-elephant", "h6-elephant", users("h6-elephant"), by_user=True)
    fs_m = schema(server, "h6-mouse", "h6-mouse", users("h6-mouse"))
    wait_classified(server, "h6-elephant", fs_e)
    wait_classified(server, "h6-mouse", fs_m)

    elephant = hold(server, "h6-elephant", holders)
    wait_for(lambda: executing(server, "h6-elephant") == 1, "the elephant's first request to execute")
    with ThreadPoolExecutor(12) as pool:
        flood = [pool.submit(get, server, "h6-elephant", CMS) for _ in range(12)]
        # The elephant's one queue is full and the rest of its flood bounced before the mouse starts.
        wait_for(lambda: inqueue(server, "h6-elephant") == 2
                 and sum(f.done() for f in flood) == 10, "the elephant's flood to fill its queue")
        mouse = [get(server, "h6-mouse") for _ in range(20)]
        assert [m[0] for m in mouse] == [200] * 20
        assert {m[1][FS_UID] for m in mouse} == {fs_m["metadata"]["uid"]}
        assert inqueue(server, "h6-elephant") == 2  # still saturated while the mouse ran
        assert elephant.release() == 201
        statuses = sorted(f.result()[0] for f in flood)
    assert statuses == [200] * 2 + [429] * 10
    assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="h6-elephant",
                  reason="queue-full") == 10
    assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="h6-mouse") == 0
    # Who made the load: dump_priority_levels' table of heaviest flows names the elephant and its refusals.
    status, _, dump = server.request("GET", "/debug/api_priority_and_fairness/dump_priority_levels")
    assert status == 200
    tables = dump.decode().split("\n\n")
    flows = [dict(zip([c.strip() for c in tables[1].splitlines()[0].split(",")], [c.strip() for c in line.split(",")]))
             for line in tables[1].splitlines()[1:] if line.strip()]
    heaviest = [f for f in flows if f["PriorityLevelName"] == "h6-elephant"][0]
    assert heaviest["FlowDistinguisher"] == "h6-elephant" and heaviest["FlowSchemaName"] == "h6-elephant"
    assert heaviest["RejectedRequests"] == "10" and int(heaviest["DispatchedRequests"]) >= 3


def disjoint_light_users(fs_name: str, heavy: str, queues: int, hand: int, want: int) -> list[str]:
    """Users whose hands share no queue with ``heavy``'s nor each other's (kube's dealer decides the hands)."""
    dealer = Dealer(hand, queues)
    taken = set(dealer.deal(hash_flow(fs_name, heavy)))
    chosen = []
    for user in (f"h6-light-{i}" for i in range(40)):
        cards = set(dealer.deal(hash_flow(fs_name, user)))
        if not cards & taken:
            chosen.append(user)
            taken |= cards
        if len(chosen) == want:
            return chosen
    raise AssertionError("no light users with disjoint hands")


def flow_rows(srv: Server, pl: str) -> dict[str, dict[str, str]]:
    """dump_priority_levels' table of flows of level ``pl``, by distinguisher."""
    status, _, dump = srv.request("GET", "/debug/api_priority_and_fairness/dump_priority_levels")
    assert status == 200
    lines = [line for line in dump.decode().split("\n\n")[1].splitlines() if line.strip()]
    header = [c.strip() for c in lines[0].split(",")]
    rows = [dict(zip(header, [c.strip() for c in line.split(",")])) for line in lines[1:]]
    return {r["FlowDistinguisher"]: r for r in rows if r["PriorityLevelName"] == pl}


def test_fairness_within_a_level(server: Server, holders: list[Holder]) -> None:
    """Two flows in one one-seat level, each with a queue of its own (kube's fairness in spirit, issue 30: counted,
    not timed). The heavy flow's seat is held while 8 more of its requests queue, then 2 of the light flow's:
    when the seat is freed, fair queuing dispatches the light flow's request first, as its queue's virtual
    start (the time it arrived) precedes the heavy queue's (charged for the seat it held since before);
    first-come-first-served would dispatch the 8 heavy requests first. Then every request is served."""
    level(server, "h6-fair", queues=16, hand=1, queue_length=60)
    light = disjoint_light_users("h6-fair", "h6-heavy", queues=16, hand=1, want=1)[0]
    fs = schema(server, "h6-fair", "h6-fair", users("h6-heavy", light), by_user=True)
    wait_classified(server, "h6-heavy", fs)
    wait_classified(server, light, fs)

    def dispatched() -> dict[str, int]:
        return {d: int(r["DispatchedRequests"]) for d, r in flow_rows(server, "h6-fair").items()}

    before = dispatched()
    blocker = hold(server, "h6-heavy", holders)
    wait_for(lambda: executing(server, "h6-fair") == 1, "the heavy flow's first request to execute")
    heavy = [hold(server, "h6-heavy", holders) for _ in range(8)]
    wait_for(lambda: inqueue(server, "h6-fair") == 8, "the heavy flow's requests to queue")
    lights = [hold(server, light, holders) for _ in range(2)]
    wait_for(lambda: inqueue(server, "h6-fair") == 10, "the light flow's requests to queue")
    assert dispatched().get(light, 0) == before.get(light, 0)

    assert blocker.release() == 201
    wait_for(lambda: executing(server, "h6-fair") == 1 and inqueue(server, "h6-fair") == 9, "the next dispatch")
    rows = flow_rows(server, "h6-fair")
    assert rows[light]["ExecutingRequests"] == "1" and rows["h6-heavy"]["ExecutingRequests"] == "0", rows
    assert rows[light]["WaitingRequests"] == "1" and rows["h6-heavy"]["WaitingRequests"] == "8", rows

    # The rest, released together: each answers once dispatched (its body is read after APF lets it in).
    with ThreadPoolExecutor(10) as pool:
        assert list(pool.map(Holder.release, heavy + lights)) == [201] * 10
    after = dispatched()
    assert after[light] - before.get(light, 0) == 2
    assert after["h6-heavy"] - before.get("h6-heavy", 0) == 9
    assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="h6-fair") == 0


def test_exempt_admin_unaffected_by_a_flood(server: Server, holders: list[Holder]) -> None:
    """Everyone but the exempt FlowSchema's users is sent to one saturated Reject level: the flood and a
    bystander get 429, the admin (system:masters) gets every request through, classified exempt."""
    pl = level(server, "h6-flood", reject=True)
    fs = schema(server, "h6-everyone", "h6-flood", [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                precedence=2)
    exempt_pl = json.loads(server.request("GET", f"{FC}/prioritylevelconfigurations/exempt")[2])
    try:
        wait_classified(server, "h6-flooder", fs)
        flood_holder = hold(server, "h6-flooder", holders)
        wait_for(lambda: executing(server, "h6-flood") == 1, "the flood to take the level's seat")
        with ThreadPoolExecutor(8) as pool:
            flood = [pool.submit(get, server, "h6-flooder", CMS) for _ in range(40)]
            admin = [server.request("GET", CMS) for _ in range(20)]
            flooded = [f.result() for f in flood]
        assert [a[0] for a in admin] == [200] * 20
        assert {headers_of(a)[PL_UID] for a in admin} == {exempt_pl["metadata"]["uid"]}
        assert [f[0] for f in flooded] == [429] * 40
        assert {f[1][PL_UID] for f in flooded} == {pl["metadata"]["uid"]}
        assert get(server, "h6-bystander")[0] == 429  # not exempt: caught by the flood's level too
        assert flood_holder.release() == 201
    finally:
        server.request("DELETE", f"{FC}/flowschemas/h6-everyone")
    wait_for(lambda: get(server, "h6-bystander")[1].get(FS_UID) not in (None, fs["metadata"]["uid"]),
             "the flood's FlowSchema to be gone")


def test_borrowing_lends_idle_seats(server: Server, holders: list[Holder]) -> None:
    """An idle level lends its lendable seats; a busy one that may borrow executes more than its nominal
    seat (kube's apf_controller recomputes the limits from seat demand every 10 s)."""
    level(server, "h6-lender", shares=60, lendable=100, borrowing=0)
    level(server, "h6-borrower", shares=1, lendable=0, borrowing=1000, queues=8, hand=1, queue_length=20)
    fs = schema(server, "h6-borrower", "h6-borrower", users("h6-lendee"))
    wait_classified(server, "h6-lendee", fs)
    wait_for(lambda: metric(server, "apiserver_flowcontrol_nominal_limit_seats", priority_level="h6-borrower") == 1
             and metric(server, "apiserver_flowcontrol_nominal_limit_seats", priority_level="h6-lender") > 1,
             "the two levels' nominal limits")
    lender_nominal = metric(server, "apiserver_flowcontrol_nominal_limit_seats", priority_level="h6-lender")

    busy = [hold(server, "h6-lendee", holders) for _ in range(6)]
    wait_for(lambda: executing(server, "h6-borrower") >= 1 and inqueue(server, "h6-borrower")
             + executing(server, "h6-borrower") == 6, "the borrower's demand to build")
    # The next recomputation of the limits lends the idle lender's seats to the borrower, whose queued
    # holders are then dispatched.
    wait_for(lambda: executing(server, "h6-borrower") > 1, "the borrower to execute on borrowed seats")
    borrower_limit = metric(server, "apiserver_flowcontrol_current_limit_seats", priority_level="h6-borrower")
    lender_limit = metric(server, "apiserver_flowcontrol_current_limit_seats", priority_level="h6-lender")
    assert borrower_limit > 1
    assert executing(server, "h6-borrower") <= borrower_limit
    assert lender_limit < lender_nominal
    assert [h.release() for h in busy] == [201] * 6  # none lost


def test_reconfiguration_while_loaded_keeps_queued_requests(server: Server, holders: list[Holder]) -> None:
    """Changing a level's shares while requests wait in its queues loses none of them: once the change is
    digested the level has more seats, and the queued requests run on them while the first seat is held."""
    level(server, "h6-reconf", queues=8, hand=2)
    fs = schema(server, "h6-reconf", "h6-reconf", users("h6-reconf"))
    wait_classified(server, "h6-reconf", fs)
    seat = hold(server, "h6-reconf", holders)
    wait_for(lambda: executing(server, "h6-reconf") == 1, "the holder to execute")
    with ThreadPoolExecutor(10) as pool:
        queued = [pool.submit(get, server, "h6-reconf", CMS) for _ in range(10)]
        wait_for(lambda: inqueue(server, "h6-reconf") == 10, "the requests to queue")
        status, _, body = server.request(
            "PATCH", f"{FC}/prioritylevelconfigurations/h6-reconf",
            json.dumps({"spec": {"limited": {"nominalConcurrencyShares": 60,
                                             "limitResponse": {"queuing": {"queueLengthLimit": 40}}}}}).encode(),
            {"Content-Type": "application/merge-patch+json"})
        assert status == 200, body[:300]
        wait_for(lambda: metric(server, "apiserver_flowcontrol_nominal_limit_seats",
                                priority_level="h6-reconf") > 1, "the new shares to be digested")
        statuses = [f.result(timeout=WAIT_S) for f in queued]
        assert executing(server, "h6-reconf") == 1  # the first seat was held throughout
    assert [s[0] for s in statuses] == [200] * 10
    assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="h6-reconf") == 0
    assert seat.release() == 201
