"""What the generic store asks of one resource kind: kube's ``pkg/registry/<group>/<kind>/strategy.go``.

``Strategy`` has the generic answer to every question; a built-in kind's subclass (in
``kapi.apis``) overrides only what differs. The registry reaches per-kind code only through
these hooks, so no ``if resource == ...`` is needed anywhere else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import trio

from kapi.encoding.tables import DEFAULT_PRINTER, Printer
from kapi._fast import copy_tree
from kapi.errors import Cause
from kapi.object import meta
from kapi.object.access import Attributes, Decision, Rules, UserInfo
from kapi.object.selectors import FieldLabels, format_label_selector, meta_field_values
from kapi.object.validation import RULE_DNS1123_SUBDOMAIN

if TYPE_CHECKING:
    from kapi.object.schema import Schema
    from kapi.registry.deletion import DeleteOptions
    from kapi.registry.resources import Resource
    from kapi.registry.store import WriteOptions

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Allocation:
    """What the registry hands a strategy's ``before_create``: one lock per registry and resource,
    and the values storage holds for the resource (all namespaces), read when called."""

    lock: trio.Lock
    stored_values: Callable[[], Awaitable[list[bytes]]]


class PolicyRuleResolver(Protocol):
    """RBAC's rules as kube's AuthorizationRuleResolver gives them (PolicyRule dicts), for escalation checks."""

    def rules_and_errors(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule bound to ``user`` in ``namespace`` (cluster bindings included), and the errors met."""
        ...

    def role_reference_rules(self, kind: str, name: str, namespace: str) -> tuple[list[Obj] | None, str]:
        """The rules of the Role (of ``namespace``) or ClusterRole a roleRef names, or None and why not."""
        ...


class Access(Protocol):
    """What the server hands a strategy that judges access (the reviews' answers, RBAC's escalation
    check): the server's authorizer, its rules resolver and its token authenticators."""

    async def authorize(self, attrs: Attributes) -> Decision:
        """The authorizer union's decision (system:masters first, then each --authorization-mode)."""
        ...

    async def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """What ``user`` may do in ``namespace`` (RBAC's rules, as a SelfSubjectRulesReview lists them)."""
        ...

    async def authenticate_token(self, token: str, audiences: tuple[str, ...]
                                 ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """The user a bearer token is, and the audiences it is good for; None: no authenticator takes it.
        Raises ``errors.AuthenticationError`` with the authenticators' reasons when they refuse it."""
        ...

    def policy_rules(self) -> PolicyRuleResolver | None:
        """RBAC's rule resolver (escalation checks of Roles and bindings); None when RBAC is not a mode."""
        ...


def keep_old_status(new: Obj, old: Obj) -> None:
    """A write of the main resource leaves ``status`` as it was (the status strategy's counterpart)."""
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)


# What kube's metav1.ResetObjectMetaForStatus keeps of the old metadata
RESET_META_FOR_STATUS = ("deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers",
                         "ownerReferences")


def status_only(new: Obj, old: Obj, keep_metadata: tuple[str, ...] | None = ()) -> Obj:
    """A write of the status subresource as kube's status strategies make it: the new status, the old
    spec (every field but metadata and status), and the new metadata but for the fields in
    ``keep_metadata``, which stay as they were (None: all of the old metadata stays)."""
    out = {k: copy_tree(v) for k, v in old.items() if k not in ("metadata", "status")}
    for k in ("apiVersion", "kind"):
        if k in new:
            out[k] = new[k]
    if keep_metadata is None or not isinstance(new.get("metadata"), dict):
        md = copy_tree(old["metadata"])
    else:
        md = dict(new["metadata"])
        for k in keep_metadata:
            if k in old["metadata"]:
                md[k] = copy_tree(old["metadata"][k])
            else:
                md.pop(k, None)
    md["resourceVersion"] = old["metadata"]["resourceVersion"]
    out["metadata"] = md
    if new.get("status") is not None:
        out["status"] = new["status"]
    return out


class Strategy:
    """How the generic store treats one kind; every hook has the generic behaviour."""

    # Names and metadata: the rule metadata.name must follow (a kapi.object.validation RULE_*), and
    # whether kube's core rule holds that unqualified finalizers be standard ones.
    name_rule: ClassVar[str] = RULE_DNS1123_SUBDOMAIN
    core_finalizers: ClassVar[bool] = True
    # The strategy sets metadata.generation: 1 on create, +1 on each spec change.
    tracks_generation: ClassVar[bool] = False
    # Generation also moves on annotation changes (the Deployment strategy).
    generation_on_annotations: ClassVar[bool] = False
    # PUT of a missing object creates it (AllowCreateOnUpdate).
    create_on_update: ClassVar[bool] = False
    # DELETE answers with the object rather than a success Status (the store's ReturnDeletedObject).
    delete_returns_object: ClassVar[bool] = False
    # The fields a field selector may name (kube's field label conversion of the kind).
    field_labels: ClassVar[FieldLabels] = FieldLabels()
    # The Table columns and row printer (as=Table).
    printer: ClassVar[Printer] = DEFAULT_PRINTER
    # How to make an expensive LIST of the kind cheaper (the Warning of a LIST that scanned much).
    list_hint: ClassVar[str] = "list within a namespace or with a narrower selector"
    # Strategic merge patch applies (kube has no patch strategy for custom resources: 415 there).
    strategic_merge_patch: ClassVar[bool] = True
    # List items carry their kind and apiVersion (kube's unstructured lists of custom resources do;
    # its typed lists of built-in kinds do not).
    typed_list_items: ClassVar[bool] = False
    # A status subresource write keeps these of the old metadata, the rest is the writer's (None: all
    # of it stays), as the kind's status strategy in kube (pods keep ownerReferences, deployments labels).
    status_keeps_metadata: ClassVar[tuple[str, ...] | None] = ()
    # The fields no manager owns (kube's GetResetFields), per subresource; None for the main resource
    # is "status" where the kind has a status subresource. The status subresource resets spec and what
    # the status strategy keeps of the old metadata.
    reset_fields: ClassVar[tuple[tuple[str, ...], ...] | None] = None
    status_reset_fields: ClassVar[tuple[tuple[str, ...], ...] | None] = None

    def reset_fields_of(self, has_status: bool, subresource: str) -> tuple[tuple[str, ...], ...]:
        """The paths a write of ``subresource`` cannot set, which no manager owns (GetResetFields)."""
        if subresource == "status":
            if self.status_reset_fields is not None:
                return self.status_reset_fields
            keep = self.status_keeps_metadata
            meta = (("metadata",),) if keep is None else tuple(
                ("metadata", k) for k in keep if k not in ("selfLink", "generation"))
            return (("spec",), *meta)
        if not subresource:
            if self.reset_fields is not None:
                return self.reset_fields
            return (("status",),) if has_status else ()
        return ()

    # ------------------------------------------------------------------ writes

    def unknown_fields(self, obj: Obj) -> list[str] | None:
        """The paths of fields a body has that the kind does not (fieldValidation Warn/Strict), dropped
        from ``obj`` (a custom resource's structural pruning); None: the built-in Schema answers (and the
        handler drops them)."""
        return None

    def canonicalize(self, obj: Obj) -> None:
        """Field folding of every write, before defaulting (in place); kube's conversion does it."""

    def default(self, obj: Obj, old: Obj | None) -> None:
        """Fill kube's defaults in place; ``old`` is the stored object on an update, None on create."""

    def validate(self, obj: Obj) -> list[Cause]:
        """The kind's own checks of a create (the registry checks metadata with ``name_rule``)."""
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        """The kind's own checks of an update of the main resource."""
        return []

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        """The kind's own checks of a status subresource update."""
        return []

    def prepare_for_create(self, res: Resource, obj: Obj) -> None:
        """System fields of a create: generation 1 (or none), status reset where there is a status subresource."""
        md = obj["metadata"]
        if self.tracks_generation:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        if res.has_status:
            obj.pop("status", None)

    def prepare_named(self, obj: Obj) -> None:
        """The part of kube's PrepareForCreate that comes after the create's managedFields are recorded and
        after mutating admission, before validation: what a create derives from its uid and (generated)
        name (a Job's generated selector), and what the strategy adds that no manager owns (a namespace's
        ``kubernetes`` finalizer). ``prepare_for_create`` is the part before defaulting."""

    def prepare_for_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        """The object an update stores: status from the status subresource only, then generation."""
        if subresource == "status":
            new = status_only(new, old, self.status_keeps_metadata)
        elif res.has_status:
            keep_old_status(new, old)
        self.next_generation(new, old, subresource)
        return new

    def next_generation(self, new: Obj, old: Obj, subresource: str) -> None:
        """Generation stays unless the spec (or what the kind counts as spec) changed."""
        md = new["metadata"]
        if not self.tracks_generation:
            md.pop("generation", None)
            return
        md["generation"] = old["metadata"].get("generation", 1)
        if subresource != "status" and self.spec_changed(new, old):
            md["generation"] += 1

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        """Whether an update moves the generation: anything but metadata and status changed."""
        if self.generation_on_annotations and (new["metadata"].get("annotations") or {}) != (
                old["metadata"].get("annotations") or {}):
            return True
        strip = ("metadata", "status", "kind", "apiVersion")
        return {k: v for k, v in new.items() if k not in strip} != {k: v for k, v in old.items() if k not in strip}

    async def before_create(self, obj: Obj, alloc: Allocation) -> None:
        """Allocation of a create, after validation and before the write (a Service's ClusterIP)."""

    async def authorize_write(self, new: Obj, old: Obj | None, opts: WriteOptions) -> None:
        """Refuse a write its requester may not make (raise a StatusError): called after validation, on
        create (``old`` None) and on each try of an update. ``opts.requester``/``opts.access`` are None for
        the server's own writes. RBAC's kinds check escalation here (kube's policybased storage)."""

    async def answer(self, review: Obj, requester: UserInfo, access: Access) -> Obj:
        """A virtual kind's answer to a create (the reviews, kube's REST Create): ``review`` with its status.

        Only resources marked ``virtual`` are answered this way; they are never stored.
        """
        raise NotImplementedError(f"{type(self).__name__} answers no create: its resource is stored")

    def managed_fields_schema(self, base: Schema) -> Schema:
        """The schema managedFields and server-side apply type the kind's objects with (list types, map
        keys, atomic maps): the built-in one, or a custom resource's from its CRD."""
        return base

    # ------------------------------------------------------------------ scale

    spec_replicas_path = ".spec.replicas"  # where a Scale's spec.replicas lives (a CRD's specReplicasPath)

    def scale_of(self, obj: Obj) -> tuple[int, int, str]:
        """(spec replicas, status replicas, label selector string) of a scalable object, for its Scale."""
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return spec.get("replicas", 0), status.get("replicas", 0), format_label_selector(spec.get("selector") or {})

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        """A Scale's spec.replicas written into the object (in place)."""
        obj.setdefault("spec", {})["replicas"] = replicas

    # ------------------------------------------------------------------ storage

    def to_storage(self, obj: Obj) -> Obj:
        """The object in the shape it is stored in (another resource's storage may hold it)."""
        return obj

    def from_storage(self, obj: Obj) -> Obj:
        """The stored object in the shape this resource serves."""
        return obj

    # Conversion that is I/O (a CRD's conversion webhook): the registry awaits ``convert_from_storage``
    # on what ``from_storage`` gave (objects of reads, LIST pages from storage, storage watch events)
    # and ``convert_to_storage`` before ``to_storage`` on writes; such a resource is served without a
    # watch cache. An instance may set its own value.
    converts_async: bool = False

    async def convert_from_storage(self, objs: list[Obj]) -> list[Obj]:
        """Stored objects (``from_storage`` done) in the version this resource serves, in one call."""
        return objs

    async def convert_to_storage(self, obj: Obj) -> Obj:
        """An object of this resource's version in the version it is stored in (before ``to_storage``)."""
        return obj

    # ------------------------------------------------------------------ reads

    def field_values(self, obj: Obj, namespaced: bool) -> dict[str, str]:
        """The selectable field set of an object, each value as its string (fields.Set)."""
        out = meta_field_values(obj, namespaced)
        out.update(self.own_field_values(obj))
        return out

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        """The kind's selectable fields beyond metadata.name and metadata.namespace."""
        return {}

    # ----------------------------------------------------------------- deletes

    def check_delete(self, name: str) -> None:
        """Refuse a DELETE before anything is read (raise a StatusError)."""

    def grace_period_s(self, obj: Obj, opts: DeleteOptions) -> int:
        """The graceful deletion period of a DELETE: none, but for kinds that have one (pods)."""
        return 0

    def prepare_for_delete(self, new: Obj, gc_finalizer: str | None, opts: DeleteOptions) -> Obj | None:
        """The object as it stays after a DELETE (``new`` is a copy to change), or None if it goes now.

        ``gc_finalizer``: the garbage collector's finalizer the propagation policy asks for.
        """
        md = new["metadata"]
        finalizers = list(md.get("finalizers") or [])
        if gc_finalizer and not md.get("deletionTimestamp") and gc_finalizer not in finalizers:
            finalizers.append(gc_finalizer)
            md["finalizers"] = finalizers
        grace = self.grace_period_s(new, opts)
        if md.get("deletionTimestamp"):
            if finalizers:
                return new
            old_grace = md.get("deletionGracePeriodSeconds")
            if grace == 0 or (old_grace is not None and grace is not None and grace < old_grace):
                if grace == 0:
                    return None
                md["deletionGracePeriodSeconds"] = grace
                md["deletionTimestamp"] = meta.rfc3339_after(grace)
            return new
        if finalizers:
            md["deletionTimestamp"] = meta.now_rfc3339()
            md["deletionGracePeriodSeconds"] = 0
            if md.get("generation"):
                md["generation"] += 1
            return new
        if grace:
            md["deletionTimestamp"] = meta.rfc3339_after(grace)
            md["deletionGracePeriodSeconds"] = grace
            if md.get("generation"):
                md["generation"] += 1
            return new
        return None

    def finished(self, obj: Obj) -> bool:
        """Whether an updated object goes now: being deleted, its last finalizer removed and no grace left."""
        md = obj.get("metadata", {})
        return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
            md.get("deletionGracePeriodSeconds", 0) == 0
