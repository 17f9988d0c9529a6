"""The server's Prometheus metrics, in a registry of its own (no process-global state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_DURATION_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15,
                     20, 30, 45, 60)


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
