"""``serve()``: builds storage, registry, watch caches, controllers and the HTTPS server in one nursery.

The pieces it runs live beside it: ``supervise`` (a background service under a name, restarted or
fatal), ``caches`` (the watch caches following the resource table), ``bootstrap`` (the objects a
server keeps: system namespaces, the ``kubernetes`` Service), ``https``, ``pki`` and ``replica`` (what
replicas on one datastore share and keep: bootstrap material, identity Leases, Endpoints, the leader Lease).
"""

from __future__ import annotations

import gc
import logging
import math
import os
import signal
import ssl
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio
from cryptography.hazmat.primitives.asymmetric import ec
from hypercorn.config import Config as HypercornConfig

from kapi import __version__, _fast, apis, errors
from kapi.admission.chain import AdmissionChain, AdmissionConfigError, build_chain, enabled_plugins, load_configuration
from kapi.admission.plugin import Objects, PluginDeps
from kapi.chain.access import ServerAccess
from kapi.api.app import App, Health
from kapi.api.discovery import Discovery
from kapi.api.handlers import Handlers
from kapi.api.openapi import OpenAPIDocuments
from kapi.encoding.codec import release_free_memory
from kapi.config import Config
from kapi.controllers.admissionpolicystatus import GROUP as VAP_GROUP, RESOURCE as VAP_RESOURCE, \
    AdmissionPolicyStatusController
from kapi.controllers.clusterroleaggregation import GROUP as RBAC_GROUP, ClusterRoleAggregationController
from kapi.controllers.csrsigning import GROUP as CSR_GROUP, RESOURCE as CSR_RESOURCE, CSRSigningController
from kapi.controllers.storageprotection import StorageProtectionController
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.apis.crdconversion import registry_service_resolver
from kapi.apis.customresources import custom_resources
from kapi.chain.webhookclient import WebhookClient
from kapi.controllers.crd import GROUP as CRD_GROUP, RESOURCE as CRD_RESOURCE, CRDController
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.resourcequota import ResourceQuotaController
from kapi.controllers.writes import CONTROLLER_MANAGER_USER, Writes
from kapi.server.bootstrap import bootstrap
from kapi.server.apfbootstrap import keep_apf_bootstrap
from kapi.server.apiservices import keep_api_services
from kapi.server.rbacbootstrap import reconcile_bootstrap_policy
from kapi.server.caches import WatchCaches
from kapi.server.flowcontrol import build_flowcontrol
from kapi.server.https import serve_https
from kapi.server.security import (build_audit, build_authenticator, build_authorizer, build_service_account_tokens,
                                  tls_client_cas)
from kapi.metrics import Metrics
from kapi.chain.authn.serviceaccount import ServiceAccountTokens, load_private_key
from kapi.controllers.serviceaccounttoken import TokensController
from kapi.server.pki import ensure_pki, ensure_service_account_key, write_kubeconfig
from kapi.server.replica.leases import LeaderElection
from kapi.server.replica.member import Replica, advertise_address
from kapi.server.replica.shared import join_cluster
from kapi.server.supervise import FatalError, supervise
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.object.meta import key_root, list_prefix
from kapi.object.schema import load_builtin
from kapi.storage.base import Storage
from kapi.storage.routed import backends_of

log = logging.getLogger("kapi")

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
    """The backend of --storage-backend (not running yet); a ``FatalError`` saying which flag is wrong."""
    etcd_only = {"--etcd-servers": config.etcd_servers, "--etcd-cafile": config.etcd_cafile,
                 "--etcd-certfile": config.etcd_certfile, "--etcd-keyfile": config.etcd_keyfile,
                 "--etcd-servers-overrides": config.etcd_servers_overrides}
    given = [flag for flag, value in etcd_only.items() if value]
    if given and config.storage_backend != "etcd3":  # silently unused, the data would go elsewhere
        raise FatalError(f"{', '.join(given)} need --storage-backend etcd3 (it is {config.storage_backend})")
    if config.storage_backend == "memory":
        from kapi.storage.memory import MemoryStorage

        return MemoryStorage()
    if config.storage_backend == "sqlite":
        from kapi.storage.sqlite import SqliteStorage

        return SqliteStorage(str(data_dir / "kapi.db"), group_commit=config.group_commit)
    if config.storage_backend == "etcd3":
        return _etcd_storage(config)
    raise FatalError(f"unknown storage backend {config.storage_backend!r}; use sqlite, etcd3 or memory")


def _etcd_storage(config: Config) -> Storage:
    """etcd3: the cluster of --etcd-servers; with --etcd-servers-overrides, a ``RoutedStorage`` that keeps
    each overridden resource's keys in its own cluster (one backend per distinct server list, every
    one with the --etcd-cafile/--etcd-certfile/--etcd-keyfile TLS, as kube's overrides replace only
    the servers)."""
    from kapi.storage.etcd3.store import EtcdStorage
    from kapi.storage.routed import RoutedStorage

    if not config.etcd_servers:
        raise FatalError("--etcd-servers must be specified with --storage-backend etcd3")
    backends: dict[tuple[str, ...], Storage] = {}

    def backend(servers: tuple[str, ...], flag: str) -> Storage:
        if servers not in backends:
            try:
                backends[servers] = EtcdStorage(list(servers), cafile=config.etcd_cafile or None,
                                                certfile=config.etcd_certfile or None,
                                                keyfile=config.etcd_keyfile or None)
            except OSError as exc:  # a TLS file that cannot be read
                raise FatalError(f"{flag}: {exc.filename}: {exc.strerror or exc}") from None
            except ValueError as exc:
                raise FatalError(f"{flag}: {exc}") from None
        return backends[servers]

    default = backend(config.etcd_servers, "--etcd-servers")
    root = key_root(config.etcd_prefix)
    routes: dict[str, Storage] = {}
    for group, resource, servers in config.etcd_servers_overrides:
        flag = f"--etcd-servers-overrides {group}/{resource}"
        prefix = _stored_under(root, group, resource, flag)
        store = backend(servers, flag)
        if routes.setdefault(prefix, store) is not store:
            raise FatalError(f"{flag}: its objects live under {prefix}, already given other servers")
    routes = {prefix: store for prefix, store in routes.items() if store is not default}
    return RoutedStorage(default, routes) if routes else default


def _stored_under(root: str, group: str, resource: str, flag: str) -> str:
    """The key prefix of a built-in resource's objects (events.k8s.io's events are core events')."""
    by_name = {(r.group, r.resource): r for r in apis.BUILTIN}
    res = by_name.get((group, resource))
    if res is None:
        raise FatalError(f"{flag}: no built-in resource {resource!r} in group {group or 'core'!r} "
                         "(the core group is empty: /events#...)")
    if res.storage_of[1]:
        res = by_name[res.storage_of]
    return list_prefix(root, res.prefix, "")


async def wait_for_storage(storage: Storage, timeout_s: float) -> None:
    """Start-up: until every backend answers a cheap read, retried; after ``timeout_s`` a ``FatalError`` with
    the last reason (etcd unreachable, a refused TLS handshake), never a loop of tracebacks."""
    last: Exception | None = None
    with trio.move_on_after(timeout_s):
        for backend in backends_of(storage):
            while True:
                try:
                    await backend.current_revision()
                    break
                except errors.StorageUnavailable as exc:
                    if last is None:
                        log.warning("waiting for storage (up to %gs): %s", timeout_s, exc)
                    last = exc
                await trio.sleep(STORAGE_RETRY_S)
        return
    raise FatalError(f"storage did not answer within {timeout_s:g}s (--storage-initialization-timeout): "
                     f"{last or 'no answer'}")


STORAGE_RETRY_S = 0.5  # start-up asks storage again this often
READYCHECK_CACHE_S = 1.0  # /readyz's etcd check reuses an answer this long


class StorageCheck:
    """/readyz's ``etcd`` check (kube's name, whatever the backend): every backend answers a cheap read
    (``current_revision``) within ``timeout_s`` (--etcd-readycheck-timeout). An answer is kept for
    ``READYCHECK_CACHE_S`` and concurrent checks share one read, so probes cannot flood storage."""

    def __init__(self, storage: Storage, timeout_s: float) -> None:
        self._backends = backends_of(storage)
        self._timeout_s = timeout_s
        self._ok = False
        self._at = -math.inf
        self._asking: trio.Event | None = None

    async def __call__(self) -> bool:
        if trio.current_time() - self._at < READYCHECK_CACHE_S:
            return self._ok
        if self._asking is not None:
            await self._asking.wait()
            return self._ok
        self._asking = asking = trio.Event()
        try:
            ok = False
            with trio.move_on_after(self._timeout_s):
                try:
                    for backend in self._backends:
                        await backend.current_revision()
                    ok = True
                except errors.StorageError:
                    pass
            self._ok, self._at = ok, trio.current_time()
        finally:
            self._asking = None
            asking.set()
        return self._ok


def compactors(storage: Storage, config: Config) -> list[Callable[[], Awaitable[None]]]:
    """One compactor per backend, every --etcd-compaction-interval: on etcd3, etcd's (kube's: CAS on
    compact_rev_key, so replicas on one cluster do not race), else ``compact_periodically``."""
    compact: Callable[[Any, float], Awaitable[None]] = compact_periodically
    if config.storage_backend == "etcd3":
        from kapi.storage.etcd3.compact import compactor as compact
    return [partial(compact, backend, config.etcd_compaction_interval_s) for backend in backends_of(storage)]


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


def build_app(config: Config, registry: Registry, token: str, health: Health,
              informers: Informers | None = None, service_accounts: ServiceAccountTokens | None = None) -> App:
    """The API over ``registry``: its table and its schema are the ones the handlers, discovery and OpenAPI read.

    ``informers`` are the server's shared in-process informers (RBAC and the Node authorizer read
    them); the caller runs them, then API Priority and Fairness's controller (``app.chain.flowcontrol``,
    built only with informers and --enable-priority-and-fairness; max-in-flight otherwise). ``token``
    is the admin token (system:masters). ``service_accounts`` issues and checks service-account tokens
    (None: with a key made for this app alone, gone with it).
    """
    table, schema = registry.table, registry.schema
    version = dict(KUBE_VERSION, gitVersion=f"v1.33.0+kapi.{__version__}")
    authorizer = build_authorizer(config, informers)
    if service_accounts is None:
        service_accounts = build_service_account_tokens(config, informers, ec.generate_private_key(ec.SECP256R1()))
    authenticator = build_authenticator(config, informers, token, service_accounts)
    handlers = Handlers(registry, table, schema, authorizer, authenticator,
                        min_request_timeout_s=config.min_request_timeout_s, max_body_bytes=config.max_body_bytes,
                        named_creates={("", "serviceaccounts", "token"): partial(service_accounts.request_token,
                                                                                 registry)})
    handlers.admission = build_admission(config, registry, informers, handlers.access)
    return App(
        handlers=handlers,
        discovery=Discovery(table),
        openapi=OpenAPIDocuments(schema, table),
        authn=authenticator,
        authz=authorizer,
        health=health,
        version_info=version,
        issuer_discovery=service_accounts,
        max_body_bytes=config.max_body_bytes,
        request_timeout_s=config.request_timeout_s,
        metrics=registry.metrics,
        max_requests_inflight=config.max_requests_inflight,
        max_mutating_requests_inflight=config.max_mutating_requests_inflight,
        audit=build_audit(config, schema, registry.metrics),
        flowcontrol=build_flowcontrol(config, registry, informers),
    )


def build_admission(config: Config, registry: Registry, informers: Informers | None,
                    access: ServerAccess) -> AdmissionChain:
    """The admission plugins --enable/--disable-admission-plugins ask for, in kube's order.

    They read through ``informers`` (the caller runs them, then ``chain.run``); without informers,
    from the registry. Webhooks are reached with the chain's webhook client.
    """
    try:
        names = enabled_plugins(config.enable_admission_plugins, config.disable_admission_plugins)
        configuration = load_configuration(config.admission_control_config_file)
        configuration["DefaultTolerationSeconds"] = {  # kube's flags, not the configuration file
            "defaultNotReadyTolerationSeconds": config.default_not_ready_toleration_seconds,
            "defaultUnreachableTolerationSeconds": config.default_unreachable_toleration_seconds}
        deps = PluginDeps(registry, Objects(registry, informers), access=access, client_factory=_conversion_client,
                          resolve_service=registry_service_resolver(registry), configuration=configuration)
        return build_chain(names, deps)
    except AdmissionConfigError as exc:
        raise FatalError(str(exc)) from None


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
    if _fast.EXTENSIONS_MISSING:  # an sdist installed where no C compiler exists (setup.py built none)
        log.warning("the compiled twins are not loaded: kapi runs on the pure-Python twins, slower (kapi was "
                    "installed without them: no C compiler? Reinstall it where one exists to build them; "
                    "KAPI_NO_EXTENSIONS=1 chooses the pure twins without this warning)")
    data_dir = Path(config.data_dir)
    storage = make_storage(config, data_dir)  # its flags checked before anything is written
    prepare_data_dir(data_dir)
    advertised = advertise_address(config.advertise_address, config.bind_address)
    if config.token or config.token_file:  # replicas share the CA and credentials through the datastore
        await join_cluster(make_storage(config, data_dir), config, data_dir,
                           partial(wait_for_storage, timeout_s=config.storage_initialization_timeout_s))
    try:
        pki = ensure_pki(data_dir, config.bind_address, (advertised, *config.tls_sans))
    except (OSError, ValueError) as exc:  # unreadable, or not PEM
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FatalError(f"certificates in {data_dir / 'pki'}: {detail} "
                         f"({getattr(exc, 'filename', None) or 'remove the pki directory to make new ones'})") from None
    try:
        sa_key = load_private_key(ensure_service_account_key(data_dir, config.service_account_signing_key_file))
    except (OSError, ValueError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FatalError(f"service-account signing key: {detail} ({getattr(exc, 'filename', None) or ''})") from None
    # The schema is loaded once per server; the registry and the API read this one.
    registry = Registry(storage, ResourceTable(apis.BUILTIN), schema=load_builtin(), root=key_root(config.etcd_prefix),
                        metrics=Metrics(), max_object_bytes=config.max_object_bytes)
    health = Health(ready_checks={"etcd": StorageCheck(storage, config.etcd_readycheck_timeout_s)})
    informers = Informers(registry)
    try:
        service_accounts = build_service_account_tokens(config, informers, sa_key)
    except (OSError, ValueError) as exc:  # a key file that cannot be read, or a value kube refuses
        raise FatalError(str(exc)) from None
    app = build_app(config, registry, pki.admin_token, health, informers, service_accounts)
    shutdown = trio.Event()

    hconf = HypercornConfig()
    host = f"[{config.bind_address}]" if ":" in config.bind_address else config.bind_address
    hconf.bind = [f"{host}:{config.secure_port}"]
    if bool(config.tls_cert_file) != bool(config.tls_private_key_file):
        raise FatalError("--tls-cert-file and --tls-private-key-file go together")
    hconf.certfile = config.tls_cert_file or str(pki.serving_cert)
    hconf.keyfile = config.tls_private_key_file or str(pki.serving_key)
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
        await wait_for_storage(storage, config.storage_initialization_timeout_s)
        for compactor in compactors(storage, config):
            services.start_soon(partial(supervise, "compactor", compactor,
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
        # The server's own writes (start-up objects, controllers) pass admission and audit as kube's
        # loopback and controller-manager clients' requests do.
        writes = Writes(registry, app.handlers.admission, app.chain.audit)
        loopback = writes.apiserver()
        namespaces = NamespaceController(registry, pki.ca_cert.read_text(), writes)
        aggregation = ClusterRoleAggregationController(registry, informers.informer(RBAC_GROUP, "clusterroles"),
                                                       writes)
        # Approved kubernetes.io/kube-apiserver-client CSRs signed by kapi's CA (kube's csrsigning controller).
        csr_signing = CSRSigningController(registry, informers.informer(CSR_GROUP, CSR_RESOURCE),
                                           pki.ca_cert.read_bytes(), (pki.ca_cert.parent / "ca.key").read_bytes(),
                                           writes=writes)
        # The finalizers StorageObjectInUseProtection puts on claims and volumes, taken off once unused.
        storage_protection = StorageProtectionController(registry, informers.informer("", "persistentvolumeclaims"),
                                                         informers.informer("", "persistentvolumes"),
                                                         informers.informer("", "pods"), writes)
        # The CRDs stored before start-up: their resources in the table before the first request.
        # Conversion webhooks are reached with the chain's webhook client (the apis layer is below it).
        crds = CRDController(registry, informers.informer(CRD_GROUP, CRD_RESOURCE), resources_of=partial(
            custom_resources, client_factory=_conversion_client, resolve_service=registry_service_resolver(registry)),
            writes=writes)
        # What authorization and authentication read in process (RBAC's objects, pods for the Node
        # authorizer, service accounts), and what admission reads (webhook and policy configurations):
        # synced before the start-up objects are written, since those writes pass admission.
        await services.start(partial(supervise, "informers", informers.run, restart=False))
        if app.handlers.admission is not None:  # the plugins' own work (policy compilation, quota usage, ...)
            await services.start(partial(supervise, "admission", app.handlers.admission.run, restart=True))
        if app.chain.audit is not None:  # its writers flush what is queued when the server stops
            await services.start(partial(supervise, "audit", app.chain.audit.run, restart=False))
        # kube's post-start hooks: system namespaces, priority classes, bootstrap RBAC policy, APF objects.
        await bootstrap(registry, namespaces, loopback)
        await reconcile_bootstrap_policy(registry, loopback)  # kube's rbac/bootstrap-roles start-up hook
        await services.start(partial(supervise, "APF configuration producer", partial(
            keep_apf_bootstrap, registry, writer=loopback), restart=True))  # priority-and-fairness-config-producer
        # The bootstrap objects reach the informers (RBAC's) before the first request is served.
        await _caught_up(registry, informers)
        if app.chain.flowcontrol is not None:
            # Its configuration digested before the first request is served; restarted, it keeps its
            # levels (and their queued requests) and digests again. FlowSchema status is the loopback
            # client's server-side apply, admitted and audited as system:apiserver's (kube's apf_controller).
            await services.start(partial(supervise, "API Priority and Fairness", partial(
                app.chain.flowcontrol.controller.run, status_writer=loopback), restart=True))
            # The object counts of the resources without a watch cache (their LIST estimates; kube's count poll)
            await services.start(partial(supervise, "object counts", registry.track_object_counts, restart=True))
        await services.start(partial(supervise, "customresourcedefinition controller", crds.run, restart=True))
        # kube-controller-manager's controllers write cluster state that replicas would fight over: they run
        # on the replica holding the kube-controller-manager Lease (alone on sqlite or memory, it is taken at
        # once). What builds a replica's own serving state (CRDs' resources, APIService registration, APF,
        # the informers authentication and admission read) runs on every replica, as in kube-apiserver.
        election = LeaderElection(registry, writes.controller("leader-election", CONTROLLER_MANAGER_USER), [
            ("namespace controller", namespaces.run),
            ("service-account token controller", partial(
                _tokens_controller, registry, informers, service_accounts, pki.ca_cert.read_text(), writes)),
            ("clusterrole aggregation controller", aggregation.run),
            ("csr signing controller", csr_signing.run),
            ("pvc/pv protection controller", storage_protection.run),
            ("validatingadmissionpolicy status controller", AdmissionPolicyStatusController(
                registry, informers.informer(VAP_GROUP, VAP_RESOURCE), writes).run),
            ("resourcequota controller", ResourceQuotaController(registry, informers, writes=writes).run),
            # A restarted collector rebuilds its owner index from a fresh watch of everything.
            ("garbage collector", partial(_collect_garbage, registry, writes)),
        ], exclusive=config.storage_backend != "etcd3")
        await services.start(partial(supervise, "leader election", election.run, restart=True))
        # An APIService per served group/version, CRDs' too (kube's autoregister and crdregistration).
        await services.start(partial(supervise, "apiservice registration", partial(keep_api_services, registry,
                                                                                     loopback), restart=True))

        async with trio.open_nursery() as http:
            binds = await http.start(partial(supervise, "HTTPS server", partial(
                _serve_https, app, hconf, tls_client_cas(config, str(pki.ca_cert)), shutdown.wait), restart=False))
            url = binds[0]
            app.server_address = url.removeprefix("https://")
            host, _, port = app.server_address.rpartition(":")
            # Its identity Lease, and its address among the live replicas' in the kubernetes Endpoints.
            replica = Replica(registry, loopback, advertised or host.strip("[]"), int(port), election)
            await services.start(partial(supervise, "replica identity and endpoints", replica.run, restart=True))
            kubeconfig = data_dir / "admin.kubeconfig"
            write_kubeconfig(kubeconfig, url, pki)
            health.ready = True
            log.info("kapi %s serving on %s (ready in %.2fs); kubeconfig: %s; CA: %s", __version__, url,
                     time.monotonic() - started_at, kubeconfig.resolve(), pki.ca_cert.resolve())
            task_status.started(Server(url, registry, app))
            http.start_soon(_shutdown_on_signal, config, app, health, shutdown)
        # hypercorn has returned: no request is in flight any more. Storage still runs: leave the cluster.
        await replica.leave()
        services.cancel_scope.cancel()


def _conversion_client(url: str, ssl_context: ssl.SSLContext, server_name: str, timeout_s: float) -> WebhookClient:
    """A CRD's conversion webhook client (``kapi.apis.crdconversion.ClientFactory``)."""
    return WebhookClient(url, ssl_context, {}, server_name, timeout_s)


async def _tokens_controller(registry: Registry, informers: Informers, tokens: ServiceAccountTokens, ca_pem: str,
                             writes: Writes, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    await TokensController(registry, informers, tokens, ca_pem, writes).run(task_status=task_status)


async def _collect_garbage(registry: Registry, writes: Writes, *,
                           task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """A fresh collector each time: after a crash its owner index is rebuilt from a new watch."""
    await GarbageCollector(registry, writes).run(task_status=task_status)


async def _caught_up(registry: Registry, informers: Informers, timeout_s: float = 5.0) -> None:
    """Wait (bounded) until every watch cache holds storage's current revision, then until the informers
    following them have taken what was delivered."""
    newest = 0
    with trio.move_on_after(timeout_s):
        for cacher in list(registry.cachers.values()):
            revision = await cacher.current_revision()  # its backend's (--etcd-servers-overrides: one of several)
            newest = max(newest, revision)
            try:
                await cacher.wait_for_rv(revision, timeout_s)
            except errors.StatusError:  # a cache that cannot catch up: its informer follows later
                continue
        # each informer waits for what its cache holds up to this (Informer.caught_up_with)
        await informers.wait_caught_up(max(newest, await registry.storage.current_revision()))


async def _serve_https(app: App, hconf: HypercornConfig, ca_file: str | tuple[str, ...],
                       shutdown_trigger: Callable[[], Awaitable[Any]], *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
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
