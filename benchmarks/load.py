"""Load through one Runtime: runs per second and latency at 1, 8 and 32 concurrent sessions.

Run: ``python -m benchmarks.load``. Each session sends its runs one after another
(a script with one tool call); sessions run at once. Reported per executor: runs per
second over the whole load, and the median and 99th percentile latency of a run.
The first run of each session (a worker start, in the process executor) is counted
separately, so the steady state and the cold start can each be read.
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

RUNS_PER_SESSION = 20
CONCURRENCY = (1, 8, 32)
LIMITS = Limits(wall_seconds=60, cpu_seconds=60)
SCRIPT = "values = [lookup(k) for k in range(1)]\nsum(values) + len(str(values))"


@tool
def lookup(key: int) -> int:
    """A cheap host tool."""
    return key * 2


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def load(executor: Executor, sessions: int) -> tuple[float, float, float, float]:
    registry = ToolRegistry()
    registry.register(lookup)
    runtime = Runtime(registry, mode="code", executor=executor, limits=LIMITS)
    steady: list[float] = []
    first: list[float] = []

    async def session(number: int) -> None:
        for run in range(RUNS_PER_SESSION):
            started = time.perf_counter()
            result = await runtime.execute(
                ToolCall(f"{number}-{run}", "run_code", {"code": SCRIPT}), session=f"s{number}"
            )
            (first if run == 0 else steady).append(time.perf_counter() - started)
            assert not result.is_error, result.text

    async with runtime:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for number in range(sessions):
                group.start_soon(session, number)
        elapsed = time.perf_counter() - started
    rate = sessions * RUNS_PER_SESSION / elapsed
    return rate, statistics.median(steady), percentile(steady, 0.99), statistics.median(first)


def main() -> None:
    print(header("Load through one Runtime: concurrent sessions, a tool call per run"))
    columns = ("sessions", "runs/s", "p50", "p99", "first run p50")
    print(
        f"{'executor':12} "
        + " ".join(f"{c:>{w}}" for c, w in zip(columns, (8, 8, 10, 10, 14), strict=True))
    )
    makers = {
        "in-process": lambda: InProcessExecutor(limits=LIMITS),
        "process": lambda: ProcessExecutor(limits=LIMITS, warm=2),
    }
    for name, make in makers.items():
        for sessions in CONCURRENCY:
            rate, p50, p99, cold = anyio.run(load, make(), sessions)
            print(
                f"{name:12} {sessions:8d} {rate:8.0f} {p50 * 1e3:7.2f} ms {p99 * 1e3:7.2f} ms"
                f" {cold * 1e3:11.1f} ms"
            )


if __name__ == "__main__":
    main()
