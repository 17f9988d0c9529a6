"""API Priority and Fairness built from the server's flags (``build_app`` calls this; ``serve`` runs it)."""

from __future__ import annotations

from kapi.chain.filters import FlowControl
from kapi.chain.flowcontrol.controller import Controller
from kapi.chain.flowcontrol.estimate import Estimator
from kapi.config import Config
from kapi.registry.informer import Informers
from kapi.registry.store import Registry


def build_flowcontrol(config: Config, registry: Registry, informers: Informers | None) -> FlowControl | None:
    """The controller and the work estimator when --enable-priority-and-fairness is on and the server has
    its in-process informers (the FlowSchemas and priority levels are read through them); None otherwise,
    and the chain limits with max-in-flight instead, as kube-apiserver does with APF off.

    The server-wide concurrency limit is kube's: --max-requests-inflight + --max-mutating-requests-inflight.
    The controller asks for its two informers here, so this runs before the informers do.
    """
    if not config.enable_priority_and_fairness or informers is None:
        return None
    limit = config.max_requests_inflight + config.max_mutating_requests_inflight
    controller = Controller(informers, registry, server_concurrency_limit=limit, metrics=registry.metrics)
    estimator = Estimator(registry, registry.metrics, size_based=config.size_based_list_cost_estimate)
    return FlowControl(controller, estimator, default_wait_s=config.request_timeout_s / 4)
