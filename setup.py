"""Builds kapi's Cython twins unless KAPI_NO_EXTENSIONS=1 or the interpreter is not CPython.

A compiler error fails the build: there is no silent fallback to pure Python.
"""

import os
import platform

from setuptools import setup

ext_modules = []
if os.environ.get("KAPI_NO_EXTENSIONS") != "1" and platform.python_implementation() == "CPython":
    from Cython.Build import cythonize

    ext_modules = cythonize(
        ["kapi/_fast/*_c.pyx"],
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False},
    )

setup(ext_modules=ext_modules)
