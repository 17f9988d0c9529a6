"""``serve()``: builds storage, registry, controllers and the HTTPS server in one nursery."""

from __future__ import annotations

import gc
import logging
import os
import signal
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio
from hypercorn.config import Config as HypercornConfig

from kapi import __version__, apis, errors
from kapi.api.app import App, Health
from kapi.api.discovery import Discovery
from kapi.api.handlers import Handlers
from kapi.api.openapi import OpenAPIDocuments
from kapi.apis.core.namespaces import INITIAL_NAMESPACES
from kapi.apis.core.services import SERVICE_CIDR
from kapi.chain.authn import Authenticator, read_token_file
from kapi.chain.context import UserInfo
from kapi.chain.authz import Authorizer
from kapi.encoding.codec import release_free_memory
from kapi.config import Config
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.controllers.namespace import NamespaceController
from kapi.server.https import serve_https
from kapi.metrics import Metrics
from kapi.server.pki import ensure_pki, write_kubeconfig
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.object.meta import key_root
from kapi.object.schema import load_builtin
from kapi.storage.base import Storage

log = logging.getLogger("kapi")

RESTART_BACKOFF_S = (0.5, 30.0)  # a crashed background service restarts after this, doubling to the cap
HEALTHY_RUN_S = 60.0  # a service that ran this long before crashing starts again from the shortest backoff


class FatalError(errors.KapiError):
    """The server cannot start or go on; the message is the one line ``kapi serve`` prints before exiting."""


def one_line(exc: BaseException) -> str:
    """An exception as one line: its message (its type when it has none), groups unwrapped."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in _leaves(exc) if not isinstance(e, trio.Cancelled)]
        fatal = [e for e in leaves if isinstance(e, FatalError)]
        if fatal or leaves:
            return one_line((fatal or leaves)[0])
    text = " ".join(str(exc).split())
    if isinstance(exc, (FatalError, errors.StorageError)):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


async def supervise(name: str, run: Callable[..., Awaitable[Any]], *, restart: bool, reports_started: bool = True,
                    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    """Run one background service under a name; no exception of it ends the server unnoticed.

    A failure before the service is up is fatal (the server cannot start). Later, a service
    that may ``restart`` (a watch cache relists, as kube's reflector does; a controller starts
    over from a fresh watch) is logged with its traceback and started again with backoff; one
    that may not (storage, the HTTPS listener) ends the server with a ``FatalError`` naming it.
    ``reports_started``: ``run`` takes ``task_status`` (else it counts as up once called).
    """
    backoff = RESTART_BACKOFF_S[0]
    started = False
    while True:
        began = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                value = None
                if reports_started:
                    value = await nursery.start(run)
                else:
                    nursery.start_soon(run)
                if not started:
                    started = True
                    task_status.started(value)
            if not restart:
                return
            log.error("%s stopped; starting it again in %.1fs", name, backoff)
        except Exception as exc:
            if not started or not restart:
                fatal = exc.split(FatalError)[0] if isinstance(exc, BaseExceptionGroup) else exc
                if isinstance(fatal, BaseExceptionGroup):
                    fatal = _leaves(fatal)[0]
                if isinstance(fatal, FatalError):
                    raise fatal from exc  # it says what failed already
                raise FatalError(f"{name} failed: {one_line(exc)}") from exc
            log.error("%s crashed; starting it again in %.1fs: %s", name, backoff, one_line(exc), exc_info=exc)
        if trio.current_time() - began >= HEALTHY_RUN_S:
            backoff = RESTART_BACKOFF_S[0]
        await trio.sleep(backoff)
        backoff = min(backoff * 2, RESTART_BACKOFF_S[1])


def prepare_data_dir(data_dir: Path) -> None:
    """Create the data directory 0700, and tighten one left by an earlier run (files 0600, dirs 0700).

    A directory kapi did not create and that holds no kapi state keeps its mode: it may be
    shared with other things. ``FatalError`` when it cannot be made or used.
    """
    try:
        created = not data_dir.exists()
        if not created and not data_dir.is_dir():
            raise FatalError(f"data directory {data_dir} is not a directory")
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not os.access(data_dir, os.R_OK | os.W_OK | os.X_OK):
            raise FatalError(f"data directory {data_dir} is not readable and writable by this user")
        if created or (data_dir / "kapi.db").exists() or (data_dir / "pki").exists():
            os.chmod(data_dir, 0o700)
        for name in ("kapi.db", "kapi.db-wal", "kapi.db-shm", "admin.kubeconfig"):
            path = data_dir / name
            if path.exists() and path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
    except OSError as exc:
        raise FatalError(f"data directory {data_dir}: {exc.strerror or exc}") from None

KUBE_VERSION = {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "kapi",
                "gitTreeState": "clean", "buildDate": "2025-04-23T00:00:00Z", "goVersion": "go1.24.2",
                "compiler": "gc", "platform": "linux/amd64"}


def make_storage(config: Config, data_dir: Path) -> Storage:
    if config.storage_backend == "memory":
        from kapi.storage.memory import MemoryStorage

        return MemoryStorage()
    if config.storage_backend == "sqlite":
        from kapi.storage.sqlite import SqliteStorage

        return SqliteStorage(str(data_dir / "kapi.db"), group_commit=config.group_commit)
    raise ValueError(f"storage backend {config.storage_backend!r} is not available in this build; "
                     "use sqlite or memory")


async def _bootstrap(registry: Registry, namespaces: NamespaceController) -> None:
    """The system namespaces kube-apiserver keeps, with their contents."""
    ns_res = registry.table.get("", "v1", "namespaces")
    assert ns_res is not None
    for name in INITIAL_NAMESPACES:
        try:
            await registry.ensure_exists(ns_res, "", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}})
        except errors.StatusError as err:  # nothing stored may stop the start (issue 10)
            log.error("cannot ensure namespace %s: %s", name, err.message)
        await namespaces.ensure_namespace_contents(name)


async def _publish_endpoint(registry: Registry, host: str, port: int) -> None:
    """The ``kubernetes`` Service and its Endpoints pointing at this server (logged, not fatal, if it cannot be)."""
    try:
        await _publish_endpoint_objects(registry, host, port)
    except errors.StatusError as err:  # a corrupt stored Service or Endpoints: serve anyway, as kube's reconciler
        log.error("cannot publish the kubernetes Service and Endpoints: %s", err.message)


async def _publish_endpoint_objects(registry: Registry, host: str, port: int) -> None:
    svc_res, ep_res = registry.table.get("", "v1", "services"), registry.table.get("", "v1", "endpoints")
    assert svc_res is not None and ep_res is not None
    labels = {"component": "apiserver", "provider": "kubernetes"}
    await registry.ensure_exists(svc_res, "default", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "labels": labels},
        "spec": {"clusterIP": str(SERVICE_CIDR.network_address + 1), "type": "ClusterIP",
                 "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}})
    endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                 "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                 "subsets": [{"addresses": [{"ip": host}],
                              "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
    await registry.ensure_exists(ep_res, "default", endpoints)
    # The port may differ from the last run (--secure-port 0): keep the Endpoints true.
    current = await registry.get(ep_res, "default", "kubernetes")
    if current.get("subsets") != endpoints["subsets"]:
        current["subsets"] = endpoints["subsets"]
        await registry.update(ep_res, "default", "kubernetes", current, WriteOptions())


async def compact_periodically(storage: Storage, interval_s: float) -> None:
    """kube-apiserver's compactor: every interval, forget history up to the revision seen one round earlier.

    So between one and two intervals of history stay available to watches, Exact lists and
    continue tokens; older revisions answer 410.
    """
    if interval_s <= 0:
        return
    seen = 0
    while True:
        await trio.sleep(interval_s)
        if seen:
            await storage.compact(seen)
        seen = await storage.current_revision()


def cache_settings(config: Config, res: Resource) -> tuple[int, tuple[str, ...]] | None:
    """The watch cache size and indexed fields the flags give ``res``, or None when it has no cache."""
    if not res.cacheable or res.storage_of[1]:
        return None
    names = (res.resource, res.qualified)
    size = next((config.watch_cache_sizes[n] for n in names if n in config.watch_cache_sizes),
                config.default_watch_cache_size)
    if size <= 0:
        return None  # kube-apiserver: a size of 0 disables the cache of that resource
    indexes = next((config.watch_cache_indexes[n] for n in names if n in config.watch_cache_indexes), ())
    return size, tuple(indexes)


class WatchCaches:
    """One watch cache per cacheable resource of the table, each a supervised task of the server's nursery.

    ``follow`` starts the caches of the resources served at start-up, then follows the table: a
    resource added while serving gets its cache (the registry uses it once its first list is
    loaded, storage answers until then, as kube-apiserver delegates to etcd), and a removed
    one's cache is stopped, which ends its watches.
    """

    def __init__(self, config: Config, registry: Registry) -> None:
        self._config = config
        self._registry = registry
        self._running: dict[tuple[str, str], tuple[Resource, trio.CancelScope]] = {}
        self._changed = trio.Event()

    async def follow(self, nursery: trio.Nursery, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                     ) -> None:
        """Run the table's caches in ``nursery``; ``started()`` once those of start-up are ready."""
        unsubscribe = self._registry.table.subscribe(lambda _change, _res: self._changed.set())
        try:
            await self._reconcile(nursery)
            task_status.started()
            while True:
                await self._changed.wait()
                self._changed = trio.Event()  # changes made while reconciling wake the next round
                await self._reconcile(nursery)
        finally:
            unsubscribe()

    def _wanted(self) -> dict[tuple[str, str], tuple[Resource, int, tuple[str, ...]]]:
        wanted = {}
        for res in self._registry.table.resources:
            settings = cache_settings(self._config, res)
            if settings is not None:
                wanted.setdefault((res.group, res.resource), (res, *settings))  # one cache per storage prefix
        return wanted

    async def _reconcile(self, nursery: trio.Nursery) -> None:
        wanted = self._wanted()
        for key, (res, scope) in list(self._running.items()):
            if key not in wanted or wanted[key][0] is not res:
                self._stop(key)
        for key, (res, size, indexes) in wanted.items():
            if key not in self._running:
                await nursery.start(partial(self._run, res, size, indexes))

    def _stop(self, key: tuple[str, str]) -> None:
        _, scope = self._running.pop(key)
        self._registry.cachers.pop(key, None)  # LIST and WATCH stop using it now
        scope.cancel()  # its run ends, and with it every watcher it serves

    async def _run(self, res: Resource, size: int, indexes: tuple[str, ...], *,
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        key = (res.group, res.resource)
        cacher = self._registry.make_cacher(res, capacity=size, indexed_fields=indexes)
        # Not used before its first list is loaded: storage answers meanwhile (no 429 from a cold cache).
        self._registry.cachers.pop(key, None)
        with trio.CancelScope() as scope:
            self._running[key] = (res, scope)
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(partial(supervise, f"watch cache of {cacher.resource}", cacher.run,
                                                restart=True))
                    self._registry.cachers[key] = cacher
                    task_status.started()
            finally:
                if self._registry.cachers.get(key) is cacher:
                    del self._registry.cachers[key]
                if self._running.get(key, (None, None))[1] is scope:
                    del self._running[key]


def build_app(config: Config, registry: Registry, token: str, health: Health) -> App:
    """The API over ``registry``: its table and its schema are the ones the handlers, discovery and OpenAPI read."""
    table, schema = registry.table, registry.schema
    tokens: dict[str, UserInfo] = {}
    if config.token_auth_file:
        tokens.update(read_token_file(config.token_auth_file))
    if token:
        tokens[token] = UserInfo("kapi-admin", "kapi-admin", ("system:masters", "system:authenticated"))
    version = dict(KUBE_VERSION, gitVersion=f"v1.33.0+kapi.{__version__}")
    authorizer = Authorizer(tuple(config.authorization_mode))
    return App(
        handlers=Handlers(registry, table, schema, authorizer, min_request_timeout_s=config.min_request_timeout_s,
                          max_body_bytes=config.max_body_bytes),
        discovery=Discovery(table),
        openapi=OpenAPIDocuments(schema, table),
        authn=Authenticator(tokens, anonymous=config.anonymous_auth),
        authz=authorizer,
        health=health,
        version_info=version,
        max_body_bytes=config.max_body_bytes,
        request_timeout_s=config.request_timeout_s,
        metrics=registry.metrics,
        max_requests_inflight=config.max_requests_inflight,
        max_mutating_requests_inflight=config.max_mutating_requests_inflight,
    )


@dataclass(frozen=True, slots=True)
class Server:
    """What ``serve()`` reports to ``started()``: where it listens, and what it built.

    Everything a server holds is reached from here and from nothing module-level, so two
    servers in one process share no state; in-process callers (tests, an embedding program)
    may change ``registry.table`` while the server runs.
    """

    url: str
    registry: Registry  # with the server's ResourceTable (.table) and Schema (.schema)
    app: App


async def serve(config: Config, *, task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED) -> None:
    """Run kapi until SIGINT/SIGTERM (or cancellation); ``started(Server)`` once it is ready."""
    started_at = time.monotonic()
    data_dir = Path(config.data_dir)
    prepare_data_dir(data_dir)
    try:
        pki = ensure_pki(data_dir, config.bind_address)
    except (OSError, ValueError) as exc:  # unreadable, or not PEM
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FatalError(f"certificates in {data_dir / 'pki'}: {detail} "
                         f"({getattr(exc, 'filename', None) or 'remove the pki directory to make new ones'})") from None
    storage = make_storage(config, data_dir)
    # The schema is loaded once per server; the registry and the API read this one.
    registry = Registry(storage, ResourceTable(apis.BUILTIN), schema=load_builtin(), root=key_root(config.etcd_prefix),
                        metrics=Metrics())
    health = Health()
    app = build_app(config, registry, pki.admin_token, health)
    shutdown = trio.Event()

    hconf = HypercornConfig()
    host = f"[{config.bind_address}]" if ":" in config.bind_address else config.bind_address
    hconf.bind = [f"{host}:{config.secure_port}"]
    hconf.certfile = str(pki.serving_cert)
    hconf.keyfile = str(pki.serving_key)
    hconf.alpn_protocols = ["h2", "http/1.1"]
    hconf.keep_alive_max_requests = 1_000_000
    # The idle, handshake and request-header deadlines and the header size limit are kube-apiserver's
    # (https.ConnectionLimits); serve_https sets them.
    hconf.graceful_timeout = config.shutdown_timeout_s
    hconf.accesslog = None
    hconf.errorlog = logging.getLogger("hypercorn.error")
    hconf.h2_max_concurrent_streams = 1000

    async with trio.open_nursery() as services:
        # Storage has no second life: if it fails the server stops with the reason.
        await services.start(partial(supervise, f"storage ({config.storage_backend})", storage.run, restart=False))
        services.start_soon(partial(supervise, "compactor",
                                    partial(compact_periodically, storage, config.etcd_compaction_interval_s),
                                    restart=config.etcd_compaction_interval_s > 0, reports_started=False))
        if config.watch_cache:
            # The caches of start-up are ready before anything else reads; later ones follow the table.
            await services.start(partial(supervise, "watch caches", partial(WatchCaches(config, registry).follow,
                                                                            services), restart=True))
            # What the caches loaded stays: keep it out of every later collection, and give
            # back what decoding it left free.
            gc.collect()
            gc.freeze()
            release_free_memory()
        namespaces = NamespaceController(registry, pki.ca_cert.read_text())
        await _bootstrap(registry, namespaces)
        await services.start(partial(supervise, "namespace controller", namespaces.run, restart=True))
        # A restarted collector rebuilds its owner index from a fresh watch of everything.
        await services.start(partial(supervise, "garbage collector", partial(_collect_garbage, registry),
                                     restart=True))

        async with trio.open_nursery() as http:
            binds = await http.start(partial(supervise, "HTTPS server", partial(
                _serve_https, app, hconf, str(pki.ca_cert), shutdown.wait), restart=False))
            url = binds[0]
            app.server_address = url.removeprefix("https://")
            host, _, port = app.server_address.rpartition(":")
            await _publish_endpoint(registry, host.strip("[]"), int(port))
            kubeconfig = data_dir / "admin.kubeconfig"
            write_kubeconfig(kubeconfig, url, pki)
            health.ready = True
            log.info("kapi %s serving on %s (ready in %.2fs); kubeconfig: %s; CA: %s", __version__, url,
                     time.monotonic() - started_at, kubeconfig.resolve(), pki.ca_cert.resolve())
            task_status.started(Server(url, registry, app))
            http.start_soon(_shutdown_on_signal, config, app, health, shutdown)
        # hypercorn has returned: no request is in flight any more.
        services.cancel_scope.cancel()


async def _collect_garbage(registry: Registry, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                           ) -> None:
    """A fresh collector each time: after a crash its owner index is rebuilt from a new watch."""
    await GarbageCollector(registry).run(task_status=task_status)


async def _serve_https(app: App, hconf: HypercornConfig, ca_file: str, shutdown_trigger: Callable[[], Awaitable[Any]],
                       *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    """hypercorn until ``shutdown_trigger``; a port that cannot be bound is a ``FatalError`` saying so."""
    bound = False

    class _Status:
        def started(self, value: Any = None) -> None:
            nonlocal bound
            bound = True
            task_status.started(value)

    try:
        await serve_https(app, hconf, ca_file, app.peer_certificates, shutdown_trigger=shutdown_trigger,
                          task_status=_Status())  # type: ignore[arg-type]
    except OSError as exc:
        if bound:
            raise
        raise FatalError(f"cannot listen on {hconf.bind[0]}: {exc.strerror or exc}") from None


async def _shutdown_on_signal(config: Config, app: App, health: Health, shutdown: trio.Event) -> None:
    """On SIGINT/SIGTERM: fail readiness, then stop accepting, finish in-flight, close long requests."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            break
    health.shutting_down = True
    log.info("shutting down: readyz fails now; draining in %.1fs", config.shutdown_delay_s)
    await trio.sleep(config.shutdown_delay_s)
    app.closing.set()
    shutdown.set()
