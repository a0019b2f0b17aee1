"""The restricted interpreter against plain CPython ``exec`` of the same code, in one run.

Run: ``python -m benchmarks.interpreter``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import anyio

from codeact import ToolCall, ToolRegistry, tool
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.sandbox import Limits
from codeact.stdlib import standard_sandbox

from ._timing import header

LOOP = """
total = 0
for i in range(300):
    for j in range(300):
        total += (i * j) % 7
total
"""

RECORDS = """
rows = [{"id": i, "price": i % 97, "qty": i % 13, "tag": "t" + str(i % 5)} for i in range(20000)]
totals = {}
kept = []
for row in rows:
    if row["qty"] > 3 and row["price"] < 80:
        totals[row["tag"]] = totals.get(row["tag"], 0) + row["price"] + row["qty"]
        kept.append(row["id"])
(len(kept), sorted(totals.items()))
"""

STRINGS = """
words = []
for i in range(20000):
    s = f"item-{i}"
    words.append(s.upper().replace("-", "_"))
text = ",".join(words)
len(text.split(","))
"""

OBJECTS = """
import datetime
from dataclasses import dataclass

@dataclass
class Point:
    x: int
    y: int

points = [Point(i, i % 17) for i in range(5000)]
start = datetime.date(2024, 1, 1)
total = 0
for i, (p, q) in enumerate(zip(points, reversed(points))):
    match p:
        case Point(x, 0):
            total += x
        case Point(x=x, y=y) if y > 8:
            total += (start + datetime.timedelta(days=y)).day
    total += q.y
ranked = sorted(points, key=lambda p: (p.y, -p.x))[:5]
(total, max(points, key=lambda p: p.y).y, [p.x for p in ranked])
"""

# Lazy iterators a C consumer walks: each item is handed on through Python code (so a limit
# can stop the consumer), the cost this measures against CPython's C-only walk.
LAZY = """
import itertools
xs = list(range(100000))
total = sum(map(abs, xs)) + sum(1 for _ in filter(None, xs))
pairs = sum(a * b for a, b in zip(map(abs, xs), itertools.islice(itertools.count(), 100000)))
(total, pairs, len(list(itertools.chain.from_iterable([xs, xs]))))
"""

TOOL_CALLS = 10_000
TOOL_SCRIPT = f"""
total = 0
for i in range({TOOL_CALLS}):
    total += add(i, 1)
total
"""

TRIVIAL = "x = 1"
ROUNDS = 9


def median_seconds(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    action()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def paired(
    ours: Callable[[], object], base: Callable[[], object], rounds: int = ROUNDS
) -> tuple[float, float, float]:
    """Alternate the two, so drift on a noisy machine hits both; medians and median ratio."""
    ours(), base()
    mine, theirs, ratios = [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        base()
        middle = time.perf_counter()
        ours()
        ended = time.perf_counter()
        theirs.append(middle - started)
        mine.append(ended - middle)
        ratios.append((ended - middle) / (middle - started))
    return statistics.median(mine), statistics.median(theirs), statistics.median(ratios)


def cpython(source: str, extra: dict[str, object] | None = None) -> Callable[[], object]:
    code = compile(source, "<cpython>", "exec")
    return lambda: exec(code, {"__name__": "__main__", **(extra or {})})


def sandboxed(source: str) -> Callable[[], object]:
    sandbox = standard_sandbox(limits=Limits(wall_seconds=120, cpu_seconds=120))

    def run() -> object:
        outcome = sandbox.run(source)
        assert outcome.ok, outcome.error
        return outcome.value

    return run


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_calls_through_pipeline() -> float:
    registry = ToolRegistry()
    registry.register(tool(add))
    scope = registry.child()
    scope.register(
        run_code_tool(registry, limits=Limits(wall_seconds=300, max_tool_calls=TOOL_CALLS + 1))
    )

    async def once() -> float:
        started = time.perf_counter()
        result = await scope.execute(ToolCall("bench", RUN_CODE, {"code": TOOL_SCRIPT}))
        assert not result.is_error, result
        return time.perf_counter() - started

    async def rounds() -> float:
        return statistics.median([await once() for _ in range(3)])

    return anyio.run(rounds)


BATCH = 2_000


def batched(action: Callable[[], object]) -> Callable[[], object]:
    def batch() -> None:
        for _ in range(BATCH):
            action()

    return batch


def main() -> None:
    print(header("Interpreter: codeact's sandbox against plain CPython exec"))
    rows = []
    scripts = (
        ("loop-heavy: integer * and % in the loop", LOOP),
        ("loop-heavy: dicts, lists, comparisons", RECORDS),
        ("string-heavy", STRINGS),
        ("object-heavy: classes, patterns, zip, sorted", OBJECTS),
        ("iterator-heavy: map, filter, zip, itertools", LAZY),
    )
    for name, source in scripts:
        rows.append((name, *paired(sandboxed(source), cpython(source)), "script"))
    trivial = paired(batched(sandboxed(TRIVIAL)), batched(cpython(TRIVIAL)))
    rows.append(
        ("trivial run (compile cached)", trivial[0] / BATCH, trivial[1] / BATCH, trivial[2], "run")
    )
    base_calls = median_seconds(cpython(TOOL_SCRIPT, {"add": add})) / TOOL_CALLS
    ours_calls = tool_calls_through_pipeline() / TOOL_CALLS
    calls = (
        "tool call from a script (full pipeline)",
        ours_calls,
        base_calls,
        ours_calls / base_calls,
        "call",
    )
    rows.append(calls)
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'codeact':>12}  {'CPython':>12}  ratio")
    for name, ours, base, ratio, unit in rows:
        print(f"{name:{width}}  {_fmt(ours)}  {_fmt(base)}  {ratio:7.2f}x  (per {unit})")


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds * 1e6:9.2f} us"


if __name__ == "__main__":
    main()
