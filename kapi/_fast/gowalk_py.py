"""Go's decode and encode of an object, in place, along compiled plans (the pure twin of ``gowalk_c``).

``kapi.object.schema.gozero`` compiles the plans (one per Go struct type: ``act`` maps a JSON key
to ``(action, zero or sub-plan, scalar types or how to walk in)``, ``missing`` the fields Go always
writes with a maker of their zero value, ``zero`` the zero struct as Go writes it) and calls
``walk``; the action codes below are its, repeated here so that this layer imports nothing of it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["copy_zero", "walk"]

SCALAR, SCALAR_OMIT, STRUCT, OPAQUE, NIL, NIL_OMIT, COLL, COLL_OMIT = range(8)
INTO_NONE, INTO_ONE, INTO_ITEMS, INTO_VALUES = range(4)
_EMPTY_TYPES = (list, dict, str)  # str: a []byte is base64 in JSON


def copy_zero(template: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of a zero struct template (its nested dicts copied)."""
    return {k: copy_zero(v) if type(v) is dict else v for k, v in template.items()}


def walk(plan: Any, obj: dict[str, Any]) -> None:
    """``obj`` as Go's decode into ``plan``'s struct and encode would write it, in place."""
    act = plan.act
    drop: list[str] | None = None
    for key, value in obj.items():
        entry = act.get(key)
        if entry is None:
            continue  # not a Go field: unknown-field handling is not ours
        action, arg, extra = entry
        if action == SCALAR_OMIT:
            if value is None or (type(value) in extra and value == arg):
                (drop := drop or []).append(key)
        elif action == STRUCT:
            if type(value) is dict:
                walk(arg, value)
            elif value is None:
                obj[key] = copy_zero(arg.zero)
        elif action == OPAQUE:
            if value is None:
                obj[key] = arg
        elif action >= NIL:
            if value is None:
                if action == NIL_OMIT or action == COLL_OMIT:
                    (drop := drop or []).append(key)
            elif action == COLL_OMIT and not value and type(value) in _EMPTY_TYPES:
                (drop := drop or []).append(key)
            elif extra == INTO_ONE:
                if type(value) is dict:
                    walk(arg, value)
            elif extra == INTO_ITEMS:
                if type(value) is list:
                    for i, item in enumerate(value):
                        if type(item) is dict:
                            walk(arg, item)
                        elif item is None:
                            value[i] = copy_zero(arg.zero)  # a null element decodes as the zero struct
            elif extra == INTO_VALUES:
                if type(value) is dict:
                    for k, item in value.items():
                        if type(item) is dict:
                            walk(arg, item)
                        elif item is None:
                            value[k] = copy_zero(arg.zero)
        elif value is None:  # SCALAR: null leaves the Go zero value
            obj[key] = arg
    if drop:
        for key in drop:
            del obj[key]
    for key, make in plan.missing:
        if key not in obj:
            obj[key] = make()
