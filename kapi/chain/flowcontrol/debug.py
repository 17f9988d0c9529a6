"""The ``/debug/api_priority_and_fairness/dump_*`` answers, in kube's columns (apf_controller_debug.go).

Each is text written through Go's ``text/tabwriter`` (minwidth 8, padding 1, spaces) with cells
joined by ``",\\t"``, so the tools that read kube's dumps read these. ``dump_priority_levels`` has,
beyond kube, a second table after a blank line: each level's heaviest flows (FlowSchema,
distinguisher, seat-seconds used lately, requests executing, waiting, dispatched and rejected), so
the client making the load is named.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping, Sequence

from kapi.chain.flowcontrol import QueueSetDump, RequestDump

PATH_PREFIX = "/debug/api_priority_and_fairness/"
HEAVIEST_FLOWS_PER_LEVEL = 10  # rows per priority level in dump_priority_levels' flows table

_PRIORITY_LEVEL_COLUMNS = ("PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
                           "ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests",
                           "CancelledRequests")
_FLOW_COLUMNS = ("PriorityLevelName", "FlowSchemaName", "FlowDistinguisher", "SeatSeconds", "ExecutingRequests",
                 "WaitingRequests", "DispatchedRequests", "RejectedRequests")
_QUEUE_COLUMNS = ("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
                  "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
# kube's spelling, "FlowDistingsher" included: tools match these headers
_REQUEST_COLUMNS = ("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher",
                    "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
_REQUEST_DETAIL_COLUMNS = ("UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource",
                           "SubResource")

DUMPS = ("dump_priority_levels", "dump_queues", "dump_requests")


def render(name: str, dumps: Mapping[str, QueueSetDump], query: Mapping[str, str]) -> str | None:
    """The dump ``name`` (one of ``DUMPS``) of ``dumps`` (by priority level); None for another name."""
    if name == "dump_priority_levels":
        return dump_priority_levels(dumps)
    if name == "dump_queues":
        return dump_queues(dumps)
    if name == "dump_requests":
        return dump_requests(dumps, include_details=bool(query.get("includeRequestDetails")))
    return None


def dump_priority_levels(dumps: Mapping[str, QueueSetDump]) -> str:
    """A row per priority level (sorted by name), then the heaviest flows of each."""
    rows = [_row(_PRIORITY_LEVEL_COLUMNS)]
    for name in sorted(dumps):
        d = dumps[name]
        active = sum(1 for q in d.queues if q.requests)
        rows.append(_row((name, str(active), _bool(d.is_idle), _bool(d.is_quiescing), str(d.waiting),
                          str(d.executing), str(d.dispatched), str(d.rejected), str(d.timed_out),
                          str(d.cancelled))))
    flows = [_row(_FLOW_COLUMNS)]
    for name in sorted(dumps):
        for f in dumps[name].flows[:HEAVIEST_FLOWS_PER_LEVEL]:
            flows.append(_row((name, f.flow_schema, f.distinguisher, seat_seconds(f.seat_seconds), str(f.executing),
                               str(f.waiting), str(f.dispatched), str(f.rejected))))
    return tabwrite(rows) + "\n" + tabwrite(flows)


def dump_queues(dumps: Mapping[str, QueueSetDump]) -> str:
    """A row per queue of every priority level."""
    rows = [_row(_QUEUE_COLUMNS)]
    for name in sorted(dumps):
        for i, q in enumerate(dumps[name].queues):
            rows.append(_row((name, str(i), str(len(q.requests)), str(q.executing_requests), str(q.seats_in_use),
                              seat_seconds(q.next_dispatch_r), str(q.waiting_seats), str(q.max_seats_sum),
                              seat_seconds(q.total_work_sum))))
    return tabwrite(rows)


def dump_requests(dumps: Mapping[str, QueueSetDump], *, include_details: bool = False) -> str:
    """A row per request waiting (its queue and place) or executing (place -1; queue -1 without a queue)."""
    header = _row(_REQUEST_COLUMNS)
    if include_details:
        header += ",\t" + _row(_REQUEST_DETAIL_COLUMNS)
    rows = [header]

    def add(level: str, queue: int, index: int, r: RequestDump) -> None:
        e = r.estimate
        line = _row((level, r.flow_schema, str(queue), str(index), r.distinguisher, rfc3339_nano(r.arrive_time),
                     str(e.initial_seats), str(e.final_seats), go_duration(round(e.additional_latency_s * 1e9)),
                     rfc3339_nano(r.start_time)))
        if include_details:
            line += ",\t" + _row((r.user, r.verb, r.path, r.namespace, r.name, r.api_version, r.resource,
                                  r.subresource))
        rows.append(line)

    for name in sorted(dumps):
        d = dumps[name]
        for iq, q in enumerate(d.queues):
            for ir, r in enumerate(q.requests):
                add(name, iq, ir, r)
            for r in q.requests_executing:
                add(name, iq, -1, r)
        for r in d.executing_requests:
            add(name, -1, -1, r)
    return tabwrite(rows)


# ------------------------------------------------------------------ Go's formats


def _row(columns: Sequence[str]) -> str:
    return ",\t".join(columns)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def seat_seconds(value: float) -> str:
    """kube's SeatSeconds.String(): fixed point with 8 decimals and the unit ``ss``."""
    fixed = max(0, round(value * 1e8))
    return f"{fixed // 100_000_000}.{fixed % 100_000_000:08d}ss"


def rfc3339_nano(wall_s: float | None) -> str:
    """Go's ``t.UTC().Format(time.RFC3339Nano)`` (trailing zeros of the fraction dropped); None is Go's zero time."""
    if wall_s is None:
        return "0001-01-01T00:00:00Z"
    micros = round(wall_s * 1e6)  # a float of wall-clock seconds holds no more than microseconds
    t = datetime.fromtimestamp(micros // 1_000_000, timezone.utc)
    frac = f"{micros % 1_000_000:06d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def go_duration(ns: int) -> str:
    """Go's ``time.Duration.String()``: ``0s``, ``750µs``, ``5ms``, ``1.5s``, ``2m0s``, ``1h0m0s``."""
    if ns == 0:
        return "0s"
    sign, u = ("-", -ns) if ns < 0 else ("", ns)
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_decimal(u, 3)}µs"
    if u < 1_000_000_000:
        return f"{sign}{_decimal(u, 6)}ms"
    text = _decimal(u % 60_000_000_000, 9) + "s"
    minutes = u // 60_000_000_000
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _decimal(value: int, places: int) -> str:
    whole, frac = divmod(value, 10 ** places)
    digits = f"{frac:0{places}d}".rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def tabwrite(lines: Sequence[str], *, minwidth: int = 8, padding: int = 1) -> str:
    """Go's ``text/tabwriter`` (padchar ' ', no flags) over whole lines: a cell is text ended by a tab,
    each column as wide as its widest cell (plus padding, at least ``minwidth``) in the block of
    consecutive lines that have that column; the text after a line's last tab is not aligned."""
    cells = [line.split("\t") for line in lines]
    widths = [[0] * (len(line) - 1) for line in cells]

    def format_block(line0: int, line1: int, column: int) -> None:
        this = line0
        while this < line1:
            if column >= len(cells[this]) - 1:
                this += 1
                continue
            start, width = this, minwidth
            while this < line1 and column < len(cells[this]) - 1:
                width = max(width, len(cells[this][column]) + padding)
                this += 1
            for i in range(start, this):
                widths[i][column] = width
            format_block(start, this, column + 1)

    format_block(0, len(cells), 0)
    return "".join("".join(c.ljust(w) for c, w in zip(line, row)) + line[-1] + "\n"
                   for line, row in zip(cells, widths))
