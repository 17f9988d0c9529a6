"""The legacy service-account token controller (kube's pkg/controller/serviceaccount/tokens_controller.go).

A Secret of type ``kubernetes.io/service-account-token`` naming a ServiceAccount (annotation
``kubernetes.io/service-account.name``) is filled with a legacy token for it (``token``), the
server's CA (``ca.crt``) and its ``namespace``, and gets the account's uid annotation; one whose
ServiceAccount is missing (or another of that name: the uid differs) is deleted, and so are the
token Secrets of a deleted ServiceAccount; a deleted token Secret leaves the account's ``secrets``. As kube 1.33, no Secret is made for a ServiceAccount
on its own (LegacyServiceAccountTokenNoAutoGeneration): a user asks by creating the Secret.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import trio

from kapi import errors
from kapi.chain.authn.serviceaccount import (LABEL_LAST_USED, SA_NAME_ANNOTATION, SA_TOKEN_TYPE,
                                             SA_UID_ANNOTATION, ServiceAccountTokens)
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import CONTROLLER_MANAGER_USER, Writes
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informers, Item
from kapi.registry.resources import Resource
from kapi.registry.store import Registry, WriteOptions

log = logging.getLogger("kapi.controllers")
Obj = dict[str, Any]
RETRY_S = 1.0  # a sync that failed (a conflict, storage trouble) is tried again after this


class TokensController:
    """Fills token Secrets and removes those of missing ServiceAccounts (see the module docstring)."""

    def __init__(self, registry: Registry, informers: Informers, tokens: ServiceAccountTokens,
                 root_ca_pem: str = "", writes: Writes | None = None) -> None:
        self.registry = registry
        # kube-controller-manager runs this one with its own credentials, not a service account's
        self.writer = (writes or Writes(registry)).controller("tokens-controller", CONTROLLER_MANAGER_USER)
        self.tokens = tokens
        self.root_ca = root_ca_pem.encode()
        secrets = registry.table.get("", "v1", "secrets")
        sas = registry.table.get("", "v1", "serviceaccounts")
        assert secrets is not None and sas is not None
        self.secrets_res: Resource = secrets
        self.sa_res: Resource = sas
        self.secrets = informers.informer("", "secrets")
        self.service_accounts = informers.informer("", "serviceaccounts")
        self._queue = WorkQueue()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Register with the shared informers (synced ones hand over what they hold) and work the queue."""
        regs = [(self.secrets, self.secrets.add_handler(on_add=self._secret_changed,
                                                        on_update=lambda old, new: self._secret_changed(new),
                                                        on_delete=self._secret_gone)),
                (self.service_accounts, self.service_accounts.add_handler(on_delete=self._account_gone))]
        self.tokens.on_legacy_use = self._legacy_used
        try:
            await self._work(task_status)
        finally:  # a restarted controller registers afresh
            for informer, reg in regs:
                informer.remove_handler(reg)
            self.tokens.on_legacy_use = None

    async def _work(self, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                key = await self._queue.get()
                kind, _, rest = key.partition("|")
                try:
                    if kind == "secret":
                        namespace, _, name = rest.partition("/")
                        await self.sync_secret(namespace, name)
                    elif kind == "used":
                        namespace, name, day = rest.split("/", 2)
                        await self.mark_used(namespace, name, day)
                    elif kind == "reference":
                        namespace, name, sa_name, sa_uid = rest.split("/", 3)
                        await self.remove_reference(namespace, name, sa_name, sa_uid)
                    else:
                        namespace, name, uid = rest.split("/", 2)
                        await self.delete_tokens(namespace, name, uid)
                except errors.KapiError as exc:
                    log.info("service-account token controller: %s: %s; retrying", key, exc)
                    nursery.start_soon(self._requeue, key)
                except Exception:
                    log.exception("service-account token controller: sync of %s failed", key)

    async def _requeue(self, key: str) -> None:
        await trio.sleep(RETRY_S)
        self._queue.add(key)

    def _secret_changed(self, item: Item) -> None:
        # A token Secret must name its account (validation requires the annotation): others are skipped undecoded.
        if item.may_have(SA_NAME_ANNOTATION):
            self._queue.add(f"secret|{item.namespace}/{item.name}")

    def _legacy_used(self, namespace: str, name: str, day: str) -> None:
        self._queue.add(f"used|{namespace}/{name}/{day}")

    async def mark_used(self, namespace: str, name: str, day: str) -> None:
        """kube's legacy token tracking: the Secret's ``kubernetes.io/legacy-token-last-used`` label is the
        last day (UTC) its token authenticated."""
        def label(live: Obj) -> Obj:
            md = live["metadata"]
            if (md.get("labels") or {}).get(LABEL_LAST_USED) != day:
                md["labels"] = {**(md.get("labels") or {}), LABEL_LAST_USED: day}
            return live

        try:
            await self.writer.guaranteed_update(self.secrets_res, namespace, name, label, WriteOptions())
        except errors.NotFound:
            pass

    def _secret_gone(self, item: Item) -> None:
        if not item.may_have(SA_NAME_ANNOTATION):
            return
        secret = item.object()
        if secret.get("type") != SA_TOKEN_TYPE:
            return
        annotations = secret["metadata"].get("annotations") or {}
        self._queue.add(f"reference|{item.namespace}/{item.name}/{annotations.get(SA_NAME_ANNOTATION, '')}/"
                        f"{annotations.get(SA_UID_ANNOTATION, '')}")

    async def remove_reference(self, namespace: str, secret_name: str, sa_name: str, sa_uid: str) -> None:
        """A deleted token Secret leaves its ServiceAccount's ``secrets`` (kube's removeSecretReference)."""
        sa = self.service_accounts.get(namespace, sa_name)
        if sa is None or sa_uid and sa["metadata"].get("uid") != sa_uid:
            return
        if not any(ref.get("name") == secret_name for ref in sa.get("secrets") or ()):
            return

        def drop(live: Obj) -> Obj:
            if sa_uid and live["metadata"].get("uid") != sa_uid:
                return live
            refs = [ref for ref in live.get("secrets") or () if ref.get("name") != secret_name]
            if refs:
                live["secrets"] = refs
            else:
                live.pop("secrets", None)
            return live

        try:
            await self.writer.guaranteed_update(self.sa_res, namespace, sa_name, drop, WriteOptions())
        except errors.NotFound:
            pass

    def _account_gone(self, item: Item) -> None:
        uid = item.metadata().get("uid", "")
        self._queue.add(f"account|{item.namespace}/{item.name}/{uid}")

    async def delete_tokens(self, namespace: str, name: str, uid: str) -> None:
        """The deleted ServiceAccount's token Secrets go (kube's deleteTokens)."""
        for item in list(self.secrets.items(namespace)):
            if not item.may_have(SA_NAME_ANNOTATION):
                continue
            secret = item.object()
            annotations = secret["metadata"].get("annotations") or {}
            if secret.get("type") != SA_TOKEN_TYPE or annotations.get(SA_NAME_ANNOTATION) != name:
                continue
            if annotations.get(SA_UID_ANNOTATION) and uid and annotations[SA_UID_ANNOTATION] != uid:
                continue
            await self._delete(secret)

    async def _delete(self, secret: Obj) -> None:
        md = secret["metadata"]
        try:
            await self.writer.delete(self.secrets_res, md["namespace"], md["name"],
                                     DeleteOptions(precondition_uid=md.get("uid", "")))
        except (errors.NotFound, errors.Conflict):
            pass  # gone already, or another Secret of that name now

    async def _service_account(self, namespace: str, name: str) -> Obj | None:
        """The ServiceAccount from the informer, else from storage (kube's fetchOnCacheMiss)."""
        sa = self.service_accounts.get(namespace, name)
        if sa is not None:
            return sa
        try:
            return await self.registry.get(self.sa_res, namespace, name)
        except errors.NotFound:
            return None

    async def sync_secret(self, namespace: str, name: str) -> None:
        """kube's syncSecret: delete a token of a missing account, else fill in what the Secret lacks."""
        secret = self.secrets.get(namespace, name)
        if secret is None or secret.get("type") != SA_TOKEN_TYPE:
            return
        annotations = secret["metadata"].get("annotations") or {}
        sa_name, sa_uid = annotations.get(SA_NAME_ANNOTATION, ""), annotations.get(SA_UID_ANNOTATION, "")
        sa = await self._service_account(namespace, sa_name) if sa_name else None
        if sa is None or sa_uid and sa["metadata"].get("uid") != sa_uid:
            await self._delete(secret)
            return
        if not self._needs(secret, sa):
            return

        def fill(live: Obj) -> Obj:
            if not self._needs(live, sa):
                return live
            data = live.setdefault("data", {}) or {}
            live["data"] = data
            if self.root_ca:
                data["ca.crt"] = base64.b64encode(self.root_ca).decode()
            if not data.get("namespace"):
                data["namespace"] = base64.b64encode(namespace.encode()).decode()
            if not data.get("token"):
                data["token"] = base64.b64encode(self.tokens.legacy_token(sa, name).encode()).decode()
            md = live["metadata"]
            md["annotations"] = {**(md.get("annotations") or {}), SA_NAME_ANNOTATION: sa["metadata"]["name"],
                                 SA_UID_ANNOTATION: sa["metadata"].get("uid", "")}
            return live

        try:
            await self.writer.guaranteed_update(self.secrets_res, namespace, name, fill, WriteOptions())
        except errors.NotFound:
            pass

    def _needs(self, secret: Obj, sa: Obj) -> bool:
        """kube's generateTokenIfNeeded test: the CA differs, or the namespace, token or uid annotation is missing."""
        data = secret.get("data") or {}
        try:
            ca = base64.b64decode(data.get("ca.crt") or "")
        except ValueError:
            ca = b""
        annotations = secret["metadata"].get("annotations") or {}
        return bool(self.root_ca and ca != self.root_ca or not data.get("namespace") or not data.get("token")
                    or not annotations.get(SA_UID_ANNOTATION))
