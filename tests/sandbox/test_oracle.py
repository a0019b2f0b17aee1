"""Ordinary Python, judged by CPython: every script of ``oracle/`` must behave the same in
the sandbox as under a plain ``exec``, on both executors, and as plain CPython in a
confined worker (``interpreter="cpython"``).

A script's behaviour is what it printed, the value of its last expression, and the
exception that ended it, if any. The reference runs the same source with the same
tools as plain Python functions (coroutine functions in ``async.scripts``, where
scripts await them, as the run_code description teaches).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeact import ErrorCode, ToolError
from codeact.sandbox import Limits

from .conftest import CPYTHON_WORKER, EXECUTORS, Runner

ORACLE = Path(__file__).parent / "oracle"
# Behaviour, not speed, is compared: a run stalled on a loaded machine must not end at a
# limit CPython has not (a script the sandbox cannot finish still fails, only later).
ORACLE_LIMITS = Limits(wall_seconds=30.0, cpu_seconds=10.0)
MARK = "# === "
ASYNC_CATEGORY = "async"
# Scripts of these categories change what the process keeps (logging's handlers, warnings'
# filters, the main thread's event loop) or write to stderr: each is judged against an
# interpreter of its own.
FRESH_CATEGORIES = frozenset({"logging", "warnings", "loops"})
ROOT = Path(__file__).resolve().parents[2]
# Where a CPython worker cannot be what a plain exec is, and why.
CPYTHON_WORKER_DIFFERS = {
    "modules/sys-recursion-limit-default": "the worker's own frames count against CPython's "
    "recursion limit, so it is raised by as many: scripts reach CPython's depth",
    "loops/run-in-executor": "the confined worker starts no thread, and CPython's "
    "run_in_executor waits on one until the run's deadline",
}


def load_scripts(pattern: str = "*.scripts") -> dict[str, tuple[str, str]]:
    """``category/name`` -> (category, source), from every file ``pattern`` matches."""
    scripts: dict[str, tuple[str, str]] = {}
    for path in sorted(ORACLE.glob(pattern)):
        name = None
        lines: list[str] = []
        for line in [*path.read_text().splitlines(), MARK + "end"]:
            if line.startswith(MARK):
                if name is not None:
                    key = f"{path.stem}/{name}"
                    assert key not in scripts, f"two scripts are named {key}"
                    scripts[key] = (path.stem, "\n".join(lines).strip() + "\n")
                name, lines = line[len(MARK) :].strip(), []
            else:
                lines.append(line)
    return scripts


SCRIPTS = load_scripts()
# Scripts CPython's compiler refuses: each must be refused before any of it runs.
REFUSED = load_scripts("*.syntax")


@dataclass(frozen=True)
class Behaviour:
    """What a script did, in a form both sides can report."""

    output: str
    value: Any
    error: str | None


def _tools(asynchronous: bool) -> dict[str, Any]:
    def add(a: int, b: int = 0) -> int:
        return a + b

    def record(text: str) -> str:
        return type(text).__name__

    def shared() -> list[int]:
        return [1, 2, 3]

    def fail(message: str) -> None:
        raise ToolError(f"RuntimeError: {message}", "TOOL_ERROR")

    plain: dict[str, Callable[..., Any]] = {
        "add": add,
        "record": record,
        "shared": shared,
        "fail": fail,
    }
    if asynchronous:
        plain = {name: _awaitable(function) for name, function in plain.items()}
    return {**plain, "ToolError": ToolError}


def _awaitable(function: Callable[..., Any]) -> Callable[..., Any]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    return call


def reference(source: str, category: str) -> Behaviour:
    """The script under CPython: a plain exec (top-level await allowed, as in the sandbox).

    A ``logging`` or ``warnings`` script runs in an interpreter of its own: the module's
    state is the process's (this one's has pytest's handlers and filters), and what it
    writes to stderr is printed where the sandbox prints it.
    """
    if category in FRESH_CATEGORIES:
        done = subprocess.run(
            [sys.executable, "-c", _FRESH_REFERENCE, category],
            input=source,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=True,
        )
        output, value, error = json.loads(done.stdout)
        return Behaviour(output, value, error)
    return _reference_here(source, category)


_FRESH_REFERENCE = """
import json, sys
from tests.sandbox.test_oracle import _reference_here
behaviour = _reference_here(sys.stdin.read(), sys.argv[1])
print(json.dumps([behaviour.output, behaviour.value, behaviour.error]))
"""


def _reference_here(source: str, category: str) -> Behaviour:
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign([ast.Name("__oracle_value__", ast.Store())], last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    # the file name every executor gives a script: tracebacks name it; and none of this
    # module's __future__ imports (string annotations would change what dataclass sees)
    code = compile(
        tree, "<script>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    scope: dict[str, Any] = {
        "__name__": "__main__",
        "__doc__": None,  # a module's (the builtins module's otherwise shows through)
        **_tools(category == ASYNC_CATEGORY),
    }
    printed = io.StringIO()
    error = None
    # CPython's default filters, not the suite's: a script run by the interpreter never
    # sees its ImportWarning (a relative import's "falling back on __name__")
    stderr = contextlib.redirect_stderr(printed) if category in FRESH_CATEGORIES else None
    with (
        contextlib.redirect_stdout(printed),
        stderr or contextlib.nullcontext(),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", ImportWarning)
        try:
            if code.co_flags & inspect.CO_COROUTINE:
                asyncio.run(eval(code, scope))
            else:
                exec(code, scope)
        except Exception as caught:
            text = str(caught)
            error = f"{type(caught).__name__}: {text}" if text else type(caught).__name__
    value = None if error else scope.get("__oracle_value__")
    return Behaviour(printed.getvalue(), json.loads(json.dumps(value, default=repr)), error)


def observed(run: Runner, source: str) -> Behaviour:
    outcome = run(source)
    error = outcome.error
    return Behaviour(outcome.output, outcome.value, None if error is None else error.message)


@pytest.fixture(
    scope="module",
    params=[
        *EXECUTORS,
        pytest.param(
            CPYTHON_WORKER,
            marks=pytest.mark.skipif(
                not sys.platform.startswith("linux"), reason="its kernel layers are Linux's"
            ),
        ),
    ],
)
def oracle_runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    runner = Runner(ORACLE_LIMITS, kind=request.param)
    yield runner
    runner.close()


@pytest.mark.parametrize("key", SCRIPTS)
def test_script_behaves_as_under_cpython(oracle_runner: Runner, key: str) -> None:
    if oracle_runner.kind == CPYTHON_WORKER and key in CPYTHON_WORKER_DIFFERS:
        pytest.skip(CPYTHON_WORKER_DIFFERS[key])
    category, source = SCRIPTS[key]
    expected = reference(source, category)
    if category in FRESH_CATEGORIES and oracle_runner.kind == CPYTHON_WORKER:
        oracle_runner.renew()  # a fresh interpreter, as the reference had
    oracle_runner.reset()
    assert observed(oracle_runner, source) == expected


def cpython_refusal(source: str) -> str:
    """What CPython's compiler says of ``source`` (the message, without the location)."""
    try:
        tree = ast.parse(source)
        compile(tree, "<cpython>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as error:
        return str(error.msg)
    raise AssertionError("CPython compiles this script")


@pytest.mark.parametrize("key", REFUSED)
def test_a_script_cpython_will_not_compile_is_refused_with_its_words(
    oracle_runner: Runner, key: str
) -> None:
    _, source = REFUSED[key]
    if not source.startswith("from __future__"):  # nothing runs: not even a first line
        source = f"print('ran')\n{source}"
    words = cpython_refusal(source)
    oracle_runner.reset()
    outcome = oracle_runner(source)
    assert outcome.output == ""
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_SYNTAX_ERROR
    assert words in outcome.error.message


def test_the_suite_covers_every_category_with_three_hundred_scripts() -> None:
    categories = {category for category, _ in SCRIPTS.values()}
    assert {"modules", "dunders", "async", "builtins", "errors"} <= categories
    assert len(SCRIPTS) >= 300


INPUT_SCRIPT = """
said = []
try:
    input("name? ")
except EOFError as error:
    said.append(str(error))
try:
    input()
except EOFError as error:
    said.append(type(error).__name__)
try:
    input("a", "b")
except TypeError as error:
    said.append(str(error))
print(said)
"""


def test_input_reads_end_of_file_as_cpython_does_with_standard_input_closed(
    oracle_runner: Runner,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", INPUT_SCRIPT],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    oracle_runner.reset()
    outcome = oracle_runner(INPUT_SCRIPT)
    assert outcome.error is None, outcome.error
    assert outcome.output == done.stdout
    assert outcome.output.startswith("name? ['EOF when reading a line'")
