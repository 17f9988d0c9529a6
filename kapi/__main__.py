"""The ``kapi`` command line: flags -> Config -> trio.run(serve)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import NoReturn, Sequence

import trio

from kapi import __version__
from kapi.config import Config


def _duration_s(text: str) -> float:
    """A Go-style duration (``5m``, ``90s``, ``1h30m``, ``250ms``) or plain seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "ns": 1e-9}
    total, num, i = 0.0, "", 0
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        unit = text[i:i + 2] if text[i:i + 2] in units else c
        if unit not in units or not num:
            raise argparse.ArgumentTypeError(f"invalid duration {text!r}")
        total += float(num) * units[unit]
        num = ""
        i += len(unit)
    if num:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (missing unit)")
    return total


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}")


# The feature gates kapi reads (kube's names), and their defaults are Config's.
FEATURE_GATES = ("SizeBasedListCostEstimate",)


def _feature_gates(text: str) -> dict[str, bool]:
    """kube's --feature-gates: ``A=true,B=false``; a gate kapi does not know is refused, as kube refuses it."""
    out: dict[str, bool] = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        out[name] = _bool(value)
    return out


def _sizes(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, _, size = item.partition("#")
        try:
            out[name.strip()] = int(size)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid watch cache size {item!r} (want resource#size)") from None
    return out


def _list(text: str) -> tuple[str, ...]:
    """A comma-separated list (kube's StringSlice flags)."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


OVERRIDE_FORMAT = "must be of format: group/resource#servers, where servers are URLs, semicolon separated"


def _overrides(text: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """kube's --etcd-servers-overrides: comma-separated ``group/resource#servers``, the servers separated by
    ``;``, the core group empty (``/events#http://10.0.0.1:2379``)."""
    out = []
    for item in _list(text):
        target, sep, servers = item.partition("#")
        group, slash, resource = target.partition("/")
        urls = tuple(u.strip() for u in servers.split(";") if u.strip())
        if not sep or "#" in servers or not slash or "/" in resource or not resource.strip() or not urls:
            raise argparse.ArgumentTypeError(f"invalid override {item!r}: {OVERRIDE_FORMAT}")
        out.append((group.strip(), resource.strip(), urls))
    return tuple(out)


def _index(item: str) -> tuple[str, tuple[str, ...]]:
    resource, sep, fields = item.partition("=")
    if not sep or not resource.strip():
        raise argparse.ArgumentTypeError(f"invalid watch cache index {item!r} (want resource=field[,field])")
    return resource.strip(), tuple(f.strip() for f in fields.split(",") if f.strip())


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (no usage block), exit status 2 as argparse's."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r} (want 0-65535)")
    return port


def _count(text: str) -> int:
    """A non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid value {text!r} (want 0 or more)")
    return value


def _positive_duration_s(text: str) -> float:
    value = _duration_s(text)
    if value < 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (want 0 or more)")
    return value


def version_text() -> str:
    """``kapi version``: kapi's version, the Kubernetes version it serves, whether the compiled twins are loaded."""
    from kapi import _fast
    from kapi.server.serve import KUBE_VERSION

    return f"kapi {__version__}\nKubernetes {KUBE_VERSION['gitVersion']}\ncompiled twins: {_fast.twins()}\n"


class _Version(argparse.Action):
    """``--version``: ``kapi version``'s text, made when asked (argparse's own takes it when the parser is built)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kapi", description="A Kubernetes API server in Python.")
    parser.add_argument("--version", action=_Version, help="print what `kapi version` prints and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the API server", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    d = Config()
    s.add_argument("--data-dir", default=d.data_dir, help="state, certificates and admin.kubeconfig live here")
    s.add_argument("--bind-address", default=d.bind_address, help="address to listen on")
    s.add_argument("--secure-port", type=_port, default=d.secure_port, help="HTTPS port; 0 picks a free one")
    s.add_argument("--storage-backend", choices=("sqlite", "etcd3", "memory"), default=d.storage_backend,
                   help="sqlite (embedded file under --data-dir), etcd3 (the etcd cluster of --etcd-servers) or "
                        "memory (nothing survives a restart)")
    s.add_argument("--etcd-servers", type=_list, default=(), metavar="URL[,URL...]",
                   help="etcd3: the etcd cluster's client URLs (http://host:port or https://), comma-separated; "
                        "required with --storage-backend etcd3")
    s.add_argument("--etcd-prefix", default=d.etcd_prefix,
                   help="the root of every storage key (/registry/<resource>/[<namespace>/]<name>)")
    s.add_argument("--etcd-cafile", default="", help="etcd3: the CA file of etcd's serving certificates (https://)")
    s.add_argument("--etcd-certfile", default="",
                   help="etcd3: the client certificate kapi presents to etcd (with --etcd-keyfile)")
    s.add_argument("--etcd-keyfile", default="", help="etcd3: the private key of --etcd-certfile")
    s.add_argument("--etcd-servers-overrides", type=_overrides, default=(), metavar="GROUP/RESOURCE#URL[;URL],...",
                   help="etcd3: resources stored in another etcd cluster, comma-separated group/resource#servers "
                        "with the servers separated by ';' and the core group empty (/events#http://10.0.0.2:2379)")
    s.add_argument("--etcd-compaction-interval", type=_positive_duration_s, default=d.etcd_compaction_interval_s,
                   help="compact storage history this often, keeping one interval of it (0: never)")
    s.add_argument("--etcd-readycheck-timeout", type=_positive_duration_s, default=d.etcd_readycheck_timeout_s,
                   help="how long /readyz's etcd check waits for storage to answer")
    s.add_argument("--storage-initialization-timeout", type=_positive_duration_s,
                   default=d.storage_initialization_timeout_s,
                   help="how long start-up waits for storage to answer before kapi exits saying why")
    s.add_argument("--group-commit", type=_bool, default=d.group_commit,
                   help="sqlite: share one transaction and fsync among the writes waiting for it")
    s.add_argument("--default-watch-cache-size", type=_count, default=d.default_watch_cache_size,
                   help="initial watch cache event window per resource")
    s.add_argument("--watch-cache-sizes", type=_sizes, default={},
                   help="per-resource watch cache sizes, resource#size,...")
    s.add_argument("--watch-cache", type=_bool, default=d.watch_cache,
                   help="serve lists and watches from an in-memory cache per resource")
    s.add_argument("--watch-cache-index", type=_index, action="append", default=None,
                   metavar="RESOURCE=FIELD[,FIELD]",
                   help="fields indexed in a resource's watch cache (repeatable; default pods=spec.nodeName)")
    s.add_argument("--max-requests-inflight", type=_count, default=d.max_requests_inflight,
                   help="APF on: with the next, the server's concurrency limit in seats; off: reads in flight "
                        "(0: no limit)")
    s.add_argument("--max-mutating-requests-inflight", type=_count, default=d.max_mutating_requests_inflight,
                   help="APF on: the rest of the server's concurrency limit; off: writes in flight (0: no limit)")
    s.add_argument("--enable-priority-and-fairness", type=_bool, default=d.enable_priority_and_fairness,
                   help="API Priority and Fairness (true); false: max-in-flight's two limits instead")
    s.add_argument("--feature-gates", type=_feature_gates, default={},
                   help="comma-separated Gate=true|false; known: " + ", ".join(sorted(FEATURE_GATES)))
    # Authentication (kube-apiserver's flags).
    s.add_argument("--token-auth-file", default="", help='CSV of token,user,uid,"group1,group2"')
    s.add_argument("--anonymous-auth", type=_bool, default=d.anonymous_auth,
                   help="allow requests without credentials as system:anonymous")
    s.add_argument("--service-account-signing-key-file", default="",
                   help="PEM private key that signs service-account tokens (default <data-dir>/pki/sa.key, made once)")
    s.add_argument("--service-account-key-file", action="append", default=[],
                   help="PEM public (or private) key that verifies service-account tokens (repeatable)")
    s.add_argument("--service-account-issuer", action="append", default=[],
                   help="the tokens' iss; the first signs, all are accepted (repeatable; default "
                        "https://kubernetes.default.svc.cluster.local)")
    s.add_argument("--api-audiences", type=_list, default=(),
                   help="comma-separated audiences a token must have for this server (default: the first issuer)")
    s.add_argument("--service-account-max-token-expiration", type=_positive_duration_s, default=0.0,
                   help="cap on the lifetime of a requested token (0: none)")
    s.add_argument("--service-account-extend-token-expiration", type=_bool,
                   default=d.service_account_extend_token_expiration,
                   help="tokens of projected volumes last a year, warning after their requested lifetime")
    s.add_argument("--authentication-config", default="",
                   help="AuthenticationConfiguration file: JWT authenticators (issuers, audiences, claim mappings)")
    s.add_argument("--client-ca-file", default="",
                   help="more client CAs (PEM bundle): certificates they signed authenticate (CN the user, O the "
                        "groups), beside those of kapi's own CA")
    s.add_argument("--requestheader-client-ca-file", default="",
                   help="CA of the authenticating proxy's client certificates; enables request-header authentication")
    s.add_argument("--requestheader-username-headers", type=_list, default=(),
                   help="request headers carrying the user name, first set wins (e.g. X-Remote-User)")
    s.add_argument("--requestheader-uid-headers", type=_list, default=(), help="request headers carrying the uid")
    s.add_argument("--requestheader-group-headers", type=_list, default=(),
                   help="request headers carrying the groups (e.g. X-Remote-Group)")
    s.add_argument("--requestheader-extra-headers-prefix", type=_list, default=(),
                   help="request-header prefixes of extra user fields (e.g. X-Remote-Extra-)")
    s.add_argument("--requestheader-allowed-names", type=_list, default=(),
                   help="client certificate common names the proxy may use (empty: any the CA signed)")
    s.add_argument("--authentication-token-webhook-config-file", default="",
                   help="kubeconfig of a TokenReview webhook that authenticates bearer tokens")
    s.add_argument("--authentication-token-webhook-cache-ttl", type=_positive_duration_s,
                   default=d.authentication_token_webhook_cache_ttl_s, help="how long webhook answers are cached")
    s.add_argument("--authentication-token-webhook-version", choices=("v1", "v1beta1"),
                   default=d.authentication_token_webhook_version, help="TokenReview version sent to the webhook")
    # Authorization.
    s.add_argument("--authorization-mode", default=",".join(d.authorization_mode),
                   help="comma-separated union, first decision wins: AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook "
                        "(AlwaysAllow lets anyone, anonymous included, do anything: a throwaway dev server only)")
    s.add_argument("--authorization-webhook-config-file", default="",
                   help="kubeconfig of a SubjectAccessReview webhook (the Webhook mode)")
    s.add_argument("--authorization-webhook-cache-authorized-ttl", type=_positive_duration_s,
                   default=d.authorization_webhook_cache_authorized_ttl_s, help="how long an allow is cached")
    s.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=_positive_duration_s,
                   default=d.authorization_webhook_cache_unauthorized_ttl_s, help="how long a deny is cached")
    s.add_argument("--authorization-webhook-version", choices=("v1", "v1beta1"),
                   default=d.authorization_webhook_version, help="SubjectAccessReview version sent to the webhook")
    # Admission.
    s.add_argument("--enable-admission-plugins", type=_list, default=(),
                   help="admission plugins to run beside kube 1.33's default set (comma-separated; the order "
                        "they run in is kube's, whatever the order given)")
    s.add_argument("--disable-admission-plugins", type=_list, default=(),
                   help="admission plugins of the default set not to run (comma-separated)")
    s.add_argument("--admission-control-config-file", default="",
                   help="apiserver.config.k8s.io/v1 AdmissionConfiguration: plugins' configuration (PodSecurity's "
                        "defaults and exemptions, ...)")
    s.add_argument("--default-not-ready-toleration-seconds", type=int, default=d.default_not_ready_toleration_seconds,
                   help="the tolerationSeconds of the node.kubernetes.io/not-ready:NoExecute toleration added to "
                        "every pod without one (DefaultTolerationSeconds)")
    s.add_argument("--default-unreachable-toleration-seconds", type=int,
                   default=d.default_unreachable_toleration_seconds,
                   help="the tolerationSeconds of the node.kubernetes.io/unreachable:NoExecute toleration added to "
                        "every pod without one (DefaultTolerationSeconds)")
    # Audit.
    s.add_argument("--audit-policy-file", default="", help="audit.k8s.io/v1 Policy; no policy: no audit")
    s.add_argument("--audit-log-path", default="", help="audit log file ('-': stdout)")
    s.add_argument("--audit-log-maxage", type=_count, default=0, help="days to keep rotated audit logs (0: no limit)")
    s.add_argument("--audit-log-maxbackup", type=_count, default=0, help="rotated audit logs kept (0: no limit)")
    s.add_argument("--audit-log-maxsize", type=_count, default=0,
                   help="megabytes an audit log reaches before it is rotated (0: 100, as kube's log writer)")
    s.add_argument("--audit-log-format", choices=("json", "legacy"), default=d.audit_log_format,
                   help="json (audit.k8s.io/v1 Events, one a line) or legacy (kube's one-line text)")
    s.add_argument("--audit-webhook-config-file", default="", help="kubeconfig of an audit webhook")
    s.add_argument("--audit-webhook-mode", choices=("batch", "blocking", "blocking-strict"),
                   default=d.audit_webhook_mode,
                   help="batch (sent in the background), blocking (while the request waits), blocking-strict "
                        "(also 500 when RequestReceived cannot be sent)")
    s.add_argument("--audit-webhook-batch-max-size", type=_count, default=d.audit_webhook_batch_max_size,
                   help="events per batch at most")
    s.add_argument("--audit-webhook-batch-max-wait", type=_positive_duration_s, default=d.audit_webhook_batch_max_wait_s,
                   help="a batch not full is sent after this")
    s.add_argument("--request-timeout", type=_positive_duration_s, default=d.request_timeout_s,
                   help="default timeout of non-long-running requests")
    s.add_argument("--min-request-timeout", type=_positive_duration_s, default=d.min_request_timeout_s,
                   help="watches without timeoutSeconds last a random time in [this, 2x this)")
    s.add_argument("--shutdown-delay-duration", type=_positive_duration_s, default=d.shutdown_delay_s,
                   help="after SIGTERM, time during which /readyz fails before the server stops accepting")
    s.add_argument("--shutdown-timeout", type=_positive_duration_s, default=d.shutdown_timeout_s,
                   help="how long in-flight requests may take to finish on shutdown")
    s.add_argument("--max-body-bytes", type=_count, default=d.max_body_bytes, help="larger bodies get 413")
    s.add_argument("--max-object-bytes", type=_count, default=d.max_object_bytes,
                   help="the largest stored object (etcd's default --max-request-bytes); a larger write is 413")
    # Replicas on one datastore (k3s's --token, --token-file, --tls-san; kube's --advertise-address).
    s.add_argument("--token", default="",
                   help="join token: the first server stores the CA, admin credentials and service-account key in "
                        "the datastore encrypted with it; servers started later with the same token use them")
    s.add_argument("--token-file", default="", help="a file holding the join token (instead of --token)")
    s.add_argument("--advertise-address", default="",
                   help="the IP this server publishes in the kubernetes Service's Endpoints and its identity "
                        "Lease (default: --bind-address; for 0.0.0.0 or ::, the default-route interface's address)")
    s.add_argument("--tls-san", type=_list, action="append", default=[], metavar="NAME[,NAME]",
                   help="more DNS names or IPs for this server's serving certificate, such as a load balancer's "
                        "(repeatable, comma-separated)")
    s.add_argument("--tls-cert-file", default="",
                   help="PEM serving certificate (chain) of one's own, instead of the one made under <data-dir>/pki "
                        "from kapi's CA; with --tls-private-key-file")
    s.add_argument("--tls-private-key-file", default="", help="the private key of --tls-cert-file")
    s.add_argument("-v", "--log-level", default=d.log_level, choices=("debug", "info", "warning", "error"),
                   help="the least severe log level written (debug also shows tracebacks)")
    k = sub.add_parser(
        "kubeconfig", help="mint a client certificate for a user from kapi's CA and write a kubeconfig",
        description="A kubeconfig for a user other than admin: a client certificate signed by the CA under "
                    "--data-dir (CN = the user, O = each group, as kube's x509 authentication reads them). "
                    "What the user may do is up to RBAC: bind a Role or ClusterRole to the user or a group.")
    k.add_argument("--user", required=True, metavar="NAME", help="the user name (the certificate's CN)")
    k.add_argument("--group", action="append", default=[], metavar="G",
                   help="a group of the user (an O of the certificate; repeatable)")
    k.add_argument("--out", default="", metavar="FILE", help="file to write (0600); default: standard output")
    k.add_argument("--data-dir", default=d.data_dir, metavar="DIR",
                   help=f"the server's data directory, its CA under pki/ (default {d.data_dir})")
    k.add_argument("--server", default="", metavar="URL",
                   help="the server's URL (default: the one in <data-dir>/admin.kubeconfig, else "
                        f"https://{d.bind_address}:{d.secure_port})")
    k.add_argument("--namespace", default="default", help="the context's namespace (default default)")
    k.add_argument("--validity-period", type=_positive_duration_s, default="8760h", metavar="DURATION",
                   help="how long the certificate is valid, at most as long as the CA (default 8760h)")
    sub.add_parser("version", help="print kapi's version, the Kubernetes version it serves and whether the "
                                   "compiled twins are loaded",
                   description="kapi's version, the Kubernetes version it serves (the one /version reports) and "
                               "whether the compiled (Cython) twins are loaded or kapi runs on the pure-Python ones.")
    return parser


def config_from_args(args: argparse.Namespace) -> Config:
    return Config(
        data_dir=args.data_dir,
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        storage_backend=args.storage_backend,
        group_commit=args.group_commit,
        etcd_prefix=args.etcd_prefix,
        etcd_compaction_interval_s=args.etcd_compaction_interval,
        etcd_servers=args.etcd_servers,
        etcd_cafile=args.etcd_cafile,
        etcd_certfile=args.etcd_certfile,
        etcd_keyfile=args.etcd_keyfile,
        etcd_servers_overrides=args.etcd_servers_overrides,
        etcd_readycheck_timeout_s=args.etcd_readycheck_timeout,
        storage_initialization_timeout_s=args.storage_initialization_timeout,
        default_watch_cache_size=args.default_watch_cache_size,
        watch_cache_sizes=args.watch_cache_sizes,
        watch_cache=args.watch_cache,
        watch_cache_indexes=dict(args.watch_cache_index) if args.watch_cache_index is not None
        else Config().watch_cache_indexes,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        enable_priority_and_fairness=args.enable_priority_and_fairness,
        size_based_list_cost_estimate=args.feature_gates.get("SizeBasedListCostEstimate",
                                                             Config().size_based_list_cost_estimate),
        authorization_mode=tuple(m.strip() for m in args.authorization_mode.split(",") if m.strip()),
        token_auth_file=args.token_auth_file,
        anonymous_auth=args.anonymous_auth,
        service_account_signing_key_file=args.service_account_signing_key_file,
        service_account_key_files=tuple(args.service_account_key_file),
        service_account_issuers=tuple(args.service_account_issuer),
        api_audiences=args.api_audiences,
        service_account_max_token_expiration_s=args.service_account_max_token_expiration,
        service_account_extend_token_expiration=args.service_account_extend_token_expiration,
        authentication_config=args.authentication_config,
        client_ca_file=args.client_ca_file,
        requestheader_client_ca_file=args.requestheader_client_ca_file,
        requestheader_username_headers=args.requestheader_username_headers,
        requestheader_uid_headers=args.requestheader_uid_headers,
        requestheader_group_headers=args.requestheader_group_headers,
        requestheader_extra_headers_prefix=args.requestheader_extra_headers_prefix,
        requestheader_allowed_names=args.requestheader_allowed_names,
        authentication_token_webhook_config_file=args.authentication_token_webhook_config_file,
        authentication_token_webhook_cache_ttl_s=args.authentication_token_webhook_cache_ttl,
        authentication_token_webhook_version=args.authentication_token_webhook_version,
        authorization_webhook_config_file=args.authorization_webhook_config_file,
        authorization_webhook_cache_authorized_ttl_s=args.authorization_webhook_cache_authorized_ttl,
        authorization_webhook_cache_unauthorized_ttl_s=args.authorization_webhook_cache_unauthorized_ttl,
        authorization_webhook_version=args.authorization_webhook_version,
        enable_admission_plugins=tuple(args.enable_admission_plugins),
        disable_admission_plugins=tuple(args.disable_admission_plugins),
        admission_control_config_file=args.admission_control_config_file,
        default_not_ready_toleration_seconds=args.default_not_ready_toleration_seconds,
        default_unreachable_toleration_seconds=args.default_unreachable_toleration_seconds,
        audit_policy_file=args.audit_policy_file,
        audit_log_path=args.audit_log_path,
        audit_log_maxage_days=args.audit_log_maxage,
        audit_log_maxbackup=args.audit_log_maxbackup,
        audit_log_maxsize_mb=args.audit_log_maxsize,
        audit_log_format=args.audit_log_format,
        audit_webhook_config_file=args.audit_webhook_config_file,
        audit_webhook_mode=args.audit_webhook_mode,
        audit_webhook_batch_max_size=args.audit_webhook_batch_max_size,
        audit_webhook_batch_max_wait_s=args.audit_webhook_batch_max_wait,
        request_timeout_s=args.request_timeout,
        min_request_timeout_s=args.min_request_timeout,
        shutdown_delay_s=args.shutdown_delay_duration,
        shutdown_timeout_s=args.shutdown_timeout,
        max_body_bytes=args.max_body_bytes,
        max_object_bytes=args.max_object_bytes,
        log_level=args.log_level,
        token=args.token,
        token_file=args.token_file,
        advertise_address=args.advertise_address,
        tls_sans=tuple(name for names in args.tls_san for name in names),
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
    )


def _server_url(data_dir: Path) -> str:
    """The URL a running (or the last) server wrote into its admin kubeconfig, else the default address."""
    import yaml

    try:
        doc = yaml.safe_load((data_dir / "admin.kubeconfig").read_text())
        return str(doc["clusters"][0]["cluster"]["server"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        d = Config()
        return f"https://{d.bind_address}:{d.secure_port}"


def kubeconfig_command(args: argparse.Namespace) -> int:
    """``kapi kubeconfig``: mint a user's client certificate and write its kubeconfig (stdout or --out)."""
    from kapi.server.pki import mint_client_certificate, user_kubeconfig, write_private_file

    data_dir = Path(args.data_dir)
    try:
        credential = mint_client_certificate(data_dir, args.user, tuple(args.group), args.validity_period)
    except FileNotFoundError as exc:
        print(f"kapi kubeconfig: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"kapi kubeconfig: {exc}", file=sys.stderr)
        return 1
    doc = user_kubeconfig(args.server or _server_url(data_dir), credential, args.namespace)
    if "system:masters" in credential.groups:
        print("kapi kubeconfig: warning: system:masters is allowed everything, whatever RBAC says",
              file=sys.stderr)
    if not args.out:
        sys.stdout.buffer.write(doc)
        sys.stdout.flush()
        return 0
    try:
        write_private_file(Path(args.out), doc)
    except OSError as exc:
        print(f"kapi kubeconfig: {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    groups = ", ".join(credential.groups) or "none"
    print(f"kubeconfig of user {credential.user!r} (groups: {groups}) written to {args.out}; "
          f"its certificate is valid until {credential.not_after:%Y-%m-%d %H:%M} UTC", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "kubeconfig":
        return kubeconfig_command(args)
    if args.command == "version":
        sys.stdout.write(version_text())
        return 0
    config = config_from_args(args)
    logging.basicConfig(level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    if config.log_level != "debug":  # httpx logs every request at INFO: each webhook call, as kube does not
        logging.getLogger("httpx").setLevel(logging.WARNING)
    from kapi.server.serve import serve
    from kapi.server.supervise import FatalError, one_line

    log = logging.getLogger("kapi")
    try:
        trio.run(serve, config)
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        # One line that says why; the traceback only at debug level (a crashed service logged
        # its own when it crashed). Expected reasons (FatalError, a bad value) read as they are.
        reason = one_line(exc)
        expected = _expected(exc, (FatalError, ValueError, OSError))
        log.error("kapi cannot serve: %s%s", reason, "" if expected else " (-v debug shows the traceback)")
        log.debug("traceback", exc_info=exc)
        return 1
    return 0


def _expected(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_expected(e, kinds) for e in exc.exceptions)
    return isinstance(exc, kinds)


if __name__ == "__main__":
    sys.exit(main())
