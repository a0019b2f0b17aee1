"""Which scripts are brief: short, straight-line, calling no tool and changing nothing of
the session's but names.

A run handed to the session's thread costs two thread wake-ups, most of a short run's
time. A brief script may run where its caller already is instead (the in-process
executor's event loop thread), because three things hold for it by its shape alone:

- nothing it does is seen before it ends: it calls no tool, its prints are held back, and
  the session objects it reads are immutable, so what it changes of the session is the
  names it binds, which can be put back. A run that outlasts its moment is stopped and
  its names restored, and it runs again in its thread, from the start.
- it cannot outlast its moment by much: it has no loop, no function, no comprehension,
  and every builtin it may call is one the guards bound (sizes, widths, digits), so one
  step takes what one bounded operation takes.
- it cannot build what needs the script thread's large C stack (a chain of 300,000
  objects freed recursively takes a loop).

The shape is read from the script's syntax tree before the policy rewrites it; what the
session holds under a name it reads is checked when it runs (``Sandbox.run_brief``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_BRIEF_STATEMENTS = 24
MAX_BRIEF_NODES = 400

# Builtins a brief script may call: none calls back into script code (a brief script has
# none), none does anything but compute, and the guards bound each one's work.
BRIEF_BUILTINS = frozenset(
    (
        *("abs", "all", "any", "ascii", "bin", "bool", "bytes", "chr", "dict", "divmod"),
        *("enumerate", "float", "format", "frozenset", "hex", "int", "isinstance", "len"),
        *("list", "max", "min", "oct", "ord", "pow", "print", "range", "repr", "reversed"),
        *("round", "set", "sorted", "str", "sum", "tuple", "zip"),
    )
)
# The kinds of session values a brief script may read: immutable, so a run stopped
# halfway and run again cannot have changed one.
BRIEF_VALUE_TYPES = (str, int, float, bool, bytes, type(None))

# Syntax a brief script is made of; anything else (a loop, a def, a lambda, a
# comprehension, try, with, import, await, del, global, a walrus) makes it not brief.
_STATEMENTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.Pass)
_EXPRESSIONS = (
    ast.Constant,
    ast.Name,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.Subscript,
    ast.Slice,
    ast.Starred,
    ast.Call,
    ast.Attribute,
    ast.keyword,
)
_GLUE = (
    ast.Load,
    ast.Store,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


@dataclass(frozen=True, kw_only=True, slots=True)
class BriefShape:
    """What a brief script touches: the names it may read from the session or the
    builtins (read before, or without, binding them), and the names it binds."""

    reads: frozenset[str]
    binds: frozenset[str]


def brief_shape(tree: ast.Module) -> BriefShape | None:
    """The shape of a brief script, or None when ``tree`` is not one."""
    if len(tree.body) > MAX_BRIEF_STATEMENTS:
        return None
    for count, node in enumerate(ast.walk(tree)):
        if count > MAX_BRIEF_NODES or not (node is tree or _allowed(node)):
            return None
    reads: set[str] = set()
    binds: set[str] = set()
    _read_statements(tree.body, frozenset(), reads, binds)
    return BriefShape(reads=frozenset(reads), binds=frozenset(binds))


def _allowed(node: ast.AST) -> bool:
    """May a brief script hold ``node``?"""
    if isinstance(node, _GLUE):
        return True
    if isinstance(node, ast.stmt):
        if isinstance(node, ast.Assign | ast.AugAssign):
            return _names_only(node)
        return isinstance(node, _STATEMENTS)
    if isinstance(node, ast.Call):
        return _plain_call(node.func)
    if isinstance(node, ast.Attribute):  # read only, and never an underscore name
        return not node.attr.startswith("_") and isinstance(node.ctx, ast.Load)
    return isinstance(node, _EXPRESSIONS)


def _names_only(node: ast.Assign | ast.AugAssign) -> bool:
    """Does the statement bind names only (no item, attribute or slice of an object)?"""
    targets: list[ast.expr] = node.targets if isinstance(node, ast.Assign) else [node.target]
    return all(isinstance(element, ast.Name) for element in _elements(targets))


def _plain_call(function: ast.expr) -> bool:
    """A call of a name (a builtin, or a session value: checked at run time) or of a
    method of a value the script computed."""
    return isinstance(function, ast.Name | ast.Attribute)


def _read_statements(
    body: list[ast.stmt], bound: frozenset[str], reads: set[str], binds: set[str]
) -> frozenset[str]:
    """Record the names ``body`` reads before it has surely bound them; the names surely
    bound after it."""
    for statement in body:
        if isinstance(statement, ast.If):
            _read_expression(statement.test, bound, reads)
            after_body = _read_statements(statement.body, bound, reads, binds)
            after_else = _read_statements(statement.orelse, bound, reads, binds)
            bound = after_body & after_else
        elif isinstance(statement, ast.Assign):
            _read_expression(statement.value, bound, reads)
            named = _target_names(statement.targets)
            binds.update(named)
            bound = bound | named
        elif isinstance(statement, ast.AugAssign):
            _read_expression(statement.value, bound, reads)
            named = _target_names([statement.target])
            reads.update(named - bound)  # x += 1 reads x first
            binds.update(named)
            bound = bound | named
        elif isinstance(statement, ast.Expr):
            _read_expression(statement.value, bound, reads)
    return bound


def _read_expression(node: ast.expr, bound: frozenset[str], reads: set[str]) -> None:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id not in bound:
            reads.add(inner.id)


def _target_names(targets: list[ast.expr]) -> frozenset[str]:
    return frozenset(e.id for e in _elements(targets) if isinstance(e, ast.Name))


def _elements(targets: list[ast.expr]) -> list[ast.expr]:
    """What assignment targets bind: each one, or each element of a tuple or list one."""
    return [
        element
        for target in targets
        for element in (target.elts if isinstance(target, ast.Tuple | ast.List) else [target])
    ]


__all__ = ["BRIEF_BUILTINS", "BRIEF_VALUE_TYPES", "BriefShape", "brief_shape"]
