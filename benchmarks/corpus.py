"""A corpus of scripts run in the restricted interpreter and in plain CPython, compared.

Run: ``python -m benchmarks.corpus DIRECTORY [--diffs FILE]``. Every ``*.py`` file in
DIRECTORY is a script (a peer's test fixtures, say: Monty keeps its own in
``crates/monty/test_cases``). Each runs in a fresh sandbox of the standard library (the
interpreter both executors run) and in a fresh CPython process, and the two are the
same when they print the same, end on the same value, and fail (or not) with the same
error. A script neither could compile counts as the same when both name the same
SyntaxError. Fixtures whose first line asks their own harness for host functions or a
mounted folder (``# call-external``, ``mount``) are skipped: neither side here has them.
Not part of ``python -m benchmarks``: the corpus is not in this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

SKIPPED_DIRECTIVES = ("call-external", "mount")
TRACEBACK_MARKER = '"""\nTRACEBACK:\n'  # an expected traceback closes a fixture: not code
SECONDS = 60
# An object's default repr names its address, which differs between any two processes.
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
# A SyntaxError the parser finds is told as ``line N, column M: message`` and the source.
PARSER_SYNTAX_ERROR = re.compile(r"line \d+, column \d+: (.*)")

# CPython's side: the script as a module of its own, its last expression kept as the value.
_REFERENCE = r"""
import ast, contextlib, inspect, io, json, sys, types
source = sys.stdin.read()
printed = io.StringIO()
# the script's namespace is the __main__ module's, as when CPython runs a file: what looks
# a class's module up (typing.get_type_hints, dataclasses, pickle) finds the script
main = sys.modules["__main__"] = types.ModuleType("__main__")
scope = main.__dict__
value = error = None
try:
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign([ast.Name("_last_value_", ast.Store())], last.value), last
        )
        ast.fix_missing_locations(tree)
    code = compile(tree, "<script>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
except SyntaxError as caught:
    error = f"SyntaxError: {caught.msg}"
else:
    with contextlib.redirect_stdout(printed):
        try:
            if code.co_flags & inspect.CO_COROUTINE:  # top-level await
                import asyncio
                asyncio.run(eval(code, scope))
            else:
                exec(code, scope)
            value = scope.get("_last_value_")
        except Exception as caught:
            text = str(caught)
            error = f"{type(caught).__name__}: {text}" if text else type(caught).__name__
try:
    print(json.dumps([printed.getvalue(), value, error], default=repr))
except ValueError:  # a value that refers to itself
    print(json.dumps([printed.getvalue(), "<a cycle>", error]))
"""


def script_of(path: Path) -> str | None:
    """The fixture's code, or None when it needs its own harness."""
    source = path.read_text(encoding="utf-8")
    first = source.split("\n", 1)[0]
    if first.startswith("#") and any(word in first for word in SKIPPED_DIRECTIVES):
        return None
    if TRACEBACK_MARKER in source:
        source = source[: source.index(TRACEBACK_MARKER)]
    return source


def under_cpython(source: str) -> list[Any]:
    try:
        with tempfile.TemporaryDirectory() as folder:  # whatever the script writes goes
            done = subprocess.run(
                [sys.executable, "-c", _REFERENCE],
                input=source,
                capture_output=True,
                text=True,
                timeout=SECONDS,
                cwd=folder,
            )
    except subprocess.TimeoutExpired:
        return ["", None, "timed out"]
    if done.returncode:
        return ["", None, f"crashed: {done.stderr[-300:]}"]
    return list(json.loads(done.stdout))


def under_codeact(source: str, reference: list[Any]) -> list[Any]:
    from codeact import ErrorCode
    from codeact.sandbox import Limits
    from codeact.stdlib import standard_sandbox

    sandbox = standard_sandbox(limits=Limits(wall_seconds=SECONDS, cpu_seconds=SECONDS))
    try:
        outcome = sandbox.run(source)
    finally:
        sandbox.close()
    error = None if outcome.error is None else outcome.error.message
    if outcome.error is not None and outcome.error.code is ErrorCode.CODE_SYNTAX_ERROR:
        return ["", None, f"SyntaxError: {syntax_error_reason(outcome.error.message)}"]
    value = json.loads(json.dumps(outcome.value, default=repr))
    if reference[1] == "<a cycle>" and error is None:
        value = "<a cycle>"  # both made it; only its JSON form differs
    return [outcome.output, value, error]


def syntax_error_reason(message: str) -> str:
    """CPython's words for a script the sandbox could not parse or compile."""
    if message.startswith("the script cannot be compiled: "):
        return message.split(": ", 1)[1].rsplit(" (<script>", 1)[0]
    found = PARSER_SYNTAX_ERROR.match(message)
    return found.group(1) if found else message


def without_addresses(result: list[Any]) -> list[Any]:
    """``result`` with every object address made the same: no two processes share them."""
    return json.loads(ADDRESS.sub(" at 0x?", json.dumps(result)))


def compare(path: Path) -> tuple[str, str, list[Any] | None, list[Any] | None]:
    source = script_of(path)
    if source is None:
        return path.name, "skipped", None, None
    reference = under_cpython(source)
    ours = under_codeact(source, reference)
    same = without_addresses(ours) == without_addresses(reference)
    return path.name, "same" if same else "different", ours, reference


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--diffs", type=Path, help="write the differing scripts' results here")
    arguments = parser.parse_args()
    files = sorted(arguments.directory.glob("*.py"))
    os.environ.setdefault("CODEACT_EARLY_TEMPLATE", "0")  # no worker is used here
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(compare, files, chunksize=4))
    counts = {"same": 0, "different": 0, "skipped": 0}
    differing = []
    for name, verdict, ours, reference in results:
        counts[verdict] += 1
        if verdict == "different":
            differing.append({"script": name, "codeact": ours, "cpython": reference})
    ran = counts["same"] + counts["different"]
    print(
        f"{arguments.directory}: {counts['same']} of {ran} scripts the same as CPython "
        f"{sys.version_info.major}.{sys.version_info.minor} "
        f"({counts['skipped']} skipped: they need their own harness)"
    )
    for item in differing:
        print(f"  different: {item['script']}")
    if arguments.diffs is not None:
        arguments.diffs.write_text(json.dumps(differing, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
