"""The suite under CPU contention: ``python -m tests.load_check [BUSY] [-- PYTEST ARGS]``.

Starts ``BUSY`` processes (default: one per core) that spin on the CPU, runs the test
command beside them, and stops them however the run ends. The suite must pass here as it
does on a quiet machine: no test may depend on which of two timely outcomes wins. The busy
processes end by themselves within the hour too (``benchmarks._timing.busy_cores``), so
none outlives a killed check by long. Prints the suite's time and exits with its exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks._timing import busy_cores

DEFAULT_ARGS = ["-q", "-p", "no:cacheprovider"]


def main(argv: list[str]) -> int:
    busy, pytest_args = _parsed(argv)
    print(f"load check: {busy} busy processes beside the suite", flush=True)
    started = time.monotonic()
    with busy_cores(busy):
        done = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], check=False)
    print(f"load check: the suite took {time.monotonic() - started:.0f} s under load", flush=True)
    return done.returncode


def _parsed(argv: list[str]) -> tuple[int, list[str]]:
    """``[BUSY] [-- PYTEST ARGS]``: the busy processes, and what pytest is given."""
    ours, pytest_args = argv, DEFAULT_ARGS
    if "--" in argv:
        split = argv.index("--")
        ours, pytest_args = argv[:split], argv[split + 1 :] or DEFAULT_ARGS
    busy = int(ours[0]) if ours else (os.cpu_count() or 2)
    return busy, pytest_args


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
