"""Priority (kube's plugin/pkg/admission/priority).

A pod's create resolves ``spec.priorityClassName`` to ``spec.priority`` and the class's
``preemptionPolicy``; a pod naming no class gets the global default class (the lowest valued one if
several claim it), else priority 0 and ``PreemptLowerPriority``. A class that does not exist is
refused (403 ``no PriorityClass with name <n> was found``), as is a pod giving a priority or
preemption policy other than its class's. An update keeps the priority and policy the pod was
created with. A PriorityClass may be made ``globalDefault`` only while no other class is
(403 ``PriorityClass <n> is already marked as default. Only one default can exist``).
"""

from __future__ import annotations

from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.errors import CorruptObject
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

GROUP: Final = "scheduling.k8s.io"
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0
PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


class Priority(Plugin):
    name = "Priority"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"), (GROUP, "priorityclasses")))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch(GROUP, "priorityclasses")

    async def default_class(self) -> Obj | None:
        """The global default PriorityClass; of several (a race), the one of the lowest value."""
        inf = self.deps.objects.watch(GROUP, "priorityclasses")
        if inf is not None and inf.has_synced:
            # only the classes whose stored bytes mention globalDefault are decoded
            classes = []
            for item in inf.items():
                if item.may_have("globalDefault"):
                    try:
                        classes.append(item.object())
                    except CorruptObject:
                        continue
        else:
            classes = await self.deps.objects.list(GROUP, "priorityclasses")
        found: Obj | None = None
        for pc in classes:
            if pc.get("globalDefault") is True and (found is None or found.get("value", 0) > pc.get("value", 0)):
                found = pc
        return found

    async def admit(self, a: Attributes) -> None:
        if a.subresource or a.plural != "pods" or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        if a.operation == UPDATE:
            # set on create; validation refuses changing them, so an update without them keeps the old ones
            old_spec = _d(_d(a.old).get("spec"))
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
            return
        class_name = spec.get("priorityClassName")
        if not class_name:
            default = await self.default_class()
            if default is not None:
                spec["priorityClassName"] = _d(default.get("metadata")).get("name", "")
                priority, policy = default.get("value", 0), default.get("preemptionPolicy")
            else:
                spec.pop("priorityClassName", None)
                priority, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY
        else:
            pc = await self.deps.objects.get(GROUP, "priorityclasses", "", str(class_name))
            if pc is None:
                raise forbidden(a, f"no PriorityClass with name {class_name} was found")
            priority, policy = pc.get("value", 0), pc.get("preemptionPolicy")
        given = spec.get("priority")
        if given is not None and given != priority:
            raise forbidden(a, f"the integer value of priority ({given}) must not be provided in pod spec; priority "
                            f"admission controller computed {priority} from the given PriorityClass name")
        spec["priority"] = priority
        if policy is not None:
            given = spec.get("preemptionPolicy")
            if given is not None and given != policy:
                raise forbidden(a, f"the string value of PreemptionPolicy ({given}) must not be provided in pod spec; "
                                f"priority admission controller computed {policy} from the given PriorityClass name")
            spec["preemptionPolicy"] = policy

    async def validate(self, a: Attributes) -> None:
        if a.subresource or a.plural != "priorityclasses" or not isinstance(a.obj, dict):
            return
        if a.obj.get("globalDefault") is not True:
            return
        default = await self.default_class()
        if default is None:
            return
        default_name = _d(default.get("metadata")).get("name", "")
        if a.operation == CREATE or default_name != _d(a.obj.get("metadata")).get("name"):
            raise forbidden(a, f"PriorityClass {default_name} is already marked as default. Only one default can exist")


__all__ = ["Priority"]
