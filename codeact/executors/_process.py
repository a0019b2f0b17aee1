"""The process executor: each session's scripts run in a worker process the host can kill.

Guards inside the interpreter are one line of defence; this is the hard one. A
worker is started (never forked from the host), with a scrubbed environment, no
inherited descriptors but its channel, a working directory of its own, and kernel
limits on memory, file size, open files and processes. The host kills it at the
wall-clock deadline. Tool calls cross the channel as JSON and are dispatched here,
in the host, through the registry: policy, validation, hooks and events stay home.

This module keeps the sessions: which worker serves which, the warm spares and the
template they fork from, eviction and idle reaping. One worker's life (its start, its
channel, a run served to its end) is ``_worker_process``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from ..contract._exceptions import ErrorCode
from ..sandbox import Limits, ScriptError, ScriptOutcome
from ._confine import UNPRIVILEGED_ID, Confinement, ConfinementReport
from ._early_template import available as template_available
from ._early_template import take_early_template
from ._in_process import (
    SCRIPT_THREADS,
    AsyncBatchCaller,
    AsyncToolCaller,
    OutputListener,
    RunTape,
    SessionGates,
    SyncToolCaller,
)
from ._services import Services
from ._template import READY_TIMEOUT_SECONDS, WorkerTemplate
from ._worker_environment import template_command
from ._worker_folders import sweep_stale_folders
from ._worker_process import (
    ABORT_GRACE_SECONDS,
    INTERPRETERS,
    START_TIMEOUT_SECONDS,
    Worker,
    WorkerLost,
    WorkerOptions,
    lost_outcome,
)

WARM_WORKERS = 2
MAX_SESSIONS = 64  # live sessions (so workers) per executor; idle ones make room, oldest first
MAX_REMEMBERED_EVICTIONS = 4_096
IDLE_SECONDS = 300.0


class AtCapacity(Exception):
    """Every session the executor may keep is busy."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the executor serves at most {limit} sessions at once and all of them are "
            "running scripts; try again when one has finished"
        )


def _failed(code: str, message: str) -> ScriptOutcome:
    return ScriptOutcome(error=ScriptError(code=code, message=message, kind="SessionLimit"))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop this runs on (None under another backend: its starts are awaited)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
        from ..stdlib import DEFAULT_MODULES

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
        # the loop of each start in flight (a start whose loop is closed never ends)
        self._start_loops: list[asyncio.AbstractEventLoop | None] = []
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
                return lost_outcome(
                    ErrorCode.CODE_RUNTIME_ERROR, f"no worker could be started ({error})"
                )
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
            except anyio.get_cancelled_exc_class():
                if worker.dead and self._sessions.get(session) is worker:
                    # nobody hears the cancelled run: the session's next run is told
                    self._evicted[session] = (
                        "its worker was killed: a cancelled run did not stop within "
                        f"{ABORT_GRACE_SECONDS:g} s"
                    )
                raise
            finally:
                if worker.dead:
                    if self._sessions.get(session) is worker:
                        self._sessions.pop(session, None)
                    # reaped and its channel closed also when the run was cancelled (a
                    # worker that died under a cancelled run left its pipes open)
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
            if not workers and not self._start_loops:
                break
            for worker in workers:
                await worker.close()
            stranded = all(loop is not None and loop.is_closed() for loop in self._start_loops)
            if self._start_loops and (stranded or time.monotonic() > waited_until):
                break  # a start on an event loop that no longer runs never ends
            if self._start_loops:  # a start in flight hands its worker over when done
                await anyio.sleep(0.01)
        for worker in list(self._starting):
            worker._kill_now()
        template, self._template = self._template, None
        if template is not None:
            await anyio.to_thread.run_sync(template.close)
        for worker in list(self._starting):  # a fork that ended while the template closed
            worker._kill_now()
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
        loop = _running_loop()
        self._start_loops.append(loop)
        try:
            worker = await self._started()
            if self._closed:  # closed meanwhile: the close waits for this one to go too
                await worker.close()
                raise WorkerLost("the executor was closed")
            return worker
        finally:
            self._start_loops.remove(loop)

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
            command = template_command(self.options.module)
            environment = self.options.environment
            early = take_early_template(command, environment)  # started as codeact was imported
            try:
                # spawned from the loop's thread, as workers are (parent-death signal)
                self._template = (
                    WorkerTemplate(*early)
                    if early is not None
                    else WorkerTemplate.spawn(command, environment)
                )
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


__all__ = ["ProcessExecutor"]
