"""The ``kubernetes`` Service's Endpoints list the live replicas: kube's lease endpoint reconciler.

Each replica keeps a record of its advertised address under ``<root>/masterleases/<ip>:<port>``
(kube's ``/registry/masterleases/<ip>``, with the port since replicas may share a host) saying
until when it holds, renewed every ``interval_s``; every replica then writes the Endpoints and
EndpointSlice from the unexpired records. kube gives these keys an etcd TTL; kapi's storage has
none, so the expiry is in the value and the replicas delete the expired records they see (a
compare-and-swap on the revision read, so a record renewed meanwhile stays). They are storage
keys and not coordination Leases, as kube's, so they stay out of the API. A stopping replica
deletes its record and reconciles once more; a killed one ages out after ``ttl_s``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time

import trio

from kapi import errors
from kapi.controllers.writes import Writer
from kapi.registry.store import Registry
from kapi.server.bootstrap import publish_endpoint

__all__ = ["EndpointLeases", "publishable"]

log = logging.getLogger("kapi")

RECONCILE_S = 10.0  # kube's --endpoint-reconciler interval
TTL_S = 15.0  # kube's MasterEndpointReconcileTTL


def publishable(ip: str) -> bool:
    """Whether Endpoints may hold ``ip`` (kube's validateEndpointAddress refuses the others)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return not (addr.is_loopback or addr.is_link_local or addr.is_unspecified or addr.is_multicast)


class EndpointLeases:
    """This replica's record among the live replicas' (``ip``, ``port``), and the Endpoints made from them."""

    def __init__(self, registry: Registry, writer: Writer, ip: str, port: int, *,
                 interval_s: float = RECONCILE_S, ttl_s: float = TTL_S) -> None:
        self.registry, self.writer, self.ip, self.port = registry, writer, ip, port
        self.interval_s, self.ttl_s = interval_s, ttl_s
        self._prefix = f"{registry.root}/masterleases/"
        self._key = f"{self._prefix}{ip}:{port}"
        self._stopped = False

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Renew and reconcile every ``interval_s`` until ``remove()``; ``started()`` after the first round."""
        while not self._stopped:
            try:
                await self.reconcile()
            except errors.KapiError as err:  # storage unavailable for a while: the next round tries again
                log.warning("cannot reconcile the kubernetes Endpoints: %s", err)
            task_status.started()
            task_status = trio.TASK_STATUS_IGNORED
            await trio.sleep(self.interval_s)

    async def reconcile(self) -> None:
        """Renew this replica's record, then write the Endpoints of every unexpired one."""
        await self._renew()
        await self._publish()

    async def remove(self) -> None:
        """Take this replica out (at shutdown): its record deleted, the Endpoints written without it.

        The last replica leaves its address, as kube's reconciler refuses to erase every endpoint.
        """
        self._stopped = True
        try:
            await self.registry.storage.delete(self._key)
        except errors.KeyNotFound:
            pass
        await self._publish()

    async def live(self) -> list[tuple[str, int]]:
        """The addresses of the unexpired records; the expired ones are deleted on the way."""
        storage, now = self.registry.storage, time.time()
        out = []
        for kv in (await storage.list(self._prefix)).items:
            try:
                record = json.loads(kv.value)
                address, expires = (str(record["ip"]), int(record["port"])), float(record["expires"])
            except (ValueError, KeyError, TypeError):
                address, expires = ("", 0), 0.0  # not a record: removed as an expired one
            if expires > now:
                out.append(address)
                continue
            try:
                await storage.delete(kv.key, kv.revision)
            except (errors.KeyNotFound, errors.RevisionConflict):  # gone, or renewed since it was read
                pass
        return out

    async def _renew(self) -> None:
        value = json.dumps({"ip": self.ip, "port": self.port, "expires": time.time() + self.ttl_s}).encode()
        storage = self.registry.storage
        while True:
            try:
                current = await storage.get(self._key)
            except errors.KeyNotFound:
                try:
                    await storage.create(self._key, value)
                    return
                except errors.KeyExists:
                    continue
            try:
                await storage.update(self._key, value, current.revision)
                return
            except (errors.RevisionConflict, errors.KeyNotFound):  # collected as expired meanwhile
                continue

    async def _publish(self) -> None:
        peers = await self.live()
        if not peers:  # kube's reconciler: refuse to erase every endpoint of the kubernetes Service
            return
        host, port = (self.ip, self.port) if (self.ip, self.port) in peers else peers[0]
        await publish_endpoint(self.registry, host, port, self.writer, peers)
