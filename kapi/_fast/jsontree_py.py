"""Decoded JSON trees: a deep copy (the pure twin of ``jsontree_c``).

``copy_tree`` copies what a decoded body or stored object is made of: every ``dict`` and ``list``
is new, everything else (str, int, float, bool, None, bytes: immutable) is shared. It is what
``copy.deepcopy`` gives for such a tree, without deepcopy's memo and dispatch: the registry copies
the stored object once per write.
"""

from __future__ import annotations

from typing import Any

__all__ = ["copy_tree"]


def copy_tree(value: Any) -> Any:
    """A copy of ``value`` sharing no dict or list with it (subclasses copied as their base type)."""
    if isinstance(value, dict):
        return {k: copy_tree(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) if isinstance(v, (dict, list)) else v for v in value]
    return value
