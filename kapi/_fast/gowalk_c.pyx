# cython: language_level=3, boundscheck=False, wraparound=False
"""Go's decode and encode of an object, in place, along compiled plans (the compiled twin of
``gowalk_py``, which documents it)."""

__all__ = ["copy_zero", "walk"]

cdef enum:
    C_SCALAR = 0
    C_SCALAR_OMIT = 1
    C_STRUCT = 2
    C_OPAQUE = 3
    C_NIL = 4
    C_NIL_OMIT = 5
    C_COLL = 6
    C_COLL_OMIT = 7
    C_INTO_ONE = 1
    C_INTO_ITEMS = 2
    C_INTO_VALUES = 3

SCALAR, SCALAR_OMIT, STRUCT, OPAQUE, NIL, NIL_OMIT, COLL, COLL_OMIT = range(8)
INTO_NONE, INTO_ONE, INTO_ITEMS, INTO_VALUES = range(4)


cpdef dict copy_zero(dict template):
    """A fresh copy of a zero struct template (its nested dicts copied)."""
    cdef dict out = {}
    for k, v in template.items():
        out[k] = copy_zero(v) if type(v) is dict else v
    return out


cdef inline bint _empty_coll(object value):
    cdef type t = type(value)
    return (t is list or t is dict or t is str) and not value


cpdef void walk(object plan, dict obj) except *:
    """``obj`` as Go's decode into ``plan``'s struct and encode would write it, in place."""
    cdef dict act = plan.act
    cdef list drop = None
    cdef tuple entry
    cdef int action, extra
    cdef Py_ssize_t i
    cdef object arg, value, item, key, k
    cdef list items
    cdef dict values
    for key, value in obj.items():
        e = act.get(key)
        if e is None:
            continue  # not a Go field: unknown-field handling is not ours
        entry = <tuple>e
        action = entry[0]
        arg = entry[1]
        if action == C_SCALAR_OMIT:
            if value is None or (type(value) in entry[2] and value == arg):
                if drop is None:
                    drop = []
                drop.append(key)
        elif action == C_STRUCT:
            if type(value) is dict:
                walk(arg, <dict>value)
            elif value is None:
                obj[key] = copy_zero(arg.zero)
        elif action == C_OPAQUE:
            if value is None:
                obj[key] = arg
        elif action >= C_NIL:
            extra = entry[2]
            if value is None:
                if action == C_NIL_OMIT or action == C_COLL_OMIT:
                    if drop is None:
                        drop = []
                    drop.append(key)
            elif action == C_COLL_OMIT and _empty_coll(value):
                if drop is None:
                    drop = []
                drop.append(key)
            elif extra == C_INTO_ONE:
                if type(value) is dict:
                    walk(arg, <dict>value)
            elif extra == C_INTO_ITEMS:
                if type(value) is list:
                    items = <list>value
                    for i in range(len(items)):
                        item = items[i]
                        if type(item) is dict:
                            walk(arg, <dict>item)
                        elif item is None:
                            items[i] = copy_zero(arg.zero)  # a null element decodes as the zero struct
            elif extra == C_INTO_VALUES:
                if type(value) is dict:
                    values = <dict>value
                    for k, item in values.items():
                        if type(item) is dict:
                            walk(arg, <dict>item)
                        elif item is None:
                            values[k] = copy_zero(arg.zero)
        elif value is None:  # SCALAR: null leaves the Go zero value
            obj[key] = arg
    if drop is not None:
        for key in drop:
            del obj[key]
    for key, make in plan.missing:
        if key not in obj:
            obj[key] = make()
