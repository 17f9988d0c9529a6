"""Server configuration: one frozen, keyword-only dataclass built from the CLI flags."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    """Everything ``serve()`` needs; field names carry their units."""

    data_dir: str = "./kapi-data"
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    storage_backend: str = "sqlite"  # sqlite | memory
    etcd_prefix: str = "/registry"  # the storage key prefix (--etcd-prefix, honoured by key construction next)
    etcd_compaction_interval_s: float = 300.0
    group_commit: bool = True
    default_watch_cache_size: int = 100
    watch_cache_sizes: dict[str, int] = field(default_factory=dict)
    watch_cache: bool = True
    # resource[.group] -> fields indexed in its watch cache (exact-match field selectors use them)
    watch_cache_indexes: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"pods": ("spec.nodeName",)})
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    authorization_mode: tuple[str, ...] = ("AlwaysAllow",)
    token_auth_file: str = ""
    anonymous_auth: bool = True
    request_timeout_s: float = 60.0
    min_request_timeout_s: float = 1800.0
    shutdown_delay_s: float = 0.0
    shutdown_timeout_s: float = 10.0
    max_body_bytes: int = 3 * 1024 * 1024
    log_level: str = "info"
