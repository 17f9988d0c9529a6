"""Authorization: the modes kapi serves (AlwaysAllow, AlwaysDeny), unioned in flag order."""

from __future__ import annotations

from dataclasses import dataclass

from kapi import errors
from kapi.chain.context import UserInfo

MODES = ("AlwaysAllow", "AlwaysDeny")


@dataclass(frozen=True)
class Authorizer:
    modes: tuple[str, ...] = ("AlwaysAllow",)

    def __post_init__(self) -> None:
        for m in self.modes:
            if m not in MODES:
                raise ValueError(f"unsupported authorization mode {m!r}; supported: {', '.join(MODES)}")

    def allowed(self, user: UserInfo) -> tuple[bool, str]:
        """The decision for ``user`` (any attributes): (allowed, reason)."""
        if "system:masters" in user.groups:
            return True, "the user is in group system:masters"
        for mode in self.modes:
            if mode == "AlwaysAllow":
                return True, "authorization mode AlwaysAllow"
        return False, ""

    def authorize(self, user: UserInfo, verb: str, resource: str, group: str, namespace: str, name: str) -> None:
        """Raise 403 Forbidden unless a mode allows the request; system:masters always may."""
        if self.allowed(user)[0]:
            return
        what = f"{resource}.{group}" if group else resource
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        raise errors.Forbidden(f'{what} "{name}" is forbidden: User "{user.name}" cannot {verb} resource '
                               f'"{resource}" in API group "{group}"{where}' if name else
                               f'{what} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" '
                               f'in API group "{group}"{where}', name=name, group=group, kind=resource)
