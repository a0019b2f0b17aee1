"""What a durable run costs, through ``Runtime``: recording, and resuming.

Run: ``python -m benchmarks.durable``. Ratios are to the same runtime not recording,
measured in the same run (medians of several rounds):

- per tool call: a script calling a cheap tool in a loop, each call written to the log
  before its effect and its answer after (JSONL, and SQLite with a durable commit each);
- per run: ``1 + 1`` through ``run_code``, whose start and end are recorded;
- resume: a run that made N calls and then suspended for an approval, resumed: its N
  calls replayed from the log in a clean worker (nothing executes again), then the
  approved call; against the time the N calls took to run the first time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from codeact import (
    LATER,
    Durable,
    EventStore,
    JsonlStore,
    Limits,
    RulePolicy,
    Runtime,
    SqliteStore,
    ToolCall,
    ToolRegistry,
    ask,
    tool,
)

from ._timing import header

CALLS = 500
RUNS = 100
ROUNDS = 5
REPLAYED = (100, 1_000, 10_000)
LIMITS = Limits(wall_seconds=600, cpu_seconds=600, max_tool_calls=20_000)
LOOP = f"t = 0\nfor i in range({CALLS}):\n    t += lookup(i)\nt"


@tool
def lookup(key: int) -> int:
    """A cheap host tool."""
    return key * 2


@tool
def approve_me() -> str:
    """A call that waits for a person."""
    return "done"


def _registry() -> ToolRegistry:
    registry = ToolRegistry(
        policy=RulePolicy([ask("approve_me")], approver=lambda invocation: LATER)
    )
    registry.register(lookup)
    registry.register(approve_me)
    return registry


async def _timed(runtime: Runtime, source: str, session: str, number: int) -> float:
    started = time.perf_counter()
    result = await runtime.execute(
        ToolCall(f"c{number}", "run_code", {"code": source}), session=session
    )
    elapsed = time.perf_counter() - started
    assert not result.is_error, result.text
    return elapsed


async def per_call_and_run(store: Callable[[str], EventStore] | None) -> tuple[float, float]:
    durable = None if store is None else Durable(store)
    runtime = Runtime(_registry(), mode="code", limits=LIMITS, durable=durable)
    async with runtime:
        await _timed(runtime, "1 + 1", "s", 0)
        calls = [await _timed(runtime, LOOP, "s", 1 + n) / CALLS for n in range(ROUNDS)]
        runs = []
        for round_number in range(ROUNDS):
            started = time.perf_counter()
            for n in range(RUNS):
                await _timed(runtime, "1 + 1", "s", 100 + round_number * RUNS + n)
            runs.append((time.perf_counter() - started) / RUNS)
    return statistics.median(calls), statistics.median(runs)


async def resume_times(folder: Path, calls: int) -> tuple[float, float]:
    """Seconds to run ``calls`` calls up to the suspension, and to resume past them."""
    source = f"t = 0\nfor i in range({calls}):\n    t += lookup(i)\napprove_me()\nt"
    firsts, resumes = [], []
    for round_number in range(3):
        session = f"r{calls}-{round_number}"
        durable = Durable(lambda name: JsonlStore(folder / f"{name}.jsonl"))
        async with Runtime(_registry(), mode="code", limits=LIMITS, durable=durable) as runtime:
            await _timed(runtime, "1 + 1", f"warm-{session}", 0)
            started = time.perf_counter()
            suspended = await runtime.execute(
                ToolCall("c1", "run_code", {"code": source}), session=session
            )
            firsts.append(time.perf_counter() - started)
            assert suspended.error.code == "SUSPENDED", suspended.text  # type: ignore[union-attr]
            [pending] = runtime.pending(session)
            started = time.perf_counter()
            resumed = await runtime.resume(session, {pending.call_id: True})
            resumes.append(time.perf_counter() - started)
            assert not resumed.is_error, resumed.text
    return statistics.median(firsts), statistics.median(resumes)


async def measure() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        plain = await per_call_and_run(None)
        jsonl = await per_call_and_run(lambda name: JsonlStore(root / f"{name}.jsonl"))
        sqlite = await per_call_and_run(lambda name: SqliteStore(root / "runs.db", name))
        print(f"{'':28}{'per tool call':>16}{'ratio':>8}{'per run':>14}{'ratio':>8}")
        for name, (call, run) in (
            ("not recorded", plain),
            ("recorded, JSONL", jsonl),
            ("recorded, SQLite (FULL)", sqlite),
        ):
            print(
                f"{name:28}{call * 1e6:13.1f} us{call / plain[0]:7.2f}x"
                f"{run * 1e3:11.2f} ms{run / plain[1]:7.2f}x"
            )
        print()
        print(f"{'calls replayed':>15}{'first run':>12}{'resume':>11}{'per call':>12}{'ratio':>8}")
        for calls in REPLAYED:
            first, resume = await resume_times(root, calls)
            print(
                f"{calls:>15,}{first:11.3f}s{resume:10.3f}s{resume / calls * 1e6:9.1f} us"
                f"{resume / first:7.2f}x"
            )


def main() -> None:
    print(header("Durable runs through Runtime"))
    anyio.run(measure)


if __name__ == "__main__":
    main()
