"""``eval`` and ``exec``: a string a script builds runs as the script's own code.

The string is compiled under the script's policy (``compile_string``) and runs in the
script's thread, under its limits; it can name nothing the script could not have written.
The guards it compiles to are always the sandbox's own: a namespace the script passes is
never the one the code runs in. The code runs in a private copy that holds the guards
(the script's dict, or a mapping of its own, could otherwise hand the code a ``_write_``
of the script's making while it runs), and what it bound is copied back; ``globals()``
and ``locals()`` in it answer with the script's own dict, brought up to date first.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
from types import CodeType, FrameType
from typing import Any

from ._builtins import check_count
from ._compiler import FUTURE_ANNOTATIONS, SCRIPT_FILES, CompiledString, compile_string
from ._errors import LimitExceeded, SecurityViolation, recursion_safe
from ._guards import Builtin
from ._limits import Limits
from ._ownership import is_internal_name

_OPTIMIZED = 0x1  # CO_OPTIMIZED: a function's frame, whose locals are a snapshot
_PLAIN_TEXT = (str, bytes)
# The dicts a script gave eval or exec, by the private copy the code runs in, while it
# runs (id -> (copy, given)): globals() and locals() there answer with the script's own
# dict, brought up to date, as CPython's answer with the dict itself.
_GIVEN: dict[int, tuple[dict[str, Any], dict[Any, Any]]] = {}


def string_code_builtins(limits: Limits) -> dict[str, Builtin]:
    """``eval`` and ``exec`` for one sandbox (its limits bound the string's size)."""

    @recursion_safe  # checks its arguments, then relays
    def eval_(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError("eval() takes no keyword arguments")
        source, given_globals, given_locals = _positional("eval", args)
        if given_globals is not None and type(given_globals) is not dict:
            if _is_mapping(given_globals):
                raise TypeError("globals must be a real dict; try eval(expr, {}, mapping)")
            raise TypeError("globals must be a dict")
        if given_locals is not None and not _is_mapping(given_locals):
            raise TypeError("locals must be a mapping")
        # CPython strips the spaces and tabs an expression starts with
        stripped = source.lstrip(" \t" if type(source) is str else b" \t")
        caller = _script_frame(sys._getframe(1))
        code = _compiled(stripped, "eval", limits, caller)
        return _run(builtins.eval, code, caller, given_globals, given_locals)

    @recursion_safe  # checks its arguments, then relays
    def exec_(*args: Any, closure: Any = None, **kwargs: Any) -> None:
        if kwargs:
            name = next(iter(kwargs))
            raise TypeError(f"'{name}' is an invalid keyword argument for exec()")
        source, given_globals, given_locals = _positional("exec", args)
        if given_globals is not None and type(given_globals) is not dict:
            raise TypeError(f"exec() globals must be a dict, not {type(given_globals).__name__}")
        if given_locals is not None and not _is_mapping(given_locals):
            kind = type(given_locals).__name__
            raise TypeError(f"locals must be a mapping or None, not {kind}")
        if closure is not None:
            raise TypeError("closure can only be used when source is a code object")
        caller = _script_frame(sys._getframe(1))
        code = _compiled(source, "exec", limits, caller)
        _run(builtins.exec, code, caller, given_globals, given_locals)

    return {"eval": Builtin(eval_, "eval"), "exec": Builtin(exec_, "exec")}


@recursion_safe  # reads only
def _positional(name: str, args: tuple[Any, ...]) -> tuple[Any, Any, Any]:
    """The source, globals and locals, checked as CPython checks their count and the source."""
    check_count(name, args, 1, 3)
    source, given_globals, given_locals = (*args, None, None)[:3]
    if type(source) not in _PLAIN_TEXT:
        raise TypeError(f"{name}() arg 1 must be a string, bytes or code object")
    return source, given_globals, given_locals


@recursion_safe  # a compilation stopped halfway is dropped (the cache keeps finished ones)
def _compiled(source: str | bytes, mode: str, limits: Limits, caller: FrameType) -> CodeType:
    """The code of ``source``, or CPython's error for it, or the policy's refusal; with the
    calling code's ``from __future__ import annotations``, as CPython's compile inherits it."""
    if len(source) > limits.max_source_chars:  # compiling is C work no limit interrupts
        raise LimitExceeded(
            "source size",
            f"the string given to {mode} has {len(source):,} characters "
            f"(limit {limits.max_source_chars:,}, as for a script)",
        )
    compiled: CompiledString | None = None
    with contextlib.suppress(RecursionError):
        compiled = compile_string(source, mode, caller.f_code.co_flags & FUTURE_ANNOTATIONS)
    if compiled is None:  # the script called from deep down: CPython's words for it, raised
        # here with no context (the compiler's own error is not the script's to judge by)
        raise RecursionError("maximum recursion depth exceeded during compilation")
    if compiled.error is not None:
        kind, arguments = compiled.error
        raise kind(*arguments)
    if compiled.code is None:
        listed = "\n".join(f"  {v}" for v in compiled.violations)
        raise SecurityViolation(f"the string given to {mode} uses what scripts may not:\n{listed}")
    return compiled.code


@recursion_safe  # what it copies back is the script's own names; no host state changes
def _run(run: Any, code: CodeType, caller: FrameType, given_globals: Any, given_locals: Any) -> Any:
    """Run ``code`` where the calling script frame is, or in the namespaces it gave."""
    if given_globals is None:
        run_globals = caller.f_globals  # the script's own scope, or a private copy of one
        if given_locals is None:
            names = caller.f_locals
            if names is run_globals:  # the module level: it binds the script's names
                return run(code, run_globals)
            if not caller.f_code.co_flags & _OPTIMIZED and type(names) is dict:
                # a class body's namespace, written only by checked code: it binds there too
                return run(code, run_globals, names)
            # a function's names, as a copy (CPython's snapshot): what the code binds is dropped
            return run(code, run_globals, _names_of(names))
    else:
        run_globals = _names_of(given_globals)
        # the sandbox's guards, builtins and scope mark, never any of the script's naming
        run_globals.update((k, v) for k, v in caller.f_globals.items() if is_internal_name(k))
    run_locals = None if given_locals is None else _names_of(_as_dict(given_locals))
    given: list[tuple[dict[str, Any], dict[Any, Any]]] = []
    if given_globals is not None:
        given.append((run_globals, given_globals))
    if run_locals is not None:
        given.append((run_locals, given_locals))
    _GIVEN.update((id(names), (names, mine)) for names, mine in given)
    try:
        if run_locals is None:
            return run(code, run_globals)
        return run(code, run_globals, run_locals)
    finally:
        for names, _ in given:  # all, before a copy back can raise
            del _GIVEN[id(names)]
        for names, mine in given:
            _copy_back(names, mine)


@recursion_safe  # brings the script's own dict up to date, as the run's end does
def given_namespace(names: dict[str, Any]) -> dict[Any, Any] | None:
    """The dict a script gave eval or exec for ``names`` (the copy code runs in), brought
    up to date with it; None for any other namespace."""
    found = _GIVEN.get(id(names))
    if found is None or found[0] is not names:
        return None
    _copy_back(names, found[1])
    return found[1]


@recursion_safe  # reads only
def _script_frame(frame: FrameType | None) -> FrameType:
    """The nearest frame of the script's code (a host relay's frames are skipped, never read)."""
    while frame is not None:
        if frame.f_code.co_filename in SCRIPT_FILES:
            return frame
        frame = frame.f_back
    raise SecurityViolation("eval() and exec() run only where script code called them")


@recursion_safe  # builds or fills the script's own dicts
def _names_of(namespace: dict[Any, Any]) -> dict[str, Any]:
    """The script's names in ``namespace``, never a guard's or a temporary's. Keys are exact
    strings: comparing one with a key of the script's class would run its ``__eq__`` here."""
    names = {}
    for key, value in namespace.items():
        if type(key) is not str:
            raise TypeError("the globals and locals given to eval() or exec() are names: str keys")
        if not is_internal_name(key):
            names[key] = value
    return names


@recursion_safe  # reads only
def _as_dict(mapping: Any) -> dict[Any, Any]:
    """A locals mapping as a dict: the script's own mapping class would be read by host code."""
    if type(mapping) is not dict:
        raise TypeError(
            "locals must be a dict in scripts (a mapping class of the script's own "
            "would run inside the interpreter's name lookups)"
        )
    return mapping


@recursion_safe  # builds or fills the script's own dicts
def _copy_back(used: dict[str, Any], given: dict[Any, Any]) -> None:
    """What the code bound, rebound and deleted, onto the dict the script gave (whose keys
    are checked again: the code may have given it a key of another type meanwhile)."""
    _names_of(given)
    for name in [k for k in given if not is_internal_name(k)]:
        if name not in used:
            del given[name]
    for name, value in used.items():
        if not is_internal_name(name):
            given[name] = value


@recursion_safe  # reads only
def _is_mapping(obj: Any) -> bool:
    """CPython's mapping check: the type has ``__getitem__`` (read from class namespaces)."""
    return any("__getitem__" in vars(k) for k in type(obj).__mro__)


__all__ = ["given_namespace", "string_code_builtins"]
