"""The bounds of a durable run's tape, and what each reading costs it.

Kept apart from ``_recorded`` (the tape itself, with the clocks and entropy it wraps):
the host checks a worker's readings against these and needs nothing else of it, so it
does not import uuid, datetime and platform on the way to its first script.
"""

from __future__ import annotations

from typing import Any

MAX_READINGS = 100_000  # per run: a clock read in a loop must not grow the record unbounded
MAX_ENTROPY_BYTES = 4_096  # per reading
# per run, as the record keeps them (entropy as hex): about a megabyte of random bytes
MAX_TAPE_CHARS = 2_000_000
FLOAT_KINDS = frozenset({"time", "monotonic", "perf_counter", "process_time", "thread_time"})
INT_KINDS = frozenset(
    {"time_ns", "monotonic_ns", "perf_counter_ns", "process_time_ns", "thread_time_ns"}
)


def reading_chars(value: Any) -> int:
    """What one reading costs the record: its text (entropy), or a number's digits."""
    return len(value) if type(value) is str else len(repr(value))


__all__ = [
    "FLOAT_KINDS",
    "INT_KINDS",
    "MAX_ENTROPY_BYTES",
    "MAX_READINGS",
    "MAX_TAPE_CHARS",
    "reading_chars",
]
