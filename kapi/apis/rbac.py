"""rbac.authorization.k8s.io/v1: Roles, RoleBindings and their cluster-wide twins (path-segment names)."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_cluster_role_binding, default_role_binding
from kapi.object.validation import (RULE_PATH_SEGMENT, validate_cluster_role, validate_cluster_role_binding,
    validate_cluster_role_binding_update, validate_cluster_role_update, validate_role, validate_role_binding,
    validate_role_binding_update, validate_role_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

GROUP: Final = "rbac.authorization.k8s.io"


class _RBACStrategy(Strategy):
    name_rule = RULE_PATH_SEGMENT
    create_on_update = True


class RoleStrategy(_RBACStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        return validate_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_role_update(new, old)


class RoleBindingStrategy(_RBACStrategy):
    def default(self, obj: Obj, old: Obj | None) -> None:
        default_role_binding(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_role_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_role_binding_update(new, old)


class ClusterRoleStrategy(_RBACStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        return validate_cluster_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_cluster_role_update(new, old)


class ClusterRoleBindingStrategy(_RBACStrategy):
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
