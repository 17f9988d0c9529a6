"""A small controller on kapi.client: copy labelled ConfigMaps into every namespace.

A ConfigMap labelled ``kapi.example/replicate=true`` in the source namespace is
kept, with the same data, in every other namespace (labelled
``kapi.example/replica-of=<source namespace>``); when the source goes, its
copies go too. Run it against any cluster, kapi or not:

    python examples/replicate_configmaps.py --kubeconfig DIR/admin.kubeconfig --source default

The usual shape of a controller: shared informers fill indexed stores; their
handlers only put keys on a work queue; one worker reconciles a key at a time by
reading the stores (never the handlers' arguments) and writing the difference.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import trio

from kapi.client import (CONFIGMAPS, NAMESPACES, ApiError, Client, Meta, SharedInformerFactory, load_config)

REPLICATE = "kapi.example/replicate"
REPLICA_OF = "kapi.example/replica-of"
log = logging.getLogger("replicate-configmaps")

Obj = dict[str, Any]


def by_name(obj: Obj) -> list[str]:
    """Index copies by the name they share with their source."""
    return [Meta(obj).name] if REPLICA_OF in Meta(obj).labels else []


class Replicator:
    def __init__(self, client: Client, source: str) -> None:
        self.client = client
        self.source = source
        factory = SharedInformerFactory(client)
        self.factory = factory
        self.sources = factory.informer(CONFIGMAPS, namespace=source, label_selector=f"{REPLICATE}=true")
        self.copies = factory.informer(CONFIGMAPS, label_selector=REPLICA_OF, indexers={"name": by_name})
        self.namespaces = factory.informer(NAMESPACES)
        self._queue_send, self._queue = trio.open_memory_channel[str](1000)
        self._queued: set[str] = set()

        # Handlers only say which source name to look at again.
        self.sources.add_handler(self._enqueue_obj, lambda old, new: self._enqueue_obj(new), self._enqueue_obj)
        self.copies.add_handler(self._enqueue_obj, lambda old, new: self._enqueue_obj(new), self._enqueue_obj)
        self.namespaces.add_handler(on_add=lambda ns: self._enqueue_all())

    def _enqueue(self, name: str) -> None:
        if name not in self._queued:  # a name waiting already will see the latest state
            self._queued.add(name)
            self._queue_send.send_nowait(name)

    def _enqueue_obj(self, obj: Obj) -> None:
        self._enqueue(Meta(obj).name)

    def _enqueue_all(self) -> None:
        for obj in self.sources.store.list():
            self._enqueue_obj(obj)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.factory.start(nursery)
            await self.factory.wait_for_sync()
            log.info("synced: %d sources, %d copies, %d namespaces", len(self.sources.store),
                     len(self.copies.store), len(self.namespaces.store))
            task_status.started()
            async for name in self._queue:
                self._queued.discard(name)
                try:
                    await self.reconcile(name)
                except ApiError as exc:
                    log.warning("%s: %s; will retry", name, exc)
                    nursery.start_soon(self._retry_later, name)

    async def _retry_later(self, name: str) -> None:
        await trio.sleep(1.0)
        self._enqueue(name)

    async def reconcile(self, name: str) -> None:
        """Make the copies of ``name`` match its source (or go, with it)."""
        source = self.sources.store.get_by(self.source, name)
        copies = {Meta(c).namespace: c for c in self.copies.store.by_index("name", name)
                  if Meta(c).labels.get(REPLICA_OF) == self.source}
        if source is None:
            for ns in copies:
                await self._delete(ns, name)
            return
        for ns_obj in self.namespaces.store.list():
            ns = Meta(ns_obj).name
            if ns == self.source or Meta(ns_obj).deletion_timestamp:
                continue
            have = copies.get(ns)
            if have is None:
                await self._create(ns, source)
            elif have.get("data") != source.get("data"):
                await self.client.patch(CONFIGMAPS, name, {"data": source.get("data") or {}}, ns)

    async def _create(self, ns: str, source: Obj) -> None:
        copy = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": Meta(source).name, "namespace": ns, "labels": {REPLICA_OF: self.source}},
                "data": source.get("data") or {}}
        try:
            await self.client.create(CONFIGMAPS, copy)
        except ApiError as exc:
            if exc.code != 409:  # someone made it already: the copies informer will tell
                raise

    async def _delete(self, ns: str, name: str) -> None:
        try:
            await self.client.delete(CONFIGMAPS, name, ns)
        except ApiError as exc:
            if exc.code != 404:
                raise


async def main(kubeconfig: str | None, source: str) -> None:
    async with Client(load_config(kubeconfig)) as client:
        await Replicator(client, source).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--source", default="default", help="the namespace whose labelled ConfigMaps are copied")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    trio.run(main, args.kubeconfig, args.source)
