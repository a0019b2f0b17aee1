"""codeact against its peers on the same scripts, in one run: ``make bench``.

Peers: plain CPython ``exec`` (the baseline), smolagents' LocalPythonExecutor and
pydantic's Monty (a Rust interpreter in worker processes). They run in the separate
environment ``make bench`` builds; a peer that is not installed is skipped.

Rows: codeact's sandbox with tools bound to a host callback (the interpreter alone,
as the peers bind plain functions), codeact through run_code and the whole dispatch
pipeline, in-process and in a worker process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio

from codeact import TextBlock, ToolExecutionSuccess
from codeact._executors import InProcessExecutor
from codeact._process import ProcessExecutor
from codeact._sandbox import Limits, Sandbox

from ._timing import header
from .interpreter import LOOP, STRINGS, median_seconds

CALLS = 10_000
TOOL_SCRIPT = f"total = 0\nfor i in range({CALLS}):\n    total = total + add(i, 1)\ntotal"
TRIVIAL = "x = 1"
SCRIPTS = {
    "loop-heavy": LOOP,
    "string-heavy": STRINGS,
    f"tool-call-heavy ({CALLS:,} calls)": TOOL_SCRIPT,
}
ROUNDS = 5
TRIVIAL_RUNS = 300
LIMITS = Limits(wall_seconds=300, cpu_seconds=300, max_tool_calls=CALLS + 1)


def add(a: int, b: int) -> int:
    return a + b


def median(action: Callable[[], object]) -> float:
    return median_seconds(action, ROUNDS)


def cpython(source: str) -> Callable[[], object]:
    code = compile(source, "<cpython>", "exec")
    return lambda: exec(code, {"add": add})


def codeact_sandbox(source: str) -> Callable[[], object]:
    sandbox = Sandbox(limits=LIMITS)

    def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return add(**arguments)

    def run() -> object:
        outcome = sandbox.run(source, tools={"add": ("a", "b")}, call_tool=call_tool)
        assert outcome.ok, outcome.error
        return outcome.value

    return run


ANSWER = ToolExecutionSuccess(call_id="c", name="add", value=0, content=(TextBlock(text="0"),))


def codeact_executor(source: str, kind: str) -> Callable[[], object]:
    """Through an executor; each tool call crosses to the host and back (a fixed answer)."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return ToolExecutionSuccess(
            call_id="c", name=name, value=add(**arguments), content=(TextBlock(text=""),)
        )

    def run() -> object:
        async def main() -> object:
            executor = (
                InProcessExecutor(limits=LIMITS)
                if kind == "inprocess"
                else ProcessExecutor(limits=LIMITS, warm=0)
            )
            try:
                await executor.run("0", session="s", tools={"add": ("a", "b")}, call_tool=call_tool)
                started = time.perf_counter()
                outcome = await executor.run(
                    source, session="s", tools={"add": ("a", "b")}, call_tool=call_tool
                )
                assert outcome.ok, outcome.error
                return time.perf_counter() - started
            finally:
                await executor.aclose()

        return anyio.run(main)

    return run


def smolagents_executor(source: str) -> Callable[[], object] | None:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None
    executor = LocalPythonExecutor(additional_authorized_imports=[])
    executor.send_tools({"add": add})  # type: ignore[dict-item]
    return lambda: executor(source)


def monty(source: str) -> tuple[Callable[[], object], Callable[[], None]] | None:
    try:
        import pydantic_monty
    except ImportError:
        return None
    pool = pydantic_monty.Monty(min_processes=1)
    pool.__enter__()
    session = pool.checkout(limits={"max_suspensions": 10**8})
    session.__enter__()

    def close() -> None:
        session.__exit__(None, None, None)
        pool.__exit__(None, None, None)

    return (
        lambda: session.feed_run(source, external_lookup={"add": add}, skip_type_check=True)
    ), close


def measure_script(source: str) -> dict[str, float]:
    rows: dict[str, float] = {"plain CPython exec": median(cpython(source))}
    rows["codeact sandbox (interpreter alone)"] = median(codeact_sandbox(source))
    for kind in ("inprocess", "process"):
        runner = codeact_executor(source, kind)
        runner()
        rows[f"codeact {kind} executor, calls cross to the host"] = statistics.median(
            float(runner())
            for _ in range(3)  # type: ignore[arg-type]
        )
    rows.update(measure_peers(source, median))
    return rows


def measure_peers(
    source: str, measure: Callable[[Callable[[], object]], float]
) -> dict[str, float]:
    """smolagents and Monty on ``source``, each only if it is installed."""
    rows: dict[str, float] = {}
    smol = smolagents_executor(source)
    if smol is not None:
        rows["smolagents LocalPythonExecutor"] = measure(smol)
    made = monty(source)
    if made is not None:
        run, close = made
        try:
            rows["Monty 1.4.0 (worker process)"] = measure(run)
        finally:
            close()
    return rows


def measure_trivial() -> dict[str, float]:
    def per_run(action: Callable[[], object]) -> float:
        def batch() -> None:
            for _ in range(TRIVIAL_RUNS):
                action()

        return median(batch) / TRIVIAL_RUNS

    rows = {
        "plain CPython exec": per_run(cpython(TRIVIAL)),
        "codeact sandbox (interpreter alone)": per_run(codeact_sandbox(TRIVIAL)),
    }
    rows.update(measure_peers(TRIVIAL, per_run))
    return rows


def main() -> None:
    print(header("Peers: the same scripts, medians, ratio to plain CPython exec"))
    results = {name: measure_script(source) for name, source in SCRIPTS.items()}
    results["trivial run (per run)"] = measure_trivial()
    for name, rows in results.items():
        base = rows["plain CPython exec"]
        print(f"\n{name}")
        for runner, seconds in rows.items():
            shown = f"{seconds * 1e3:9.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.2f} us"
            print(f"  {runner:<52} {shown}  {seconds / base:8.1f}x")


if __name__ == "__main__":
    main()
