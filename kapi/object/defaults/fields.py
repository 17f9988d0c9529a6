"""What every defaulter shares: the ``defaulter`` decorator (create or update, non-objects left
alone) and the accessors that create a missing child object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


Obj = dict[str, Any]
_Defaulter = Callable[[Obj, "Obj | None"], None]


def defaulter(fill: _Defaulter) -> _Defaulter:
    """A per-kind defaulter (``default_<kind>(obj, old)``) with the rules they all share.

    ``old`` is the stored object on an update; without it the write is taken as
    a create, which also runs the create-only steps (pod status and QoS class). An
    object that was stored already (it has a resourceVersion) is an update whose
    caller gave no old object: it does not get the create-only steps again. Anything
    but a JSON object is left alone. (A pod's service account, priority and
    tolerations are admission's; a Job's selector and a namespace's finalizer its
    strategy's.)
    """
    @functools.wraps(fill)
    def default(obj: Obj, old: Obj | None = None) -> None:
        if not isinstance(obj, dict):
            return
        if old is None and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("resourceVersion"):
            old = obj
        fill(obj, old)
    return default


def _obj(parent: Obj, key: str) -> Obj:
    """``parent[key]`` as a dict, created when absent or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _dicts(value: object) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _unset(obj: Obj, key: str) -> bool:
    return obj.get(key) in (None, "")
