"""DefaultTolerationSeconds (kube's plugin/pkg/admission/defaulttolerationseconds).

A pod created or updated without a toleration of the ``node.kubernetes.io/not-ready`` or
``node.kubernetes.io/unreachable`` NoExecute taints (a toleration of the key, or of every key, with
the NoExecute effect or every effect) gets one for each, ``operator: Exists``, with
``tolerationSeconds`` from --default-not-ready-toleration-seconds and
--default-unreachable-toleration-seconds (300 both by default).
"""

from __future__ import annotations

from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
DEFAULT_SECONDS: Final = 300
# The server hands the two flags over as this plugin's configuration (kube reads them as flags).
NOT_READY_KEY: Final = "defaultNotReadyTolerationSeconds"
UNREACHABLE_KEY: Final = "defaultUnreachableTolerationSeconds"


def _tolerates(tolerations: list[Obj], key: str) -> bool:
    return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None) for t in tolerations)


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        config = deps.configuration.get(self.name) or {}
        self.seconds = {NOT_READY: int(config.get(NOT_READY_KEY, DEFAULT_SECONDS)),
                        UNREACHABLE: int(config.get(UNREACHABLE_KEY, DEFAULT_SECONDS))}

    async def admit(self, a: Attributes) -> None:
        if a.subresource or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        tolerations = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
        present = [t for t in tolerations if isinstance(t, dict)]
        added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                 for key, seconds in self.seconds.items() if not _tolerates(present, key)]
        if added:
            spec["tolerations"] = tolerations + added


__all__ = ["DefaultTolerationSeconds", "NOT_READY", "UNREACHABLE"]
