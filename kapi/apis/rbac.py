"""rbac.authorization.k8s.io/v1: Roles, RoleBindings and their cluster-wide twins (path-segment names).

Writes of all four are checked for escalation as kube's ``pkg/registry/rbac/*/policybased`` does:
a Role or ClusterRole may only hold rules its writer holds (or the writer may ``escalate`` it), a
binding may only grant a role whose rules its writer holds (or the writer may ``bind`` it);
system:masters and the server's own writes pass unchecked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from kapi import errors
from kapi.errors import Cause
from kapi.object.access import Attributes, UserInfo
from kapi.object.rbac.covers import FULL_AUTHORITY, escalation_error
from kapi.object.defaults import default_cluster_role_binding, default_role_binding
from kapi.object.validation import (RULE_PATH_SEGMENT, validate_cluster_role, validate_cluster_role_binding,
    validate_cluster_role_binding_update, validate_cluster_role_update, validate_role, validate_role_binding,
    validate_role_binding_update, validate_role_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Access, Obj, Strategy

if TYPE_CHECKING:
    from kapi.registry.store import WriteOptions

GROUP: Final = "rbac.authorization.k8s.io"
SYSTEM_MASTERS: Final = "system:masters"


class _RBACStrategy(Strategy):
    name_rule = RULE_PATH_SEGMENT
    create_on_update = True
    _resource: str = ""  # the plural the Forbidden messages name

    def _forbidden(self, name: str, message: str) -> errors.Forbidden:
        """kube's errors.NewForbidden for this resource: ``<resource>.<group> "<name>" is forbidden: <message>``."""
        what = f"{self._resource}.{GROUP}"
        text = f'{what} "{name}" is forbidden: {message}' if name else f"{what} is forbidden: {message}"
        return errors.Forbidden(text, name=name, group=GROUP, kind=self._resource)

    @staticmethod
    def _checked(opts: WriteOptions) -> tuple[UserInfo, Access] | None:
        """The requester and access to check a write against; None when it escalates freely (kube's
        EscalationAllowed: no user, the server's own write, or system:masters)."""
        user, access = opts.requester, opts.access
        if user is None or access is None or SYSTEM_MASTERS in user.groups:
            return None
        return user, access

    async def _confirm_no_escalation(self, user: UserInfo, access: Access, namespace: str, name: str,
                                     rules: Any, message: str = "") -> None:
        """kube's ConfirmNoEscalation: ``rules`` must be covered by what ``user`` holds in ``namespace``."""
        resolver = access.policy_rules()
        owner, errs = resolver.rules_and_errors(user, namespace) if resolver is not None else ([], [])
        wanted = [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []
        refusal = escalation_error(user, owner, wanted, errs)
        if refusal is not None:
            raise self._forbidden(name, message or refusal)


class _RoleEscalation(_RBACStrategy):
    """Roles and ClusterRoles: kube's role/clusterrole policybased storage."""

    _aggregates: bool = False  # ClusterRoles: an aggregationRule needs full authority

    async def authorize_write(self, new: Obj, old: Obj | None, opts: WriteOptions) -> None:
        checked = self._checked(opts)
        if checked is None:
            return
        user, access = checked
        md = new.get("metadata") or {}
        name, namespace = str(md.get("name") or ""), str(md.get("namespace") or "")
        # kube's RoleEscalationAuthorized asks with the request's name: none on a create (a POST).
        decision = await access.authorize(Attributes(user, "escalate", True, GROUP, "*", self._resource, "",
                                                     namespace, name if old is not None else ""))
        if decision.allowed:
            return
        if old is not None and only_gc_fields_change(new, old):
            return
        await self._confirm_no_escalation(user, access, namespace, name, new.get("rules") or [])
        if self._aggregates and (new.get("aggregationRule") or (old is not None and old.get("aggregationRule"))):
            await self._confirm_no_escalation(user, access, namespace, name, list(FULL_AUTHORITY),
                                              "must have cluster-admin privileges to use the aggregationRule")


class _BindingEscalation(_RBACStrategy):
    """RoleBindings and ClusterRoleBindings: kube's rolebinding/clusterrolebinding policybased storage."""

    async def authorize_write(self, new: Obj, old: Obj | None, opts: WriteOptions) -> None:
        checked = self._checked(opts)
        if checked is None:
            return
        user, access = checked
        md = new.get("metadata") or {}
        name, namespace = str(md.get("name") or ""), str(md.get("namespace") or "")
        if old is not None and only_gc_fields_change(new, old):
            return
        ref = new.get("roleRef") or {}
        kind, role_name, ref_group = str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("apiGroup") or "")
        # kube's BindingAuthorized: "bind" on the role, in the binding's namespace ("" for a cluster binding).
        if kind in ("Role", "ClusterRole"):
            decision = await access.authorize(Attributes(
                user, "bind", True, ref_group, "", "roles" if kind == "Role" else "clusterroles", "",
                namespace, role_name))
            if decision.allowed:
                return
        resolver = access.policy_rules()
        if kind not in ("Role", "ClusterRole"):
            raise self._forbidden(name, f'unsupported role reference kind: "{kind}"')
        rules, _ = resolver.role_reference_rules(kind, role_name, namespace) if resolver is not None else (None, "")
        if rules is None:
            # kube resolves the role through its registry: the store's NotFound text.
            plural = "roles" if kind == "Role" else "clusterroles"
            raise self._forbidden(name, f'{plural}.{GROUP} "{role_name}" not found')
        await self._confirm_no_escalation(user, access, namespace, name, rules)


_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields", "resourceVersion", "generation")


def only_gc_fields_change(new: Obj, old: Obj) -> bool:
    """kube's IsOnlyMutatingGCFields: the update changes nothing but owner references and finalizers
    (and what the server keeps itself: selfLink, managedFields); empty and absent compare equal."""
    def stripped(obj: Obj) -> Obj:
        out = {k: v for k, v in obj.items() if k != "metadata" and v not in (None, [], {})}
        md = {k: v for k, v in (obj.get("metadata") or {}).items()
              if k not in _GC_FIELDS and v not in (None, [], {}, "")}
        out["metadata"] = md
        return out

    return stripped(new) == stripped(old)


class RoleStrategy(_RoleEscalation):
    _resource = "roles"

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_role_update(new, old)


class RoleBindingStrategy(_BindingEscalation):
    _resource = "rolebindings"

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_role_binding(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_role_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_role_binding_update(new, old)


class ClusterRoleStrategy(_RoleEscalation):
    _resource = "clusterroles"
    _aggregates = True

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_cluster_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_cluster_role_update(new, old)


class ClusterRoleBindingStrategy(_BindingEscalation):
    _resource = "clusterrolebindings"

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_cluster_role_binding(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_cluster_role_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_cluster_role_binding_update(new, old)


ROLES: Final = Resource(group=GROUP, version="v1", resource="roles", kind="Role", strategy=RoleStrategy())
ROLE_BINDINGS: Final = Resource(group=GROUP, version="v1", resource="rolebindings", kind="RoleBinding",
                                strategy=RoleBindingStrategy())
CLUSTER_ROLES: Final = Resource(group=GROUP, version="v1", resource="clusterroles", kind="ClusterRole",
                                namespaced=False, strategy=ClusterRoleStrategy())
CLUSTER_ROLE_BINDINGS: Final = Resource(group=GROUP, version="v1", resource="clusterrolebindings",
                                        kind="ClusterRoleBinding", namespaced=False,
                                        strategy=ClusterRoleBindingStrategy())
