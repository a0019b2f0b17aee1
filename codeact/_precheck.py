"""A static pass over a script before it runs: calls of unknown tools, unknown keywords."""

from __future__ import annotations

import ast
import builtins
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ._exceptions import ErrorCode


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One problem found without running anything."""

    code: str
    line: int
    message: str


def defined_names(tree: ast.AST) -> set[str]:
    """Every name a script binds: assignments, defs, classes, imports, loop targets."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def check_script(
    source: str,
    tools: Mapping[str, tuple[str, ...]],
    *,
    known: Iterable[str] = (),
) -> list[Finding]:
    """Findings for calls that cannot work: unknown functions, unknown keywords, too many args.

    ``known`` are names earlier runs of the session defined. A script that does not
    parse yields nothing here: the interpreter reports syntax errors with a caret.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    local = defined_names(tree) | set(known) | set(dir(builtins)) | {"ToolError"}
    guarded = _lines_catching_name_errors(tree)
    findings: list[Finding] = _gathered_values(tree, tools, local)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name = node.func.id
        if name in tools and name not in local:
            findings.extend(_check_arguments(node, name, tools[name]))
        elif name not in local and name not in tools and node.lineno not in guarded:
            # (a call inside a try that catches NameError is the script's own business)
            close = difflib.get_close_matches(name, [*tools, *local], n=3, cutoff=0.6)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            message = f"line {node.lineno}: {name}() is not a tool or a defined function.{hint}"
            findings.append(Finding(code=ErrorCode.UNKNOWN_TOOL, line=node.lineno, message=message))
    return findings


_CATCHES_NAME_ERROR = frozenset({"NameError", "Exception", "BaseException"})


def _lines_catching_name_errors(tree: ast.AST) -> set[int]:
    """Lines inside a ``try`` whose handlers catch a NameError: the script expects one."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        caught: set[str] = set()
        for handler in node.handlers:
            if handler.type is None:
                caught.add("Exception")
            for part in ast.walk(handler.type) if handler.type is not None else ():
                if isinstance(part, ast.Name):
                    caught.add(part.id)
        if caught & _CATCHES_NAME_ERROR:
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or 0) + 1))
    return lines


_TAKERS = frozenset({"gather", "wait", "as_completed"})


def _gathered_values(
    tree: ast.AST, tools: Mapping[str, tuple[str, ...]], local: set[str]
) -> list[Finding]:
    """``calls = [tool(x) for x in xs]`` then ``gather(*calls)``: the calls already ran.

    A tool call is awaitable only where it is written after ``await`` or inside the
    gather (or create_task) call itself; elsewhere it runs at once and returns its value.
    """
    made: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.ListComp | ast.GeneratorExp)
                and isinstance(value.elt, ast.Call)
                and isinstance(value.elt.func, ast.Name)
                and value.elt.func.id in tools
                and value.elt.func.id not in local
            ):
                made[target.id] = value.elt.func.id
    findings = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if callee not in _TAKERS:
            continue
        for argument in node.args:
            inner = argument.value if isinstance(argument, ast.Starred) else argument
            if isinstance(inner, ast.Name) and inner.id in made:
                tool = made[inner.id]
                message = (
                    f"line {node.lineno}: {inner.id} holds the values of {tool}() calls that "
                    f"already ran one by one; to run them concurrently, write the calls "
                    f"inside the call: await asyncio.{callee}(*({tool}(x) for x in xs))"
                )
                findings.append(
                    Finding(code=ErrorCode.INVALID_ARGUMENTS, line=node.lineno, message=message)
                )
    return findings


def _check_arguments(node: ast.Call, name: str, parameters: tuple[str, ...]) -> list[Finding]:
    findings = []
    if not any(isinstance(a, ast.Starred) for a in node.args) and len(node.args) > len(parameters):
        message = (
            f"line {node.lineno}: {name}() takes at most {len(parameters)} positional "
            f"arguments ({', '.join(parameters)})"
        )
        findings.append(
            Finding(code=ErrorCode.INVALID_ARGUMENTS, line=node.lineno, message=message)
        )
    for keyword in node.keywords:
        if keyword.arg is not None and keyword.arg not in parameters:
            close = difflib.get_close_matches(keyword.arg, parameters, n=1, cutoff=0.5)
            hint = f" Did you mean {close[0]}=?" if close else ""
            message = (
                f"line {node.lineno}: {name}() has no parameter {keyword.arg!r} "
                f"(parameters: {', '.join(parameters) or 'none'}).{hint}"
            )
            findings.append(
                Finding(code=ErrorCode.INVALID_ARGUMENTS, line=node.lineno, message=message)
            )
    return findings


__all__ = ["Finding", "check_script", "defined_names"]
