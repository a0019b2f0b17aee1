"""Per-run and per-tool-call cost of the executors against plain CPython, in one run.

Run: ``python -m benchmarks.executor``. The tool-call round trip is measured with a
host-side handler that answers at once, so it is the executor's crossing alone; the
full pipeline is in ``benchmarks.interpreter``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable

import anyio

from codeact import (
    Executor,
    InProcessExecutor,
    Limits,
    ProcessExecutor,
    TextBlock,
    ToolExecutionResult,
    ToolExecutionSuccess,
)

from ._timing import header

RUNS = 300
CALLS = 2_000
ROUNDS = 7
ANSWER = ToolExecutionSuccess(call_id="c", name="ping", value=1, content=(TextBlock(text="1"),))
LIMITS = Limits(wall_seconds=60, cpu_seconds=60, max_tool_calls=CALLS + 1)


async def answer_at_once(name: str, arguments: dict[str, object]) -> ToolExecutionResult:
    return ANSWER


async def median_per_item(action: Callable[[], Awaitable[object]], items: int) -> float:
    await action()
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        await action()
        samples.append((time.perf_counter() - started) / items)
    return statistics.median(samples)


async def measure(executor: Executor) -> tuple[float, float]:
    tools = {"ping": ()}

    async def trivial_runs() -> None:
        for _ in range(RUNS):
            outcome = await executor.run(
                "x = 1", session="bench", tools=tools, call_tool=answer_at_once
            )
            assert outcome.ok

    calls_script = f"for _ in range({CALLS}):\n    ping()"

    async def tool_calls() -> None:
        outcome = await executor.run(
            calls_script, session="bench", tools=tools, call_tool=answer_at_once
        )
        assert outcome.ok, outcome.error

    per_run = await median_per_item(trivial_runs, RUNS)
    per_call = await median_per_item(tool_calls, CALLS)
    await executor.aclose()
    return per_run, per_call


def cpython() -> tuple[float, float]:
    code = compile("x = 1", "<cpython>", "exec")

    def ping() -> int:
        return 1

    def runs() -> None:
        for _ in range(RUNS):
            exec(code, {})

    def calls() -> None:
        for _ in range(CALLS):
            ping()

    def median(action: Callable[[], None], items: int) -> float:
        action()
        samples = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            action()
            samples.append((time.perf_counter() - started) / items)
        return statistics.median(samples)

    return median(runs, RUNS), median(calls, CALLS)


def main() -> None:
    print(header("Executors: per trivial run and per tool-call round trip"))
    base = cpython()
    rows = [
        ("plain CPython exec", base),
        ("in-process executor", anyio.run(measure, InProcessExecutor(limits=LIMITS))),
        (
            "process executor (warm worker)",
            anyio.run(measure, ProcessExecutor(limits=LIMITS, warm=0)),
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'':{width}}  {'per run':>11}  {'ratio':>8}  {'per call':>11}  {'ratio':>8}")
    for name, (run, call) in rows:
        print(
            f"{name:{width}}  {run * 1e6:8.1f} us  {run / base[0]:7.0f}x"
            f"  {call * 1e6:8.2f} us  {call / base[1]:7.0f}x"
        )


if __name__ == "__main__":
    main()
