"""kube-apiserver's admission webhook metrics (``apiserver/pkg/admission/metrics``), in the server's
registry: call latency, calls by code, rejections by error type and code, fail-open count.

kube's names are kept as they are (``..._rejection_count`` and ``..._fail_open_count`` are counters
without the ``_total`` suffix), so the counters are exposed by a collector of their own: the samples
carry kube's names (the text format's HELP/TYPE lines of a counter get ``_total`` appended).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import Histogram
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from kapi.metrics import Metrics

_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25)
CALLING_WEBHOOK_ERROR = "calling_webhook_error"
NO_ERROR = "no_error"
APISERVER_INTERNAL_ERROR = "apiserver_internal_error"

_COUNTERS = {
    "apiserver_admission_webhook_request_total": (
        "Admission webhook request total, identified by name and broken out for each admission type (validating "
        "or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP "
        "status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
        ("name", "type", "operation", "code", "rejected")),
    "apiserver_admission_webhook_rejection_count": (
        "Admission webhook rejection count, identified by name and broken out for each admission type (validating "
        "or admit) and operation. Additional labels specify an error type (calling_webhook_error or "
        "apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code "
        "if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is "
        "greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality "
        "bounded.", ("name", "type", "operation", "error_type", "rejection_code")),
    "apiserver_admission_webhook_fail_open_count": (
        "Admission webhook fail open count, identified by name and broken out for each admission type (validating "
        "or admit).", ("name", "type")),
}


@dataclass(eq=False)
class _Counters(Collector):
    values: dict[str, dict[tuple[str, ...], float]] = field(default_factory=lambda: {n: {} for n in _COUNTERS})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def inc(self, name: str, *labels: str) -> None:
        with self.lock:
            series = self.values[name]
            series[labels] = series.get(labels, 0.0) + 1.0

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            snapshot = {n: dict(v) for n, v in self.values.items()}
        for name, (doc, label_names) in _COUNTERS.items():
            family = Metric(name, doc, "counter")
            for labels, value in sorted(snapshot[name].items()):
                family.add_sample(name, dict(zip(label_names, labels)), value)
            yield family


class WebhookMetrics:
    """The webhook metrics of one server (one per ``Metrics``)."""

    def __init__(self, metrics: Metrics) -> None:
        self.latency = Histogram(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation "
            "and API resource and type (validate or admit).", ["name", "type", "operation", "rejected"],
            registry=metrics.registry, buckets=_BUCKETS)
        self.counters = _Counters()
        metrics.registry.register(self.counters)

    def observe(self, name: str, kind: str, operation: str, seconds: float, rejected: bool, code: int) -> None:
        """kube's ObserveWebhook: the latency and the request count of one call."""
        self.latency.labels(name, kind, operation, str(rejected).lower()).observe(seconds)
        self.counters.inc("apiserver_admission_webhook_request_total", name, kind, operation, str(min(code, 600)),
                          str(rejected).lower())

    def rejection(self, name: str, kind: str, operation: str, error_type: str, code: int) -> None:
        self.counters.inc("apiserver_admission_webhook_rejection_count", name, kind, operation, error_type,
                          str(min(code, 600)))

    def fail_open(self, name: str, kind: str) -> None:
        self.counters.inc("apiserver_admission_webhook_fail_open_count", name, kind)


_lock = threading.Lock()


def webhook_metrics(metrics: Metrics) -> WebhookMetrics:
    """The server's webhook metrics, made on first use (both webhook plugins share them)."""
    with _lock:
        found = metrics.__dict__.get("admission_webhooks")
        if not isinstance(found, WebhookMetrics):
            found = metrics.__dict__["admission_webhooks"] = WebhookMetrics(metrics)
        return found
