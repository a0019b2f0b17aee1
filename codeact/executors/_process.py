"""The process executor: each session's scripts run in a worker process the host can kill.

Guards inside the interpreter are one line of defence; this is the hard one. A
worker is started (never forked from the host), with a scrubbed environment, no
inherited descriptors but its channel, a working directory of its own, and kernel
limits on memory, file size, open files and processes. The host kills it at the
wall-clock deadline. Tool calls cross the channel as JSON and are dispatched here,
in the host, through the registry: policy, validation, hooks and events stay home.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from stdlib_bindings._recorded import MAX_READINGS, MAX_TAPE_CHARS, reading_chars

from ..contract._exceptions import ErrorCode
from ..contract._json import JsonValue
from ..contract._results import ToolExecutionResult, failure
from ..sandbox import Limits, ScriptError, ScriptOutcome, ToolCallRecord
from ._confine import UNPRIVILEGED_ID, Confinement, ConfinementReport
from ._cpython import INTERPRETERS
from ._in_process import (
    SCRIPT_THREADS,
    AsyncBatchCaller,
    AsyncToolCaller,
    OutputListener,
    RunTape,
    SessionGates,
    SyncToolCaller,
    bounded_batch_caller,
    bounded_tool_caller,
    taken,
)
from ._pipe import Garbled, PipeClosed, WorkerPipe
from ._services import Services
from ._spin import Spinner
from ._template import READY_TIMEOUT_SECONDS, ForkedProcess, WorkerTemplate
from ._template import available as template_available
from ._threads import SessionThread
from ._worker_folders import FOLDER_PREFIX, new_folder, remove_folder, sweep_stale_folders
from ._worker_messages import (
    RECORDING_FIELDS,
    Forged,
    answer_message,
    asked_calls,
    call_lines,
    checked,
    host_outcome,
    printed_text,
    readings,
)

WARM_WORKERS = 2
MAX_SESSIONS = 64  # live sessions (so workers) per executor; idle ones make room, oldest first
MAX_REMEMBERED_EVICTIONS = 4_096
IDLE_SECONDS = 300.0
KILL_GRACE_SECONDS = 1.0
ABORT_GRACE_SECONDS = 1.0
ABORT_NUDGE_SECONDS = 0.05
START_TIMEOUT_SECONDS = 30.0
CHANNEL_SECONDS = 10.0  # the bound on a write or read outside a run (init, reset, exit)
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder that holds codeact
# All a worker (or the template it is forked from) inherits of the host's environment.
WORKER_ENVIRONMENT = {
    "PATH": os.defpath,
    "LANG": "C.UTF-8",
    "PYTHONPATH": _PACKAGE_ROOT,
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}


class WorkerLost(Exception):
    """The worker process is gone; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class WorkerOptions:
    """How worker processes are started and confined.

    ``confinement``: ``"best-effort"`` (default) applies every kernel layer this
    machine offers; ``"require"`` refuses to start a worker that lacks one; ``"off"``
    applies none. ``user``: the uid and gid a worker drops to when the host runs as
    root. ``prefix``: a command the worker runs under (an isolator such as bubblewrap);
    ``{workdir}`` in it stands for the worker's folder.
    """

    confinement: Confinement = "best-effort"
    user: int | None = UNPRIVILEGED_ID
    prefix: tuple[str, ...] = ()
    module: str = "codeact.executors._worker"
    hash_seed: int | None = None
    # what os.environ and os.getenv show scripts (the worker's own environment never is)
    script_environ: tuple[tuple[str, str], ...] = ()
    # "cpython": scripts run as plain CPython, the kernel their only boundary (_cpython)
    interpreter: str = "restricted"
    packages: tuple[str, ...] = ()  # what a CPython script may import beyond the stdlib

    @property
    def environment(self) -> dict[str, str]:
        """What a worker inherits: the fixed environment, and the hash seed when set (a
        durable run's set and dict orders must be the same wherever it is replayed)."""
        if self.hash_seed is None:
            return WORKER_ENVIRONMENT
        return {**WORKER_ENVIRONMENT, "PYTHONHASHSEED": str(self.hash_seed)}


class Worker:
    """One worker process and its channel.

    A run is served in one host thread (``_serve``): it reads the worker's messages,
    answers each tool call (in that thread when nothing in the call needs the event
    loop, on the loop otherwise) and returns the outcome. Nothing else reads the
    channel while it does.
    """

    def __init__(self, process: subprocess.Popen[bytes] | ForkedProcess, workdir: str) -> None:
        self.process = process
        self.workdir = workdir
        assert process.stdout is not None
        assert process.stdin is not None
        self._pipe = WorkerPipe(process.stdout, process.stdin, max_bytes=MAX_MESSAGE_BYTES)
        # a run's first answer is polled for on the loop a moment, while that pays
        self._first_spinner = Spinner()
        self.last_used = time.monotonic()
        self.dead = False
        self.confinement = ConfinementReport()
        self._aborting = False  # a cancelled run: calls still asked for are not run
        self._runs = 0  # the number of the latest run (or reset): its messages echo it
        self.untouched_by_last_run = True  # no call answered, no output passed on
        self._served = threading.Event()  # set when no run is being served
        self._thread = SessionThread(f"codeact-serve-{process.pid}")  # serves its runs
        self._served.set()

    @classmethod
    async def start(
        cls,
        limits: Limits,
        modules: frozenset[str],
        options: WorkerOptions | None = None,
        template: WorkerTemplate | None = None,
        starting: set[Worker] | None = None,
    ) -> Worker:
        """A worker started afresh, or forked from ``template`` (imports already paid)."""
        options = options or WorkerOptions()
        workdir = new_folder()
        prefix = [part.replace("{workdir}", workdir) for part in options.prefix]
        process: subprocess.Popen[bytes] | ForkedProcess
        try:
            if template is not None:
                process = await anyio.to_thread.run_sync(template.fork, workdir)
            else:
                command = [*prefix, sys.executable, "-m", options.module]
                # Started from the loop's thread, as asyncio starts processes: the worker's
                # parent-death signal fires when the thread that started it ends.
                process = _spawn(command, workdir, options.environment)
        except BaseException:  # cancelled or refused before there was a worker to kill
            remove_folder(workdir)
            raise
        worker = cls(process, workdir)
        if starting is not None:  # the executor can kill it, should its start never end
            starting.add(worker)
        try:
            await worker.send(
                {
                    "op": "init",
                    "limits": asdict(limits),
                    "modules": sorted(modules),
                    "environ": dict(options.script_environ),
                    "confinement": options.confinement,
                    "user": options.user,
                    "workdir": workdir,
                    "interpreter": options.interpreter,
                    "packages": list(options.packages),
                }
            )
            ready = await worker.receive(within=START_TIMEOUT_SECONDS)
        except BaseException:
            await worker.kill()
            raise
        finally:
            if starting is not None:
                starting.discard(worker)
        op = ready.get("op")
        try:
            worker.confinement = ConfinementReport.from_json(ready.get("confinement"))
        except ValueError as error:
            op = f"a report of the wrong shape: {error}"
        if op == "refused":
            await worker.kill()
            missing = "; ".join(f"{k}: {v}" for k, v in worker.confinement.missing.items())
            raise WorkerLost(f"confinement is required and this machine lacks it ({missing})")
        if op != "ready":
            await worker.kill()
            raise WorkerLost(f"the worker did not start ({str(op)[:200]})")
        return worker

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, message: dict[str, Any], *, within: float = CHANNEL_SECONDS) -> None:
        """Write one message; a worker that does not read it ``within`` seconds is killed."""
        deadline = time.monotonic() + within
        await self._talk(lambda: self._send(message, deadline))

    async def receive(self, *, within: float = CHANNEL_SECONDS) -> dict[str, Any]:
        """The next message; TimeoutError when none comes ``within`` seconds."""
        received: dict[str, Any] = await self._talk(lambda: self._receive(within))
        return received

    async def _talk(self, exchange: Callable[[], Any]) -> Any:
        """One blocking exchange in a thread; a cancelled one kills the worker (its channel
        is mid-message, and the thread must not read a later caller's answer)."""
        try:
            return await anyio.to_thread.run_sync(exchange, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.kill()
            raise

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        try:
            self._pipe.send(message, deadline)
        except PipeClosed:
            raise WorkerLost(self._describe_exit()) from None
        except TimeoutError:  # a worker that stops reading holds no host thread
            self._kill_now()
            raise

    def _send_at_once(self, message: dict[str, Any]) -> bool:
        try:
            return self._pipe.send_at_once(message)
        except PipeClosed:
            raise WorkerLost(self._describe_exit()) from None

    def _receive(self, timeout: float) -> dict[str, Any]:
        return self._receive_by(time.monotonic() + timeout)

    def _receive_by(self, deadline: float, *, spin: bool = False) -> dict[str, Any]:
        try:
            return self._pipe.receive_by(deadline, spin=spin)
        except PipeClosed:
            raise WorkerLost(self._describe_exit()) from None
        except Garbled as garbled:  # the worker can no longer be trusted to talk
            raise self._refused(garbled) from None
        except TimeoutError:
            self._kill_now()
            raise

    def _refused(self, why: Exception) -> WorkerLost:
        """Kill a worker that broke the channel's rules; the reason, for the run's error."""
        self._kill_now()
        return WorkerLost(f"the worker broke the channel's rules ({why}) and was killed")

    async def run(
        self,
        source: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        limits: Limits,
        call_tools: AsyncBatchCaller | None = None,
        call_tool_now: SyncToolCaller | None = None,
        threads: anyio.CapacityLimiter | None = None,
        on_output: OutputListener | None = None,
        tape: RunTape | None = None,
        alone: Callable[[], bool] = lambda: True,
    ) -> ScriptOutcome:
        """Run one script; tool calls are answered until the worker says it is done.

        The loop sends the script and waits for the first message: a script that calls no
        tool costs no thread. The first call hands the run to one host thread, which
        answers it and every later one and reads the outcome.

        The deadline is the script's own time: what the host spends answering its tool
        calls (each bounded by ``limits.tool_wait_seconds``) moves it on. Every read and
        write has it; at the deadline the worker is killed. The host records every call
        it answered and reports those, never what the worker claims.
        """
        self.last_used = time.monotonic()
        self._runs += 1
        serving = _Serving(
            run=self._runs,
            limits=limits,
            answers=_Answers(
                bounded_tool_caller(call_tool, limits),
                bounded_batch_caller(call_tool, call_tools, limits),
                call_tool_now,
                frozenset(tools),
                anyio.lowlevel.current_token(),
            ),
            deadline=time.monotonic() + limits.wall_seconds + KILL_GRACE_SECONDS,
            on_output=on_output,
            tape=tape,
            script_lines=source.count("\n") + 1,
            alone=alone,
        )
        self._aborting = False
        try:
            run: dict[str, Any] = {
                "op": "run",
                "run": serving.run,
                "source": source,
                "tools": {k: list(v) for k, v in tools.items()},
            }
            if on_output is not None:
                run["stream_output"] = True
            if tape is not None:
                run["tape"] = {"replay": tape.replay, "fresh": tape.fresh}
            if not self._send_at_once(run):
                await anyio.to_thread.run_sync(
                    self._send, run, serving.deadline, abandon_on_cancel=True
                )
            first = await self._first_message(serving)
            if first.get("op") == "done":
                return self._outcome_of(first, serving)
            self._served.clear()
            if threads is None:
                return await self._thread.run(lambda: self._serve(first, serving))
            async with taken(threads):
                return await self._thread.run(lambda: self._serve(first, serving))
        except TimeoutError:
            await self.kill()
            return _lost(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"the script exceeded its wall-clock time ({limits.wall_seconds:g} s) limit: "
                f"the worker was killed at the {limits.wall_seconds:g} s deadline",
                serving.records,
            )
        except WorkerLost as lost:
            await self.kill()
            return _lost(ErrorCode.CODE_RUNTIME_ERROR, lost.reason, serving.records)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._abort(serving)
            raise
        finally:
            self.last_used = time.monotonic()
            self.untouched_by_last_run = not serving.records and not serving.output_chars

    async def _first_message(self, serving: _Serving) -> dict[str, Any]:
        """The worker's first message of a run other than printed output (which is passed
        on as it comes), waited for on the loop: after a moment's polling (a short script
        has answered by then), by the loop's own wait for the pipe."""
        asked = time.monotonic()
        if serving.alone():
            soon = self._unprinted(lambda: self._pipe.receive_soon(self._first_spinner), serving)
            if soon is not None:
                return soon
        with anyio.fail_after(max(serving.deadline - time.monotonic(), 0)):
            while True:
                if not self._pipe.buffered():  # one read may have brought two messages
                    await anyio.wait_readable(self._pipe.read_fd)
                message = self._unprinted(self._pipe.receive_available, serving)
                if message is not None:
                    self._first_spinner.slept(time.monotonic() - asked)
                    return message
                await anyio.lowlevel.checkpoint()  # a flood of output never holds the loop

    def _unprinted(
        self, read: Callable[[], dict[str, Any] | None], serving: _Serving
    ) -> dict[str, Any] | None:
        """What ``read`` brings unless it is printed output (passed on as it comes); a
        broken or forged channel loses the worker."""
        try:
            message = read()
            return None if message is None or self._printed(message, serving) else message
        except PipeClosed:
            raise WorkerLost(self._describe_exit()) from None
        except (Garbled, Forged) as refused:
            raise self._refused(refused) from None

    def _printed(self, message: dict[str, Any], serving: _Serving) -> bool:
        """Was ``message`` this run's printed output (passed on)? Forged if it is another
        run's message, or one a run does not send."""
        if checked(message, serving.run) != "output":
            return False
        serving.print(printed_text(message))
        return True

    def _outcome_of(self, message: dict[str, Any], serving: _Serving) -> ScriptOutcome:
        try:
            serving.taped(message, "done")
            outcome = host_outcome(message, serving.records, serving.limits)
            stopped = outcome.error is not None and outcome.error.code == ErrorCode.PREVIEW_STOPPED
            if stopped and not serving.planned:  # only a planned write's result stops one
                raise Forged("a preview stop in a run that was sent no planned write")
            return outcome
        except Forged as forged:
            raise self._refused(forged) from None
        except Exception as error:  # the run's tape refused it (a replay that diverged)
            self._kill_now()  # its names are not the record's: no later run may use them
            raise WorkerLost(f"the host stopped the run ({error})") from None

    def _serve(self, message: dict[str, Any] | None, serving: _Serving) -> ScriptOutcome:
        """The rest of a run, from ``message`` (None: the next one) to its outcome, in this
        (worker) thread; while the run is being aborted, every call is answered ABORTED.

        Anything that goes wrong on the host's side of the channel loses the worker: it is
        killed, so it is never talked to again out of step."""
        try:
            return self._answer_until_done(message, serving)
        except (WorkerLost, TimeoutError):
            raise
        except (Garbled, Forged) as refused:
            raise self._refused(refused) from None
        except Exception as error:  # the host failed mid-exchange: the channel is out of step
            self._kill_now()
            raise WorkerLost(f"the host failed while serving the worker ({error!r})") from None
        finally:
            self._served.set()

    def _answer_until_done(
        self, message: dict[str, Any] | None, serving: _Serving
    ) -> ScriptOutcome:
        limits, records = serving.limits, serving.records
        while True:
            if message is None:  # mid-run: the script's next call is likely on its way
                message = self._receive_by(serving.deadline, spin=serving.alone())
            if self._printed(message, serving):
                message = None
                continue
            op = message["op"]
            if op == "done":
                return self._outcome_of(message, serving)
            calls = asked_calls(message, op, serving.answers.bound)
            serving.taped(message, op, len(calls))
            message = None
            if len(records) + len(calls) > limits.max_tool_calls:  # the worker is not trusted
                self._kill_now()
                return _lost(
                    ErrorCode.CODE_RESOURCE_LIMIT,
                    f"the script made more than {limits.max_tool_calls:,} tool calls",
                    records,
                )
            asked = time.monotonic()
            results = (
                [_aborted(name) for name, _ in calls]
                if self._aborting
                else serving.answers.answer(calls, single=op == "call")
            )
            serving.deadline += time.monotonic() - asked  # the host's time is not the script's
            for (name, _), result in zip(calls, results, strict=True):
                records.append(
                    ToolCallRecord(
                        name=name,
                        ok=not result.is_error,
                        code=result.error.code if result.is_error else None,
                    )
                )
            replies = [answer_message(result) for result in results]
            serving.planned += sum("pending" in reply for reply in replies)
            reply = replies[0] if op == "call" else {"op": "results", "results": replies}
            self._send(reply, serving.deadline)

    async def _abort(self, serving: _Serving) -> None:
        """Stop the running script; kill the worker if it does not stop in time.

        A thread reads on (the one serving the run, or one started for this): it answers
        every call still asked for as ABORTED and ends at the worker's outcome. Calls in
        flight on the loop are cancelled, and end as ABORTED.
        """
        self._aborting = True
        serving.answers.cancel()
        reading = not self._served.is_set()
        if not reading and self.dead:
            return  # nothing runs there any more
        self._served.clear()
        async with anyio.create_task_group() as nudging:
            nudging.start_soon(self._nudge)
            if not reading and not self.dead:  # cancelled while the loop waited
                serving.deadline = time.monotonic() + ABORT_GRACE_SECONDS
                with anyio.move_on_after(ABORT_GRACE_SECONDS):
                    with contextlib.suppress(WorkerLost, TimeoutError):
                        await anyio.to_thread.run_sync(
                            self._serve, None, serving, abandon_on_cancel=True
                        )
            stopped = await anyio.to_thread.run_sync(
                self._served.wait, ABORT_GRACE_SECONDS, abandon_on_cancel=True
            )
            nudging.cancel_scope.cancel()
        if not stopped:
            await self.kill()

    async def _nudge(self) -> None:
        """Ask the worker to stop its run (SIGUSR1), again and again until it has: a signal
        that arrives before the worker has begun the run finds nothing to stop, and one
        that arrives between runs stops nothing (only a running script takes it)."""
        while not self._served.is_set() and not self.dead:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGUSR1)
            await anyio.sleep(ABORT_NUDGE_SECONDS)

    async def reset(self) -> None:
        """Forget the session's names; WorkerLost (the worker killed) if it answers out of
        turn or not in time."""
        self._runs += 1
        await self.send({"op": "reset", "run": self._runs})
        try:
            answer = await self.receive()
        except TimeoutError:
            raise WorkerLost("the worker did not reset in time") from None
        if answer != {"op": "reset_done", "run": self._runs}:
            await self.kill()
            raise WorkerLost("the worker answered a reset out of turn")

    async def close(self) -> None:
        """Ask the worker to exit, then make sure it did, and remove its directory. A worker
        whose pipe is full (it stopped reading) is not waited on: it is killed."""
        asked = False
        if not self.dead:
            with contextlib.suppress(WorkerLost):
                asked = self._send_at_once({"op": "exit"})
        if asked:
            with anyio.move_on_after(KILL_GRACE_SECONDS):
                await anyio.to_thread.run_sync(self._wait_exit, abandon_on_cancel=True)
        await self.kill()

    async def kill(self) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._kill_now)

    def _kill_now(self) -> None:
        """Kill and reap the process, close the channel, remove the folder (any thread)."""
        self.dead = True
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        self._pipe.close()  # closed when the serving thread, if any, lets go of it
        self._thread.close()
        remove_folder(self.workdir)

    def _wait_exit(self) -> None:
        self.process.wait()

    @property
    def runs(self) -> int:
        """Runs (and resets) this worker was given."""
        return self._runs

    @property
    def died_with_template(self) -> bool:
        return isinstance(self.process, ForkedProcess) and self.process.ended_with_template

    @property
    def usable(self) -> bool:
        """Can this spare still serve a session? Alive, and so is the template it was forked
        from (a template's death takes its workers along, a moment later)."""
        if self.dead or self.process.poll() is not None:
            return False
        return not (isinstance(self.process, ForkedProcess) and self.process.orphaned)

    def _describe_exit(self) -> str:
        self.dead = True
        try:
            code = self.process.wait(KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            return "the worker stopped answering"
        if isinstance(self.process, ForkedProcess) and self.process.ended_with_template:
            return "the worker template died, and its workers with it"
        if code < 0:
            name = signal.Signals(-code).name
            if -code == signal.SIGKILL:
                return f"the worker was killed ({name}), possibly out of memory"
            return f"the worker crashed ({name})"
        return f"the worker exited with status {code}"


@dataclass(kw_only=True)
class _Serving:
    """One run as the host serves it: its number, the calls it answered, the output it
    passed on, and its moving deadline."""

    run: int
    limits: Limits
    answers: _Answers
    deadline: float
    records: list[ToolCallRecord] = field(default_factory=list)
    on_output: OutputListener | None = None
    output_chars: int = 0
    tape: RunTape | None = None
    readings: int = 0
    reading_chars: int = 0
    script_lines: int = 1  # the source's lines: a call is made on one of them
    planned: int = 0  # pending values sent: the writes this run planned
    # Is this the only run the host serves? Only then does it poll for the worker's
    # messages: a polling thread takes the interpreter lock from every other one.
    alone: Callable[[], bool] = lambda: True

    def taped(self, message: dict[str, Any], op: str, calls: int = 0) -> None:
        """Hand a durable run's fresh readings (bounded per run) and the lines of the
        ``calls`` its ``op`` message asks for to its tape; in a run that records nothing,
        a recording's fields are forged."""
        if self.tape is None:
            if any(key in message for key in RECORDING_FIELDS):
                raise Forged("a recording's fields in a run that records nothing")
            return
        reads, diverged = readings(message, MAX_READINGS - self.readings)
        lines = call_lines(message, op, calls, self.script_lines)
        self.readings += len(reads)
        self.reading_chars += sum(reading_chars(value) for _, value in reads)
        if self.reading_chars > MAX_TAPE_CHARS:  # the interpreter stops a run before this
            raise Forged("more clock and entropy readings than a run may record")
        self.tape.received(reads, diverged, lines)

    def print(self, text: str) -> None:
        """Pass printed text on; more than the printing limit is a worker that ignores it
        (the interpreter stops printing there), so forged."""
        self.output_chars += len(text)
        if self.output_chars > self.limits.max_printed_chars:
            raise Forged("more printed output than the run's limit")
        if self.on_output is not None and text:
            self.on_output(text)


class _Answers:
    """How the serving thread answers a worker's calls; only tools this run bound."""

    def __init__(
        self,
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller,
        call_tool_now: SyncToolCaller | None,
        bound: frozenset[str],
        token: anyio.lowlevel.EventLoopToken,
    ) -> None:
        self._call_tool = call_tool
        self._call_tools = call_tools
        self._call_tool_now = call_tool_now
        self.bound = bound
        self._token = token  # how the serving thread reaches the loop
        # the host's side of calls that need the loop: cancelled by name with the run
        self._in_flight: set[anyio.CancelScope] = set()

    def cancel(self) -> None:
        """End every call in flight on the loop (each as ABORTED)."""
        for scope in list(self._in_flight):
            scope.cancel()

    def answer(
        self, calls: list[tuple[str, dict[str, JsonValue]]], *, single: bool
    ) -> list[ToolExecutionResult]:
        """Answer calls to tools this run bound (the channel's checks refused any other)."""
        if single:
            name, arguments = calls[0]
            now = self._call_tool_now(name, arguments) if self._call_tool_now else None
            if now is not None:
                return [now]
            return self._on_loop(lambda: self._call_tool(name, arguments), [name])
        return self._on_loop(lambda: self._call_tools(calls), [n for n, _ in calls])

    def _on_loop(
        self, work: Callable[[], Awaitable[Any]], names: list[str]
    ) -> list[ToolExecutionResult]:
        async def cancellable() -> list[ToolExecutionResult]:
            with anyio.CancelScope() as scope:
                self._in_flight.add(scope)
                try:
                    answered = await work()
                    return answered if isinstance(answered, list) else [answered]
                finally:
                    self._in_flight.discard(scope)
            return [_aborted(name) for name in names]

        answered: list[ToolExecutionResult] = anyio.from_thread.run(cancellable, token=self._token)
        return answered


def _spawn(
    command: list[str], workdir: str, environment: dict[str, str]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workdir,
        env=environment,
        start_new_session=True,
        bufsize=0,
    )


def _aborted(name: str) -> ToolExecutionResult:
    return failure("script", name, ErrorCode.ABORTED, "the run was cancelled")


class AtCapacity(Exception):
    """Every session the executor may keep is busy."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the executor serves at most {limit} sessions at once and all of them are "
            "running scripts; try again when one has finished"
        )


def _failed(code: str, message: str) -> ScriptOutcome:
    return ScriptOutcome(error=ScriptError(code=code, message=message, kind="SessionLimit"))


def _lost(code: str, reason: str, calls: Sequence[ToolCallRecord] = ()) -> ScriptOutcome:
    message = f"{reason}; the session's state was lost and a fresh worker will serve the next run"
    error = ScriptError(code=code, message=message, kind="WorkerLost")
    return ScriptOutcome(tool_calls=tuple(calls), error=error)


class ProcessExecutor:
    """Sessions' scripts in worker processes, from a warm pool; the default executor.

    Use it as an async context manager to keep the pool warm in the background and
    reap idle workers; used without, workers start on demand.

    ``template`` (default on, where the kernel has pidfds and no ``worker_prefix`` is
    set): workers are forked from one template process that has imported everything, so
    a new worker is ready in milliseconds and shares the template's memory. Where the
    template cannot start, workers are started afresh.

    ``interpreter="cpython"`` runs scripts as plain CPython (the whole language, and the
    installed ``packages`` named, such as numpy and pandas) in the same confined workers:
    the kernel is then the only boundary, so a worker that lacks any layer it relies on is
    refused, naming the layer, and the run fails rather than fall back. Durable runs need
    the restricted interpreter (the default), whose clock and entropy are recorded.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        modules: frozenset[str] | None = None,
        warm: int = WARM_WORKERS,
        idle_seconds: float = IDLE_SECONDS,
        confinement: Confinement = "best-effort",
        worker_user: int | None = UNPRIVILEGED_ID,
        worker_prefix: Sequence[str] = (),
        template: bool = True,
        max_sessions: int = MAX_SESSIONS,
        hash_seed: int | None = None,
        environ: Mapping[str, str] | None = None,
        interpreter: str = "restricted",
        packages: Sequence[str] = (),
    ) -> None:
        from stdlib_bindings._names import DEFAULT_MODULES

        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if interpreter not in INTERPRETERS:
            raise ValueError(f"interpreter must be one of {', '.join(INTERPRETERS)}")
        if interpreter == "cpython" and confinement == "off":
            raise ValueError(
                "interpreter='cpython' runs scripts with the kernel as their only boundary: "
                "it cannot run with confinement='off'"
            )
        if packages and interpreter != "cpython":
            raise ValueError(
                "packages are for interpreter='cpython' (the restricted "
                "interpreter offers its reviewed modules: see modules=)"
            )
        self.max_sessions = max_sessions
        # why sessions were closed behind their backs, told on their next run (oldest
        # forgotten first)
        self._evicted: dict[str, str] = {}
        self._claimed: set[str] = set()  # new sessions between the cap's check and a worker

        self.limits = limits or Limits()
        self.modules = frozenset(DEFAULT_MODULES if modules is None else modules)
        self.warm = warm
        self.idle_seconds = idle_seconds
        self.options = WorkerOptions(
            confinement=confinement,
            user=worker_user,
            prefix=tuple(worker_prefix),
            hash_seed=hash_seed,
            script_environ=tuple((str(k), str(v)) for k, v in (environ or {}).items()),
            interpreter=interpreter,
            packages=tuple(str(name) for name in packages),
        )
        self._spare: list[Worker] = []
        self._sessions: dict[str, Worker] = {}
        self._services = Services()  # the warm pool and the reaper, while entered
        self._refilling = 0
        self._gates = SessionGates()
        # one thread serves each running session's run (anyio's default pool has 40)
        self._threads = anyio.CapacityLimiter(SCRIPT_THREADS)
        self._pending_starts = 0
        self._starting: set[Worker] = set()  # workers whose start has not ended
        self._closed = False
        self._swept = False
        # the template has imported the restricted interpreter's world, not the packages
        self.use_template = (
            template and not worker_prefix and interpreter == "restricted" and template_available()
        )
        self._template: WorkerTemplate | None = None
        self._template_lock = anyio.Lock()

    async def __aenter__(self) -> ProcessExecutor:
        """Keep the pool warm and reap idle sessions until ``__aexit__``, which any task
        (or event loop) may call."""
        self._closed = False
        await self._services.start()
        self._refill()
        self._services.start_soon(self._reaper)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._services.stop()
        await self.aclose()

    # Executor protocol ---------------------------------------------------------------

    async def run(
        self,
        source: str,
        *,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None = None,
        call_tool_now: SyncToolCaller | None = None,
        on_output: OutputListener | None = None,
        tape: RunTape | None = None,
    ) -> ScriptOutcome:
        # one run per session, in arrival order
        return await self._gates.run(
            session,
            lambda: self._run(
                source, session, tools, call_tool, call_tools, call_tool_now, on_output, tape
            ),
        )

    @property
    def hash_seed(self) -> int | None:
        """The hash seed workers start with (None: each its own, at random)."""
        return self.options.hash_seed

    def session_worker(self, session: str) -> int | None:
        """The process id of the worker holding ``session``'s names, if one does."""
        worker = self._sessions.get(session)
        return None if worker is None or worker.dead else worker.pid

    async def _run(
        self,
        source: str,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None,
        call_tool_now: SyncToolCaller | None,
        on_output: OutputListener | None = None,
        tape: RunTape | None = None,
    ) -> ScriptOutcome:
        why = self._evicted.pop(session, None)
        if why is not None and not (tape is not None and tape.fresh):  # a replay rebuilds them
            return _failed(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"this session was closed ({why}) and its names are gone; nothing of this "
                "script ran: run it again with everything it needs",
            )
        for _attempt in range(2):
            try:
                worker = await self._worker_for(session)
            except AtCapacity as full:
                return _failed(ErrorCode.CODE_RESOURCE_LIMIT, str(full))
            except (WorkerLost, OSError, TimeoutError) as error:
                return _lost(ErrorCode.CODE_RUNTIME_ERROR, f"no worker could be started ({error})")
            fresh = worker.runs == 0
            try:
                outcome = await worker.run(
                    source,
                    tools,
                    call_tool,
                    self.limits,
                    call_tools,
                    call_tool_now,
                    self._threads,
                    on_output=on_output,
                    tape=tape,
                    alone=self._gates.alone,
                )
            finally:
                if worker.dead and self._sessions.get(session) is worker:
                    self._sessions.pop(session, None)
            if worker.dead:
                await worker.kill()
            self._refill()
            # A spare handed out as its template died: nothing of the run reached the
            # host (no call, no output) and it had no state, so it runs again, once.
            if not (fresh and worker.died_with_template and worker.untouched_by_last_run):
                return outcome
        return outcome

    async def reset(self, session: str) -> None:
        async with self._gates.hold(session):
            worker = self._sessions.get(session)
            if worker is not None:
                try:
                    await worker.reset()
                except WorkerLost:
                    self._sessions.pop(session, None)
                    await worker.kill()

    async def close_session(self, session: str) -> None:
        self._evicted.pop(session, None)
        worker = self._sessions.pop(session, None)
        if worker is not None:
            await worker.close()

    async def aclose(self) -> None:
        """Close every worker, also those still starting; nothing of ours is left after."""
        self._closed = True
        waited_until = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            workers = [*self._sessions.values(), *self._spare]
            self._sessions.clear()
            self._spare.clear()
            if not workers and not self._pending_starts:
                break
            for worker in workers:
                await worker.close()
            if self._pending_starts and time.monotonic() > waited_until:
                break  # a start on an event loop that no longer runs never ends
            if self._pending_starts:  # a start in flight hands its worker over when done
                await anyio.sleep(0.01)
        for worker in list(self._starting):
            worker._kill_now()
        template, self._template = self._template, None
        if template is not None:
            await anyio.to_thread.run_sync(template.close)
        await anyio.to_thread.run_sync(sweep_stale_folders)  # what could not go before

    # Pool ----------------------------------------------------------------------------

    @property
    def workers(self) -> list[Worker]:
        return [*self._spare, *self._sessions.values()]

    async def _worker_for(self, session: str) -> Worker:
        """The session's worker; called under the session's gate, so started once.

        A new session past ``max_sessions`` takes the place of the session idle the
        longest; when every session is busy it is refused (``AtCapacity``)."""
        worker = self._sessions.get(session)
        if worker is not None and not worker.dead:
            return worker
        if worker is None:
            await self._make_room(session)
        self._claimed.add(session)
        try:
            worker = await self._usable_spare() or await self._start()
        finally:
            self._claimed.discard(session)
        if self._closed:
            await worker.close()
            raise WorkerLost("the executor was closed")
        self._sessions[session] = worker
        return worker

    async def _make_room(self, session: str) -> None:
        if len(self._sessions) + len(self._claimed) < self.max_sessions:
            return
        idle = [
            (worker.last_used, name)
            for name, worker in self._sessions.items()
            if name != session and not self._gates.active(name)
        ]
        if not idle:
            raise AtCapacity(self.max_sessions)
        _, oldest = min(idle)
        limit = self.max_sessions
        await self._evict(oldest, f"idle the longest when a new session needed room ({limit} max)")

    async def _evict(self, session: str, why: str) -> None:
        """Close an idle session's worker; its next run is told why its names are gone."""
        self._evicted[session] = why
        while len(self._evicted) > MAX_REMEMBERED_EVICTIONS:
            del self._evicted[next(iter(self._evicted))]
        worker = self._sessions.pop(session, None)
        if worker is not None:
            await worker.close()

    async def _usable_spare(self) -> Worker | None:
        """A spare checked before it is handed out; those that died (with their template,
        say) are closed, and the pool refilled."""
        while self._spare:
            worker = self._spare.pop(0)  # the oldest first: no spare waits for ever
            if worker.usable:
                return worker
            await worker.kill()
            self._refill()
        return None

    async def _start(self) -> Worker:
        if self._closed:
            raise WorkerLost("the executor was closed")
        if not self._swept:
            self._swept = True
            sweep_stale_folders()
        self._pending_starts += 1
        try:
            worker = await self._started()
            if self._closed:  # closed meanwhile: the close waits for this one to go too
                await worker.close()
                raise WorkerLost("the executor was closed")
            return worker
        finally:
            self._pending_starts -= 1

    async def _started(self) -> Worker:
        template = await self._ready_template()
        if template is not None:
            try:
                return await Worker.start(
                    self.limits, self.modules, self.options, template, self._starting
                )
            except OSError:  # the template went away meanwhile: this one starts afresh
                pass
        return await Worker.start(self.limits, self.modules, self.options, starting=self._starting)

    async def _ready_template(self) -> WorkerTemplate | None:
        """The template to fork from, started and awaited if need be; None: start afresh.

        Even the first worker waits for the template rather than start beside it: the
        template's imports are what a fresh worker would pay, so the first run comes as
        soon, and an executor that serves one run pays for one interpreter's imports, not
        for those of each spare and then of the template as well.
        """
        template = await self._template_for_workers()
        starting = self._template
        if template is None and starting is not None and self.use_template:
            await anyio.to_thread.run_sync(
                starting.settled.wait, READY_TIMEOUT_SECONDS, abandon_on_cancel=True
            )
            template = await self._template_for_workers(start=False)
        return template

    async def prepare(self) -> bool:
        """Start the worker template and wait until it is ready; True when workers will be
        forked from it. A server calls this at start-up so its first sessions fork too."""
        await self._template_for_workers()
        template = self._template
        if template is None:
            return False
        await anyio.to_thread.run_sync(template.ready.wait, START_TIMEOUT_SECONDS)
        return (await self._template_for_workers()) is not None

    @property
    def template_confinement(self) -> ConfinementReport | None:
        """The kernel layers of the running worker template (its workers add their own)."""
        template = self._template
        return template.confinement if template is not None and template.alive else None

    @property
    def template_pid(self) -> int | None:
        """The worker template's process id, while one is running."""
        template = self._template
        return template.process.pid if template is not None and template.alive else None

    async def _template_for_workers(self, *, start: bool = True) -> WorkerTemplate | None:
        """The template, once it is ready; None while it imports, or when there is none.

        With ``start``, a missing (or dead) template is started, not waited for (that is
        ``_ready_template``'s choice).
        """
        if not self.use_template:
            return None
        async with self._template_lock:
            template = self._template
            if template is not None and template.ready.is_set() and template.alive:
                return template
            if template is not None and template.alive:
                return None  # still importing
            self._template = None
            if template is not None:
                if template.failed and not template.ready.is_set():
                    self.use_template = False  # it cannot start here: every worker is fresh
                    return None
                await anyio.to_thread.run_sync(template.close)
            if self._closed or not start:
                return None
            command = [sys.executable, "-m", "codeact.executors._template", self.options.module]
            try:
                # spawned from the loop's thread, as workers are (parent-death signal)
                self._template = WorkerTemplate.spawn(command, self.options.environment)
            except OSError:
                self.use_template = False
                return None
            self._template.wait_ready_in_background()
            return None

    def _refill(self) -> None:
        while self._services.running and len(self._spare) + self._refilling < self.warm:
            self._refilling += 1
            self._services.start_soon(self._add_spare)

    async def _add_spare(self) -> None:
        try:
            worker = await self._start()
            if self._closed:
                await worker.close()
            else:
                self._spare.append(worker)
        except (WorkerLost, OSError, TimeoutError):
            pass  # the next run starts one on demand and reports what went wrong
        finally:
            self._refilling -= 1

    async def _reaper(self) -> None:
        while True:
            await anyio.sleep(min(self.idle_seconds / 2, 30.0))
            await self.reap_idle()

    async def reap_idle(self) -> None:
        """Close the workers of sessions idle for longer than ``idle_seconds``."""
        now = time.monotonic()
        for session, worker in list(self._sessions.items()):
            idle = not self._gates.active(session)
            if idle and now - worker.last_used > self.idle_seconds:
                await self._evict(session, f"it was idle for more than {self.idle_seconds:g} s")
        await anyio.to_thread.run_sync(sweep_stale_folders)  # failed removals, orphans


__all__ = [
    "FOLDER_PREFIX",
    "ProcessExecutor",
    "Worker",
    "WorkerLost",
    "WorkerOptions",
    "sweep_stale_folders",
]
