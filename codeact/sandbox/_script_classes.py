"""How a class statement makes a script's class: the metaclass its bases imply, the class
marked as the script's from inside ``type.__new__``, and no host base or metaclass that
would lend a script methods trusting their receiver."""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable
from typing import Any

from ._errors import SecurityViolation, may_suppress
from ._ownership import BASE_CLASSES, CLASS_BUILDERS, SCRIPT_CLASSES, is_script_class, real_base

# Builtin value types whose subclasses host caches would hash (see ScriptClassFactory).
_HASHED_BUILTINS = (str, bytes, int, float, complex, tuple, frozenset)


class ScriptClassFactory:
    """Builds script classes with the metaclass their bases imply, and remembers them."""

    def __init__(self, raw: set[type]) -> None:
        self._raw = raw

    def __prepare__(self, name: str, bases: tuple[type, ...], **kwargs: Any) -> Any:
        if kwargs:  # class X(metaclass=...), or keywords for a host __init_subclass__
            raise SecurityViolation("class keywords are not allowed in scripts")
        bases = tuple(map(real_base, bases))
        meta = _metaclass_for(bases)
        namespace = meta.__prepare__(name, bases)
        # The class is the script's from the moment it exists: an Enum builds its members
        # (running the script's __init__ on them) before the metaclass returns. First in
        # the namespace, so its __set_name__ runs before any member's.
        namespace[_REGISTRAR] = _Registrar(self._raw)
        return namespace

    def __call__(self, name: str, bases: tuple[type, ...], namespace: Any, **kwargs: Any) -> type:
        if kwargs:
            raise SecurityViolation("class keywords are not allowed in scripts")
        bases = tuple(map(real_base, bases))
        for base in bases:
            builder = CLASS_BUILDERS.get(base)
            if builder is not None:  # class P(NamedTuple): a class of another shape
                bases, namespace = builder(name, bases, namespace)
                break
        meta = _metaclass_for(bases)
        if "__hash__" in namespace and any(issubclass(b, _HASHED_BUILTINS) for b in bases):
            # such a key looks like a host string or number to host caches (strptime's),
            # which would then run the script's __hash__ and __eq__ in other sessions
            raise SecurityViolation("a subclass of a builtin value type may not define __hash__")
        if "__exit__" in namespace:
            namespace["__exit__"] = _unswallowing_exit(namespace["__exit__"])
        if "__aexit__" in namespace:
            namespace["__aexit__"] = _unswallowing_aexit(namespace["__aexit__"])
        cls: type = meta(name, bases, namespace)
        with contextlib.suppress(AttributeError, TypeError):
            type.__delattr__(cls, _REGISTRAR)
        SCRIPT_CLASSES.add(cls)
        self._raw.add(cls)
        return cls


_REGISTRAR = "__codeact_register__"


class _Registrar:
    """Marks the class being built as the script's, from inside ``type.__new__``."""

    __slots__ = ("_raw",)

    def __init__(self, raw: set[type]) -> None:
        self._raw = raw

    def __set_name__(self, owner: type, name: str) -> None:
        SCRIPT_CLASSES.add(owner)
        self._raw.add(owner)

    def __get__(self, obj: Any, owner: Any = None) -> None:
        return None


def _unswallowing_aexit(exit_method: Callable[..., Any]) -> Callable[..., Any]:
    """``__aexit__`` as ``__exit__``: it may suppress the script's errors, never a stop."""

    async def __aexit__(self: Any, kind: Any, error: Any, traceback: Any) -> Any:
        suppress = await exit_method(self, kind, error, traceback)
        return suppress and may_suppress(error)

    return __aexit__


def _unswallowing_exit(exit_method: Callable[..., Any]) -> Callable[..., Any]:
    """A script's ``__exit__`` may suppress its own errors, never a limit or a stop."""

    def __exit__(self: Any, kind: Any, error: Any, traceback: Any) -> Any:
        suppress = exit_method(self, kind, error, traceback)
        return suppress and may_suppress(error)

    return __exit__


class ScriptABCMeta(abc.ABCMeta):
    """The metaclass of a script's abstract classes: the script's ``register``, not the host's.

    A script ABC derives from a host ABC (``collections.abc.Mapping``), whose own
    ``isinstance`` asks each subclass's registry: with the host's ``register``, one
    script could make ``isinstance([], Mapping)`` true for the host and every session.
    Here a script registers its own classes only, and no class is made but by the class
    statement (the factory puts a registrar no script can make in the namespace).
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], /, **kw: Any):  # type: ignore[no-untyped-def]
        if type(namespace.get(_REGISTRAR)) is not _Registrar:  # the metaclass called directly
            raise SecurityViolation("classes are made by the class statement in scripts")
        return super().__new__(mcs, name, bases, namespace, **kw)

    def register(cls, subclass: Any) -> Any:
        if not isinstance(subclass, type) or not is_script_class(subclass):
            what = getattr(subclass, "__name__", type(subclass).__name__)
            raise SecurityViolation(
                f"a script's abstract class registers the script's own classes only, not {what}"
            )
        return super().register(subclass)


def _metaclass_for(bases: tuple[type, ...]) -> type:
    winner: type = type
    for base in bases:
        # A host class as a base lends the script methods that read attributes with the
        # real getattr (string.Formatter) or write host registries (typing, abc).
        if not isinstance(base, type) or not (base in SCRIPT_CLASSES or base in BASE_CLASSES):
            what = base.__name__ if isinstance(base, type) else type(base).__name__
            raise SecurityViolation(f"script classes cannot derive from {what}")
        meta = type(base)
        if issubclass(meta, winner):
            winner = meta
    if winner is abc.ABCMeta:  # a host ABC as a base: the class gets the script's metaclass
        return ScriptABCMeta
    if winner is not type and winner is not ScriptABCMeta and winner.__module__ != "enum":
        raise SecurityViolation(
            f"classes with metaclass {winner.__name__} cannot be defined in scripts"
        )
    return winner


__all__ = ["ScriptABCMeta", "ScriptClassFactory"]
