"""The server's Prometheus metrics, in a registry of its own (no process-global state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_DURATION_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15,
                     20, 30, 45, 60)
_APF_DURATION_BUCKETS = (0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30)
_APF_QUEUE_LENGTH_BUCKETS = (0, 10, 25, 50, 100, 250, 500, 1000)


@dataclass
class Metrics:
    """kube-apiserver's metric names where kapi measures the same thing."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.cache_list_total = Counter(
            "apiserver_cache_list_total", "Number of LIST requests served from watch cache",
            ["group", "resource", "index", "source"], registry=r)
        self.cache_list_fetched = Counter(
            "apiserver_cache_list_fetched_objects_total", "Number of objects read from watch cache in the course "
            "of serving a LIST request", ["group", "resource", "index", "source"], registry=r)
        self.cache_list_returned = Counter(
            "apiserver_cache_list_returned_objects_total", "Number of objects returned for a LIST request from "
            "watch cache", ["group", "resource", "source"], registry=r)
        self.storage_list_total = Counter(
            "kapi_storage_list_total", "LIST requests served from storage rather than the watch cache, by reason",
            ["group", "resource", "reason"], registry=r)
        self.events_received = Counter(
            "apiserver_watch_cache_events_received_total", "Counter of events received in watch cache",
            ["group", "resource"], registry=r)
        self.capacity = Gauge(
            "apiserver_watch_cache_capacity", "Total capacity of watch cache broken by resource type",
            ["group", "resource"], registry=r)
        self.read_wait = Histogram(
            "apiserver_watch_cache_read_wait_seconds", "Histogram of time spent waiting for a watch cache to "
            "become fresh", ["group", "resource"], registry=r,
            buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3))
        self.consistent_read = Counter(
            "apiserver_watch_cache_consistent_read_total", "Counter for consistent reads from cache",
            ["group", "resource", "success", "fallback"], registry=r)
        self.consistency_checks = Counter(
            "apiserver_storage_consistency_checks_total", "Counter for status of consistency checks between etcd "
            "and watch cache", ["group", "resource", "status"], registry=r)
        self.resource_version = Gauge(
            "apiserver_watch_cache_resource_version", "Current resource version of watch cache broken by "
            "resource type", ["group", "resource"], registry=r)
        self.watch_cache_initializations = Counter(
            "apiserver_watch_cache_initializations_total", "Counter of watch cache initializations broken by "
            "resource type", ["group", "resource"], registry=r)
        self.terminated_watchers = Counter(
            "apiserver_terminated_watchers_total", "Counter of watchers closed due to unresponsiveness broken by "
            "resource type", ["group", "resource"], registry=r)
        self.registered_watchers = Gauge(
            "apiserver_registered_watchers", "Number of currently registered watchers for a given resources",
            ["group", "version", "kind"], registry=r)
        self.request_total = Counter(
            "apiserver_request_total", "Counter of apiserver requests broken out for each verb, dry run value, "
            "group, version, resource, scope, component, and HTTP response code",
            ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"],
            registry=r)
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds", "Response latency distribution in seconds for each verb, dry "
            "run value, group, version, resource, subresource, scope and component.",
            ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"],
            registry=r, buckets=_DURATION_BUCKETS)
        self.rejected_inflight = Counter(
            "apiserver_dropped_requests", "Number of requests dropped with 'Try again later' response",
            ["request_kind"], registry=r)

        # kube's pkg/util/flowcontrol/metrics/metrics.go (API Priority and Fairness): labels priority_level, flow_schema
        pl, fs = "priority_level", "flow_schema"
        self.apf_rejected = Counter(
            "apiserver_flowcontrol_rejected_requests_total", "Number of requests rejected by API Priority and "
            "Fairness subsystem", [pl, fs, "reason"], registry=r)
        self.apf_dispatched = Counter(
            "apiserver_flowcontrol_dispatched_requests_total", "Number of requests executed by API Priority and "
            "Fairness subsystem", [pl, fs], registry=r)
        self.apf_inqueue_requests = Gauge(
            "apiserver_flowcontrol_current_inqueue_requests", "Number of requests currently pending in queues of the "
            "API Priority and Fairness subsystem", [pl, fs], registry=r)
        self.apf_inqueue_seats = Gauge(
            "apiserver_flowcontrol_current_inqueue_seats", "Number of seats currently pending in queues of the API "
            "Priority and Fairness subsystem", [pl, fs], registry=r)
        self.apf_queue_length_after_enqueue = Histogram(
            "apiserver_flowcontrol_request_queue_length_after_enqueue", "Length of queue in the API Priority and "
            "Fairness subsystem, as seen by each request after it is enqueued", [pl, fs], registry=r,
            buckets=_APF_QUEUE_LENGTH_BUCKETS)
        self.apf_executing_requests = Gauge(
            "apiserver_flowcontrol_current_executing_requests", "Number of requests in initial (for a WATCH) or any "
            "(for a non-WATCH) execution stage in the API Priority and Fairness subsystem", [pl, fs], registry=r)
        self.apf_executing_seats = Gauge(
            "apiserver_flowcontrol_current_executing_seats", "Concurrency (number of seats) occupied by the currently "
            "executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness "
            "subsystem", [pl, fs], registry=r)
        self.apf_wait_duration = Histogram(
            "apiserver_flowcontrol_request_wait_duration_seconds", "Length of time a request spent waiting in its "
            "queue", [pl, fs, "execute"], registry=r, buckets=_APF_DURATION_BUCKETS)
        self.apf_execution_seconds = Histogram(
            "apiserver_flowcontrol_request_execution_seconds", "Duration of initial stage (for a WATCH) or any (for a "
            "non-WATCH) stage of request execution in the API Priority and Fairness subsystem", [pl, fs, "type"],
            registry=r, buckets=_APF_DURATION_BUCKETS)
        self.apf_watch_count_samples = Histogram(
            "apiserver_flowcontrol_watch_count_samples", "count of watchers for mutating requests in API Priority "
            "and Fairness", [pl, fs], registry=r, buckets=(0, 1, 10, 100, 1000, 10000))
        self.apf_work_estimated_seats = Histogram(
            "apiserver_flowcontrol_work_estimated_seats", "Number of estimated seats (maximum of initial and final "
            "seats) associated with requests in API Priority and Fairness", [pl, fs], registry=r,
            buckets=(1, 2, 4, 8, 16, 32, 64, 100))
        self.apf_no_accommodation = Counter(
            "apiserver_flowcontrol_request_dispatch_no_accommodation_total", "Number of times a dispatch attempt "
            "resulted in a non accommodation due to lack of available seats", [pl, fs], registry=r)
        self.apf_nominal_limit_seats = Gauge(
            "apiserver_flowcontrol_nominal_limit_seats", "Nominal number of execution seats configured for each "
            "priority level", [pl], registry=r)
        self.apf_lower_limit_seats = Gauge(
            "apiserver_flowcontrol_lower_limit_seats", "Configured lower bound on number of execution seats "
            "available to each priority level", [pl], registry=r)
        self.apf_upper_limit_seats = Gauge(
            "apiserver_flowcontrol_upper_limit_seats", "Configured upper bound on number of execution seats "
            "available to each priority level", [pl], registry=r)
        self.apf_current_limit_seats = Gauge(
            "apiserver_flowcontrol_current_limit_seats", "current derived number of execution seats available to "
            "each priority level", [pl], registry=r)
        self.apf_demand_seats = Histogram(
            "apiserver_flowcontrol_demand_seats", "Observations, at the end of every nanosecond, of (the number of "
            "seats each priority level could use) / (nominal number of seats for that level)", [pl], registry=r,
            buckets=(0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6))
        self.apf_demand_seats_high_watermark = Gauge(
            "apiserver_flowcontrol_demand_seats_high_watermark", "High watermark, over last adjustment period, of "
            "demand_seats", [pl], registry=r)
        self.apf_demand_seats_average = Gauge(
            "apiserver_flowcontrol_demand_seats_average", "Time-weighted average, over last adjustment period, of "
            "demand_seats", [pl], registry=r)
        self.apf_demand_seats_stdev = Gauge(
            "apiserver_flowcontrol_demand_seats_stdev", "Time-weighted standard deviation, over last adjustment "
            "period, of demand_seats", [pl], registry=r)
        self.apf_demand_seats_smoothed = Gauge(
            "apiserver_flowcontrol_demand_seats_smoothed", "Smoothed seat demands", [pl], registry=r)
        self.apf_target_seats = Gauge(
            "apiserver_flowcontrol_target_seats", "Seat allocation targets", [pl], registry=r)
        self.apf_seat_fair_frac = Gauge(
            "apiserver_flowcontrol_seat_fair_frac", "Fair fraction of server's concurrency to allocate to each "
            "priority level that can use it", registry=r)

        # kube's pkg/audit/metrics.go
        self.audit_event_total = Counter(
            "apiserver_audit_event_total", "Counter of audit events generated and sent to the audit backend.",
            registry=r)
        self.audit_error_total = Counter(
            "apiserver_audit_error_total", "Counter of audit events that failed to be audited properly. Plugin "
            "identifies the plugin affected by the error.", ["plugin"], registry=r)
        self.audit_level_total = Counter(
            "apiserver_audit_level_total", "Counter of policy levels for audit events (1 per request).", ["level"],
            registry=r)
        self.audit_requests_rejected_total = Counter(
            "apiserver_audit_requests_rejected_total", "Counter of apiserver requests rejected due to an error in "
            "audit logging backend.", registry=r)

    def exposition(self) -> bytes:
        """The text exposition format for ``/metrics``."""
        return generate_latest(self.registry)
