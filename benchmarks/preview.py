"""What one approval for a whole plan costs, through ``Runtime``.

Run: ``python -m benchmarks.preview``. A script reads once, then writes N times in a
loop. Three ways to run it on a durable runtime (JSONL), medians of several rounds,
ratios to the first, measured in the same run:

- straight: every write allowed, no one asked;
- ask per write: the policy asks an approver about each write (N questions);
- preview, commit: run_code's ``preview`` option, one question about the whole plan,
  then the commit (the read checked again, the run replayed, the writes made).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import anyio

from codeact import (
    Durable,
    JsonlStore,
    Limits,
    RulePolicy,
    Runtime,
    ToolCall,
    ToolRegistry,
    ask,
    tool,
)

from ._timing import header

WRITES = (1, 10, 100)
ROUNDS = 7
LIMITS = Limits(wall_seconds=600, cpu_seconds=600)


@tool(read_only=True)
def price(item: str) -> int:
    """A read."""
    return len(item)


@tool(destructive=True)
def order(item: str, qty: int) -> int:
    """A write."""
    return qty


def _registry(style: str, asked: list[object]) -> ToolRegistry:
    def approver(question: object) -> bool:
        asked.append(question)
        return True

    rules = [ask("order")] if style == "ask per write" else []
    registry = ToolRegistry(policy=RulePolicy(rules, approver=approver))
    registry.register(price)
    registry.register(order)
    return registry


async def one_style(style: str, writes: int, folder: Path) -> tuple[float, int]:
    """Median seconds per run and questions asked per run."""
    source = f"p = price('pen')\nfor i in range({writes}):\n    order(item='pen', qty=p + i)"
    asked: list[object] = []
    durable = Durable(lambda name: JsonlStore(folder / f"{style}-{writes}-{name}.jsonl"))
    runtime = Runtime(_registry(style, asked), mode="code", limits=LIMITS, durable=durable)
    times = []
    async with runtime:
        for number in range(ROUNDS + 1):
            arguments = {"code": source, "preview": style == "preview, commit"}
            started = time.perf_counter()
            result = await runtime.execute(
                ToolCall(f"c{number}", "run_code", arguments), session=f"s{number}"
            )
            elapsed = time.perf_counter() - started
            assert not result.is_error, result.text
            if number:  # the first warms the worker pool
                times.append(elapsed)
    return statistics.median(times), len(asked) // (ROUNDS + 1)


async def measure() -> None:
    styles = ("straight", "ask per write", "preview, commit")
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'writes':>7}  {'style':18}{'per run':>12}{'ratio':>8}{'questions':>11}")
        for writes in WRITES:
            baseline = 0.0
            for style in styles:
                seconds, questions = await one_style(style, writes, Path(folder))
                baseline = baseline or seconds
                print(
                    f"{writes:>7}  {style:18}{seconds * 1e3:9.2f} ms{seconds / baseline:7.2f}x"
                    f"{questions:>11}"
                )


def main() -> None:
    print(header("Preview, then commit, through Runtime"))
    anyio.run(measure)


if __name__ == "__main__":
    main()
