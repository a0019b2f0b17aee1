"""The worker process behind the process executor: one session's sandbox, talking JSON lines.

Started by the host as ``python -m codeact.executors._worker``. It reads its limits from the
first message, applies hard operating-system limits to itself, confines itself
with the kernel (``codeact.executors._confine``), then runs scripts.
Tool calls go to the host as messages; the worker never holds a tool, its
configuration or a secret. Protocol (one JSON object per line):

    host -> worker   {"op": "init", "limits": {...}, "modules": [...], "confinement": "...",
                      "user": 65534 | null, "workdir": "...", "environ": {name: value}}
                     {"op": "run", "run": N, "source": "...", "tools": {"name": ["param", ...]},
                      "tape": {"replay": [[kind, value], ...], "fresh": bool}}  (tape: durable)
                     {"op": "result", "ok": true, "value": ...} | {"ok": false, "code", "message"}
                     {"op": "results", "results": [...]}
                     {"op": "reset", "run": N} | {"op": "exit"}
    worker -> host   {"op": "ready", "confinement": {...}} | {"op": "refused", "confinement": {...}}
                     {"op": "call", "run": N, "name": ..., "arguments": {...}}
                     {"op": "calls", "run": N, "calls": [{"name": ..., "arguments": {...}}, ...]}
                     {"op": "output", "run": N, "text": "..."}
                     {"op": "done", "run": N, "outcome": {...}} | {"op": "reset_done", "run": N}
                     (a durable run's call, calls and done also carry "reads": [[kind, value]]
                      and, once a replayed reading differs, "diverged": "..."; its call
                      carries "line" and its calls "lines": where the script made them;
                      a result may be {"ok": true, "pending": position}: a planned write)

Every message of a run echoes the run's number N: the host refuses (and kills) a worker
whose message belongs to another run, so no run can ever read another's answer.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from ..contract._exceptions import ErrorCode, ToolError
from ..contract._json import JsonValue
from ..sandbox import Limits, Sandbox, ScriptError, ScriptOutcome
from ..sandbox._limits import resident_bytes
from ..sandbox._outcome import outcome_to_json
from ..sandbox._pending import CALLS, Pending
from ..stdlib import standard_sandbox
from ..stdlib._recorded import TAPE
from . import _cpython_readings as readings
from ._confine import REQUIRED_LAYERS, ConfinementReport, confine
from ._lines import decoded, encoded
from ._spin import READ_CHUNK, Spinner, open_pressure

if TYPE_CHECKING:
    from ._cpython import CPythonScripts

MAX_OPEN_FILES = 64
# Per-run CPU time is the watchdog's; this lifetime budget is the kernel's backstop
# (SIGXCPU, then SIGKILL), for a worker that somehow escaped the watchdog.
LIFETIME_CPU_SECONDS = 3_600
VIRTUAL_MEMORY_HEADROOM = 256 * 1024 * 1024
MAX_OUTCOME_BYTES = 16 * 1024 * 1024
# Modules the standard library imports lazily, loaded before the worker gives up the
# right to read the interpreter's files (codecs by name, strptime).
PRELOADED = (
    "_strptime",
    "encodings.latin_1",
    "encodings.ascii",
    "encodings.utf_16",
    "encodings.utf_32",
    "encodings.cp1252",
    "encodings.idna",
    "encodings.punycode",
    "encodings.unicode_escape",
    "encodings.raw_unicode_escape",
    "encodings.hex_codec",
    "encodings.base64_codec",
)

ExtraOps = Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]


class Channel:
    """Newline-delimited JSON over a pair of binary streams."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader  # it owns the descriptor read below
        self._fd = reader.fileno()
        os.set_blocking(self._fd, False)  # waited on with select, or polled (see _spin)
        self._buffer = bytearray()
        # each kind of wait polls while its own waits prove short; the pressure record is
        # opened now, before the worker is confined
        pressure = open_pressure()
        self.answers = Spinner(pressure=pressure)  # a tool call's answer
        self.next_message = Spinner(pressure=pressure)  # the session's next run
        self._writer = writer

    def send(self, message: dict[str, Any]) -> None:
        self.send_encoded(encoded(message))

    def send_encoded(self, line: bytes) -> None:
        self._writer.write(line)
        self._writer.flush()

    def receive(self, *, spin: Spinner | None = None) -> dict[str, Any]:
        """The host's next message; ``spin``: it is likely on its way, so the pipe is
        polled for a moment (while that spinner's waits prove short) before the worker
        sleeps on it."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                message: dict[str, Any] = decoded(line)
                return message
            chunk = spin.read(self._fd) if spin is not None else None
            if chunk is None:
                slept = time.monotonic()
                select.select([self._fd], [], [])
                if spin is not None:
                    spin.slept(time.monotonic() - slept)
                try:
                    chunk = os.read(self._fd, READ_CHUNK)
                except BlockingIOError:
                    continue
            if not chunk:
                raise EOFError("the host closed the channel")
            self._buffer += chunk


def apply_os_limits(limits: Limits, *, processes: bool = True) -> None:
    """Hard limits the kernel enforces, whatever the script does.

    ``processes``: also allow no new processes by rlimit; not needed under seccomp
    (which refuses them), and an rlimit of 0 would also refuse the watchdog's thread
    once the worker runs as an unprivileged user.
    """
    soft_as = _virtual_memory() + limits.memory_bytes + VIRTUAL_MEMORY_HEADROOM
    for kind, value in (
        (resource.RLIMIT_AS, soft_as),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
        (resource.RLIMIT_CORE, 0),
    ):
        _lower(kind, value)
    # Some objects free the chain they head recursively in C (nested generators after a
    # RecursionError): the stack, which the main thread grows on demand, may be as large
    # as the memory limit lets such a chain be, so freeing it is not a crash.
    stack = min(max(limits.memory_bytes, MIN_STACK_BYTES), MAX_STACK_BYTES)
    _raise_soft(resource.RLIMIT_STACK, stack)
    cpu = int(max(LIFETIME_CPU_SECONDS, limits.cpu_seconds * 10))
    _lower(resource.RLIMIT_CPU, cpu, cpu + 5)
    if processes:
        _lower(resource.RLIMIT_NPROC, 0)


MIN_STACK_BYTES = 64 * 1024 * 1024
SCRIPT_RECURSION_LIMIT = 6_000  # frames, the guards' included: CPython's depth for scripts
MAX_STACK_BYTES = 1024 * 1024 * 1024


def _raise_soft(kind: int, soft: int) -> None:
    """Raise a soft limit towards ``soft``, never past the hard one."""
    with contextlib.suppress(ValueError, OSError):
        current, hard = resource.getrlimit(kind)
        wanted = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
        if current != resource.RLIM_INFINITY and current < wanted:
            resource.setrlimit(kind, (wanted, hard))


def _lower(kind: int, soft: int, hard: int | None = None) -> None:
    with contextlib.suppress(ValueError, OSError):  # a limit the platform keeps stays as is
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def _virtual_memory() -> int:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def serve(channel: Channel, extra_ops: ExtraOps | None = None) -> None:
    init = channel.receive()
    limits = Limits(**init["limits"])
    sandbox: Sandbox | CPythonScripts
    if init.get("interpreter") == "cpython":  # the whole language: the kernel is the boundary
        # imported here, before confinement: a restricted worker (and the template) never
        # needs it
        from ._cpython import CPythonScripts, preload

        packages = tuple(str(name) for name in init.get("packages") or ())
        user = init.get("user")
        preload(packages, dropping_user=os.geteuid() == 0 and user is not None)
        readings.install()  # a recorded run's clock and entropy go through its tape
        sandbox = CPythonScripts(limits, packages)
    else:
        sandbox = standard_sandbox(
            limits=limits, modules=frozenset(init["modules"]), environ=init.get("environ") or {}
        )
    as_root = os.geteuid() == 0
    report = _confine(init)
    apply_os_limits(limits, processes="seccomp" not in report.active)
    required = init.get("confinement") == "require"
    if not isinstance(sandbox, Sandbox):
        from ._cpython import refusal

        lacking = refusal(report, as_root=as_root)
        if lacking:  # never a silent fallback: the host is told which layer is missing
            report.missing.update(lacking)
            channel.send({"op": "refused", "confinement": report.to_json()})
            return
    elif required and any(k in report.missing for k in REQUIRED_LAYERS):
        channel.send({"op": "refused", "confinement": report.to_json()})
        return
    if isinstance(sandbox, Sandbox):
        sandbox.memory_baseline = resident_bytes()  # the worker is the session: all its memory
        # The guards' frames count against the depth: with CPython's 1,000, a recursion
        # through __getattr__ or a wrapper stops at a third of the depth CPython reaches.
        # The worker's stack (at least MIN_STACK_BYTES) holds this many C-level frames.
        sys.setrecursionlimit(SCRIPT_RECURSION_LIMIT)
        sandbox.teardown_generation = 2
    signal.signal(signal.SIGUSR1, lambda signum, frame: sandbox.abort())

    current = {"run": 0}  # the number of the run being served, echoed in its messages

    def taped(message: dict[str, Any]) -> dict[str, Any]:
        """``message`` with the run's fresh clock and entropy readings, while it records."""
        if TAPE.recording:
            message["reads"] = TAPE.drain()
            if TAPE.diverged is not None:
                message["diverged"] = TAPE.diverged
        return message

    def call_tool(name: str, arguments: dict[str, JsonValue]) -> Any:
        message = {"op": "call", "run": current["run"], "name": name, "arguments": arguments}
        if CALLS.noting:
            message["line"] = CALLS.take(arguments)
        channel.send(taped(message))
        answer = channel.receive(spin=channel.answers)
        if answer.get("ok"):
            return _value_of(answer, name)
        raise ToolError(str(answer.get("message", "")), str(answer.get("code", "TOOL_ERROR")))

    def call_tools(batch: list[tuple[str, dict[str, JsonValue]]]) -> list[Any]:
        calls = [{"name": name, "arguments": arguments} for name, arguments in batch]
        message: dict[str, Any] = {"op": "calls", "run": current["run"], "calls": calls}
        if CALLS.noting:
            message["lines"] = [CALLS.take(arguments) for _, arguments in batch]
        channel.send(taped(message))
        answer = channel.receive(spin=channel.answers)
        results = answer.get("results")
        if answer.get("op") != "results" or type(results) is not list or len(results) != len(batch):
            raise ToolError("the host answered a batch of calls wrongly", "ABORTED")
        return [
            _value_of(item, name)
            if type(item) is dict and item.get("ok")
            else ToolError(
                str(item.get("message", "")) if type(item) is dict else "",
                str(item.get("code", "TOOL_ERROR")) if type(item) is dict else "TOOL_ERROR",
            )
            for item, (name, _) in zip(results, batch, strict=True)
        ]

    def print_to_host(text: str) -> None:  # what the script prints, as it prints it
        channel.send({"op": "output", "run": current["run"], "text": text})

    channel.send({"op": "ready", "confinement": report.to_json()})
    while True:
        message = channel.receive(spin=channel.next_message)  # a busy session's next run
        op = message.get("op")
        if op == "run":
            current["run"] = message.get("run", 0)
            tools = {name: tuple(params) for name, params in message.get("tools", {}).items()}
            tape = message.get("tape")
            if isinstance(tape, dict):  # a durable run: readings served, then recorded
                TAPE.start(list(tape.get("replay") or []))
                CALLS.start()
                if tape.get("fresh"):  # from a clean session, seeded inside the record
                    sandbox.reset()
            else:
                TAPE.stop()
                CALLS.stop()
            outcome = sandbox.run(
                message["source"],
                tools=tools,
                call_tool=call_tool,
                call_tools=call_tools,
                on_output=print_to_host if message.get("stream_output") else None,
            )
            channel.send_encoded(_done(outcome, current["run"], taped({})))
        elif op == "reset":
            sandbox.reset()
            channel.send({"op": "reset_done", "run": message.get("run", 0)})
        elif op == "exit":
            sandbox.close()
            return
        elif extra_ops is not None and isinstance(op, str) and op in extra_ops:
            channel.send(extra_ops[op](message))


def _value_of(answer: dict[str, Any], name: str) -> Any:
    """What a call returns to the script: the answer's value, or, for a write a recorded
    run planned instead of making, a pending value standing in for its result."""
    position = answer.get("pending")
    if CALLS.noting and type(position) is int:
        return Pending(position, name)
    return answer.get("value")


def _confine(init: dict[str, Any]) -> ConfinementReport:
    if init.get("confinement", "best-effort") == "off":
        return ConfinementReport(missing={"all": "confinement is off"})
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            __import__(name)
    return confine(workdir=init.get("workdir") or os.getcwd(), user=init.get("user"))


def _done(outcome: ScriptOutcome, run: Any, extra: dict[str, Any]) -> bytes:
    """The run's last message, encoded once; an outcome too large for the channel becomes
    an error that says so."""
    line = encoded({"op": "done", "run": run, "outcome": outcome_to_json(outcome), **extra})
    if len(line) <= MAX_OUTCOME_BYTES:
        return line
    message = f"the run's outcome is {len(line):,} bytes (limit {MAX_OUTCOME_BYTES:,})"
    error = ScriptError(code=ErrorCode.CODE_RESOURCE_LIMIT, message=message)
    bounded = ScriptOutcome(tool_calls=outcome.tool_calls, error=error)
    return encoded({"op": "done", "run": run, "outcome": outcome_to_json(bounded), **extra})


def channel_files() -> tuple[IO[bytes], IO[bytes]]:
    """The channel: a private copy of stdin and stdout. The standard descriptors are pointed
    at /dev/null, so nothing a library prints can corrupt the protocol."""
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return reader, writer


def main(extra_ops: ExtraOps | None = None) -> None:
    status = 0
    try:
        serve(Channel(*channel_files()), extra_ops)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    except (ValueError, OSError):  # a garbled channel: the host treats the worker as lost
        status = 1
    # No interpreter shutdown: it would run what scripts left behind (finalizers) unwatched.
    os._exit(status)


if __name__ == "__main__":
    main()
