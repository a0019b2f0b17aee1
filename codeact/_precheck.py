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
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name = node.func.id
        if name in tools and name not in local:
            findings.extend(_check_arguments(node, name, tools[name]))
        elif name not in local and name not in tools:
            close = difflib.get_close_matches(name, [*tools, *local], n=3, cutoff=0.6)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            message = f"line {node.lineno}: {name}() is not a tool or a defined function.{hint}"
            findings.append(Finding(code=ErrorCode.UNKNOWN_TOOL, line=node.lineno, message=message))
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
