"""A worker that turns hostile on request, as code that escaped the interpreter would.

Test-only: started only by tests that name this module as the worker module. It is the
real worker (confined the same way, serving the same protocol) until a run's source
starts with ``#hostile: <behaviour>``; then, instead of running the script, it does to
the host what an escaped script could do with the worker's end of the channel.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from typing import Any

from codeact.executors._spin import Spinner
from codeact.executors._worker import Channel, channel_files, serve

PIPE_FULL = 1 << 20  # far more than a pipe buffer holds


class HostileChannel(Channel):
    """The worker's channel, with the raw writer at hand for what a real worker never sends."""

    def receive(self, *, spin: Spinner | None = None) -> dict[str, Any]:
        message = super().receive(spin=spin)
        source = message.get("source")
        if (
            message.get("op") == "run"
            and isinstance(source, str)
            and source.startswith("#hostile:")
        ):
            behaviour = source.split(":", 1)[1].split()[0]
            BEHAVIOURS[behaviour](self, message["run"])
            return self.receive(spin=spin)  # for those that live on: the host's next message
        return message

    def raw(self, data: bytes) -> None:
        self.send_encoded(data)

    def line(self, message: dict[str, Any]) -> None:
        self.raw(json.dumps(message).encode() + b"\n")


def done(run: int, value: Any = None, **outcome: Any) -> dict[str, Any]:
    return {"op": "done", "run": run, "outcome": {"value": value, **outcome}}


def hang() -> None:
    while True:  # the host must kill us
        time.sleep(3600)


def stall(channel: HostileChannel, run: int) -> None:
    hang()


def flood(channel: HostileChannel, run: int) -> None:
    text = "x" * 4_096
    while True:
        channel.line({"op": "output", "run": run, "text": text})


def endless_line(channel: HostileChannel, run: int) -> None:
    chunk = b"a" * 65_536
    while True:
        channel.raw(chunk)


def garbage(channel: HostileChannel, run: int) -> None:
    channel.raw(b"\x00\x01 this is not JSON \xfe\n")
    hang()


def deep(channel: HostileChannel, run: int) -> None:
    channel.raw(b"[" * 200_000 + b"\n")
    hang()


def partial(channel: HostileChannel, run: int) -> None:
    channel.raw(b'{"op": "done", "run": ')
    hang()


def invalid_utf8(channel: HostileChannel, run: int) -> None:
    channel.raw(b'{"op": "done", "run": ' + str(run).encode() + b', "outcome": "\xff\xfe"}\n')
    hang()


def forged_run(channel: HostileChannel, run: int) -> None:
    channel.line(done(run + 1, "forged"))
    hang()


def earlier_run(channel: HostileChannel, run: int) -> None:
    channel.line(done(run - 1, "stale"))
    hang()


def unknown_op(channel: HostileChannel, run: int) -> None:
    channel.line({"op": "ready", "run": run, "confinement": {}})
    hang()


def forged_calls(channel: HostileChannel, run: int) -> None:
    channel.line({"op": "calls", "run": run, "calls": [{"name": "os.system", "arguments": {}}]})
    hang()


def misshapen_calls(channel: HostileChannel, run: int) -> None:
    channel.line({"op": "calls", "run": run, "calls": ["add", 1, None]})
    hang()


def too_many_calls(channel: HostileChannel, run: int) -> None:
    calls = [{"name": "add", "arguments": {"a": 1}}] * 5_000
    channel.line({"op": "calls", "run": run, "calls": calls})
    hang()


def trickle(channel: HostileChannel, run: int) -> None:
    """Mid-run (once a call was answered, the host serving in a thread), send a byte at a
    time, never a whole message: each read brings something, none ends the wait."""
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": 1}})
    channel.receive()
    while True:
        channel.raw(b" ")


def never_reads(channel: HostileChannel, run: int) -> None:
    """Ask for an answer larger than a pipe buffer, then never read it."""
    channel.line({"op": "call", "run": run, "name": "big", "arguments": {"size": PIPE_FULL}})
    hang()


def wrong_code(channel: HostileChannel, run: int) -> None:
    error = {"code": "POLICY_DENIED", "message": "forged", "kind": ""}
    channel.line(done(run, error=error))
    hang()


def bad_outcome(channel: HostileChannel, run: int) -> None:
    channel.line({"op": "done", "run": run, "outcome": {"tool_calls": "all of them"}})
    hang()


def bad_cause(channel: HostileChannel, run: int) -> None:
    error = {"code": "CODE_RUNTIME_ERROR", "message": "m", "kind": "", "cause": ["not text"]}
    channel.line(done(run, error=error))
    hang()


def huge_error(channel: HostileChannel, run: int) -> None:
    """Live on, but claim a 15 MB error (and cause) and calls that never happened."""
    error = {
        "code": "CODE_RUNTIME_ERROR",
        "message": "E" * 15_000_000,
        "kind": "X" * 100_000,
        "cause": "C" * 15_000_000,
    }
    claimed = [{"name": "add", "ok": True, "code": None}] * 50
    channel.line(done(run, error=error, tool_calls=claimed, output="o" * 5_000_000))


def huge_value(channel: HostileChannel, run: int) -> None:
    """Live on, but claim a value far over what the interpreter lets a run return."""
    channel.line(done(run, list(range(2_000_000))))
    hang()


def deep_value(channel: HostileChannel, run: int) -> None:
    """A value nested 500 deep: within the decoder's reach, past the interpreter's 50."""
    channel.raw(b'{"op": "done", "run": %d, "outcome": {"value": ' % run)
    channel.raw(b"[" * 500 + b"]" * 500 + b"}}\n")
    hang()


def wide_keys(channel: HostileChannel, run: int) -> None:
    """Few entries, but keys that hold the characters."""
    channel.line(done(run, {str(n) + "k" * 100_000: n for n in range(20)}))
    hang()


def nan_value(channel: HostileChannel, run: int) -> None:
    channel.raw(b'{"op": "done", "run": %d, "outcome": {"value": [NaN]}}\n' % run)
    hang()


def hides_calls(channel: HostileChannel, run: int) -> None:
    """Live on: make 50 real calls, then claim none and an output far over the limit."""
    for number in range(50):
        channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": number}})
        channel.receive()
    channel.line(done(run, "hidden", tool_calls=[], output="o" * 5_000_000))


def forged_reading(channel: HostileChannel, run: int) -> None:
    """Claim a clock reading of a kind no facade reads, with a call."""
    reads = [["time", 1.5], ["os.environ", "SECRET"]]
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": 1}, "reads": reads})
    hang()


def flood_readings(channel: HostileChannel, run: int) -> None:
    """Claim more readings than a run may make, with its outcome."""
    channel.line(done(run, 1) | {"reads": [["time_ns", 1]] * 100_001})
    hang()


def heavy_readings(channel: HostileChannel, run: int) -> None:
    """Few readings, each the largest a reading may be: more text than a run may keep."""
    channel.line(done(run, 1) | {"reads": [["entropy", "ab" * 4_096]] * 300})
    hang()


def forged_line(channel: HostileChannel, run: int) -> None:
    """Claim a call was made on a line that is not a line number."""
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": 1}, "line": "x"})
    hang()


def misshapen_lines(channel: HostileChannel, run: int) -> None:
    """Send a batch whose lines do not match its calls."""
    calls = [{"name": "add", "arguments": {"a": n}} for n in range(3)]
    channel.line({"op": "calls", "run": run, "calls": calls, "lines": [1, 2]})
    hang()


def unrecorded_readings(channel: HostileChannel, run: int) -> None:
    """Send a recording's fields in a run that records nothing."""
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": 1}, "reads": []})
    hang()


def unplanned_preview_stop(channel: HostileChannel, run: int) -> None:
    """Claim a preview stopped on a planned write's result, with none planned."""
    error = {"code": "PREVIEW_STOPPED", "message": "forged", "kind": ""}
    channel.line(done(run, error=error))
    hang()


def line_past_the_script(channel: HostileChannel, run: int) -> None:
    """Claim a call was made on a line the script does not have."""
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": 1}, "line": 99})
    hang()


def unsent_pending(channel: HostileChannel, run: int) -> None:
    """In a preview, pass a tool the result of a write the host never planned."""
    mark = "\x00codeact.pending:7"
    channel.line({"op": "call", "run": run, "name": "add", "arguments": {"a": mark}, "line": 1})
    hang()


BEHAVIOURS: dict[str, Callable[[HostileChannel, int], None]] = {
    function.__name__: function
    for function in (
        stall,
        flood,
        endless_line,
        garbage,
        deep,
        partial,
        invalid_utf8,
        forged_run,
        earlier_run,
        unknown_op,
        forged_calls,
        misshapen_calls,
        too_many_calls,
        trickle,
        never_reads,
        wrong_code,
        bad_cause,
        bad_outcome,
        huge_error,
        huge_value,
        deep_value,
        wide_keys,
        nan_value,
        hides_calls,
        forged_reading,
        flood_readings,
        heavy_readings,
        forged_line,
        misshapen_lines,
        unrecorded_readings,
        unplanned_preview_stop,
        line_past_the_script,
        unsent_pending,
    )
}


def main() -> None:
    with contextlib.suppress(EOFError, BrokenPipeError, OSError, ValueError):
        serve(HostileChannel(*channel_files()))
    os._exit(0)


if __name__ == "__main__":
    main()
