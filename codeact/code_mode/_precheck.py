"""A static pass over a script before it runs: calls of unknown tools, unknown keywords."""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..contract._exceptions import ErrorCode
from ..sandbox._parsing import parse

ANALYSIS_CACHE_SIZE = 512


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


@dataclass(frozen=True, slots=True)
class _Analysis:
    """What the checks need of one source, found once: agents send the same scripts again."""

    defined: frozenset[str]
    calls: tuple[ast.Call, ...]  # calls of a plain name
    guarded: frozenset[int]  # lines inside a try that catches NameError
    listed_calls: tuple[tuple[str, str], ...]  # name = [f(x) for ...]: (name, f)
    handed: tuple[tuple[int, str, str], ...]  # gather(*name): (line, gather, name)


@functools.lru_cache(maxsize=ANALYSIS_CACHE_SIZE)
def _analysis(source: str) -> _Analysis | None:
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    calls: list[ast.Call] = []
    listed: list[tuple[str, str]] = []
    handed: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                calls.append(node)
            elif isinstance(node.func, ast.Attribute) and node.func.attr in _TAKERS:
                for argument in node.args:
                    inner = argument.value if isinstance(argument, ast.Starred) else argument
                    if isinstance(inner, ast.Name):
                        handed.append((node.lineno, node.func.attr, inner.id))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.ListComp | ast.GeneratorExp)
                and isinstance(value.elt, ast.Call)
                and isinstance(value.elt.func, ast.Name)
            ):
                listed.append((target.id, value.elt.func.id))
    return _Analysis(
        defined=frozenset(defined_names(tree)),
        calls=tuple(calls),
        guarded=frozenset(_lines_catching_name_errors(tree)),
        listed_calls=tuple(listed),
        handed=tuple(handed),
    )


def script_names(source: str) -> frozenset[str]:
    """The names ``source`` binds (empty when it does not parse)."""
    analysis = _analysis(source)
    return analysis.defined if analysis is not None else frozenset()


def check_script(
    source: str,
    tools: Mapping[str, tuple[str, ...]],
    *,
    known: Iterable[str] = (),
) -> list[Finding]:
    """Findings for calls that cannot work: unknown functions, unknown keywords, too many args.

    ``known`` are names earlier runs of the session defined. A script that does not
    parse yields nothing here: the interpreter reports syntax errors with a caret. A
    call inside a ``try`` that catches NameError is the script's own business.
    """
    analysis = _analysis(source)
    if analysis is None:
        return []
    local = analysis.defined | set(known) | _BUILTIN_NAMES
    findings: list[Finding] = _gathered_values(analysis, tools, local)
    for node in analysis.calls:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        if name in tools and name not in local:
            findings.extend(_check_arguments(node, name, tools[name]))
        elif name not in local and name not in tools and node.lineno not in analysis.guarded:
            close = difflib.get_close_matches(name, [*tools, *local], n=3, cutoff=0.6)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            message = f"line {node.lineno}: {name}() is not a tool or a defined function.{hint}"
            findings.append(Finding(code=ErrorCode.UNKNOWN_TOOL, line=node.lineno, message=message))
    return findings


_BUILTIN_NAMES = frozenset(dir(builtins)) | {"ToolError"}
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
    analysis: _Analysis, tools: Mapping[str, tuple[str, ...]], local: set[str] | frozenset[str]
) -> list[Finding]:
    """``calls = [tool(x) for x in xs]`` then ``gather(*calls)``: the calls already ran.

    A tool call is awaitable only where it is written after ``await`` or inside the
    gather (or create_task) call itself; elsewhere it runs at once and returns its value.
    """
    made = {
        name: tool for name, tool in analysis.listed_calls if tool in tools and tool not in local
    }
    findings = []
    for line, callee, name in analysis.handed:
        if name in made:
            tool = made[name]
            message = (
                f"line {line}: {name} holds the values of {tool}() calls that already ran "
                f"one by one; to run them concurrently, write the calls inside the call: "
                f"await asyncio.{callee}(*({tool}(x) for x in xs))"
            )
            findings.append(Finding(code=ErrorCode.INVALID_ARGUMENTS, line=line, message=message))
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


__all__ = ["Finding", "check_script", "defined_names", "script_names"]
