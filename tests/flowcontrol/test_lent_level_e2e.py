"""Issue 30, item 1, over real HTTPS: a priority level whose only seat is lent still serves a request alone.

``kapi serve --max-requests-inflight 4 --max-mutating-requests-inflight 2`` has 6 seats; global-default
gets 1 nominal seat and may lend it all (lendablePercent 50 rounds to 1). While six exempt requests (an
admin's, held open) keep the exempt level's demand at 6, every borrowing adjustment leaves global-default
at a current limit of 0. A user's LIST, with or without ``limit``, is served because nothing else
executes in its level; it used to wait in its queue until refused with 429 ``time-out``. Nothing here
measures time: the test counts answers and reads the server's metrics.
"""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from tests.e2e.conftest import Server, start_server, stop_server
from tests.flowcontrol.test_behaviour import FS_UID, Holder, executing, get, metric, token, wait_for

pytestmark = pytest.mark.e2e

ADMIN, USER = "h30-admin", "h30-user"
NS = "h30"
CONFIGMAPS = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("apf-lent")
    tokens = root / "tokens.csv"
    tokens.write_text(f'{token(ADMIN)},{ADMIN},uid-{ADMIN},"system:masters"\n'
                      f'{token(USER)},{USER},uid-{USER},"h30-users"\n')
    # The held admin requests must outlive a borrowing adjustment (every 10 s) on a loaded machine: a
    # long request timeout. (A queued request may wait a quarter of it, then 429 time-out.)
    srv = start_server(root / "data", "--authorization-mode", "AlwaysAllow", "--token-auth-file", str(tokens),
                       "--max-requests-inflight", "4", "--max-mutating-requests-inflight", "2",
                       "--request-timeout", "120s", "--log-level", "warning")
    try:
        wait_for(lambda: srv.request("GET", "/readyz")[0] == 200, "the server to be ready")
        wait_for(lambda: srv.request("GET", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/global-default")[0]
                 == 200, "the bootstrap FlowSchemas")
        yield srv
    finally:
        stop_server(srv)


def test_user_list_runs_while_its_level_has_lent_its_seat(server: Server) -> None:
    status, _, body = server.request("POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).encode(),
        {"Content-Type": "application/json"})
    assert status == 201, body[:300]
    for i in range(CONFIGMAPS):
        status, _, body = server.request("POST", f"/api/v1/namespaces/{NS}/configmaps", json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}, "data": {"k": "v" * 100}}
        ).encode(), {"Content-Type": "application/json"})
        assert status == 201, body[:300]
    assert metric(server, "apiserver_flowcontrol_nominal_limit_seats", priority_level="global-default") == 1
    assert metric(server, "apiserver_flowcontrol_lower_limit_seats", priority_level="global-default") == 0

    holders = [Holder(server, ADMIN) for _ in range(6)]
    try:
        wait_for(lambda: executing(server, "exempt") >= 6, "the admin's requests to execute")
        # the next adjustment sees the exempt level's demand at 6: global-default keeps no seat
        wait_for(lambda: metric(server, "apiserver_flowcontrol_demand_seats_high_watermark",
                                priority_level="exempt") >= 6, "an adjustment with the exempt level busy")
        assert metric(server, "apiserver_flowcontrol_current_limit_seats", priority_level="global-default") == 0

        path = f"/api/v1/namespaces/{NS}/configmaps"
        for query in ("?limit=1", "", "?limit=1"):
            status, headers, body = get(server, USER, path + query)
            assert status == 200, (query, status, body[:200])
            assert headers.get(FS_UID)  # classified (global-default), not exempt
            items = json.loads(body)["items"]
            assert len(items) == 1 if query else len(items) > CONFIGMAPS  # and kube-root-ca.crt
        assert metric(server, "apiserver_flowcontrol_current_limit_seats", priority_level="global-default") == 0
        assert metric(server, "apiserver_flowcontrol_dispatched_requests_total",
                      priority_level="global-default") == 3
        assert metric(server, "apiserver_flowcontrol_rejected_requests_total", priority_level="global-default") == 0
    finally:
        assert [h.release() for h in holders] == [201] * 6
