"""The APF debug dumps in kube's column format (apf_controller_debug.go), and the heaviest flows (issue 13)."""

from __future__ import annotations

from kapi.chain.flowcontrol import FlowDump, QueueDump, QueueSetDump, RequestDump, WorkEstimate
from kapi.chain.flowcontrol.debug import (dump_priority_levels, dump_queues, dump_requests, go_duration, render,
                                          rfc3339_nano, seat_seconds, tabwrite)

ARRIVED = 1_700_000_000.25  # 2023-11-14T22:13:20.25Z
STARTED = 1_700_000_001.0


def _request(fs: str, who: str, *, started: float | None = None, seats: int = 1) -> RequestDump:
    return RequestDump(fs, who, ARRIVED, started, WorkEstimate(seats, 2 if seats > 1 else 0, 0.005 if seats > 1 else 0),
                       user=who, verb="list", path="/api/v1/namespaces/ns1/pods", namespace="ns1", name="",
                       api_version="v1", resource="pods", subresource="")


def _dumps() -> dict[str, QueueSetDump]:
    waiting = _request("service-accounts", "ns1", seats=3)
    executing = _request("service-accounts", "ns2", started=STARTED)
    workload = QueueSetDump(
        queues=[QueueDump(0), QueueDump(1, requests=[waiting], next_dispatch_r=12.5, executing_requests=1,
                                        seats_in_use=1, waiting_seats=3, max_seats_sum=3, total_work_sum=0.06,
                                        requests_executing=[executing])],
        waiting=1, executing=1, seats_in_use=1, seats_waiting=3, dispatched=40, rejected=7, timed_out=2,
        cancelled=1, is_idle=False,
        flows=[FlowDump("service-accounts", "ns1", 30.0, executing=0, waiting=1, dispatched=30, rejected=7),
               FlowDump("service-accounts", "ns2", 2.5, executing=1, waiting=0, dispatched=10, rejected=0)])
    exempt = QueueSetDump(dispatched=5, executing_requests=[_request("exempt", "admin", started=STARTED)],
                          executing=1, is_idle=False)
    return {"workload-low": workload, "exempt": exempt}


def test_tabwriter_pads_as_gos_minwidth_8_padding_1() -> None:
    # Each column as wide as its widest cell plus one, at least 8; the text after the last tab unpadded.
    out = tabwrite(["a,\tbb,\tc", "longer-name,\tx,\tyy"])
    assert out == "a," + " " * 11 + "bb," + " " * 5 + "c\n" + "longer-name, x," + " " * 6 + "yy\n"
    # A column exists only in the block of consecutive lines that have it.
    assert tabwrite(["a\tb\tc", "d", "eeeeeeeeeee\tf\tg"]) == "a       b       c\nd\neeeeeeeeeee f       g\n"


def test_go_formats() -> None:
    assert [go_duration(ns) for ns in (0, 999, 1500, 5_000_000, 1_500_000_000, 90_000_000_000, 3_600_000_000_000)] \
        == ["0s", "999ns", "1.5µs", "5ms", "1.5s", "1m30s", "1h0m0s"]
    assert rfc3339_nano(ARRIVED) == "2023-11-14T22:13:20.25Z"
    assert rfc3339_nano(STARTED) == "2023-11-14T22:13:21Z"
    assert rfc3339_nano(None) == "0001-01-01T00:00:00Z"  # Go's zero time: a request still waiting
    assert seat_seconds(12.5) == "12.50000000ss" and seat_seconds(0) == "0.00000000ss"


def test_dump_priority_levels_has_kubes_columns_sorted_by_name_then_the_heaviest_flows() -> None:
    levels, flows = dump_priority_levels(_dumps()).split("\n\n")
    lines = levels.splitlines()
    assert [c.strip() for c in lines[0].split(",")] == [
        "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
        "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests"]
    rows = [[c.strip() for c in line.split(",")] for line in lines[1:]]
    assert rows == [["exempt", "0", "false", "false", "0", "1", "5", "0", "0", "0"],
                    ["workload-low", "1", "false", "false", "1", "1", "40", "7", "2", "1"]]
    # Go's tabwriter alignment: every column starts at the same offset on every line.
    assert lines[1].index("0,") == lines[0].index("ActiveQueues")
    flow_lines = flows.splitlines()
    assert [c.strip() for c in flow_lines[0].split(",")] == [
        "PriorityLevelName", "FlowSchemaName", "FlowDistinguisher", "SeatSeconds", "ExecutingRequests",
        "WaitingRequests", "DispatchedRequests", "RejectedRequests"]
    assert [[c.strip() for c in line.split(",")] for line in flow_lines[1:]] == [
        ["workload-low", "service-accounts", "ns1", "30.00000000ss", "0", "1", "30", "7"],
        ["workload-low", "service-accounts", "ns2", "2.50000000ss", "1", "0", "10", "0"]]


def test_dump_queues_has_a_row_per_queue() -> None:
    lines = dump_queues(_dumps()).splitlines()
    assert [c.strip() for c in lines[0].split(",")] == [
        "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
        "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"]
    assert [[c.strip() for c in line.split(",")] for line in lines[1:]] == [
        ["workload-low", "0", "0", "0", "0", "0.00000000ss", "0", "0", "0.00000000ss"],
        ["workload-low", "1", "1", "1", "1", "12.50000000ss", "3", "3", "0.06000000ss"]]


def test_dump_requests_waiting_executing_and_queueless_with_and_without_details() -> None:
    lines = dump_requests(_dumps()).splitlines()
    assert [c.strip() for c in lines[0].split(",")] == [
        "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher",
        "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime"]
    assert [[c.strip() for c in line.split(",")] for line in lines[1:]] == [
        ["exempt", "exempt", "-1", "-1", "admin", "2023-11-14T22:13:20.25Z", "1", "0", "0s",
         "2023-11-14T22:13:21Z"],
        ["workload-low", "service-accounts", "1", "0", "ns1", "2023-11-14T22:13:20.25Z", "3", "2", "5ms",
         "0001-01-01T00:00:00Z"],
        ["workload-low", "service-accounts", "1", "-1", "ns2", "2023-11-14T22:13:20.25Z", "1", "0", "0s",
         "2023-11-14T22:13:21Z"]]
    detailed = render("dump_requests", _dumps(), {"includeRequestDetails": "1"})
    assert detailed is not None
    dlines = detailed.splitlines()
    assert [c.strip() for c in dlines[0].split(",")][10:] == [
        "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource"]
    assert [c.strip() for c in dlines[2].split(",")][10:] == [
        "ns1", "list", "/api/v1/namespaces/ns1/pods", "ns1", "", "v1", "pods", ""]
    assert render("dump_nothing", _dumps(), {}) is None
