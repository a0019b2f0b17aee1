"""The CPython interpreter in the confined worker beside the restricted one, through Runtime.

Run: ``python -m benchmarks.cpython``. Both use worker processes; the restricted worker
is the baseline in the same run. Cold start is a new runtime's first trivial run (the
CPython worker imports its packages, and, where the worker's uid could not read them
later, the whole standard library, before it confines itself); a warm run is a trivial
script in a live session; a call is one of 200 tool calls a script makes in a loop.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from codeact import Limits, ProcessExecutor, Runtime, ToolCall, tool

from ._timing import compiled_as_installed, header

ROUNDS = 5
WARM_RUNS = 100
CALLS = 200
LIMITS = Limits(wall_seconds=60, cpu_seconds=60, max_tool_calls=CALLS + 1)


@tool
def ping() -> int:
    """Answers at once."""
    return 1


def executor(interpreter: str) -> ProcessExecutor:
    packages = ("numpy",) if interpreter == "cpython" else ()
    return ProcessExecutor(interpreter=interpreter, packages=packages, limits=LIMITS, warm=0)


def median(measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(ROUNDS))


def cold_start(interpreter: str) -> float:
    started = time.perf_counter()
    with Runtime([ping], mode="code", executor=executor(interpreter)) as runtime:
        result = runtime.execute_sync(ToolCall("c", "run_code", {"code": "1"}))
        took = time.perf_counter() - started
    assert not result.is_error, result.text
    return took


def warm(runtime: Runtime, code: str, items: int) -> float:
    call = ToolCall("c", "run_code", {"code": code})
    started = time.perf_counter()
    for _ in range(items if code == "1" else 1):
        result = runtime.execute_sync(call)
    assert not result.is_error, result.text
    return (time.perf_counter() - started) / items


def main() -> None:
    compiled_as_installed()  # once, before any cold start is timed
    print(header("CPython in the confined worker beside the restricted interpreter (Runtime)"))
    figures: dict[str, dict[str, float]] = {}
    for interpreter in ("restricted", "cpython"):
        with Runtime([ping], mode="code", executor=executor(interpreter)) as runtime:
            warm(runtime, "1", 5)  # the session's worker is up
            figures[interpreter] = {
                "warm run": median(lambda: warm(runtime, "1", WARM_RUNS)),
                "tool call": median(
                    lambda: warm(runtime, f"for _ in range({CALLS}):\n    ping()", CALLS)
                ),
            }
        figures[interpreter]["cold start"] = median(lambda chosen=interpreter: cold_start(chosen))
    print(f"{'':<12} {'restricted':>12} {'cpython':>12} {'ratio':>8}")
    for row in ("cold start", "warm run", "tool call"):
        base, mine = figures["restricted"][row], figures["cpython"][row]
        unit, scale = ("s", 1.0) if row == "cold start" else ("us", 1e6)
        print(
            f"{row:<12} {base * scale:>10.3g} {unit} {mine * scale:>9.3g} {unit}"
            f" {mine / base:>7.2f}x"
        )


if __name__ == "__main__":
    main()
