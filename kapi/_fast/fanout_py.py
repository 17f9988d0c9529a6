"""A watch-cache event's fan-out: what each watcher sees of it, and queueing it to them (the pure twin).

The watch cache hands every event to each interested watcher without waiting; this is the loop
that does it, once per event over up to thousands of watchers. Duck-typed over the cacher's
objects (this layer imports nothing above ``errors``):

- an event has ``type`` (ADDED, MODIFIED, DELETED), ``revision``, ``entry`` and ``prev`` (its new and
  previous states, each None or with ``key``, ``labels`` and ``fields``);
- a filter has ``key_prefix`` and ``label`` / ``field`` (None, or a selector with ``matches``);
- a watcher has ``closed``, ``min_revision``, ``filter`` and ``offer(item) -> bool`` (queue without
  waiting; False when its channel is full).
"""

from __future__ import annotations

from typing import Any, Iterable


def matches(filt: Any, entry: Any) -> bool:
    """Whether ``entry`` is in ``filt``'s key range and satisfies its label and field selectors."""
    if not entry.key.startswith(filt.key_prefix):
        return False
    label = filt.label
    if label is not None and not label.matches(entry.labels):
        return False
    field = filt.field
    return field is None or field.matches(entry.fields)


def transition(filt: Any, ev: Any) -> tuple[str, bool] | None:
    """What a watcher with ``filt`` sees of ``ev`` (SEMANTICS §2.5): (type, use previous state) or None.

    DELETED when the previous state matched (or, for a deletion, its last state does); ADDED when
    only the new state matches, MODIFIED when both do; DELETED of the previous state when an update
    takes the object out of the watcher's selection.
    """
    entry, prev = ev.entry, ev.prev
    was = prev is not None and matches(filt, prev)
    if ev.type == "DELETED":
        return ("DELETED", False) if was or (entry is not None and matches(filt, entry)) else None
    now = entry is not None and matches(filt, entry)
    if now:
        return ("MODIFIED", False) if was else ("ADDED", False)
    if was:
        return ("DELETED", True)
    return None


def offer_event(watchers: Iterable[Any], ev: Any) -> list[tuple[Any, tuple[Any, str, bool]]]:
    """Queue ``ev`` to every watcher of ``watchers`` that sees it, without waiting.

    A closed watcher, or one whose events start after ``ev``, is skipped. Each gets ``(ev, type,
    use previous state)``. Returns the (watcher, item) pairs whose channel was full, in order.
    """
    blocked: list[tuple[Any, tuple[Any, str, bool]]] = []
    revision = ev.revision
    for w in watchers:
        if w.closed or revision <= w.min_revision:
            continue
        seen = transition(w.filter, ev)
        if seen is None:
            continue
        item = (ev, seen[0], seen[1])
        if not w.offer(item):
            blocked.append((w, item))
    return blocked
