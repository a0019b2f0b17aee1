"""The worker process behind the process executor: one session's sandbox, talking JSON lines.

Started by the host as ``python -m codeact._worker``. It reads its limits from the
first message, applies hard operating-system limits to itself, then runs scripts.
Tool calls go to the host as messages; the worker never holds a tool, its
configuration or a secret. Protocol (one JSON object per line):

    host -> worker   {"op": "init", "limits": {...}, "modules": [...]}
                     {"op": "run", "source": "...", "tools": {"name": ["param", ...]}}
                     {"op": "result", "ok": true, "value": ...} | {"ok": false, "code", "message"}
                     {"op": "reset"} | {"op": "exit"}
    worker -> host   {"op": "ready"} | {"op": "call", "name": ..., "arguments": {...}}
                     {"op": "done", "outcome": {...}} | {"op": "reset_done"}
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
from dataclasses import asdict
from typing import IO, Any

from ._exceptions import ToolError
from ._json import JsonValue
from ._sandbox import Limits, Sandbox, ScriptError, ScriptOutcome, ToolCallRecord

MAX_OPEN_FILES = 64
# Per-run CPU time is the watchdog's; this lifetime budget is the kernel's backstop
# (SIGXCPU, then SIGKILL), for a worker that somehow escaped the watchdog.
LIFETIME_CPU_SECONDS = 3_600
VIRTUAL_MEMORY_HEADROOM = 256 * 1024 * 1024


def outcome_to_json(outcome: ScriptOutcome) -> dict[str, Any]:
    return asdict(outcome)


def outcome_from_json(data: dict[str, Any]) -> ScriptOutcome:
    error = data.get("error")
    return ScriptOutcome(
        value=data.get("value"),
        output=data.get("output", ""),
        tool_calls=tuple(ToolCallRecord(**c) for c in data.get("tool_calls", ())),
        error=ScriptError(**error) if error else None,
    )


class Channel:
    """Newline-delimited JSON over a pair of binary streams."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        self._writer.flush()

    def receive(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            raise EOFError("the host closed the channel")
        message: dict[str, Any] = json.loads(line)
        return message


def apply_os_limits(limits: Limits) -> None:
    """Hard limits the kernel enforces, whatever the script does."""
    soft_as = _virtual_memory() + limits.memory_bytes + VIRTUAL_MEMORY_HEADROOM
    for kind, value in (
        (resource.RLIMIT_AS, soft_as),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
        (resource.RLIMIT_CORE, 0),
    ):
        _lower(kind, value)
    cpu = int(max(LIFETIME_CPU_SECONDS, limits.cpu_seconds * 10))
    _lower(resource.RLIMIT_CPU, cpu, cpu + 5)
    _lower(resource.RLIMIT_NPROC, 0)


def _lower(kind: int, soft: int, hard: int | None = None) -> None:
    with contextlib.suppress(ValueError, OSError):  # a limit the platform keeps stays as is
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def _virtual_memory() -> int:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def serve(channel: Channel) -> None:
    init = channel.receive()
    limits = Limits(**init["limits"])
    sandbox = Sandbox(limits=limits, modules=frozenset(init["modules"]))
    apply_os_limits(limits)
    signal.signal(signal.SIGUSR1, lambda signum, frame: sandbox.abort())

    def call_tool(name: str, arguments: dict[str, JsonValue]) -> JsonValue:
        channel.send({"op": "call", "name": name, "arguments": arguments})
        answer = channel.receive()
        if answer.get("ok"):
            value: JsonValue = answer.get("value")
            return value
        raise ToolError(str(answer.get("message", "")), str(answer.get("code", "TOOL_ERROR")))

    channel.send({"op": "ready"})
    while True:
        message = channel.receive()
        op = message.get("op")
        if op == "run":
            tools = {name: tuple(params) for name, params in message.get("tools", {}).items()}
            outcome = sandbox.run(message["source"], tools=tools, call_tool=call_tool)
            channel.send({"op": "done", "outcome": outcome_to_json(outcome)})
        elif op == "reset":
            sandbox.reset()
            channel.send({"op": "reset_done"})
        elif op == "exit":
            return


def main() -> None:
    # The channel is a private copy of stdin and stdout; the standard descriptors are
    # pointed at /dev/null so nothing a library prints can corrupt the protocol.
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    with contextlib.suppress(EOFError, BrokenPipeError, KeyboardInterrupt):
        serve(Channel(reader, writer))
    sys.exit(0)


if __name__ == "__main__":
    main()
