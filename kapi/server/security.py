"""The server's request chain pieces built from its flags: the authenticator union, the authorizer
union (and the in-process informers they read), audit. ``serve`` and ``build_app`` call these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kapi.chain.audit import Audit, Backend, load_policy
from kapi.chain.audit.log import LogBackend
from kapi.chain.authn import X509, Authenticator, TokenAuthenticator, load_certificates, read_token_file, requestheader
from kapi.chain.authn import jwt as jwt_authn
from kapi.chain.authn.serviceaccount import PrivateKey, ServiceAccountTokens, load_public_keys
from kapi.chain.authn.webhook import WebhookTokenAuthenticator
from kapi.chain.authz import Authorizer, Mode, from_modes
from kapi.chain.authz.node import NodeAuthorizer
from kapi.chain.authz.rbac import RBAC
from kapi.chain.authz.webhook import WebhookAuthorizer
from kapi.chain.webhookclient import load_webhook_kubeconfig
from kapi.config import Config
from kapi.metrics import Metrics
from kapi.object.access import UserInfo
from kapi.registry.informer import Informers

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # --service-account-issuer's default
ADMIN = UserInfo("kapi-admin", "kapi-admin", ("system:masters", "system:authenticated"))


def build_service_account_tokens(config: Config, informers: Informers | None, signing_key: PrivateKey
                                 ) -> ServiceAccountTokens:
    """The service-account token issuer and authenticator: signs with ``signing_key``, verifies with it and
    every --service-account-key-file; its index of ServiceAccounts, Secrets, Pods and Nodes follows
    ``informers`` (without them, no token validates: nothing is known to exist). ValueError on bad flags."""
    max_s = config.service_account_max_token_expiration_s
    if max_s and not 3600 <= max_s <= 1 << 32:
        raise ValueError("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds")
    verify = [key for path in config.service_account_key_files for key in load_public_keys(path)]
    issuers = tuple(config.service_account_issuers) or (DEFAULT_ISSUER,)
    tokens = ServiceAccountTokens(signing_key, verify, issuers,
                                  api_audiences=tuple(config.api_audiences or issuers),
                                  max_expiration_s=int(max_s),
                                  extend_expiration=config.service_account_extend_token_expiration)
    if informers is not None:
        tokens.index.follow(informers)
    return tokens


def build_authenticator(config: Config, informers: Informers | None, admin_token: str,
                        service_accounts: TokenAuthenticator | None = None) -> Authenticator:
    """kube's authenticator union, in kube's order, from the flags; the admin token is system:masters."""
    tokens: dict[str, UserInfo] = {}
    if config.token_auth_file:
        tokens.update(read_token_file(config.token_auth_file))
    if admin_token:
        tokens[admin_token] = ADMIN
    # kube: --api-audiences, else every --service-account-issuer.
    audiences = config.api_audiences or config.service_account_issuers or (DEFAULT_ISSUER,)
    authenticator = Authenticator(tokens, anonymous=config.anonymous_auth, api_audiences=tuple(audiences))
    # Token authenticators after the token file, in kube's order: service accounts, the JWT
    # authenticators of --authentication-config, the token webhook (add_token_authenticator).
    if service_accounts is not None:
        authenticator.add_token_authenticator(service_accounts)
    if config.authentication_config:  # its JWT issuers after the service accounts, as kube orders them
        authn_config = jwt_authn.load(config.authentication_config,
                                      tuple(config.service_account_issuers) or (DEFAULT_ISSUER,))
        for one in jwt_authn.authenticators(authn_config, authenticator.api_audiences):
            authenticator.add_token_authenticator(one)
        if authn_config.anonymous is not None:  # the file's anonymous section decides, with its paths
            authenticator.anonymous = authn_config.anonymous
            authenticator.anonymous_paths = frozenset(authn_config.anonymous_paths or ()) or None
    if config.authentication_token_webhook_config_file:  # the last token authenticator, as in kube
        authenticator.add_token_authenticator(build_token_webhook(config, authenticator.api_audiences))
    # The authenticating proxy. The TLS layer then accepts its CA's client certificates too
    # (tls_client_cas), so x509 checks that kapi's CA issued the certificate it maps to a user.
    # --client-ca-file's CAs are accepted by the TLS layer beside kapi's; x509 checks which one issued
    # a certificate too whenever the TLS layer accepts a CA that is not a client CA.
    authenticator.request_header = requestheader.from_config(config)
    if authenticator.request_header is not None or config.client_ca_file:
        authenticator.x509 = X509(tuple(cert for path in client_ca_files(config) for cert in load_certificates(path)))
    return authenticator


def client_ca_files(config: Config) -> tuple[str, ...]:
    """The client CAs of x509 authentication: kapi's own, and --client-ca-file's (kube's flag) when given."""
    own = str(Path(config.data_dir) / "pki" / "ca.crt")
    return (own, config.client_ca_file) if config.client_ca_file else (own,)


def tls_client_cas(config: Config, ca_file: str) -> tuple[str, ...]:
    """The CA files whose client certificates the TLS layer accepts: kapi's, --client-ca-file's, the proxy's."""
    extra = tuple(f for f in (config.client_ca_file, config.requestheader_client_ca_file) if f)
    return (ca_file, *extra)


def build_token_webhook(config: Config, api_audiences: tuple[str, ...]) -> WebhookTokenAuthenticator:
    """--authentication-token-webhook-config-file's TokenReview authenticator; ValueError on a bad kubeconfig."""
    client = load_webhook_kubeconfig(config.authentication_token_webhook_config_file)
    return WebhookTokenAuthenticator(client, config.authentication_token_webhook_version, api_audiences,
                                     config.authentication_token_webhook_cache_ttl_s)


def build_webhook_authorizer(config: Config) -> WebhookAuthorizer:
    """The Webhook mode from --authorization-webhook-*; ValueError when its kubeconfig is missing or bad."""
    if not config.authorization_webhook_config_file:
        raise ValueError("authorization-mode Webhook's authorization config file not passed")
    client = load_webhook_kubeconfig(config.authorization_webhook_config_file)
    return WebhookAuthorizer(client, config.authorization_webhook_version,
                             config.authorization_webhook_cache_authorized_ttl_s,
                             config.authorization_webhook_cache_unauthorized_ttl_s)


def build_authorizer(config: Config, informers: Informers | None) -> Authorizer:
    """The --authorization-mode union; RBAC and Node read ``informers`` (required for them)."""
    build: dict[str, Mode] = {}
    if "RBAC" in config.authorization_mode and informers is not None:
        build["RBAC"] = RBAC(informers)  # the four RBAC informers feed its index
    if "Node" in config.authorization_mode and informers is not None:
        build["Node"] = NodeAuthorizer(informers)  # the pods and persistentvolumes informers feed its graph
    if config.authorization_webhook_config_file and "Webhook" not in config.authorization_mode:
        raise ValueError("cannot specify --authorization-webhook-config-file without mode Webhook")
    if "Webhook" in config.authorization_mode:
        build["Webhook"] = build_webhook_authorizer(config)
    return from_modes(config.authorization_mode, build)


def build_audit(config: Config, schema: Any = None, metrics: Metrics | None = None) -> Audit | None:
    """--audit-policy-file with the log and webhook backends; None when either is missing (kube records no
    events then). ValueError (the server does not start) for a policy or webhook kubeconfig kube refuses,
    or a log file that cannot be made."""
    backends: list[Backend] = []
    if config.audit_log_path:
        try:
            backends.append(LogBackend(config.audit_log_path, config.audit_log_format, config.audit_log_maxage_days,
                                       config.audit_log_maxbackup, config.audit_log_maxsize_mb))
        except OSError as exc:
            raise ValueError(f"--audit-log-path {config.audit_log_path}: {exc.strerror or exc}") from None
    if config.audit_webhook_config_file:
        from kapi.chain.audit.webhook import WebhookBackend

        backends.append(WebhookBackend.from_kubeconfig(
            config.audit_webhook_config_file, config.audit_webhook_mode, config.audit_webhook_batch_max_size,
            config.audit_webhook_batch_max_wait_s))
    if not config.audit_policy_file or not backends:
        return None
    try:
        policy = load_policy(config.audit_policy_file)
    except ValueError as exc:
        raise ValueError(f"--audit-policy-file: {exc}") from None
    return Audit(policy, backends, schema, metrics)
