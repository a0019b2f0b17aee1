"""What the host's distrust of its workers costs per message, against reading the message.

Run: ``python -m benchmarks.channel``. Each tool call from a script crosses the channel
as one line the host must decode; the host then checks the line's run number, kind and
shape (``codeact._worker_messages``) and, at the end, rebuilds the outcome from its own
record. Ratios are to ``json.loads`` of the same line, measured in the same run; the
round trip through a worker (``benchmarks.runtime``) is the figure a user gets.
"""

from __future__ import annotations

import json

from codeact._sandbox import Limits, ToolCallRecord
from codeact._worker_messages import asked_calls, checked, host_outcome

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


if __name__ == "__main__":
    main()
