"""Server configuration: one frozen, keyword-only dataclass built from the CLI flags."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    """Everything ``serve()`` needs; field names carry their units."""

    data_dir: str = "./kapi-data"
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    storage_backend: str = "sqlite"  # sqlite | etcd3 | memory
    etcd_prefix: str = "/registry"  # the root of every storage key (--etcd-prefix)
    etcd_compaction_interval_s: float = 300.0
    # --- etcd3 (kube's flags): the cluster's client URLs, TLS to it (every cluster's), and the resources
    # stored in other clusters: (group, resource, servers) each, the core group ""
    etcd_servers: tuple[str, ...] = ()
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""
    etcd_servers_overrides: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    etcd_readycheck_timeout_s: float = 2.0  # /readyz's etcd check waits this long for an answer
    # How long start-up waits for storage to answer before kapi exits saying why (kube then declares the
    # server ready anyway, after 1m; kapi cannot serve without storage)
    storage_initialization_timeout_s: float = 20.0
    group_commit: bool = True
    default_watch_cache_size: int = 100
    watch_cache_sizes: dict[str, int] = field(default_factory=dict)
    watch_cache: bool = True
    # resource[.group] -> fields indexed in its watch cache (exact-match field selectors use them)
    watch_cache_indexes: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"pods": ("spec.nodeName",)})
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    # --- API Priority and Fairness (kapi.chain.flowcontrol): the two limits above are its server-wide
    # concurrency; off, they are max-in-flight's separate limits for reads and writes
    enable_priority_and_fairness: bool = True
    size_based_list_cost_estimate: bool = True  # --feature-gates SizeBasedListCostEstimate (kube 1.34: on)
    # --- authentication (kube's flag names; durations in seconds)
    token_auth_file: str = ""
    anonymous_auth: bool = True
    service_account_signing_key_file: str = ""  # "": <data-dir>/pki/sa.key, made on first start
    service_account_key_files: tuple[str, ...] = ()  # more public keys that verify tokens (key rotation)
    service_account_issuers: tuple[str, ...] = ()  # the first signs; (): https://kubernetes.default.svc.cluster.local
    api_audiences: tuple[str, ...] = ()  # (): the first issuer
    service_account_max_token_expiration_s: float = 0.0  # 0: no cap beyond kube's
    service_account_extend_token_expiration: bool = True
    authentication_config: str = ""  # AuthenticationConfiguration file (JWT authenticators)
    client_ca_file: str = ""  # more client CAs, beside kapi's own (kube's --client-ca-file)
    requestheader_client_ca_file: str = ""
    requestheader_username_headers: tuple[str, ...] = ()
    requestheader_uid_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ()
    requestheader_extra_headers_prefix: tuple[str, ...] = ()
    requestheader_allowed_names: tuple[str, ...] = ()
    authentication_token_webhook_config_file: str = ""
    authentication_token_webhook_cache_ttl_s: float = 120.0
    authentication_token_webhook_version: str = "v1beta1"
    # --- authorization
    # Safe by default, as kube-apiserver deployed by kubeadm or k3s: anonymous requests reach only what
    # the bootstrap policy's system:public-info-viewer allows; system:masters (the admin) is allowed all.
    authorization_mode: tuple[str, ...] = ("Node", "RBAC")
    authorization_webhook_config_file: str = ""
    authorization_webhook_cache_authorized_ttl_s: float = 300.0
    authorization_webhook_cache_unauthorized_ttl_s: float = 30.0
    authorization_webhook_version: str = "v1beta1"
    # --- admission (kube 1.33's default plugins, plus these, minus those)
    enable_admission_plugins: tuple[str, ...] = ()
    disable_admission_plugins: tuple[str, ...] = ()
    admission_control_config_file: str = ""
    # DefaultTolerationSeconds: the not-ready and unreachable NoExecute tolerations pods get
    default_not_ready_toleration_seconds: int = 300
    default_unreachable_toleration_seconds: int = 300
    # --- audit
    audit_policy_file: str = ""
    audit_log_path: str = ""  # "-": stdout
    audit_log_maxage_days: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize_mb: int = 0
    audit_log_format: str = "json"  # json | legacy
    audit_webhook_config_file: str = ""
    audit_webhook_mode: str = "batch"  # batch | blocking | blocking-strict
    audit_webhook_batch_max_size: int = 400
    audit_webhook_batch_max_wait_s: float = 30.0
    request_timeout_s: float = 60.0
    min_request_timeout_s: float = 1800.0
    shutdown_delay_s: float = 0.0
    shutdown_timeout_s: float = 10.0
    max_body_bytes: int = 3 * 1024 * 1024
    max_object_bytes: int = 1_572_864  # etcd's default --max-request-bytes
    # --- replicas on one datastore (kapi.server.replica)
    token: str = ""  # k3s's --token: the join token that encrypts the shared bootstrap data
    token_file: str = ""  # k3s's --token-file: the token in a file
    advertise_address: str = ""  # kube's: the IP published in the kubernetes Endpoints ("": the bind address)
    tls_sans: tuple[str, ...] = ()  # k3s's --tls-san: more names and IPs in this replica's serving certificate
    tls_cert_file: str = ""  # kube's: a serving certificate of one's own ("": <data-dir>/pki/apiserver.crt)
    tls_private_key_file: str = ""
    log_level: str = "info"
