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
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.buffered import BufferedByteReceiveStream

from ._confine import UNPRIVILEGED_ID, Confinement, ConfinementReport
from ._exceptions import ErrorCode
from ._executors import (
    AsyncBatchCaller,
    AsyncToolCaller,
    SessionGates,
    SyncToolCaller,
    bounded_batch_caller,
    bounded_tool_caller,
)
from ._json import JsonValue, thaw
from ._results import ToolExecutionResult, failure
from ._sandbox import Limits, ScriptError, ScriptOutcome, ToolCallRecord
from ._sandbox._outcome import outcome_from_json

WARM_WORKERS = 2
IDLE_SECONDS = 300.0
KILL_GRACE_SECONDS = 1.0
ABORT_GRACE_SECONDS = 1.0
START_TIMEOUT_SECONDS = 30.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
FOLDER_PREFIX = "codeact-worker-"
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


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
    module: str = "codeact._worker"


class Worker:
    """One worker process and its channel."""

    def __init__(self, process: anyio.abc.Process, workdir: str) -> None:
        self.process = process
        self.workdir = workdir
        assert process.stdout is not None
        assert process.stdin is not None
        self._reader = BufferedByteReceiveStream(process.stdout)
        self._writer = process.stdin
        self.last_used = time.monotonic()
        self.dead = False
        self.confinement = ConfinementReport()

    @classmethod
    async def start(
        cls, limits: Limits, modules: frozenset[str], options: WorkerOptions | None = None
    ) -> Worker:
        options = options or WorkerOptions()
        workdir = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        environment = {
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
            "PYTHONPATH": _PACKAGE_ROOT,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
        }
        prefix = [part.replace("{workdir}", workdir) for part in options.prefix]
        try:
            process = await anyio.open_process(
                [*prefix, sys.executable, "-m", options.module],
                stdin=-1,
                stdout=-1,
                stderr=-3,  # subprocess.DEVNULL
                cwd=workdir,
                env=environment,
                start_new_session=True,
            )
        except BaseException:  # cancelled or refused before there was a worker to kill
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        worker = cls(process, workdir)
        try:
            with anyio.fail_after(START_TIMEOUT_SECONDS):
                await worker.send(
                    {
                        "op": "init",
                        "limits": asdict(limits),
                        "modules": sorted(modules),
                        "confinement": options.confinement,
                        "user": options.user,
                        "workdir": workdir,
                    }
                )
                ready = await worker.receive()
        except BaseException:
            await worker.kill()
            raise
        worker.confinement = ConfinementReport.from_json(ready.get("confinement") or {})
        if ready.get("op") == "refused":
            await worker.kill()
            missing = "; ".join(f"{k}: {v}" for k, v in worker.confinement.missing.items())
            raise WorkerLost(f"confinement is required and this machine lacks it ({missing})")
        if ready.get("op") != "ready":
            await worker.kill()
            raise WorkerLost(f"the worker did not start: {ready!r}")
        return worker

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self._writer.send(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise WorkerLost(await self._describe_exit()) from None

    async def receive(self) -> dict[str, Any]:
        try:
            line = await self._reader.receive_until(b"\n", MAX_MESSAGE_BYTES)
            message = json.loads(line)
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ):
            raise WorkerLost(await self._describe_exit()) from None
        except (anyio.DelimiterNotFound, ValueError):
            # an oversized or garbled message: the worker can no longer be trusted to talk
            await self.kill()
            raise WorkerLost("the worker sent a message the host could not read") from None
        if type(message) is not dict:
            await self.kill()
            raise WorkerLost("the worker sent a message the host could not read")
        return message

    async def run(
        self,
        source: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        limits: Limits,
        call_tools: AsyncBatchCaller | None = None,
        call_tool_now: SyncToolCaller | None = None,
    ) -> ScriptOutcome:
        """Run one script; tool calls are answered here until the worker says it is done.

        The deadline is the script's own time: what the host spends answering its tool
        calls (each bounded by ``limits.tool_wait_seconds``) moves it on. The host
        records every call it answered, so a worker killed mid-run still reports them.
        """
        self.last_used = time.monotonic()
        records: list[ToolCallRecord] = []
        try:
            await self.send(
                {"op": "run", "source": source, "tools": {k: list(v) for k, v in tools.items()}}
            )
            caller = bounded_tool_caller(_in_one_thread(call_tool, call_tool_now), limits)
            batch = bounded_batch_caller(call_tool, call_tools, limits)
            return await self._serve(caller, batch, limits, records, frozenset(tools))
        except TimeoutError:
            await self.kill()
            return _lost(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"the worker was killed at the {limits.wall_seconds:g} s deadline",
                records,
            )
        except WorkerLost as lost:
            return _lost(ErrorCode.CODE_RUNTIME_ERROR, lost.reason, records)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._abort(call_tool)
            raise
        finally:
            self.last_used = time.monotonic()

    async def _serve(
        self,
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller,
        limits: Limits,
        records: list[ToolCallRecord],
        bound: frozenset[str],
    ) -> ScriptOutcome:
        deadline = anyio.current_time() + limits.wall_seconds + KILL_GRACE_SECONDS
        while True:
            with anyio.fail_after(max(deadline - anyio.current_time(), 0)):
                message = await self.receive()
            op = message.get("op")
            if op == "done":
                try:
                    return outcome_from_json(message["outcome"])
                except (KeyError, TypeError, ValueError, AttributeError):  # not from our worker
                    await self.kill()
                    raise WorkerLost("the worker sent an outcome the host could not read") from None
            if op == "call":
                calls = [_asked_call(message)]
            elif op == "calls" and type(message.get("calls")) is list:
                calls = [_asked_call(c) for c in message["calls"] if type(c) is dict]
            else:
                continue
            if len(records) + len(calls) > limits.max_tool_calls:  # the worker is not trusted
                await self.kill()
                return _lost(
                    ErrorCode.CODE_RESOURCE_LIMIT,
                    f"the script made more than {limits.max_tool_calls:,} tool calls",
                    records,
                )
            asked = anyio.current_time()
            results = await self._answer(
                calls, bound, call_tool if op == "call" else None, call_tools
            )
            deadline += anyio.current_time() - asked  # waiting on the host is not script time
            for (name, _), result in zip(calls, results, strict=True):
                records.append(
                    ToolCallRecord(
                        name=name,
                        ok=not result.is_error,
                        code=result.error.code if result.is_error else None,
                    )
                )
            answers = [_answer_json(result) for result in results]
            if op == "call":
                await self.send(answers[0])
            else:
                await self.send({"op": "results", "results": answers})

    async def _answer(
        self,
        calls: list[tuple[str, dict[str, JsonValue]]],
        bound: frozenset[str],
        call_tool: AsyncToolCaller | None,
        call_tools: AsyncBatchCaller,
    ) -> list[ToolExecutionResult]:
        """Only the tools this run bound: the worker is not trusted to ask for others."""
        wanted = [i for i, (name, _) in enumerate(calls) if name in bound]
        results: list[ToolExecutionResult] = [
            failure("script", name, ErrorCode.UNKNOWN_TOOL, f"{name!r} is not bound")
            for name, _ in calls
        ]
        if call_tool is not None and wanted:  # one synchronous call
            results[0] = await call_tool(*calls[0])
        elif wanted:
            for index, result in zip(
                wanted, await call_tools([calls[i] for i in wanted]), strict=True
            ):
                results[index] = result
        return results

    async def _abort(self, call_tool: AsyncToolCaller) -> None:
        """Stop the running script; kill the worker if it does not stop in time."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGUSR1)
        try:
            with anyio.fail_after(ABORT_GRACE_SECONDS):
                while True:
                    message = await self.receive()
                    if message.get("op") == "done":
                        return
                    aborted = {"op": "result", "ok": False, "code": "ABORTED", "message": "aborted"}
                    if message.get("op") == "call":
                        await self.send(aborted)
                    elif message.get("op") == "calls" and type(message.get("calls")) is list:
                        await self.send(
                            {"op": "results", "results": [aborted] * len(message["calls"])}
                        )
        except (TimeoutError, WorkerLost):
            await self.kill()

    async def reset(self) -> None:
        await self.send({"op": "reset"})
        while (await self.receive()).get("op") != "reset_done":
            pass

    async def close(self) -> None:
        """Ask the worker to exit, then make sure it did, and remove its directory."""
        if not self.dead:
            with contextlib.suppress(
                WorkerLost, anyio.BrokenResourceError, anyio.ClosedResourceError
            ):
                await self.send({"op": "exit"})
            with anyio.move_on_after(KILL_GRACE_SECONDS):
                await self.process.wait()
        await self.kill()

    async def kill(self) -> None:
        self.dead = True
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with anyio.CancelScope(shield=True):
            await self.process.wait()
            await self.process.aclose()
        shutil.rmtree(self.workdir, ignore_errors=True)

    async def _describe_exit(self) -> str:
        self.dead = True
        with anyio.move_on_after(KILL_GRACE_SECONDS):
            await self.process.wait()
        code = self.process.returncode
        if code is None:
            return "the worker stopped answering"
        if code < 0:
            name = signal.Signals(-code).name
            if -code == signal.SIGKILL:
                return f"the worker was killed ({name}), possibly out of memory"
            return f"the worker crashed ({name})"
        return f"the worker exited with status {code}"


def _in_one_thread(
    call_tool: AsyncToolCaller, call_tool_now: SyncToolCaller | None
) -> AsyncToolCaller:
    """A worker's single call: the whole pipeline in one worker thread when nothing in it
    needs the loop (one handoff instead of the async pipeline's), else the pipeline."""
    if call_tool_now is None:
        return call_tool

    async def call(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
        # abandoned, as the pipeline's own thread is, if the wait on it is cancelled
        now = await anyio.to_thread.run_sync(call_tool_now, name, arguments, abandon_on_cancel=True)
        return now if now is not None else await call_tool(name, arguments)

    return call


def _asked_call(message: dict[str, Any]) -> tuple[str, dict[str, JsonValue]]:
    arguments = message.get("arguments")
    return str(message.get("name")), arguments if type(arguments) is dict else {}


def _answer_json(result: ToolExecutionResult) -> dict[str, Any]:
    if result.is_error:
        return {
            "op": "result",
            "ok": False,
            "code": result.error.code,
            "message": result.error.message,
        }
    return {"op": "result", "ok": True, "value": thaw(result.value)}


def _lost(code: str, reason: str, calls: Sequence[ToolCallRecord] = ()) -> ScriptOutcome:
    message = f"{reason}; the session's state was lost and a fresh worker will serve the next run"
    error = ScriptError(code=code, message=message, kind="WorkerLost")
    return ScriptOutcome(tool_calls=tuple(calls), error=error)


class ProcessExecutor:
    """Sessions' scripts in worker processes, from a warm pool; the default executor.

    Use it as an async context manager to keep the pool warm in the background and
    reap idle workers; used without, workers start on demand.
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
    ) -> None:
        from stdlib_bindings._names import DEFAULT_MODULES

        self.limits = limits or Limits()
        self.modules = frozenset(DEFAULT_MODULES if modules is None else modules)
        self.warm = warm
        self.idle_seconds = idle_seconds
        self.options = WorkerOptions(
            confinement=confinement, user=worker_user, prefix=tuple(worker_prefix)
        )
        self._spare: list[Worker] = []
        self._sessions: dict[str, Worker] = {}
        self._tasks: anyio.abc.TaskGroup | None = None
        self._refilling = 0
        self._gates = SessionGates()
        self._pending_starts = 0
        self._closed = False
        self._swept = False

    async def __aenter__(self) -> ProcessExecutor:
        self._closed = False
        self._tasks = await anyio.create_task_group().__aenter__()
        self._refill()
        self._tasks.start_soon(self._reaper)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._tasks is not None
        self._tasks.cancel_scope.cancel()
        await self._tasks.__aexit__(None, None, None)
        self._tasks = None
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
    ) -> ScriptOutcome:
        # one run per session, in arrival order
        return await self._gates.run(
            session,
            lambda: self._run(source, session, tools, call_tool, call_tools, call_tool_now),
        )

    async def _run(
        self,
        source: str,
        session: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: AsyncToolCaller,
        call_tools: AsyncBatchCaller | None,
        call_tool_now: SyncToolCaller | None,
    ) -> ScriptOutcome:
        try:
            worker = await self._worker_for(session)
        except (WorkerLost, OSError, TimeoutError) as error:
            return _lost(ErrorCode.CODE_RUNTIME_ERROR, f"no worker could be started ({error})")
        try:
            outcome = await worker.run(
                source, tools, call_tool, self.limits, call_tools, call_tool_now
            )
        finally:
            if worker.dead and self._sessions.get(session) is worker:
                self._sessions.pop(session, None)
        if worker.dead:
            await worker.kill()
        self._refill()
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
        worker = self._sessions.pop(session, None)
        if worker is not None:
            await worker.close()

    async def aclose(self) -> None:
        """Close every worker, also those still starting; nothing of ours is left after."""
        self._closed = True
        while True:
            workers = [*self._sessions.values(), *self._spare]
            self._sessions.clear()
            self._spare.clear()
            if not workers and not self._pending_starts:
                return
            for worker in workers:
                await worker.close()
            if self._pending_starts:  # a start in flight hands its worker over when done
                await anyio.sleep(0.01)

    # Pool ----------------------------------------------------------------------------

    @property
    def workers(self) -> list[Worker]:
        return [*self._spare, *self._sessions.values()]

    async def _worker_for(self, session: str) -> Worker:
        """The session's worker; called under the session's gate, so started once."""
        worker = self._sessions.get(session)
        if worker is None or worker.dead:
            worker = self._spare.pop() if self._spare else await self._start()
            if self._closed:
                await worker.close()
                raise WorkerLost("the executor was closed")
            self._sessions[session] = worker
        return worker

    async def _start(self) -> Worker:
        if self._closed:
            raise WorkerLost("the executor was closed")
        if not self._swept:
            self._swept = True
            sweep_stale_folders()
        self._pending_starts += 1
        try:
            return await Worker.start(self.limits, self.modules, self.options)
        finally:
            self._pending_starts -= 1

    def _refill(self) -> None:
        if self._tasks is None:
            return
        while len(self._spare) + self._refilling < self.warm:
            self._refilling += 1
            self._tasks.start_soon(self._add_spare)

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
            if now - worker.last_used > self.idle_seconds:
                self._sessions.pop(session, None)
                await worker.close()


def sweep_stale_folders(root: str | None = None) -> list[str]:
    """Remove the folders of workers whose host is gone (killed before it could clean up)."""
    root = root or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        owner = name[len(FOLDER_PREFIX) :].partition("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and not _process_exists(int(owner)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["ProcessExecutor", "Worker", "WorkerLost", "WorkerOptions", "sweep_stale_folders"]
