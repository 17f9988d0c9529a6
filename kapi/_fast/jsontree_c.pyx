# cython: language_level=3, boundscheck=False, wraparound=False
"""Decoded JSON trees: a deep copy (the compiled twin of ``jsontree_py``, which documents it)."""

from cpython.dict cimport PyDict_Next, PyDict_SetItem, PyDict_New
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_GET_SIZE, PyList_GET_ITEM
from cpython.ref cimport Py_INCREF, PyObject

__all__ = ["copy_tree"]


cdef object _copy(object value):
    cdef Py_ssize_t pos = 0, i, n
    cdef PyObject* k
    cdef PyObject* v
    cdef dict out
    cdef list items
    cdef object item
    if isinstance(value, dict):
        out = PyDict_New()
        while PyDict_Next(value, &pos, &k, &v):
            item = <object>v
            if isinstance(item, (dict, list)):
                item = _copy(item)
            PyDict_SetItem(out, <object>k, item)
        return out
    if isinstance(value, list):
        n = PyList_GET_SIZE(value)
        items = PyList_New(n)
        for i in range(n):
            item = <object>PyList_GET_ITEM(value, i)
            if isinstance(item, (dict, list)):
                item = _copy(item)
            Py_INCREF(item)
            PyList_SET_ITEM(items, i, item)
        return items
    return value


def copy_tree(value):
    """A copy of ``value`` sharing no dict or list with it (subclasses copied as their base type)."""
    return _copy(value)
