"""Facades: what a script sees when it imports a standard module.

A facade holds a curated set of functions, classes and immutable constants, never
a module: ``json.codecs`` or ``datetime.sys`` simply do not exist on it.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Collection, Mapping
from typing import Any

from ..sandbox._builtins import guarded_type
from ..sandbox._ownership import DUNDERS_SHOWN, SHOWN
from ..sandbox._plain_arguments import plain_arguments
from ..sandbox._sealed import seal
from ..sandbox._work_bounds import ticking, ticking_factory


class Facade:
    """A read-only module stand-in with exactly the names it was given."""

    # No ``__name__``: a failed ``from json import decoder`` would then look for
    # "json.decoder" in the host's sys.modules, and hand the script the real module.
    __slots__ = ("_members", "_name")

    def __init__(self, name: str, members: Mapping[str, Any], *, own: Collection[str] = ()) -> None:
        """``own``: members made for one session's facade alone, which may be mutable as
        CPython's are (``sys.argv``); every other member is immutable."""
        for key, value in members.items():
            if isinstance(value, types.ModuleType):  # a submodule is a facade of its own
                raise TypeError(f"facade {name}.{key} must not be a module")
            if isinstance(value, list | dict | set | bytearray) and key not in own:
                raise TypeError(f"facade {name}.{key} must be immutable")
            if isinstance(value, types.FunctionType) and value.__module__.startswith(__package__):
                # a wrapper written here shows the public name, not its private one
                value.__name__ = value.__qualname__ = key
            if isinstance(value, type) and value.__module__.startswith(_OWN_MODULES):
                value.__module__ = name  # io.StringIO, not the runtime's module that made it
        object.__setattr__(self, "_name", name)
        # read-only: a static facade is every in-process session's, so no one may swap a member
        object.__setattr__(self, "_members", types.MappingProxyType(dict(members)))

    def __getattr__(self, key: str) -> Any:
        try:
            return self._members[key]
        except KeyError:
            # "in scripts" where the module has the name and scripts are not given it;
            # CPython's words where the module has no such name either (its namespace
            # read, nothing of it run)
            real = sys.modules.get(self._name)
            withheld = real is None or key in vars(real)
            where = " in scripts" if withheld else ""
            raise AttributeError(f"module {self._name!r} has no attribute {key!r}{where}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"module {self._name!r} is read-only")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"module {self._name!r} is read-only")

    def __dir__(self) -> list[str]:
        return sorted(self._members)

    @property
    def __all__(self) -> tuple[str, ...]:
        """What ``from module import *`` binds: the public members (never a guard's name)."""
        return tuple(name for name in self._members if not name.startswith("_"))

    def __repr__(self) -> str:
        return f"<module {self._name!r} (sandboxed)>"

    def __copy__(self) -> Facade:
        return self

    def __deepcopy__(self, memo: Any) -> Facade:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a sandboxed module cannot be pickled")


def _module_dunder(facade: Facade, name: str) -> str | None:
    """A facade's ``__name__`` and ``__doc__`` as scripts read them: the real module's (the
    facade holds neither: see ``Facade``)."""
    own: str = object.__getattribute__(facade, "_name")
    real = sys.modules.get(own)
    if name == "__name__":
        shown = getattr(real, "__name__", own)  # os.path is posixpath
        return shown if type(shown) is str else own
    if name == "__doc__":
        doc = getattr(real, "__doc__", None)
        return doc if type(doc) is str else None
    raise AttributeError(f"module {own!r} has no attribute {name!r}")


DUNDERS_SHOWN[Facade] = _module_dunder

_OWN_MODULES = ("codeact.",)  # the runtime's own modules, whose names scripts never see


def pick(module: types.ModuleType, names: str) -> dict[str, Any]:
    """The named members of ``module`` (names separated by spaces)."""
    return {name: getattr(module, name) for name in names.split()}


def checked_class(
    real: type,
    *,
    held: Collection[str] = (),
    drained: Collection[str] = (),
    passed: Collection[str] = (),
    made: type | None = None,
) -> type:
    """A stand-in for the host class ``real`` whose construction checks its arguments as
    ``plain_arguments`` does (its ``__init__`` is Python code that acts on them);
    ``isinstance`` and ``type()`` answer as for ``real``. ``made``: the runtime's own
    subclass of ``real`` that calling the stand-in makes (its class methods are the
    stand-in's too)."""
    made = made or real
    construct = plain_arguments(made, held=held, drained=drained, passed=passed)
    class_methods = {
        name: getattr(made, name)
        for name, member in vars(real).items()
        if isinstance(member, classmethod) and not name.startswith("_")
    }
    stand_in = seal(guarded_type(real, construct, **class_methods))
    SHOWN[real] = SHOWN[made] = stand_in
    return stand_in


def plain_functions(
    module: types.ModuleType,
    names: str,
    *,
    held: Collection[str] = (),
    drained: Collection[str] = (),
    passed: Collection[str] = (),
) -> dict[str, Any]:
    """The named Python functions of ``module``, each taking plain values only (see
    ``plain_arguments``); ``held``, ``drained`` and ``passed`` name parameters any of them
    may have."""
    members = {}
    for name in names.split():
        function = getattr(module, name)
        parameters = inspect.signature(function).parameters
        members[name] = plain_arguments(
            function,
            held=[p for p in held if p in parameters],
            drained=[p for p in drained if p in parameters],
            passed=[p for p in passed if p in parameters],
        )
    return members


__all__ = ["Facade", "checked_class", "pick", "plain_functions", "ticking", "ticking_factory"]
