"""Timing helpers: repeat, take medians, print ratios against a baseline of the same run."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

ROUNDS = 15


def per_call(run_batch: Callable[[int], None], *, batch: int, rounds: int = ROUNDS) -> float:
    """Median seconds per call over ``rounds`` batches of ``batch`` calls."""
    run_batch(max(1, batch // 10))  # warm caches and lazy imports
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        run_batch(batch)
        samples.append((time.perf_counter() - started) / batch)
    return statistics.median(samples)


async def per_call_async(
    run_batch: Callable[[int], Awaitable[None]], *, batch: int, rounds: int = ROUNDS
) -> float:
    """The async twin of :func:`per_call`."""
    await run_batch(max(1, batch // 10))
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await run_batch(batch)
        samples.append((time.perf_counter() - started) / batch)
    return statistics.median(samples)


def header(title: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d")
    machine = f"{platform.machine()}, Python {platform.python_version()}, {now}"
    return f"{title} ({machine})"


def table(rows: list[tuple[str, float, float]], *, baseline: str) -> str:
    """Rows of (name, seconds, baseline seconds) as microseconds and ratios."""
    width = max(len(name) for name, _, _ in rows)
    lines = [f"{'':{width}}  {'median':>12}  ratio to {baseline}"]
    for name, seconds, base in rows:
        lines.append(f"{name:{width}}  {seconds * 1e6:9.2f} us  {seconds / base:8.1f}x")
    return "\n".join(lines)
