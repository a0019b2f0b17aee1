"""Classes no one can write: the runtime's own classes that every session shares.

A facade, stand-in or stream class is one object in the process: a method set on it by
one script (through any escape that reached ``type.__setattr__``) would run in every
other session and in the host. A metaclass's ``__setattr__`` is skipped by
``type.__setattr__(cls, ...)``; CPython's immutable-type flag is not: with it set,
every write to the class fails, whoever attempts it (and no instance can have its
``__class__`` swapped to or from it).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable
from types import ModuleType

_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (CPython 3.10+)
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (only those need sealing)
# PyTypeObject: the variable object header (3 words), then 18 words before tp_flags.
_FLAGS_OFFSET = 21 * ctypes.sizeof(ctypes.c_void_p)
_OWN_PACKAGES = ("codeact.", "stdlib_bindings")
_OWN_FOLDERS = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), name)
    for name in ("codeact", "stdlib_bindings")
)


def _flags_word(cls: type) -> ctypes.c_ulong:
    return ctypes.c_ulong.from_address(id(cls) + _FLAGS_OFFSET)


def seal(cls: type) -> type:
    """Make ``cls`` refuse every attribute write from now on; returns it (a decorator)."""
    if not cls.__flags__ & HEAP_TYPE or cls.__flags__ & _IMMUTABLE:
        return cls
    word = _flags_word(cls)
    if word.value != cls.__flags__:  # another layout than the one this was written for
        raise RuntimeError(f"cannot seal {cls.__qualname__}: unknown type layout")
    word.value = cls.__flags__ | _IMMUTABLE
    return cls


def seal_module_classes(modules: Iterable[ModuleType]) -> int:
    """Seal every class each module defines (not those it imports); the count sealed."""
    sealed = 0
    for module in modules:
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and _defined_here(value)
                and not value.__flags__ & _IMMUTABLE
            ):
                seal(value)
                sealed += value.__flags__ & HEAP_TYPE and 1
    return sealed


def _defined_here(cls: type) -> bool:
    """A class the runtime defined, whatever module name it shows (``Builtin`` shows
    ``builtins``): its module is ours, or its own functions were written in our files, or
    (a subclass with no function of its own, named after a real module's: ``queue.Empty``,
    ``pathlib.PosixPath``) the module it names is not loaded, or holds another class by
    its name. Only a class in one of our modules' namespaces is asked about."""
    if cls.__module__.startswith(_OWN_PACKAGES):
        return True
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and code.co_filename.startswith(_OWN_FOLDERS):
            return True
    named: object = sys.modules.get(cls.__module__)
    if named is None:  # a class's own module is loaded: this one's name was given to it
        return True
    for part in cls.__qualname__.split("."):
        named = vars(named).get(part) if hasattr(named, "__dict__") else None
    # another class by that name there: this one took the name (a module holding nothing
    # by it, a C module's class under another name, is no sign of ours)
    return isinstance(named, type) and named is not cls


def is_sealed(cls: type) -> bool:
    return bool(cls.__flags__ & _IMMUTABLE)


__all__ = ["HEAP_TYPE", "is_sealed", "seal", "seal_module_classes"]
