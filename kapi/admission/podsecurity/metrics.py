"""PodSecurity's metrics (kube's k8s.io/pod-security-admission/metrics): evaluations by decision,
level, version and mode, exemptions, and errors, in the server's metrics registry."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter

from kapi.admission.podsecurity.api import PRIVILEGED, LevelVersion, version

# The API version kapi serves (kube 1.33): policies pinned past it are counted as "future".
API_VERSION: Final = version(1, 33)
_OPERATIONS: Final = {"CREATE": "create", "UPDATE": "update"}


@dataclass(frozen=True, slots=True)
class Request:
    """What the metrics label a request by."""

    operation: str
    group: str
    resource: str
    subresource: str

    @property
    def labels(self) -> tuple[str, str, str]:
        if self.group == "" and self.resource == "pods":
            kind = "pod"
        elif self.group == "" and self.resource == "namespaces":
            kind = "namespace"
        else:
            kind = "controller"
        return _OPERATIONS.get(self.operation, self.operation.lower()), kind, self.subresource


class Recorder:
    """The three counters, registered once per metrics registry."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.evaluations = Counter(
            "pod_security_evaluations_total",
            "Number of policy evaluations that occurred, not counting ignored or exempt requests.",
            ["decision", "policy_level", "policy_version", "mode", "request_operation", "resource", "subresource"],
            registry=registry)
        self.exemptions = Counter(
            "pod_security_exemptions_total",
            "Number of exempt requests, not counting ignored or out of scope requests.",
            ["request_operation", "resource", "subresource"], registry=registry)
        self.errors = Counter(
            "pod_security_errors_total",
            "Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted "
            "profile being used for evaluation.",
            ["fatal", "request_operation", "resource", "subresource"], registry=registry)

    def evaluation(self, decision: str, policy: LevelVersion, mode: str, req: Request) -> None:
        if policy.version.latest or policy.level == PRIVILEGED:  # privileged is always effectively latest
            ver = "latest"
        elif not API_VERSION < policy.version:
            ver = str(policy.version)
        else:
            ver = "future"
        self.evaluations.labels(decision, policy.level, ver, mode, *req.labels).inc()

    def exemption(self, req: Request) -> None:
        self.exemptions.labels(*req.labels).inc()

    def error(self, fatal: bool, req: Request) -> None:
        self.errors.labels("true" if fatal else "false", *req.labels).inc()


_RECORDERS: weakref.WeakKeyDictionary[CollectorRegistry, Recorder] = weakref.WeakKeyDictionary()


def recorder_for(registry: CollectorRegistry | None) -> Recorder:
    """The registry's recorder (plugins built again over one server's metrics share it); None: unregistered."""
    if registry is None:
        return Recorder(None)
    found = _RECORDERS.get(registry)
    if found is None:
        found = _RECORDERS[registry] = Recorder(registry)
    return found
