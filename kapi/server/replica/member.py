"""One replica among others: its identity Lease, its address in the ``kubernetes`` Endpoints, and
leaving (the leader Lease released, its address removed) when it stops."""

from __future__ import annotations

import ipaddress
import logging
import socket

import trio

from kapi.controllers.writes import Writer
from kapi.registry.store import Registry
from kapi.server.bootstrap import publish_endpoint
from kapi.server.replica.endpoints import EndpointLeases, publishable
from kapi.server.replica.leases import LeaderElection, apiserver_id, collect_expired_identities, keep_identity

__all__ = ["Replica", "advertise_address"]

log = logging.getLogger("kapi")


def advertise_address(advertise: str, bind: str) -> str:
    """The address a server publishes (kube's ResolveBindAddress): ``--advertise-address`` when given; for an
    unspecified ``--bind-address`` (0.0.0.0, ::), the host's default-route interface address (kube's
    ChooseHostInterface), or "" when the host has no route; else the bind address."""
    if advertise:
        return advertise
    try:
        unspecified = ipaddress.ip_address(bind).is_unspecified
    except ValueError:
        return bind  # a host name: published as given (Endpoints validation decides)
    if not unspecified:
        return bind
    return _default_route_address(socket.AF_INET6 if ":" in bind else socket.AF_INET) or \
        (_default_route_address(socket.AF_INET) if ":" in bind else "")


def _default_route_address(family: socket.AddressFamily) -> str:
    """The local address the kernel would use to reach the outside (a UDP connect sends nothing)."""
    probe = "2001:4860:4860::8888" if family == socket.AF_INET6 else "8.8.8.8"
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 53))
            address: str = s.getsockname()[0]
    except OSError:
        return ""
    return "" if ipaddress.ip_address(address).is_loopback else address


class Replica:
    """What one serving replica keeps in the cluster while it runs, from the address it advertises."""

    def __init__(self, registry: Registry, writer: Writer, ip: str, port: int,
                 election: LeaderElection | None = None) -> None:
        self.registry, self.writer, self.ip, self.port, self.election = registry, writer, ip, port, election
        self.identity = apiserver_id(port)
        self.endpoints = EndpointLeases(registry, writer, ip, port) if publishable(ip) else None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The identity Lease and its collector, and the Endpoints reconciler; ``started()`` once each
        has done its first round."""
        async with trio.open_nursery() as nursery:
            await nursery.start(keep_identity, self.registry, self.writer, self.identity)
            nursery.start_soon(collect_expired_identities, self.registry, self.writer)
            if self.endpoints is not None:
                await nursery.start(self.endpoints.run)
            else:  # Endpoints would refuse the address: the Service alone, and today's warning
                await publish_endpoint(self.registry, self.ip, self.port, self.writer)
            task_status.started()

    async def leave(self, timeout_s: float = 5.0) -> None:
        """At shutdown, while storage still runs: the leader Lease released (its controllers stopped
        first) and this replica's address taken out of the Endpoints; bounded by ``timeout_s``."""
        with trio.move_on_after(timeout_s) as scope:
            if self.election is not None:
                await self.election.release()
            if self.endpoints is not None:
                try:
                    await self.endpoints.remove()
                except Exception as exc:  # storage gone: the record ages out instead
                    log.warning("cannot take this server out of the kubernetes Endpoints: %s", exc)
        if scope.cancelled_caught:
            log.warning("leaving the cluster took longer than %.0fs; the rest is left to expire", timeout_s)
