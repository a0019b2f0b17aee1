"""What kernel confinement costs a worker: start time, per run and per tool call, on and off.

Run: ``python -m benchmarks.confinement``. Both kinds of worker are measured in the
same run, interleaved, and reported as medians with the ratio confined / unconfined.
"""

from __future__ import annotations

import statistics
import time

import anyio

from codeact import Limits
from codeact.executors._confine import Confinement
from codeact.executors._process import ProcessExecutor
from codeact.executors._worker_process import Worker, WorkerOptions

from ._timing import header
from .executor import CALLS, LIMITS, answer_at_once, median_per_item

STARTS = 9
RUNS = 200


async def start_times() -> dict[str, float]:
    samples: dict[str, list[float]] = {"best-effort": [], "off": []}
    for _ in range(STARTS):
        for confinement in samples:  # interleaved: both see the same machine load
            started = time.perf_counter()
            worker = await Worker.start(
                Limits(),
                frozenset({"json"}),
                WorkerOptions(confinement=confinement),  # type: ignore[arg-type]
            )
            samples[confinement].append(time.perf_counter() - started)
            await worker.close()
    return {k: statistics.median(v) for k, v in samples.items()}


async def run_costs(confinement: Confinement) -> tuple[float, float]:
    executor = ProcessExecutor(limits=LIMITS, warm=0, confinement=confinement)
    tools = {"ping": ()}

    async def runs() -> None:
        for _ in range(RUNS):
            await executor.run("x = 1", session="b", tools=tools, call_tool=answer_at_once)

    async def calls() -> None:
        script = f"for _ in range({CALLS}):\n    ping()"
        outcome = await executor.run(script, session="b", tools=tools, call_tool=answer_at_once)
        assert outcome.ok, outcome.error

    try:
        return await median_per_item(runs, RUNS), await median_per_item(calls, CALLS)
    finally:
        await executor.aclose()


async def measure() -> None:
    starts = await start_times()
    confined = await run_costs("best-effort")
    plain = await run_costs("off")
    print(f"{'':26}  {'confined':>11}  {'unconfined':>11}  {'ratio':>6}")
    rows = [
        ("worker start (median)", starts["best-effort"], starts["off"], 1e3, "ms"),
        ("per trivial run", confined[0], plain[0], 1e6, "us"),
        ("per tool call round trip", confined[1], plain[1], 1e6, "us"),
    ]
    for name, on, off, scale, unit in rows:
        print(f"{name:26}  {on * scale:8.1f} {unit}  {off * scale:8.1f} {unit}  {on / off:5.2f}x")


def main() -> None:
    print(header("Kernel confinement of workers: cost, confined vs unconfined"))
    anyio.run(measure)


if __name__ == "__main__":
    main()
