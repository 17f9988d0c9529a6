"""Table printers of the flowcontrol.apiserver.k8s.io group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_int, as_list, as_map, as_str, column, since

_FLOW_SCHEMA_COLUMNS: Final = (
    NAME,
    column("PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced "
           "Required."),
    column("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among the FlowSchemas that "
           "match a given request. The chosen FlowSchema is among those with the numerically lowest (which we "
           "take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in "
           "[1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default."),
    column("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute the flow "
           "distinguisher for requests that match this schema. `nil` specifies that the distinguisher is "
           "disabled and thus will always be the empty string."),
    AGE,
    column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
)

_PRIORITY_LEVEL_COLUMNS: Final = (
    NAME,
    column("Type", "string", "`type` indicates whether this priority level is subject to limitation on request "
           "execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a "
           "limit (and thus are never queued) and do not detract from the capacity made available to other "
           "priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ "
           "subject to limits and (b) some of the server's limited capacity is made available exclusively to "
           "this priority level. Required."),
    column("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes to the "
           "computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of "
           "execution seats available at this priority level. This is used both for requests dispatched from "
           "this priority level as well as requests dispatched from other priority levels borrowing seats from "
           "this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels "
           "in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs "
           "= sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the "
           "expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\n"
           "Setting this field to zero supports the construction of a \"jail\" for this priority level that is "
           "used to hold some request(s)"),
    column("Queues", "string", "`queues` is the number of queues for this priority level. The queues exist "
           "independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes "
           "shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  "
           "This field has a default value of 64."),
    column("HandSize", "string", "`handSize` is a small positive number that configures the shuffle sharding "
           "of requests into queues.  When enqueuing a request at this priority level the request's flow "
           "identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and "
           "deal a hand of the size specified here.  The request is put into one of the shortest queues in "
           "that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so "
           "that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for "
           "more extensive guidance on setting this field.  This field has a default value of 8."),
    column("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of requests allowed to be "
           "waiting in a given queue of this priority level at a time; excess requests are rejected.  This "
           "value must be positive.  If not specified, it will be defaulted to 50."),
    AGE,
)


def _flow_schema_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    distinguisher = as_str(as_map(method).get("type")) if isinstance(method, dict) else "<none>"
    missing = "?"  # no Dangling condition written yet
    for cond in as_list(as_map(obj.get("status")).get("conditions")):
        if as_map(cond).get("type") == "Dangling":
            missing = as_str(as_map(cond).get("status"))
            break
    return [as_str(meta.get("name")), as_str(as_map(spec.get("priorityLevelConfiguration")).get("name")),
            as_int(spec.get("matchingPrecedence")), distinguisher, since(meta.get("creationTimestamp"), now),
            missing]


def _by_precedence(objs: list[Obj]) -> list[Obj]:
    """FlowSchemaSequence: matchingPrecedence, then name (how kube prints a list, and matches)."""
    def key(o: Obj) -> tuple[int, str]:
        return (as_int(as_map(o.get("spec")).get("matchingPrecedence")), as_str(as_map(o.get("metadata")).get("name")))
    return sorted(objs, key=key)


def _priority_level_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand_size: Any = "<none>"
    queue_length_limit: Any = "<none>"
    limited = spec.get("limited")
    if isinstance(limited, dict):
        shares = as_int(limited.get("nominalConcurrencyShares"))
        queuing = as_map(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            queues, hand_size = as_int(queuing.get("queues")), as_int(queuing.get("handSize"))
            queue_length_limit = as_int(queuing.get("queueLengthLimit"))
    return [as_str(meta.get("name")), as_str(spec.get("type")), shares, queues, hand_size, queue_length_limit,
            since(meta.get("creationTimestamp"), now)]


FLOW_SCHEMA: Final = Printer(_FLOW_SCHEMA_COLUMNS, _flow_schema_row, order=_by_precedence)
PRIORITY_LEVEL_CONFIGURATION: Final = Printer(_PRIORITY_LEVEL_COLUMNS, _priority_level_row)
