"""One worker process as the host sees it: started and confined, spoken to over its
channel, served while it runs a script, killed at its deadline or at any oddity.

Everything a worker sends is hostile input: every wait has a deadline, every message
is bounded and checked (``_worker_messages``), and a worker that breaks a rule is
killed. The executor (``_process``) keeps a session's worker; this module is one
worker's life.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from ..contract._exceptions import ErrorCode
from ..contract._json import JsonValue
from ..contract._results import ToolExecutionResult, failure
from ..sandbox import Limits, ScriptError, ScriptOutcome, ToolCallRecord
from ..stdlib._tape_bounds import MAX_READINGS, MAX_TAPE_CHARS, reading_chars
from ._confine import UNPRIVILEGED_ID, Confinement, ConfinementReport
from ._in_process import (
    AsyncBatchCaller,
    AsyncToolCaller,
    OutputListener,
    RunTape,
    SyncToolCaller,
    bounded_batch_caller,
    bounded_tool_caller,
    taken,
)
from ._pipe import Garbled, PipeClosed, WorkerPipe
from ._spin import Spinner
from ._template import ForkedProcess, WorkerTemplate
from ._threads import SessionThread
from ._worker_environment import DEFAULT_WORKER_MODULE, WORKER_ENVIRONMENT
from ._worker_folders import new_folder, remove_folder
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

KILL_GRACE_SECONDS = 1.0
# How long a cancelled run may take to stop: a worker beside busy cores needs seconds.
ABORT_GRACE_SECONDS = 3.0
ABORT_NUDGE_SECONDS = 0.05
START_TIMEOUT_SECONDS = 30.0
CHANNEL_SECONDS = 10.0  # the bound on a write or read outside a run (init, reset, exit)
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# How a worker runs scripts: the restricted interpreter, or plain CPython (_cpython), where
# the kernel is the only boundary.
INTERPRETERS = ("restricted", "cpython")


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
    module: str = DEFAULT_WORKER_MODULE
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
        try:
            if template is not None:
                # forked and handed to the executor in one step, in the thread: should the
                # loop awaiting it stop meanwhile, the executor can still kill it
                worker = await anyio.to_thread.run_sync(cls._forked, template, workdir, starting)
            else:
                command = [*prefix, sys.executable, "-m", options.module]
                # Started from the loop's thread, as asyncio starts processes: the worker's
                # parent-death signal fires when the thread that started it ends.
                worker = cls(_spawn(command, workdir, options.environment), workdir)
                if starting is not None:  # the executor can kill it, should its start never end
                    starting.add(worker)
        except BaseException:  # cancelled, or its loop stopped, before the start was awaited
            if starting is not None:  # a fork the thread finished meanwhile: killed, in a
                # thread of its own (nothing can be awaited here, and the loop must not block)
                for orphan in [w for w in list(starting) if w.workdir == workdir]:
                    starting.discard(orphan)
                    threading.Thread(target=orphan._kill_now, name="codeact-orphan").start()
            remove_folder(workdir)
            raise
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
            return lost_outcome(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"the script exceeded its wall-clock time ({limits.wall_seconds:g} s) limit: "
                f"the worker was killed at the {limits.wall_seconds:g} s deadline",
                serving.records,
            )
        except WorkerLost as lost:
            await self.kill()
            return lost_outcome(ErrorCode.CODE_RUNTIME_ERROR, lost.reason, serving.records)
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
                return lost_outcome(
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

    @classmethod
    def _forked(
        cls, template: WorkerTemplate, workdir: str, starting: set[Worker] | None
    ) -> Worker:
        worker = cls(template.fork(workdir), workdir)
        if starting is not None:  # the executor can kill it, should its start never end
            starting.add(worker)
        return worker

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


def lost_outcome(code: str, reason: str, calls: Sequence[ToolCallRecord] = ()) -> ScriptOutcome:
    message = f"{reason}; the session's state was lost and a fresh worker will serve the next run"
    error = ScriptError(code=code, message=message, kind="WorkerLost")
    return ScriptOutcome(tool_calls=tuple(calls), error=error)


__all__ = [
    "CHANNEL_SECONDS",
    "MAX_MESSAGE_BYTES",
    "START_TIMEOUT_SECONDS",
    "WORKER_ENVIRONMENT",
    "Worker",
    "WorkerLost",
    "WorkerOptions",
    "lost_outcome",
]
