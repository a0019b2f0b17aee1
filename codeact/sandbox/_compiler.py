"""Compiling a script: parse, apply the policy, compile; cached, since agents repeat themselves."""

from __future__ import annotations
import __future__

import ast
import contextlib
import copy
import functools
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType

from ._brief import BriefShape, brief_shape
from ._parsing import compile_tree, parse, parse_in_mode
from ._transformer import CodeActPolicy

SCRIPT_FILENAME = "<script>"
# What a script gives ``eval`` or ``exec``: its code under a name of its own, so an error's
# line in the script stays the line that made the call (CPython's ``<string>`` is taken
# by code the host's own libraries generate, which must never count as the script's).
STRING_FILENAME = "<script string>"
SCRIPT_FILES = frozenset({SCRIPT_FILENAME, STRING_FILENAME})
STRING_SHOWN_AS = "<string>"  # the name CPython's messages give it
# ``await`` at the top of a script, as in a notebook: the code object is then a coroutine.
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
COMPILE_CACHE_SIZE = 512
TRANSFORM_RECURSION_LIMIT = 6_000
_RECURSION_LOCK = threading.Lock()


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledScript:
    """A compiled script, or why it could not be compiled."""

    code: CodeType | None = None
    syntax_error: str | None = None
    violations: tuple[str, ...] = ()
    brief: BriefShape | None = None  # the script is brief (see _brief)


@functools.lru_cache(maxsize=COMPILE_CACHE_SIZE)
def compile_script(source: str) -> CompiledScript:
    """Compile ``source`` under the policy (which modules it may import is the importer's
    question, at run time)."""
    try:
        tree = parse(source, SCRIPT_FILENAME)
    except SyntaxError as error:
        return CompiledScript(syntax_error=describe_syntax_error(error))
    except (ValueError, MemoryError, RecursionError) as error:
        return CompiledScript(syntax_error=f"the script cannot be parsed: {error}")
    brief = brief_shape(tree)  # read before the policy rewrites the tree
    policy = CodeActPolicy()
    try:
        with _deeper_recursion():
            written = annotations_as_written(tree)
            policy.visit(tree)
    except RecursionError:
        return CompiledScript(syntax_error="the script is nested too deeply to compile")
    if policy.errors:
        return CompiledScript(violations=tuple(policy.errors))
    put_back(written)
    try:
        code = compile_tree(tree, SCRIPT_FILENAME, flags=TOP_LEVEL_AWAIT)
        return CompiledScript(code=code, brief=brief)
    except (SyntaxError, ValueError, RecursionError) as error:
        return CompiledScript(syntax_error=f"the script cannot be compiled: {error}")


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledString:
    """A string a script gave ``eval`` or ``exec``, compiled, or the error CPython raises
    for it (its class and arguments, made anew each time), or what the policy refused."""

    code: CodeType | None = None
    error: tuple[type[Exception], tuple[object, ...]] | None = None
    violations: tuple[str, ...] = ()


class _ForStrings(CodeActPolicy):
    keeps_last_value = False


# ``from __future__ import annotations`` in a script: a string it gives exec inherits it,
# as CPython's compile does by default
FUTURE_ANNOTATIONS = __future__.annotations.compiler_flag


@functools.lru_cache(maxsize=COMPILE_CACHE_SIZE)
def compile_string(
    source: str | bytes,
    mode: str,
    inherited: int = 0,
    shown_as: str = STRING_SHOWN_AS,
    optimize: int = -1,
) -> CompiledString:
    """Compile what a script gave ``eval`` (mode "eval"), ``exec`` ("exec") or ``compile``
    under the script's own policy; ``inherited``: the calling code's ``FUTURE_ANNOTATIONS``
    flag, or 0; ``shown_as``: the file name its syntax errors give (``compile``'s
    argument); ``optimize``: ``compile``'s level. The code's own file name is always
    ``STRING_FILENAME``, which marks its frames as the script's. A RecursionError
    propagates (the caller was deep), uncached."""
    try:
        tree = parse_in_mode(source, shown_as, mode)
    except (SyntaxError, ValueError) as error:
        return CompiledString(error=(type(error), error.args))
    policy = _ForStrings()
    flags = inherited & FUTURE_ANNOTATIONS
    written = annotations_as_written(tree, inherited=bool(flags))
    policy.visit(tree)
    if policy.errors:
        return CompiledString(violations=tuple(policy.errors))
    put_back(written)
    try:
        code = compile_tree(tree, STRING_FILENAME, mode=mode, flags=flags, optimize=optimize)
        return CompiledString(code=code)
    except SyntaxError as error:  # found only when compiling ('await' outside a function)
        where = (shown_as, error.lineno, error.offset, error.text)
        return CompiledString(error=(type(error), (error.msg, where)))


Annotation = tuple[ast.AST, str, ast.expr]


def annotations_as_written(
    tree: ast.Module | ast.Expression, *, inherited: bool = False
) -> list[Annotation]:
    """Under ``from __future__ import annotations`` (the tree's own, or ``inherited`` from
    the code that compiles it) CPython keeps each annotation as the text of its source, and
    the policy's rewrite would put the guards' calls in that text. Copies of them, taken
    before the rewrite, to be put back after it (``put_back``): such an annotation is only
    ever made into text, never run (the policy still checks it)."""
    if not isinstance(tree, ast.Module):
        return []
    if not inherited and not any(
        isinstance(statement, ast.ImportFrom)
        and statement.module == "__future__"
        and any(alias.name == "annotations" for alias in statement.names)
        for statement in tree.body
    ):
        return []
    written: list[Annotation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            written.append((node, "annotation", copy.deepcopy(node.annotation)))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            written.append((node, "returns", copy.deepcopy(node.returns)))
    return written


def put_back(written: list[Annotation]) -> None:
    for holder, field, annotation in written:
        setattr(holder, field, annotation)


@contextlib.contextmanager
def _deeper_recursion() -> Iterator[None]:
    """The transformer recurses a few frames per AST level: a 300-term sum needs room."""
    with _RECURSION_LOCK:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, TRANSFORM_RECURSION_LIMIT))
        try:
            yield
        finally:
            sys.setrecursionlimit(previous)


def describe_syntax_error(error: SyntaxError) -> str:
    """``line N, column M: message`` with the offending line and a caret under the column."""
    line = error.lineno or 0
    column = error.offset or 0
    text = (error.text or "").rstrip("\n")
    message = f"line {line}, column {column}: {error.msg}"
    if text:
        stripped = text.lstrip()
        caret_at = max(column - 1 - (len(text) - len(stripped)), 0)
        message += f"\n    {stripped}\n    {' ' * caret_at}^"
    return message


__all__ = [
    "SCRIPT_FILENAME",
    "SCRIPT_FILES",
    "STRING_FILENAME",
    "STRING_SHOWN_AS",
    "CompiledScript",
    "CompiledString",
    "compile_script",
    "compile_string",
    "describe_syntax_error",
]
