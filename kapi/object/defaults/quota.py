"""core/v1 LimitRanges (kube's pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem)."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _obj, defaulter


@defaulter
def default_limit_range(obj: Obj, old: Obj | None) -> None:
    """A Container item: its default limit is its max, its default request its default limit, else its min."""
    for item in _obj(obj, "spec").get("limits") or []:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        for source, target in (("max", "default"), ("default", "defaultRequest"), ("min", "defaultRequest")):
            values = item.get(source)
            if not isinstance(values, dict):
                continue
            for name, value in values.items():
                if not isinstance(item.get(target), dict):
                    item[target] = {}
                item[target].setdefault(name, value)
