"""The server's own writes as an API client's: admission and audit under the user who makes them.

kube's controllers (kube-controller-manager's, each with its own service account) and the
apiserver's post-start hooks (the loopback client, ``system:apiserver`` in ``system:masters``) write
through the API, so each write passes mutating and validating admission (plugins, policies,
webhooks) and is audited as a request of that user. ``Writes`` holds the server's admission chain
and audit; ``Writes.apiserver()`` and ``Writes.controller(name)`` give a ``Writer`` that makes a
user's writes through the registry that way. Without a chain or audit (tests building the registry
alone), a ``Writer`` writes as the registry does. Authorization is not asked: the server's
controllers hold the rights kube's bootstrap roles give theirs.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import uuid
from typing import TYPE_CHECKING, Any

from kapi import errors
from kapi.chain.audit.events import Event, complete_object_ref, object_ref
from kapi.chain.audit.policy import (NONE, REQUEST, REQUEST_RECEIVED, REQUEST_RESPONSE, RESPONSE_COMPLETE,
                                     RequestAuditConfig, at_least)
from kapi.chain.context import RequestInfo
from kapi.object.access import UserInfo
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions, DeleteResult
from kapi.registry.resources import Resource
from kapi.registry.store import Mutate, Registry, WriteOptions
from kapi.storage.base import ListResult

if TYPE_CHECKING:
    from kapi.admission.chain import AdmissionChain, RequestAdmission
    from kapi.chain.audit import Audit

Obj = dict[str, Any]

__all__ = ["Writes", "Writer", "APISERVER_USER", "CONTROLLER_MANAGER_USER", "controller_user"]

# kube's loopback client user (its uid is made per server); kube-controller-manager's own user
APISERVER_USER = "system:apiserver"
CONTROLLER_MANAGER_USER = UserInfo("system:kube-controller-manager", groups=("system:authenticated",))
_KUBE_VERSION = "v1.33.0"
_SOURCE_IPS = ["127.0.0.1"]  # an in-process client: the loopback address kube's loopback client comes from


def controller_user(name: str) -> UserInfo:
    """The service account kube-controller-manager runs controller ``name`` as
    (``--use-service-account-credentials``, as kubeadm sets it)."""
    return UserInfo(f"system:serviceaccount:kube-system:{name}",
                    groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"))


class Writes:
    """The server's admission chain and audit, for the writes the server makes itself."""

    def __init__(self, registry: Registry, admission: AdmissionChain | None = None, audit: Audit | None = None) -> None:
        self.registry = registry
        self.admission = admission
        self.audit = audit
        self._apiserver = UserInfo(APISERVER_USER, str(uuid.uuid4()), ("system:authenticated", "system:masters"))

    def apiserver(self) -> Writer:
        """The apiserver's loopback client (post-start hooks, the apiextensions and aggregator controllers)."""
        return Writer(self, self._apiserver, f"kube-apiserver/{_KUBE_VERSION} (linux/amd64) kubernetes/kapi")

    def controller(self, name: str, user: UserInfo | None = None) -> Writer:
        """kube-controller-manager's client of controller ``name``: its service account unless ``user`` is given."""
        return Writer(self, user or controller_user(name),
                      f"kube-controller-manager/{_KUBE_VERSION} (linux/amd64) kubernetes/kapi/{name}")


class Writer:
    """One user's writes through the registry, each admitted and audited as that user's API request.

    A refused write raises the ``StatusError`` an API client would get; the caller handles it as
    kube's controller handles an API error (requeue with backoff, log).
    """

    def __init__(self, writes: Writes, user: UserInfo, user_agent: str) -> None:
        self.writes = writes
        self.registry = writes.registry
        self.user = user
        self.user_agent = user_agent

    async def create(self, res: Resource, namespace: str, obj: Obj, opts: WriteOptions = WriteOptions()) -> Obj:
        name = str((obj.get("metadata") or {}).get("name") or "")
        call = _Call(self, "create", res, namespace, "", "", obj, name_of_object=name)
        async with call:
            out = await self.registry.create(res, namespace, obj, self._options(opts, call))
            call.done(out, 201)
        return out

    async def update(self, res: Resource, namespace: str, name: str, obj: Obj, opts: WriteOptions = WriteOptions(),
                     subresource: str = "") -> tuple[Obj, bool]:
        """PUT, as ``Registry.update``."""
        call = _Call(self, "update", res, namespace, name, subresource, obj)
        async with call:
            out, created = await self.registry.update(res, namespace, name, obj, self._options(opts, call),
                                                      subresource)
            call.done(out, 201 if created else 200)
        return out, created

    async def guaranteed_update(self, res: Resource, namespace: str, name: str, mutate: Mutate,
                                opts: WriteOptions = WriteOptions(), subresource: str = "",
                                verb: str = "patch") -> Obj:
        """A read-modify-write (a PATCH, or with ``verb="update"`` a PUT of what was read), as
        ``Registry.guaranteed_update``."""
        call = _Call(self, verb, res, namespace, name, subresource, None)
        async with call:
            out = await self.registry.guaranteed_update(res, namespace, name, mutate, self._options(opts, call),
                                                        subresource)
            call.done(out, 200)
        return out

    async def apply(self, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions, *,
                    force: bool, subresource: str = "") -> tuple[Obj, bool]:
        """A server-side apply of ``config`` by ``opts.field_manager`` (a PATCH of
        ``application/apply-patch+yaml``), as ``Registry.apply``; returns (object, created)."""
        call = _Call(self, "patch", res, namespace, name, subresource, config)
        async with call:
            out, created = await self.registry.apply(res, namespace, name, config, self._options(opts, call),
                                                     force=force, subresource=subresource)
            call.done(out, 201 if created else 200)
        return out, created

    async def delete(self, res: Resource, namespace: str, name: str,
                     opts: DeleteOptions = DeleteOptions()) -> DeleteResult:
        call = _Call(self, "delete", res, namespace, name, "", _delete_options(opts))
        async with call:
            out = await self.registry.delete(res, namespace, name, self._delete_options(opts, call))
            call.done(out.obj, 200)
        return out

    async def delete_collection(self, res: Resource, namespace: str, list_opts: ListOptions,
                                opts: DeleteOptions = DeleteOptions()) -> ListResult[Obj]:
        call = _Call(self, "deletecollection", res, namespace, "", "", _delete_options(opts))
        async with call:
            out = await self.registry.delete_collection(res, namespace, list_opts, self._delete_options(opts, call))
            call.done(None, 200)
        return out

    async def ensure_exists(self, res: Resource, namespace: str, obj: Obj) -> None:
        """Create ``obj`` unless it exists (start-up objects)."""
        try:
            await self.registry.get_kv(res, namespace, obj["metadata"]["name"])
            return
        except errors.NotFound:
            pass
        try:
            await self.create(res, namespace, obj)
        except errors.AlreadyExists:
            pass

    def _admission(self, call: _Call, delete_options: Obj | None = None) -> RequestAdmission | None:
        chain = self.writes.admission
        if chain is None:
            return None
        return chain.bind(self.user, call.warnings, call.annotate, {}, delete_options)

    def _options(self, opts: WriteOptions, call: _Call) -> WriteOptions:
        return dataclasses.replace(opts, admission=self._admission(call))

    def _delete_options(self, opts: DeleteOptions, call: _Call) -> DeleteOptions:
        return dataclasses.replace(opts, admission=self._admission(call, _delete_options(opts)))


class _Call:
    """One write as a request: its audit event (kube's audit filter's stages), warnings and annotations."""

    def __init__(self, writer: Writer, verb: str, res: Resource, namespace: str, name: str, subresource: str,
                 request_object: Obj | None, name_of_object: str = "") -> None:
        self.warnings: list[str] = []
        self.annotations: dict[str, str] = {}
        self.auditor = writer.writes.audit
        self.event: Event | None = None
        self.rac = RequestAuditConfig(NONE)
        if self.auditor is None:
            return
        path = _path(res, namespace, name, subresource)
        info = RequestInfo(True, path, verb, "apis" if res.group else "api", res.group, res.version, namespace,
                           res.resource, subresource, name)
        self.rac = self.auditor.policy.evaluate(writer.user, info)
        self.auditor.observe_level(self.rac.level)
        if self.rac.level == NONE:
            return
        ref = object_ref(res.resource, namespace, name, res.group, res.version, subresource)
        if request_object is not None and verb in ("create", "update"):
            ref = complete_object_ref(ref, request_object.get("metadata"))
        self.event = Event(self.rac.level, str(uuid.uuid4()), path, verb, writer.user, list(_SOURCE_IPS),
                           writer.user_agent, time.time_ns(), ref, annotations=self.annotations)
        if request_object is not None and at_least(self.rac.level, REQUEST):
            # a copy: the registry may change what it was given before the event is written
            self.event.request_object = _without_managed_fields(copy.deepcopy(request_object), self.rac)

    def annotate(self, key: str, value: str) -> None:
        self.annotations[key] = value

    def done(self, response_object: Obj | None, code: int) -> None:
        if self.event is None:
            return
        self.event.response_status = {"metadata": {}, "code": code}
        if response_object is not None and at_least(self.rac.level, REQUEST_RESPONSE):
            self.event.response_object = _without_managed_fields(response_object, self.rac)

    async def __aenter__(self) -> _Call:
        if self.event is not None and self.auditor is not None and REQUEST_RECEIVED not in self.rac.omit_stages:
            if not await self.auditor.emit(self.event.snapshot(REQUEST_RECEIVED, self.event.received_ns)) \
                    and self.auditor.strict:
                self.auditor.rejected()
                raise errors.InternalError("Internal error occurred: failed to store audit event")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        ev, auditor = self.event, self.auditor
        if ev is None or auditor is None or (exc is not None and not isinstance(exc, Exception)):
            return  # not audited, or cancelled: no answer was given
        if isinstance(exc, errors.StatusError):
            status = exc.to_status()
            ev.response_status = {"metadata": {}, **{k: status[k] for k in ("status", "message", "reason", "details",
                                                                             "code") if status.get(k)}}
            if at_least(self.rac.level, REQUEST_RESPONSE):
                ev.response_object = status
        elif exc is not None:
            ev.response_status = {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {exc}",
                                  "reason": "InternalError", "code": 500}
        if RESPONSE_COMPLETE not in self.rac.omit_stages:
            await auditor.emit(ev.snapshot(RESPONSE_COMPLETE, time.time_ns()))


def _path(res: Resource, namespace: str, name: str, subresource: str) -> str:
    """The request path an API client would have used."""
    parts = [f"/api/{res.version}" if not res.group else f"/apis/{res.group}/{res.version}"]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(res.resource)
    if name:
        parts.append(name)
        if subresource:
            parts.append(subresource)
    return "/".join(parts)


def _delete_options(opts: DeleteOptions) -> Obj:
    """meta.k8s.io/v1 DeleteOptions as the client would have sent them."""
    out: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    if opts.grace_period_s is not None:
        out["gracePeriodSeconds"] = opts.grace_period_s
    if opts.precondition_uid or opts.precondition_rv:
        out["preconditions"] = {k: v for k, v in (("uid", opts.precondition_uid),
                                                  ("resourceVersion", opts.precondition_rv)) if v}
    if opts.orphan_dependents is not None:
        out["orphanDependents"] = opts.orphan_dependents
    if opts.propagation_policy:
        out["propagationPolicy"] = opts.propagation_policy
    return out


def _without_managed_fields(obj: Obj, rac: RequestAuditConfig) -> Obj:
    md = obj.get("metadata")
    if not rac.omit_managed_fields or not isinstance(md, dict) or "managedFields" not in md:
        return obj
    return dict(obj, metadata={k: v for k, v in md.items() if k != "managedFields"})
