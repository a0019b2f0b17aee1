"""What a user gets through ``Runtime``: per tool call, per trivial run, cold start, memory.

Run: ``python -m benchmarks.runtime``. Every figure goes through ``Runtime.execute`` and
``run_code`` (pre-run check, the executor, the dispatch pipeline), not the bare
interpreter; ratios are to plain CPython doing the same in the same run.

- per tool call: a script calling a sync tool in a loop, per call;
- per trivial run: ``1 + 1`` through ``run_code``, warm;
- cold start: a fresh interpreter importing codeact, building a Runtime and getting the
  first ``run_code`` result (the process executor's default);
- memory of idle warm workers: resident (RSS) and unique (USS: private pages) of the
  median one, and the sum over 32 sessions' workers, each started afresh and forked from
  the template process.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

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

from ._timing import compiled_as_installed, header

CALLS = 500
RUNS = 300
ROUNDS = 5
SESSIONS = 32
LIMITS = Limits(wall_seconds=60, cpu_seconds=60, max_tool_calls=10_000)
LOOP = f"t = 0\nfor i in range({CALLS}):\n    t += lookup(i)\nt"
COLD = """
import time
started = time.perf_counter()
from codeact import Runtime, ToolCall, ToolRegistry, tool
@tool
def add(a: int, b: int) -> int:
    \"\"\"Add.\"\"\"
    return a + b
registry = ToolRegistry()
registry.register(add)
runtime = Runtime(registry, mode="code")
result = runtime.execute_sync(ToolCall("c", "run_code", {"code": "add(1, 2)"}))
assert not result.is_error, result.text
print(time.perf_counter() - started)
runtime.close()
"""


@tool
def lookup(key: int) -> int:
    """A cheap host tool."""
    return key * 2


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(lookup)
    return registry


async def per_call_and_run(executor: Executor) -> tuple[float, float]:
    runtime = Runtime(_registry(), mode="code", executor=executor, limits=LIMITS)
    async with runtime:
        await runtime.execute(ToolCall("warm", "run_code", {"code": "1 + 1"}))
        calls = []
        for number in range(ROUNDS):
            started = time.perf_counter()
            result = await runtime.execute(ToolCall(f"l{number}", "run_code", {"code": LOOP}))
            calls.append((time.perf_counter() - started) / CALLS)
            assert not result.is_error, result.text
        runs = []
        for number in range(RUNS):
            started = time.perf_counter()
            await runtime.execute(ToolCall(f"t{number}", "run_code", {"code": "1 + 1"}))
            runs.append(time.perf_counter() - started)
    return statistics.median(calls), statistics.median(runs)


def cpython_baseline() -> tuple[float, float]:
    def lookup_plain(key: int) -> int:
        return key * 2

    code = compile(LOOP, "<baseline>", "exec")
    calls = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        exec(code, {"lookup": lookup_plain})
        calls.append((time.perf_counter() - started) / CALLS)
    trivial = compile("1 + 1", "<baseline>", "exec")
    runs = []
    for _ in range(RUNS):
        started = time.perf_counter()
        exec(trivial, {})
        runs.append(time.perf_counter() - started)
    return statistics.median(calls), statistics.median(runs)


def cold_start() -> float:
    compiled_as_installed()
    samples = []
    for _ in range(ROUNDS):
        done = subprocess.run(
            [sys.executable, "-c", COLD], capture_output=True, text=True, check=True
        )
        samples.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def _memory(pid: int) -> tuple[int, int]:
    """Resident and unique bytes of a process, from its smaps rollup."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0]) * 1024
    return fields.get("Rss", 0), fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)


async def worker_memory(template: bool) -> dict[str, tuple[int, int]]:
    """Resident and unique bytes: a median idle worker, the template, and the sum over
    ``SESSIONS`` sessions' workers (plus the template they share, when there is one)."""
    executor = ProcessExecutor(limits=LIMITS, warm=0, template=template)
    runtime = Runtime(_registry(), mode="code", executor=executor, limits=LIMITS)
    async with runtime:
        if template:
            assert await executor.prepare(), "this machine cannot fork workers from a template"
        for number in range(SESSIONS):
            result = await runtime.execute(
                ToolCall(f"m{number}", "run_code", {"code": "lookup(1)"}), session=f"s{number}"
            )
            assert not result.is_error, result.text
        sizes = [_memory(worker.pid) for worker in executor.workers if not worker.dead]
        shared = [] if executor.template_pid is None else [_memory(executor.template_pid)]
    middle = sorted(sizes, key=lambda size: size[1])[len(sizes) // 2]
    every = sizes + shared
    return {
        "worker": middle,
        "template": shared[0] if shared else (0, 0),
        "total": (sum(s[0] for s in every), sum(s[1] for s in every)),
    }


def main() -> None:
    print(header("Through Runtime.execute and run_code (medians)"))
    base_call, base_run = cpython_baseline()
    print(f"{'':22} {'per tool call':>16} {'per trivial run':>18}")
    print(f"{'plain CPython exec':22} {base_call * 1e6:13.2f} us {base_run * 1e6:15.2f} us")
    for name, make in (
        ("in-process executor", lambda: InProcessExecutor(limits=LIMITS)),
        ("process executor", lambda: ProcessExecutor(limits=LIMITS)),
    ):
        per_call, per_run = anyio.run(per_call_and_run, make())
        print(
            f"{name:22} {per_call * 1e6:13.2f} us {per_run * 1e6:15.2f} us"
            f"   ({per_call / base_call:,.0f}x, {per_run / base_run:,.0f}x CPython)"
        )
    print(f"cold start (fresh interpreter to first run_code result): {cold_start():.3f} s")
    mib = 1024 * 1024
    for template in (False, True):
        sizes = anyio.run(worker_memory, template)
        how = "forked from the template" if template else "each started afresh"
        rss, uss = sizes["worker"]
        total_rss, total_uss = sizes["total"]
        print(f"idle warm worker, {how}: {rss / mib:.1f} MiB resident, {uss / mib:.1f} MiB unique")
        if template:
            t_rss, t_uss = sizes["template"]
            print(f"  the template itself: {t_rss / mib:.1f} MiB resident, ", end="")
            print(f"{t_uss / mib:.1f} MiB unique")
        print(
            f"  {SESSIONS} idle sessions' workers{' and the template' if template else ''}: "
            f"{total_rss / mib:.0f} MiB resident, {total_uss / mib:.0f} MiB unique"
        )


if __name__ == "__main__":
    main()
