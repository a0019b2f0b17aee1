"""Running a script durably: the session's names rebuilt from its log, the run recorded.

``run_durably`` is what run_code does when its runtime is durable. Before a run, the
worker must hold the names the log says the session has: if it is not the worker that
ran the session's last run (a resume, a new host, a worker that died or was reaped),
the session's earlier runs are replayed into a clean one first, from their records.
"""

from __future__ import annotations

import contextvars
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import anyio

from ..contract._abort import AbortSignal
from ..contract._call import ToolCall
from ..contract._dispatch import decides_now, execute_now
from ..contract._exceptions import ErrorCode, ToolError
from ..contract._json import JsonValue, detach, dumps
from ..contract._policy import DECIDED
from ..contract._registry import ToolRegistry
from ..contract._results import ToolExecutionResult, failure
from ..contract._tracing import attached
from ..sandbox import Limits, ScriptError, ScriptOutcome
from ..sandbox._outcome import outcome_from_json, outcome_to_json
from ..session._run_events import RunEnded, RunPreviewed, RunStarted
from ..session._session import Session
from ..session._stores import ConcurrentWriter
from ._plan import Plan, PreviewEnd
from ._preview import plan_of, stale_read
from ._record import (
    RUN,
    Durable,
    DurableRun,
    RecordedRun,
    RunRecorder,
    _Aborted,
    decisions_for,
    lost_race,
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Resume:
    """A resume's decisions, by pending call id; a commit's also name the plan they
    decide (its digest), which must still be the record's plan when the commit begins."""

    decisions: Mapping[str, bool]
    plan_digest: str | None = None


# Set by Runtime.resume around the run_code call it re-executes.
RESUMING: contextvars.ContextVar[Resume | None] = contextvars.ContextVar(
    "codeact_resuming", default=None
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Surroundings:
    """What a durable run needs of the run_code call that started it."""

    registry: ToolRegistry
    parent: str  # the run_code call's id: the parent of the script's calls
    runner: Any  # the executor: a ProcessExecutor
    tools: Mapping[str, tuple[str, ...]]
    real: Callable[[str], str]
    limits: Limits
    abort: AbortSignal
    traced: Any
    on_output: Any
    relay: Any = None  # delivers events from the serving thread on the loop (None: no fast path)


class PlanReady(Exception):
    """A previewed run (or the part of a commit past its plan) planned writes: ``plan``."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan.text())
        self.plan = plan


async def run_durably(
    durable: Durable,
    session: str,
    source: str,
    run_id: str,
    around: Surroundings,
    *,
    preview: bool = False,
) -> ScriptOutcome:
    """Run ``source`` as run ``run_id`` of ``session`` (or resume that run), recorded.

    ``preview``: its writes are planned, not made; a run that plans any raises
    ``PlanReady`` and waits for the plan's decisions (a resume is its commit).
    """
    async with durable.lock(session):  # one run writes the session's record at a time
        log = durable.log(session)
        try:
            return await _run(durable, log, session, source, run_id, around, preview=preview)
        except ConcurrentWriter as error:  # before the run began, or as it ended
            raise ToolError(lost_race(session, error), ErrorCode.REPLAY_DIVERGED) from None


async def decline(durable: Durable, session: str, message: str) -> None:
    """End the session's waiting preview without making any of its plan's writes."""
    async with durable.lock(session):
        runs = durable.runs(session)
        if not runs or runs[-1].ended is not None or not runs[-1].planned():
            raise ToolError(f"session {session!r} has no plan waiting for a decision")
        try:
            _end(durable.log(session), runs[-1].run, ErrorCode.POLICY_DENIED, message)
        except ConcurrentWriter as error:
            raise ToolError(lost_race(session, error), ErrorCode.REPLAY_DIVERGED) from None


def _end(log: Session, run: str, code: str, message: str) -> None:
    """End a run that will not go on, with an error the model reads."""
    outcome = ScriptOutcome(error=ScriptError(code=code, message=message))
    log.append(
        RunEnded(
            run=run,
            code=code,
            outcome=json.dumps(outcome_to_json(outcome), ensure_ascii=False),
        )
    )


async def _run(
    durable: Durable,
    log: Session,
    session: str,
    source: str,
    run_id: str,
    around: Surroundings,
    *,
    preview: bool = False,
) -> ScriptOutcome:
    runs = durable.runs(session)
    unfinished = runs[-1] if runs and runs[-1].ended is None else None
    resume = RESUMING.get()
    seed = around.runner.hash_seed
    if resume is not None and unfinished is None and runs and runs[-1].run == run_id:
        return recorded_outcome(runs[-1])  # it ended before the host that ran it could tell
    for run in runs:  # checked before anything is written: a refusal leaves no trace
        if run.started.hash_seed != seed:
            raise ToolError(
                f"run {run.run} was recorded by workers with hash seed "
                f"{run.started.hash_seed}, and this runtime's have {seed}: resume it with "
                f"Durable(..., hash_seed={run.started.hash_seed})",
                ErrorCode.REPLAY_DIVERGED,
            )
    if resume is not None:
        if unfinished is None or unfinished.run != run_id:
            raise ToolError(f"run {run_id} of session {session!r} is not waiting to resume")
        if resume.plan_digest is not None:  # the whole plan, before any write is made
            recorded = plan_of(unfinished, session).digest
            if recorded != resume.plan_digest:
                raise ToolError(
                    f"the plan of run {run_id} is not the one that was approved (approved "
                    f"{resume.plan_digest[:19]}, the record holds {recorded[:19]}): none of "
                    "its writes was made; read the plan again (Runtime.plan) and decide that",
                    ErrorCode.SUSPENDED,
                )
        try:
            decided = decisions_for(unfinished, resume.decisions)
        except ValueError as error:
            raise ToolError(str(error), ErrorCode.INVALID_ARGUMENTS) from None
        for event in decided:
            log.append(event)
        runs = durable.runs(session)
        current, earlier = runs[-1], runs[:-1]
        if any(event.approved for event in decided) and current.planned():
            stale = await stale_read(
                current,
                around.registry,
                around.real,
                parent=around.parent,
                abort=around.abort,
                max_concurrent=around.limits.max_concurrent_tool_calls,
                wait_seconds=around.limits.tool_wait_seconds,
            )
            if stale is not None:  # the world changed since the preview: nothing is made
                message = (
                    f"the plan is stale: {stale}. None of its writes was made; preview the "
                    "script again"
                )
                _end(log, current.run, ErrorCode.REPLAY_DIVERGED, message)
                raise ToolError(message, ErrorCode.REPLAY_DIVERGED)
    else:
        if unfinished is not None:
            waits = unfinished.pending()
            why = f" on {waits[0].call_id} ({waits[0].reason})" if waits else ""
            raise ToolError(
                f"run {unfinished.run} of this session has not finished: it waits{why}; "
                "nothing of this script ran. Resume that run first (Runtime.resume).",
                ErrorCode.SUSPENDED,
            )
        taken = {run.run for run in runs}
        run_id = next(
            candidate
            for candidate in itertools.chain(
                [run_id], (f"{run_id}#{n}" for n in itertools.count(2))
            )
            if candidate not in taken
        )
        log.append(RunStarted(run=run_id, source=source, hash_seed=seed, preview=preview))
        current, earlier = durable.runs(session)[-1], runs
    worker = around.runner.session_worker(session)
    rebuild = resume is not None or worker is None or durable.warm.get(session) != worker
    durable.warm.pop(session, None)
    kept = [past for past in earlier if not past.discarded]  # a declined plan left no names
    if rebuild:
        for index, past in enumerate(kept):
            await _replay(log, session, past, around, fresh=index == 0)
    recorder = RunRecorder(
        log,
        current,
        fresh=rebuild and not kept,
        live=True,
        repeatable=repeatable_in(around.registry),
        writes=around.registry.writes if current.started.preview else None,
        bounds=(durable.max_run_bytes, durable.max_session_bytes),
    )
    outcome = await _execute(recorder, session, source, around)
    stopped, short = recorder.stopped, recorder.unreached()
    end = recorder.preview_end
    if stopped is not None and stopped.code == ErrorCode.PREVIEW_STOPPED:
        stopped = None  # a read that needs a planned result: the preview ends there
    elif outcome.error is not None and outcome.error.code == ErrorCode.PREVIEW_STOPPED:
        halt = outcome.error
        end = PreviewEnd(message=halt.message, line=halt.line, source_line=halt.source_line)
    elif outcome.error is not None and recorder.planned:  # it fails past writes it planned
        halt = outcome.error
        end = PreviewEnd(
            message=f"the script fails there ({halt.code}: {halt.message})",
            line=halt.line,
            source_line=halt.source_line,
        )
    if stopped is None and (end is not None or recorder.planned):
        # a stop without a planned write never gets here: the host killed its worker
        assert recorder.planned
        if short is not None:
            raise ToolError(short, ErrorCode.REPLAY_DIVERGED)
        log.append(
            RunPreviewed(
                run=current.run,
                stop="" if end is None else json.dumps(asdict(end), ensure_ascii=False),
                outcome=json.dumps(outcome_to_json(outcome), ensure_ascii=False),
            )
        )
        raise PlanReady(plan_of(durable.runs(session)[-1], session))
    if short is not None and stopped is None:
        raise ToolError(short, ErrorCode.REPLAY_DIVERGED)
    if source != current.started.source and (
        stopped is None or stopped.code == ErrorCode.SUSPENDED
    ):
        # an amended script that made the recorded calls: it is the run's source now
        log.append(RunStarted(run=current.run, source=source, hash_seed=seed))
    if stopped is not None:
        if stopped.code == ErrorCode.CODE_RESOURCE_LIMIT:  # the record is full: the run ends
            _end(log, current.run, stopped.code, stopped.message)
        raise ToolError(stopped.message, stopped.code)
    worker_now = around.runner.session_worker(session)
    lost = outcome.error is not None and outcome.error.code == ErrorCode.CODE_RUNTIME_ERROR
    if worker_now is None and lost:  # the worker died mid-run: the run is interrupted
        assert outcome.error is not None
        raise ToolError(
            f"{outcome.error.message}. The run's record is kept: resume it "
            "(Runtime.resume) to go on without repeating a call that finished.",
            ErrorCode.ABORTED,
        )
    code = None if outcome.error is None else outcome.error.code
    log.append(
        RunEnded(
            run=current.run,
            code=code,
            reads=recorder.take_reads(),
            outcome=json.dumps(outcome_to_json(outcome), ensure_ascii=False),
        )
    )
    if worker_now is not None:
        durable.warm[session] = worker_now
    return outcome


def recorded_outcome(run: RecordedRun) -> ScriptOutcome:
    """What an ended run returned, as its record has it."""
    assert run.ended is not None
    return outcome_from_json(json.loads(run.ended.outcome))


def _shown_of(outcome: ScriptOutcome) -> tuple[str, str]:
    """What a run returned and printed, as comparable text."""
    return json.dumps(outcome.value, sort_keys=True, default=repr), outcome.output


async def _replay(
    log: Session, session: str, past: RecordedRun, around: Surroundings, *, fresh: bool
) -> None:
    """Re-run an earlier run from its record, to rebuild the names it left."""
    recorder = RunRecorder(log, past, fresh=fresh, live=False, repeatable=lambda name: False)
    outcome = await _execute(recorder, session, past.started.source, around, quiet=True)
    if recorder.stopped is not None:
        if recorder.stopped.code == ErrorCode.CODE_RESOURCE_LIMIT and recorder.ended_full():
            # its record had no room for the next call: it ended there
            return
        raise ToolError(recorder.stopped.message, recorder.stopped.code)
    short = recorder.unreached()
    if short is not None:
        raise ToolError(short, ErrorCode.REPLAY_DIVERGED)
    if past.ended is not None and past.ended.code == ErrorCode.ABORTED:
        return  # cancelled from outside: how it ended after that point is not its record's
    code = None if outcome.error is None else outcome.error.code
    recorded = past.ended.code if past.ended is not None else None
    if code != recorded:
        raise ToolError(
            f"the replay diverged: run {past.run} ended with {code or 'success'} when it was "
            f"recorded with {recorded or 'success'}",
            ErrorCode.REPLAY_DIVERGED,
        )
    if past.ended is not None and _shown_of(outcome) != _shown_of(recorded_outcome(past)):
        raise ToolError(
            f"the replay diverged: run {past.run} returned or printed other than it did when "
            "it was recorded",
            ErrorCode.REPLAY_DIVERGED,
        )


async def _execute(
    recorder: RunRecorder,
    session: str,
    source: str,
    around: Surroundings,
    *,
    quiet: bool = False,
) -> ScriptOutcome:
    """One execution of a run in the session's worker, its calls served or recorded."""
    numbers = itertools.count(1)
    upcoming = [1]  # the next call's position, for the in-thread path to peek at
    run = recorder.record.run
    this_run = DurableRun(session=session, run=run)

    def call_tool_now(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult | None:
        """A call answered in the worker's serving thread, with no trip to the loop: a
        recorded answer, or a sync tool the policy lets run without asking (recorded
        before and after, as on the loop); None for anything else, which the loop takes."""
        position = upcoming[0]
        plain = detach(arguments)  # a copy of this call's own, parsed once for both steps
        assert isinstance(plain, dict)
        call = ToolCall(f"{run}.{position}", around.real(name), dumps(plain))
        served = recorder.served(position, call, name)
        if served is not None:
            upcoming[0] = next(numbers) + 1
            return served
        resolved = around.registry.resolve(call.name)  # one route for the check and the call
        if around.relay is None or not decides_now(resolved, call, around.parent, plain):
            return None
        upcoming[0] = next(numbers) + 1
        try:
            plan = recorder.plan(position, call, name)
        except _Aborted:
            return failure(call.id, call.name, ErrorCode.ABORTED, "the run was cancelled")
        if not isinstance(plan, bool):
            return plan
        run_token = RUN.set(this_run)
        decided_token = DECIDED.set({**DECIDED.get(), call.id: True} if plan else DECIDED.get())
        try:
            with attached(around.traced):
                result = execute_now(
                    resolved,
                    call,
                    parent=around.parent,
                    abort=around.abort,
                    emit=around.relay,
                    plain=plain,
                )
        finally:
            DECIDED.reset(decided_token)
            RUN.reset(run_token)
        assert result is not None  # decides_now said it would run here
        recorder.answered(position, result)
        if recorder.stopped is not None:
            raise recorder.stopped
        return result

    async def call_tool(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
        return (await call_tools([(name, arguments)]))[0]

    async def call_tools(
        batch: list[tuple[str, dict[str, JsonValue]]],
    ) -> list[ToolExecutionResult]:
        planned: list[tuple[int, ToolCall, ToolExecutionResult | bool]] = []
        for name, arguments in batch:
            position = next(numbers)
            upcoming[0] = position + 1
            call = ToolCall(f"{run}.{position}", around.real(name), dumps(arguments))
            try:
                planned.append((position, call, recorder.plan(position, call, name)))
            except _Aborted:
                aborted = failure(call.id, call.name, ErrorCode.ABORTED, "the run was cancelled")
                planned.append((position, call, aborted))
        live = [(p, call, plan) for p, call, plan in planned if isinstance(plan, bool)]
        results = {p: plan for p, _, plan in planned if not isinstance(plan, bool)}
        if live:  # each answer recorded as it comes; then a deferred call suspends the run
            results.update(await _run_live(live, this_run, around, recorder.answered))
            if recorder.stopped is not None:
                raise recorder.stopped
        return [results[position] for position, _, _ in planned]

    try:
        outcome: ScriptOutcome = await around.runner.run(
            source,
            session=session,
            tools=around.tools,
            call_tool=call_tool,
            call_tools=call_tools,
            call_tool_now=call_tool_now,
            on_output=None if quiet else around.on_output,
            tape=recorder,
        )
        return outcome
    except anyio.get_cancelled_exc_class():
        if recorder.live and recorder.stopped is None:  # cancelled: the run ends here
            recorder.append(RunEnded(run=run, code=ErrorCode.ABORTED, reads=recorder.take_reads()))
        raise


async def _run_live(
    live: list[tuple[int, ToolCall, bool]],
    this_run: DurableRun,
    around: Surroundings,
    answered: Callable[[int, ToolExecutionResult], None],
) -> dict[int, ToolExecutionResult]:
    """Run calls for real: with the run's idempotency keys, and a person's approvals."""
    approved = {call.id: True for _, call, decided in live if decided}
    run_token = RUN.set(this_run)
    decided_token = DECIDED.set({**DECIDED.get(), **approved})
    parent = around.parent
    try:
        with attached(around.traced):
            if len(live) == 1:
                position, call, _ = live[0]
                result = await around.registry.execute(call, parent=parent, abort=around.abort)
                answered(position, result)
                return {position: result}
            results = await around.registry.execute_many(
                [call for _, call, _ in live],
                parent=parent,
                abort=around.abort,
                max_concurrent=around.limits.max_concurrent_tool_calls,
                wait_seconds=around.limits.tool_wait_seconds,
                # in the order they complete: a crash loses no answer that came
                on_result=lambda index, result: answered(live[index][0], result),
            )
            return {
                position: result for (position, _, _), result in zip(live, results, strict=True)
            }
    finally:
        DECIDED.reset(decided_token)
        RUN.reset(run_token)


def repeatable_in(registry: ToolRegistry) -> Callable[[str], bool]:
    """Whether a call left unknown by a crash may simply run again: its tool says it is
    idempotent or read-only."""

    def repeatable(name: str) -> bool:
        found = registry.get(name)
        return not registry.writes(name) or (found is not None and found.repeatable)

    return repeatable


__all__ = [
    "RESUMING",
    "PlanReady",
    "Resume",
    "Surroundings",
    "decline",
    "repeatable_in",
    "run_durably",
]
