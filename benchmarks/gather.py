"""Concurrent tool calls from one script, through ``Runtime``: gather against one by one.

Run: ``python -m benchmarks.gather``. Ten calls of a tool that sleeps 0.2 s: as a
script calling them one after another, as a script awaiting them with
``asyncio.gather``, and as one native parallel batch (the model's own way to run
them together), each the median of a few rounds, with ratios to the native batch.
"""

from __future__ import annotations

import statistics
import time

import anyio

from codeact import (
    Executor,
    InProcessExecutor,
    Limits,
    ProcessExecutor,
    Runtime,
    ToolCall,
    ToolRegistry,
    tool,
)

from ._timing import header

CALLS = 10
SLEEP_SECONDS = 0.2
ROUNDS = 5
LIMITS = Limits(wall_seconds=30)
ONE_BY_ONE = f"[fetch(i) for i in range({CALLS})]"
GATHERED = f"import asyncio\nawait asyncio.gather(*(fetch(i) for i in range({CALLS})))"


@tool(concurrency_safe=True)
async def fetch(key: int) -> int:
    """A slow, read-only host tool."""
    await anyio.sleep(SLEEP_SECONDS)
    return key


async def median_wall(runtime: Runtime, make: str | None) -> float:
    samples = []
    for round_number in range(ROUNDS + 1):  # the first round starts the worker: not counted
        started = time.perf_counter()
        if make is None:
            calls = [ToolCall(f"n{round_number}-{i}", "fetch", {"key": i}) for i in range(CALLS)]
            results = await runtime.execute_many(calls, mode="native")
            assert all(not r.is_error for r in results)
        else:
            result = await runtime.execute(ToolCall(f"c{round_number}", "run_code", {"code": make}))
            assert not result.is_error, result.text
        if round_number:
            samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def measure(executor: Executor) -> dict[str, float]:
    registry = ToolRegistry()
    registry.register(fetch)
    runtime = Runtime(registry, mode="both", executor=executor, limits=LIMITS)
    async with runtime:
        return {
            "native parallel batch": await median_wall(runtime, None),
            "script, one by one": await median_wall(runtime, ONE_BY_ONE),
            "script, asyncio.gather": await median_wall(runtime, GATHERED),
        }


def main() -> None:
    print(header(f"{CALLS} calls of a {SLEEP_SECONDS:g} s tool from one script, through Runtime"))
    for name, make in (
        ("process executor", lambda: ProcessExecutor(limits=LIMITS)),
        ("in-process executor", lambda: InProcessExecutor(limits=LIMITS)),
    ):
        figures = anyio.run(measure, make())
        base = figures["native parallel batch"]
        print(f"{name}:")
        for label, seconds in figures.items():
            print(f"  {label:24} {seconds:6.3f} s  {seconds / base:5.2f}x the native batch")


if __name__ == "__main__":
    main()
