"""Timing helpers: repeat, take medians, print ratios against a baseline of the same run."""

from __future__ import annotations

import compileall
import contextlib
import multiprocessing
import platform
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

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


BUSY_LIFETIME_SECONDS = 3600.0  # a spinner outlives no killed benchmark by more than this


def _spin(until: float) -> None:
    while time.monotonic() < until:
        pass


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the block's length: a machine whose
    cores are busy with other work, the same for every engine measured inside."""
    until = time.monotonic() + BUSY_LIFETIME_SECONDS
    spinners = [
        multiprocessing.Process(target=_spin, args=(until,), daemon=True) for _ in range(count)
    ]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            spinner.join(10)


def compiled_as_installed() -> None:
    """Write codeact's bytecode caches, as pip does at install, before a cold start is
    measured. A checkout run where PYTHONDONTWRITEBYTECODE is set (some machines and
    images set it) would otherwise compile every module at every start, the worker
    template's included: a cold start would measure the compiler, not codeact."""
    root = Path(__file__).resolve().parent.parent
    for package in ("codeact", "stdlib_bindings"):
        compileall.compile_dir(root / package, quiet=1)
