"""``ast.parse`` and ``compile`` of a tree, one thread at a time.

CPython 3.11 counts AST nesting, while converting between its internal trees and
``ast`` objects, in state the whole interpreter shares. Two threads converting at once
(a script compiled in its thread while the loop checks another) can corrupt the count
when the garbage collector runs Python finalizers mid-conversion, and the conversion then
fails with ``SystemError: AST constructor recursion depth mismatch``. Taking one lock
around every conversion removes the overlap; a parse of a script takes microseconds.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_CONVERTING = threading.RLock()  # re-entrant: a finalizer run mid-parse may parse too


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _CONVERTING:
        return ast.parse(source, filename, "exec")


def parse_in_mode(source: str | bytes, filename: str, mode: str) -> ast.Module | ast.Expression:
    """A string given to ``eval`` (mode "eval") or ``exec`` (mode "exec"); bytes are
    decoded as CPython decodes source (UTF-8 unless a coding line says otherwise)."""
    with _CONVERTING:
        tree = ast.parse(source, filename, mode)
    assert isinstance(tree, ast.Module | ast.Expression)
    return tree


def parse_expression(source: str) -> ast.Expression:
    with _CONVERTING:
        return ast.parse(source, mode="eval")


def compile_tree(
    tree: ast.Module | ast.Expression,
    filename: str,
    *,
    flags: int = 0,
    mode: str = "exec",
    optimize: int = -1,
) -> CodeType:
    with _CONVERTING:
        code: CodeType = compile(
            tree, filename, mode, flags=flags, dont_inherit=True, optimize=optimize
        )
    return code


__all__ = ["compile_tree", "parse", "parse_expression", "parse_in_mode"]
