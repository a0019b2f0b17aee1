"""What the host's distrust of its workers costs per message, against reading the message.

Run: ``python -m benchmarks.channel``. Each tool call from a script crosses the channel
as one line the host must decode; the host then checks the line's run number, kind and
shape (``codeact.executors._worker_messages``) and, at the end, rebuilds the outcome from its own
record. Ratios are to ``json.loads`` of the same line, measured in the same run; the
round trip through a worker (``benchmarks.runtime``) is the figure a user gets.

Then what a wait on a pipe costs: a call line sent to another process and echoed back,
the two sides sleeping in ``select`` until their message comes (what a blocking read
does), against each side polling its pipe for a moment first (``codeact.executors._spin``).
"""

from __future__ import annotations

import json
import os
import select
import statistics
import time

from codeact.executors._spin import READ_CHUNK, Spinner
from codeact.executors._worker_messages import asked_calls, checked, host_outcome
from codeact.sandbox import Limits, ToolCallRecord

from ._timing import header, per_call

BATCH = 20_000
CALL = {"op": "call", "run": 7, "name": "lookup", "arguments": {"key": 41}}
DONE = {
    "op": "done",
    "run": 7,
    "outcome": {"value": 42, "output": "", "tool_calls": [], "error": None},
}
BOUND = frozenset({"lookup"})
LIMITS = Limits()
RECORDS = [ToolCallRecord(name="lookup", ok=True)]


def main() -> None:
    call_line = json.dumps(CALL).encode()
    done_line = json.dumps(DONE).encode()

    def decode(count: int) -> None:
        for _ in range(count):
            json.loads(call_line)

    call_message, done_message = json.loads(call_line), json.loads(done_line)

    def check_call(count: int) -> None:
        for _ in range(count):
            asked_calls(call_message, checked(call_message, 7), BOUND)

    def check_done(count: int) -> None:
        for _ in range(count):
            checked(done_message, 7)
            host_outcome(done_message, RECORDS, LIMITS)

    print(header("The host's checks on a worker's messages (medians)"))
    base = per_call(decode, batch=BATCH)
    call = per_call(check_call, batch=BATCH)
    done = per_call(check_done, batch=BATCH)
    print(f"decode a call line (json.loads)       {base * 1e9:8.0f} ns (1.00x)")
    print(f"check a decoded call                  {call * 1e9:8.0f} ns ({call / base:.2f}x)")
    print(f"check a decoded outcome, rebuild it   {done * 1e9:8.0f} ns ({done / base:.2f}x)")
    print()
    print(header("A round trip over two pipes to another process (medians of 5 x 5,000)"))
    sleeping = round_trip(spin=False)
    polling = round_trip(spin=True)
    print(f"each side sleeps until its message comes   {sleeping * 1e6:7.1f} us (1.00x)")
    ratio = polling / sleeping
    print(f"each side polls a moment first (_spin)     {polling * 1e6:7.1f} us ({ratio:.2f}x)")


ROUND_TRIPS = 5_000


def _wait(fd: int, spinner: Spinner | None) -> bytes:
    chunk = spinner.read(fd) if spinner is not None else None
    if chunk is None:
        started = time.monotonic()
        select.select([fd], [], [])
        if spinner is not None:
            spinner.slept(time.monotonic() - started)
        chunk = os.read(fd, READ_CHUNK)
    return chunk


def round_trip(*, spin: bool) -> float:
    """Seconds per echo of a call line by a forked process, median of five batches."""
    to_echo, from_host = os.pipe()
    to_host, from_echo = os.pipe()
    for fd in (to_echo, to_host):
        os.set_blocking(fd, False)
    pid = os.fork()
    if pid == 0:  # the echo: what a worker does with the host's answers
        os.close(from_host)  # the host's end: closed there, the echo reads its end's close
        os.close(to_host)
        spinner = Spinner() if spin else None
        while True:
            line = _wait(to_echo, spinner)
            if not line:
                os._exit(0)
            os.write(from_echo, line)
    os.close(to_echo)
    os.close(from_echo)
    line = json.dumps(CALL).encode() + b"\n"
    spinner = Spinner() if spin else None
    samples = []
    try:
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(ROUND_TRIPS):
                os.write(from_host, line)
                _wait(to_host, spinner)
            samples.append((time.perf_counter() - started) / ROUND_TRIPS)
    finally:
        os.close(from_host)
        os.waitpid(pid, 0)
        os.close(to_host)
    return statistics.median(samples)


if __name__ == "__main__":
    main()
