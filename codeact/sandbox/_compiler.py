"""Compiling a script: parse, apply the policy, compile; cached, since agents repeat themselves."""

from __future__ import annotations

import ast
import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType

from ._parsing import compile_tree, parse
from ._transformer import CodeActPolicy

SCRIPT_FILENAME = "<script>"
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
    policy = CodeActPolicy()
    try:
        with _deeper_recursion():
            policy.visit(tree)
    except RecursionError:
        return CompiledScript(syntax_error="the script is nested too deeply to compile")
    if policy.errors:
        return CompiledScript(violations=tuple(policy.errors))
    try:
        code = compile_tree(tree, SCRIPT_FILENAME, flags=TOP_LEVEL_AWAIT)
        return CompiledScript(code=code)
    except (SyntaxError, ValueError, RecursionError) as error:
        return CompiledScript(syntax_error=f"the script cannot be compiled: {error}")


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


__all__ = ["SCRIPT_FILENAME", "CompiledScript", "compile_script", "describe_syntax_error"]
