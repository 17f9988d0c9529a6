"""coordination.k8s.io Leases of the replicas: each one's APIServerIdentity Lease (kube's identity lease
controller and its garbage collector), and the leader Lease under which kube-controller-manager's
controllers run on one replica only (client-go's leader election)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import logging
import socket
import time
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any, Awaitable, Callable, Sequence

import trio

from kapi import errors
from kapi.apis.coordination import LEASES
from kapi.controllers.writes import Writer
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions
from kapi.registry.store import Registry
from kapi.server.supervise import supervise

__all__ = ["IDENTITY_LABEL", "LeaderElection", "apiserver_id", "collect_expired_identities", "keep_identity",
           "lease_expired"]

log = logging.getLogger("kapi")

Obj = dict[str, Any]
NAMESPACE = "kube-system"
IDENTITY_LABEL = "apiserver.kubernetes.io/identity"  # kube's IdentityLeaseComponentLabelKey
HOSTNAME_LABEL = "kubernetes.io/hostname"
IDENTITY_DURATION_S = 3600  # kube's IdentityLeaseDurationSeconds
IDENTITY_RENEW_S = 10.0  # IdentityLeaseRenewIntervalPeriod
IDENTITY_GC_S = 3600.0  # IdentityLeaseGCPeriod


def micro_time(t: float) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def lease_expired(lease: Obj, now: float) -> bool:
    """kube's apiserverleasegc ``isLeaseExpired``: no renewTime or duration, or renewed longer ago than it lasts."""
    spec = lease.get("spec") or {}
    renewed, duration = _parse_time(spec.get("renewTime")), spec.get("leaseDurationSeconds")
    return renewed is None or not isinstance(duration, int) or renewed + duration < now


def apiserver_id(port: int, hostname: str | None = None) -> str:
    """This replica's identity Lease name: ``apiserver-`` and a hash, as kube's ``APIServerID``.

    kube hashes the hostname alone (one kube-apiserver per host, so a restarted one takes its
    Lease again); kapi's replicas may share a host, so the secure port is hashed with it: a
    replica restarted on the same port keeps its Lease, one on another port (``--secure-port 0``)
    makes a new one and the old one is collected once expired.
    """
    digest = hashlib.sha256(f"{hostname or socket.gethostname()}:{port}".encode()).digest()[:16]
    return "apiserver-" + base64.b32encode(digest).decode().rstrip("=").lower()


async def keep_identity(registry: Registry, writer: Writer, lease_name: str, *,
                        renew_s: float = IDENTITY_RENEW_S, duration_s: int = IDENTITY_DURATION_S,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """kube's identity lease controller: Lease ``kube-system/<lease_name>`` renewed every ``renew_s``,
    labelled ``apiserver.kubernetes.io/identity=kube-apiserver`` and with the host's name."""
    holder = f"{lease_name}_{uuid.uuid4()}"
    labels = {IDENTITY_LABEL: "kube-apiserver", HOSTNAME_LABEL: socket.gethostname()}
    started = False
    while True:
        try:
            await _renew_identity(registry, writer, lease_name, holder, labels, duration_s)
        except errors.StatusError as err:  # the next round tries again, as kube's controller does
            log.warning("cannot renew the identity lease %s: %s", lease_name, err.message)
        if not started:
            started = True
            task_status.started()
        await trio.sleep(renew_s)


async def _renew_identity(registry: Registry, writer: Writer, name: str, holder: str, labels: dict[str, str],
                          duration_s: int) -> None:
    try:
        lease = await registry.get(LEASES, NAMESPACE, name)
    except errors.NotFound:
        await writer.create(LEASES, NAMESPACE, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration_s,
                     "renewTime": micro_time(time.time())}})
        return
    lease.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    lease["spec"] = dict(lease.get("spec") or {}, holderIdentity=holder, leaseDurationSeconds=duration_s,
                         renewTime=micro_time(time.time()))
    await writer.update(LEASES, NAMESPACE, name, lease)


async def collect_expired_identities(registry: Registry, writer: Writer, *, interval_s: float = IDENTITY_GC_S,
                                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """kube's apiserverleasegc, on every replica: identity Leases renewed longer ago than their duration
    are deleted, each checked again just before (a precondition on what was read)."""
    task_status.started()
    while True:
        try:
            await collect_expired_identities_once(registry, writer)
        except errors.StatusError as err:  # storage away for a while: the next round tries again
            log.warning("cannot collect expired identity leases: %s", err.message)
        await trio.sleep(interval_s)


async def collect_expired_identities_once(registry: Registry, writer: Writer) -> list[str]:
    """One round of the collector; the names deleted."""
    page = await registry.list(LEASES, NAMESPACE, ListOptions(label_selector=f"{IDENTITY_LABEL}=kube-apiserver"))
    deleted = []
    for lease in listitems.objects(page.items):
        if not lease_expired(lease, time.time()):
            continue
        md = lease["metadata"]
        try:
            await writer.delete(LEASES, NAMESPACE, md["name"], DeleteOptions(precondition_rv=md["resourceVersion"]))
            deleted.append(md["name"])
        except (errors.NotFound, errors.Conflict):  # gone already, or renewed since it was read
            continue
        except errors.StatusError as err:
            log.warning("cannot delete the expired identity lease %s: %s", md["name"], err.message)
    return deleted


# ---------------------------------------------------------------------------- leader election

Service = tuple[str, Callable[..., Awaitable[Any]]]  # a name and its ``run(task_status=...)``


@dataclass(frozen=True, slots=True)
class _Observed:
    record: tuple[Any, ...]
    at: float  # trio.current_time() when the record was first seen so


class LeaderElection:
    """client-go's leader election over Lease ``kube-system/<name>``: the services run on the holder only.

    Acquire (or renew) every ``retry_s``; a holder that fails to renew for ``renew_deadline_s``
    stops its services (their cancel scope) and tries to acquire again. Another candidate takes the
    Lease once the holder's record has not changed for ``lease_duration_s`` of the candidate's own
    clock (as client-go, immune to clock skew). ``exclusive``: this process is the only one on its
    storage (sqlite, memory), so a Lease left by an earlier run is taken at once.
    ``release()`` stops the services and clears the holder so that another candidate takes over
    without waiting (client-go's ReleaseOnCancel).
    """

    def __init__(self, registry: Registry, writer: Writer, services: Sequence[Service], *,
                 name: str = "kube-controller-manager", identity: str = "", exclusive: bool = False,
                 lease_duration_s: int = 15, renew_deadline_s: float = 10.0, retry_s: float = 2.0) -> None:
        self.registry, self.writer, self.services, self.name = registry, writer, list(services), name
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.exclusive = exclusive
        self.lease_duration_s, self.renew_deadline_s, self.retry_s = lease_duration_s, renew_deadline_s, retry_s
        self.leading = False
        self._observed: _Observed | None = None
        self._releasing = trio.Event()
        self._released = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Candidate until cancelled or released (then idle until cancelled); ``started()`` once the first
        attempt is over (with the services started when it took the Lease)."""
        try:
            while not self._releasing.is_set():
                if not await self._try_acquire_or_renew():
                    task_status.started()
                    task_status = trio.TASK_STATUS_IGNORED
                    with trio.move_on_after(self.retry_s):
                        await self._releasing.wait()
                    continue
                # Worth saying among replicas; a server alone on its storage always holds it.
                log.log(logging.DEBUG if self.exclusive else logging.INFO,
                        "leader election: %s holds the %s lease; its controllers start", self.identity, self.name)
                await self._lead(task_status)
                task_status = trio.TASK_STATUS_IGNORED
            await self._release()
        finally:
            self.leading = False
            self._released.set()
        task_status.started()
        await trio.sleep_forever()  # released for good: the server is stopping

    async def release(self, timeout_s: float = 2.0) -> None:
        """Stop leading (the services first) and clear the holder; waits at most ``timeout_s``."""
        self._releasing.set()
        with trio.move_on_after(timeout_s):
            await self._released.wait()

    async def _lead(self, task_status: trio.TaskStatus[None]) -> None:
        self.leading = True
        try:
            async with trio.open_nursery() as nursery:
                for name, run in self.services:
                    await nursery.start(partial(supervise, name, run, restart=True))
                task_status.started()
                await self._keep_renewing()
                nursery.cancel_scope.cancel()  # lost, or releasing: the controllers stop here
        finally:
            self.leading = False

    async def _keep_renewing(self) -> None:
        """Renew every ``retry_s`` until a renewal fails for ``renew_deadline_s``, or ``release()``."""
        while True:
            with trio.move_on_after(self.retry_s):
                await self._releasing.wait()
                return
            renewed = False
            with trio.move_on_after(self.renew_deadline_s):
                while not (renewed := await self._try_acquire_or_renew()):
                    with trio.move_on_after(self.retry_s):
                        await self._releasing.wait()
                        return
            if not renewed:
                log.warning("leader election: %s lost the %s lease; its controllers stop", self.identity,
                            self.name)
                return

    async def _try_acquire_or_renew(self) -> bool:
        """client-go's tryAcquireOrRenew: True when this candidate holds the Lease afterwards."""
        now = time.time()
        try:
            lease: Obj | None = await self.registry.get(LEASES, NAMESPACE, self.name)
        except errors.NotFound:
            lease = None
        except errors.StatusError as err:
            log.warning("leader election: cannot read the %s lease: %s", self.name, err.message)
            return False
        spec: Obj = dict((lease or {}).get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if lease is not None:
            record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
            if self._observed is None or self._observed.record != record:
                self._observed = _Observed(record, trio.current_time())
            duration = spec.get("leaseDurationSeconds") or self.lease_duration_s
            valid = trio.current_time() < self._observed.at + duration
            if holder and holder != self.identity and valid and not self.exclusive:
                return False
        if holder != self.identity:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if lease is not None else 0)
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=self.lease_duration_s,
                     renewTime=micro_time(now))
        return await self._write(lease, spec)

    async def _write(self, lease: Obj | None, spec: Obj) -> bool:
        try:
            if lease is None:
                await self.writer.create(LEASES, NAMESPACE, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": NAMESPACE}, "spec": spec})
            else:
                await self.writer.update(LEASES, NAMESPACE, self.name, dict(lease, spec=spec))
        except (errors.Conflict, errors.AlreadyExists):  # another candidate wrote first
            return False
        except errors.StatusError as err:
            log.warning("leader election: cannot write the %s lease: %s", self.name, err.message)
            return False
        return True

    async def _release(self) -> None:
        """client-go's release: holder cleared, a one-second duration, when this candidate holds it."""
        try:
            lease = await self.registry.get(LEASES, NAMESPACE, self.name)
        except errors.StatusError:
            return
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        now = micro_time(time.time())
        await self._write(lease, dict(spec, holderIdentity="", leaseDurationSeconds=1, renewTime=now,
                                      acquireTime=now))

