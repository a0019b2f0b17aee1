"""``eval``, ``exec`` and ``compile``: a string a script builds runs as the script's own code.

The string is compiled under the script's policy (``compile_string``) and runs in the
script's thread, under its limits; it can name nothing the script could not have written.
The guards it compiles to are always the sandbox's own: a namespace the script passes is
never the one the code runs in. The code runs in a private copy that holds the guards
(the script's dict, or a mapping of its own, could otherwise hand the code a ``_write_``
of the script's making while it runs), and what it bound is copied back; ``globals()``
and ``locals()`` in it answer with the script's own dict, brought up to date first.

``compile`` checks the string the same way and hands back a ``CompiledCode``: what CPython
shows as a code object (its type named ``code``, its file name and its name), holding the
checked code where no read reaches it, for ``eval`` and ``exec`` to run. A script never
holds a code object itself (its constants, names and bytecode would be the host's to read).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import operator
import os
import sys
from types import CodeType, FrameType
from typing import Any

from ._builtins import check_count, clinic_arguments
from ._compiler import (
    FUTURE_ANNOTATIONS,
    SCRIPT_FILES,
    STRING_SHOWN_AS,
    CompiledString,
    compile_string,
)
from ._errors import LimitExceeded, SecurityViolation, recursion_safe
from ._guards import Builtin, OpaqueType
from ._limits import Limits
from ._ownership import SHOWN, is_internal_name, is_script_class, register_readable

_OPTIMIZED = 0x1  # CO_OPTIMIZED: a function's frame, whose locals are a snapshot
_PLAIN_TEXT = (str, bytes)
_COMPILE_PARAMETERS = ("source", "filename", "mode", "flags", "dont_inherit", "optimize")
# The flags CPython's compile knows: every __future__ feature's (all but annotations are
# settled in 3.11, and change nothing), an obsolete one, and the compiler's own
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_KNOWN_FLAGS = _FUTURE_FLAGS | 0x0010 | 0x0200 | 0x4000  # CO_NESTED, DONT_IMPLY_DEDENT, INCOMPLETE
_KNOWN_FLAGS |= ast.PyCF_ONLY_AST | ast.PyCF_TYPE_COMMENTS | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_MAKING = object()  # only compile() makes a CompiledCode
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
        caller = _script_frame(sys._getframe(1))
        if given_globals is not None and type(given_globals) is not dict:
            if _is_mapping(given_globals):
                raise TypeError("globals must be a real dict; try eval(expr, {}, mapping)")
            raise TypeError("globals must be a dict")
        if given_locals is not None and not _is_mapping(given_locals):
            raise TypeError("locals must be a mapping")
        if type(source) is CompiledCode:
            code = source._code
        else:  # CPython strips the spaces and tabs an expression starts with
            stripped = source.lstrip(" \t" if type(source) is str else b" \t")
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
            if type(source) is CompiledCode:  # code a script compiles has no free names
                raise TypeError("cannot use a closure with this code object")
            raise TypeError("closure can only be used when source is a code object")
        caller = _script_frame(sys._getframe(1))
        if type(source) is CompiledCode:
            code = source._code
        else:
            code = _compiled(source, "exec", limits, caller)
        _run(builtins.exec, code, caller, given_globals, given_locals)

    @recursion_safe  # checks its arguments, then compiles as eval and exec do
    def compile_(*args: Any, **kwargs: Any) -> CompiledCode:
        given = _compile_arguments(args, kwargs)
        filename = _file_name(given["filename"])
        mode = given["mode"]
        if type(mode) is not str:  # a str subclass's methods would run here
            if not isinstance(mode, str):
                kind = "None" if mode is None else type(mode).__name__
                raise TypeError(f"compile() argument 'mode' must be str, not {kind}")
            mode = str.__str__(mode)
        flags = int.__index__(operator.index(given.get("flags", 0)))
        inherit = not operator.index(given.get("dont_inherit", 0))
        optimize = int.__index__(operator.index(given.get("optimize", -1)))
        if flags & ~_KNOWN_FLAGS:
            raise ValueError("compile(): unrecognised flags")
        if not -1 <= optimize <= 2:
            raise ValueError("compile(): invalid optimize value")
        if mode not in ("exec", "eval", "single"):
            raise ValueError("compile() mode must be 'exec', 'eval' or 'single'")
        source = given["source"]
        if type(source) not in _PLAIN_TEXT:
            if isinstance(source, str | bytes):  # a subclass: its exact text
                source = str.__str__(source) if isinstance(source, str) else bytes.__bytes__(source)
            else:
                raise TypeError("compile() arg 1 must be a string, bytes or AST object")
        if flags & ~_FUTURE_FLAGS:  # an AST, top-level await, type comments, partial input
            raise ValueError("compile() takes only __future__ flags in scripts")
        if mode == "single":  # its expression statements print through the host's sys
            raise ValueError("compile() mode 'single' is not offered in scripts: use 'exec'")
        caller = _script_frame(sys._getframe(1))
        future = (flags | (caller.f_code.co_flags if inherit else 0)) & FUTURE_ANNOTATIONS
        code = _compiled(source, mode, limits, caller, future, filename, optimize)
        return CompiledCode(code, filename, _MAKING)

    return {
        "eval": Builtin(eval_, "eval"),
        "exec": Builtin(exec_, "exec"),
        "compile": Builtin(compile_, "compile"),
    }


class CompiledCode:
    """What ``compile`` hands a script: shown as CPython's code object (its ``co_filename``
    and ``co_name``), run by ``eval`` and ``exec``. The code is kept in a private slot: a
    guarded read never reaches it, and nothing the script can call gives it out."""

    __slots__ = ("_code", "co_filename", "co_name")

    def __init__(self, code: CodeType, filename: str, making: object) -> None:
        if making is not _MAKING:  # only compile() makes one, from code it checked
            raise SecurityViolation("code objects are made by compile() in scripts")
        self._code = code
        self.co_filename = filename
        self.co_name = code.co_name

    def __repr__(self) -> str:
        where = f'file "{self.co_filename}", line {self._code.co_firstlineno}'
        return f"<code object {self.co_name} at {id(self):#x}, {where}>"

    def __copy__(self) -> CompiledCode:  # as CPython's: a code object is immutable
        return self

    def __deepcopy__(self, memo: Any) -> CompiledCode:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("cannot pickle code objects")


# its errors name it as CPython's do ("code objects cannot be modified")
CompiledCode.__name__ = CompiledCode.__qualname__ = "code"
CompiledCode.__module__ = "builtins"
register_readable(CompiledCode, names=("co_filename", "co_name"))
SHOWN[CompiledCode] = OpaqueType(CompiledCode, "code")  # type(c)(...) makes nothing


@recursion_safe  # reads only
def _compile_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """compile()'s arguments by name, refused in CPython's words."""
    if len(args) > len(_COMPILE_PARAMETERS):  # it has a keyword-only one: "positional"
        raise TypeError(f"compile() takes at most 6 positional arguments ({len(args)} given)")
    keywords = dict(kwargs)
    if "_feature_version" in keywords:  # the parser's version: scripts parse as 3.11
        operator.index(keywords.pop("_feature_version"))
    for name in keywords:
        if name not in _COMPILE_PARAMETERS:
            raise TypeError(f"{name!r} is an invalid keyword argument for compile()")
    return clinic_arguments("compile", _COMPILE_PARAMETERS, 3, args, keywords)


@recursion_safe  # reads only
def _file_name(filename: Any) -> str:
    """compile()'s file name as text: a str or bytes (exact), or a host path object."""
    if isinstance(filename, str):
        return str.__str__(filename)
    if isinstance(filename, bytes):
        return os.fsdecode(bytes.__bytes__(filename))  # never a subclass's own __bytes__
    if isinstance(filename, os.PathLike) and not is_script_class(type(filename)):
        return os.fsdecode(os.fspath(filename))  # a host path's own, never a script's
    kind = "NoneType" if filename is None else type(filename).__name__
    raise TypeError(f"expected str, bytes or os.PathLike object, not {kind}")


@recursion_safe  # reads only
def _positional(name: str, args: tuple[Any, ...]) -> tuple[Any, Any, Any]:
    """The source, globals and locals, checked as CPython checks their count and the source."""
    check_count(name, args, 1, 3)
    source, given_globals, given_locals = (*args, None, None)[:3]
    if type(source) not in _PLAIN_TEXT and type(source) is not CompiledCode:
        raise TypeError(f"{name}() arg 1 must be a string, bytes or code object")
    return source, given_globals, given_locals


@recursion_safe  # a compilation stopped halfway is dropped (the cache keeps finished ones)
def _compiled(
    source: str | bytes,
    mode: str,
    limits: Limits,
    caller: FrameType,
    future: int | None = None,
    shown_as: str = STRING_SHOWN_AS,
    optimize: int = -1,
) -> CodeType:
    """The code of ``source``, or CPython's error for it, or the policy's refusal; with the
    calling code's ``from __future__ import annotations`` (``future`` None), as CPython's
    compile inherits it, or with ``future``'s."""
    if len(source) > limits.max_source_chars:  # compiling is C work no limit interrupts
        raise LimitExceeded(
            "source size",
            f"the string given to {mode} has {len(source):,} characters "
            f"(limit {limits.max_source_chars:,}, as for a script)",
        )
    compiled: CompiledString | None = None
    with contextlib.suppress(RecursionError):
        inherited = caller.f_code.co_flags if future is None else future
        compiled = compile_string(source, mode, inherited & FUTURE_ANNOTATIONS, shown_as, optimize)
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


__all__ = ["CompiledCode", "given_namespace", "string_code_builtins"]
