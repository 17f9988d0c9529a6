# cython: language_level=3
"""A watch-cache event's fan-out: what each watcher sees of it, and queueing it to them (the compiled twin).

Same API and behaviour as ``fanout_py`` (the typed, documented reference).
"""

from cpython.unicode cimport PyUnicode_Tailmatch


cdef inline bint _matches(object filt, object entry) except -1:
    cdef object key = entry.key
    cdef object prefix = filt.key_prefix
    cdef object sel
    if type(key) is str and type(prefix) is str:
        if PyUnicode_Tailmatch(key, prefix, 0, len(<str>key), -1) == 0:
            return False
    elif not key.startswith(prefix):
        return False
    sel = filt.label
    if sel is not None and not sel.matches(entry.labels):
        return False
    sel = filt.field
    return sel is None or bool(sel.matches(entry.fields))


def matches(filt, entry):
    """Whether ``entry`` is in ``filt``'s key range and satisfies its label and field selectors."""
    return _matches(filt, entry)


cdef object _transition(object filt, object ev):
    cdef object entry = ev.entry
    cdef object prev = ev.prev
    cdef bint was = prev is not None and _matches(filt, prev)
    cdef bint now
    if ev.type == "DELETED":
        if was or (entry is not None and _matches(filt, entry)):
            return ("DELETED", False)
        return None
    now = entry is not None and _matches(filt, entry)
    if now:
        return ("MODIFIED", False) if was else ("ADDED", False)
    if was:
        return ("DELETED", True)
    return None


def transition(filt, ev):
    """What a watcher with ``filt`` sees of ``ev`` (SEMANTICS §2.5): (type, use previous state) or None."""
    return _transition(filt, ev)


def offer_event(watchers, ev):
    """Queue ``ev`` to every watcher of ``watchers`` that sees it, without waiting; the full ones' (watcher, item)."""
    cdef list blocked = []
    cdef object revision = ev.revision
    cdef object w, seen, item
    for w in watchers:
        if w.closed or revision <= w.min_revision:
            continue
        seen = _transition(w.filter, ev)
        if seen is None:
            continue
        item = (ev, (<tuple>seen)[0], (<tuple>seen)[1])
        if not w.offer(item):
            blocked.append((w, item))
    return blocked
