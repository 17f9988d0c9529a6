"""Builds kapi's Cython twins unless KAPI_NO_EXTENSIONS=1 or the interpreter is not CPython.

A compiler error fails the build: there is no silent fallback to pure Python. The one case that
does not fail is a machine with no C compiler at all (an sdist installed where none exists): that is
found out before anything is compiled, by looking for the compiler build_ext would run, and then no
extension is built, this script says so on stderr, and ``kapi serve`` warns at start-up that it runs
on the pure twins. A compiler that exists and fails on the generated C still fails the install.
KAPI_REQUIRE_EXTENSIONS=1 (CI) makes a missing compiler an error too.
"""

import os
import platform
import shutil
import sys

from setuptools import setup


def missing_compiler() -> str:
    """Why build_ext would find no C compiler to run ('' when it would find one).

    The compiler is the one build_ext makes: distutils' default for this platform, customized from
    the interpreter's sysconfig and the CC / LDSHARED environment variables. On a Unix-like platform
    its compiler and linker executables must be on PATH (or be existing paths); MSVC must be found
    by distutils (it raises DistutilsPlatformError when no Visual C++ is installed). Nothing is
    compiled here, so a compiler that is present but fails is not mistaken for an absent one.
    """
    from distutils.ccompiler import new_compiler
    from distutils.errors import DistutilsPlatformError
    from distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    if compiler.compiler_type == "msvc":
        try:
            compiler.initialize()
        except DistutilsPlatformError as exc:
            return f"no C compiler: {exc}"
        return ""
    for role in ("compiler_so", "linker_so"):
        command = getattr(compiler, role, None)
        if command and shutil.which(command[0]) is None:
            return f"no C compiler: {command[0]!r} (the {role.split('_')[0]} build_ext would run) is not found on PATH"
    return ""


ext_modules = []
if os.environ.get("KAPI_NO_EXTENSIONS") != "1" and platform.python_implementation() == "CPython":
    missing = missing_compiler()
    if missing and os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
        sys.exit(f"kapi: {missing}; KAPI_REQUIRE_EXTENSIONS=1 requires the compiled twins")
    if missing:
        print(f"WARNING: kapi: {missing}. The compiled twins (kapi/_fast/*_c.pyx) are not built: kapi will "
              "run on its pure-Python twins, slower. Install a C compiler and reinstall kapi to build them.",
              file=sys.stderr)
    else:
        from Cython.Build import cythonize

        ext_modules = cythonize(
            ["kapi/_fast/*_c.pyx"],
            language_level=3,
            compiler_directives={"boundscheck": False, "wraparound": False},
        )

setup(ext_modules=ext_modules)
