"""Durable runs: a script that waits for a person, survives a crash, never repeats an effect.

A script is deterministic given what reached it from outside: its tools' answers, and
what the clock and entropy facades returned (its worker runs with a recorded hash seed,
so set and dict orders match too). A durable runtime writes all of that in a session
log, each call *before* its effect starts and its answer after. Resuming a run re-runs
its source in a clean worker: the session's earlier runs first, then the run itself,
with every recorded answer and reading served from the log (nothing executes again);
past the record the run goes on live. A call that differs from the record at its
position stops the replay and names itself: nothing is executed on a guess.

What the log cannot settle becomes a question, never a silent repeat: a call an
approver deferred (``LATER``), and a call that was in flight when the worker or host
died, unless its tool is idempotent or read-only (it runs again, with the same
idempotency key, so the system it changes can tell it is a repeat).
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

import anyio

from ..contract._call import ToolCall
from ..contract._dispatch import current_invocation
from ..contract._exceptions import CodeActError, ErrorCode, UsageError
from ..contract._json import JsonValue, freeze
from ..contract._results import TextBlock, ToolExecutionResult, ToolExecutionSuccess, failure
from ..executors._worker_messages import PLANNED, answer_message
from ..session._run_events import (
    RunDecided,
    RunEnded,
    RunPreviewed,
    RunStarted,
    RunSuspended,
    ScriptCallAnswered,
    ScriptCallStarted,
)
from ..session._session import Session
from ..session._stores import ConcurrentWriter, EventStore
from ._plan import PLANNED_REASON, PreviewEnd, pending_refs, resolved, shown_keywords

EFFECT_UNKNOWN = (
    "the run was interrupted while this call ran, so whether it took effect is unknown, "
    "and its tool is not idempotent: approve to run it again, or deny to tell the script it "
    "failed"
)


class ReplayDiverged(CodeActError):
    """Re-running a recorded run met a call (or a reading) other than its record's at the
    same position: the script, a tool or the runtime changed. Nothing was executed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingCall:
    """A call a suspended run waits on: decide it by ``call_id`` in ``resume``."""

    run: str
    call_id: str
    position: int
    name: str
    arguments: dict[str, JsonValue]
    reason: str

    @property
    def tool(self) -> str:
        """The tool called (``name``), as a plan's ``PlannedWrite.tool`` names it."""
        return self.name


@dataclass(frozen=True, kw_only=True, slots=True)
class DurableRun:
    """The run a tool body belongs to, for its idempotency key."""

    session: str
    run: str


RUN: contextvars.ContextVar[DurableRun | None] = contextvars.ContextVar(
    "codeact_durable_run", default=None
)


def idempotency_key() -> str | None:
    """The idempotency key of the script call whose tool body is running, else None.

    It is ``session/run.position``: the same every time the call is attempted (a resume
    after a crash hands it again), different for every other call. A tool that passes it
    on to what it changes (an ``Idempotency-Key`` header, a unique column) makes a repeat
    harmless; declare such a tool ``idempotentHint`` so a resume may repeat it.
    """
    run, invocation = RUN.get(), current_invocation()
    if run is None or invocation is None or not invocation.call_id.startswith(f"{run.run}."):
        return None
    return f"{run.session}/{invocation.call_id}"


# What a run, and all of a session's runs, may add to the record (counted as the text of
# its events: arguments, answers, readings, outcomes).
MAX_RUN_RECORD_BYTES = 32_000_000
MAX_SESSION_RECORD_BYTES = 256_000_000
RECORD_FULL = "record size limit"


def record_size(event: Any) -> int:
    """What an event costs the record: its text fields' lengths, and a little for the rest."""
    size = 64
    for item in dataclass_fields(event):
        value = getattr(event, item.name)
        if type(value) is str:
            size += len(value)
    return size


class Durable:
    """Where a runtime records its script runs: ``store(session)`` opens that session's
    log (a ``JsonlStore``, ``SqliteStore`` or ``PostgresStore``).

    ``hash_seed`` is the seed every worker's hash randomisation starts from; a run
    records it, and resumes only on workers with the same one. ``max_run_bytes`` and
    ``max_session_bytes`` bound what a run, and a session's runs together, add to the
    record (the record lives in the store and in this host's memory): a call that would
    pass either is not made, and the run ends with CODE_RESOURCE_LIMIT.
    """

    def __init__(
        self,
        store: Callable[[str], EventStore],
        *,
        hash_seed: int = 0,
        max_run_bytes: int = MAX_RUN_RECORD_BYTES,
        max_session_bytes: int = MAX_SESSION_RECORD_BYTES,
    ) -> None:
        if hasattr(store, "append") or not callable(store):  # one store is one session's
            raise UsageError(
                "Durable takes a function from a session's name to its store, such as "
                "lambda session: SqliteStore('runs.db', session)"
            )
        self.store = store
        self.hash_seed = hash_seed
        self.max_run_bytes = max_run_bytes
        self.max_session_bytes = max_session_bytes
        self.warm: dict[str, int] = {}  # session -> the worker whose names match its log
        self._logs: dict[str, Session] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._indexes: dict[str, RunIndex] = {}
        self._guard = threading.Lock()

    def lock(self, session: str) -> anyio.Lock:
        """Held for the whole of a run of ``session``: its record is written by one run at
        a time, from its start to its end."""
        with self._guard:
            return self._locks.setdefault(session, anyio.Lock())

    def log(self, session: str) -> Session:
        """The session's log, as the store has it now (another host may have written):
        kept open, and only what was added since it was last read is read."""
        with self._guard:
            log = self._logs.get(session)
            if log is None:
                log = self._logs[session] = Session(store=self.store(session))
                return log
            assert log.store is not None
            load_after = getattr(log.store, "load_after", None)
            if load_after is None:
                log.events = log.store.load()
            else:
                log.events.extend(load_after(len(log.events)))
            return log

    def runs(self, session: str) -> list[RecordedRun]:
        """The session's runs as its log has them now."""
        events = self.log(session).events
        with self._guard:
            index = self._indexes.setdefault(session, RunIndex())
            return index.feed(events)

    def pending(
        self, session: str, repeatable: Callable[[str], bool] | None = None
    ) -> list[PendingCall]:
        """The calls the session's unfinished run waits on (none: nothing waits); with
        ``repeatable``, not the calls a crash cut short that will simply run again."""
        runs = self.runs(session)
        return runs[-1].pending(repeatable) if runs and runs[-1].ended is None else []

    def forget(self, session: str) -> None:
        """Let go of a session's log (its store closed); its record stays in the store."""
        with self._guard:
            log = self._logs.pop(session, None)
            self._indexes.pop(session, None)
            self.warm.pop(session, None)
        close = getattr(log.store if log is not None else None, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        """Close the stores it opened (their connections); a later run opens them again."""
        with self._guard:
            logs, self._logs, self._indexes = self._logs, {}, {}
        for log in logs.values():
            close = getattr(log.store, "close", None)
            if close is not None:
                close()


@dataclass
class RecordedRun:
    """One run as its log has it."""

    started: RunStarted
    calls: dict[int, ScriptCallStarted] = field(default_factory=dict)
    answers: dict[int, ScriptCallAnswered] = field(default_factory=dict)
    suspended: dict[int, RunSuspended] = field(default_factory=dict)
    decisions: dict[int, RunDecided] = field(default_factory=dict)
    previewed: RunPreviewed | None = None  # the last preview stage's end
    ended: RunEnded | None = None

    @property
    def run(self) -> str:
        return self.started.run

    def planned(self) -> list[int]:
        """Positions of the writes a preview planned (made or not since)."""
        return sorted(p for p, s in self.suspended.items() if s.reason == PLANNED_REASON)

    @property
    def discarded(self) -> bool:
        """A preview whose plan was declined or went stale: it ended with writes of its plan
        never made, so a rebuild of the session's names passes over it."""
        return (
            self.ended is not None
            and self.ended.code in (ErrorCode.POLICY_DENIED, ErrorCode.REPLAY_DIVERGED)
            and any(p not in self.answers for p in self.planned())
        )

    def readings(self) -> list[list[JsonValue]]:
        """Every clock and entropy reading the run made, in the order it made them."""
        taped: list[list[JsonValue]] = []
        for position in sorted(self.calls):
            taped.extend(json.loads(self.calls[position].reads))
        if self.ended is not None:
            taped.extend(json.loads(self.ended.reads))
        return taped

    def pending(self, repeatable: Callable[[str], bool] | None = None) -> list[PendingCall]:
        """Calls with no answer: deferred ones, and ones whose effect a crash left unknown.

        With ``repeatable`` (is a tool read-only or idempotent?), a call a crash cut short
        that the resume simply makes again is left out: nobody is asked about it, so
        nobody should be shown it as a question.
        """
        return [
            PendingCall(
                run=self.run,
                call_id=f"{self.run}.{position}",
                position=position,
                name=call.name,
                arguments=json.loads(call.arguments),
                reason=self._waits_because(position),
            )
            for position, call in sorted(self.calls.items())
            if position not in self.answers
            and self._undecided(position)
            and not (repeatable is not None and self._runs_again(position, repeatable))
        ]

    def _runs_again(self, position: int, repeatable: Callable[[str], bool]) -> bool:
        """Is this unanswered call one the resume makes again without asking (as
        ``RunRecorder._settle`` decides)?"""
        if position in self.suspended and not self.begun(position):
            return False  # deferred for a decision: it waits for one
        return repeatable(self.calls[position].name)

    def begun(self, position: int) -> bool:
        """Was the call approved and begun (with no answer since, a crash cut it short)?"""
        decision = self.decisions.get(position)
        return decision is not None and decision.approved and decision.attempted

    def _undecided(self, position: int) -> bool:
        """Whether the call waits for someone: not decided, or begun before the run was cut
        short (its effect unknown)."""
        return position not in self.decisions or self.begun(position)

    def _waits_because(self, position: int) -> str:
        if self.begun(position):
            return EFFECT_UNKNOWN  # approved and begun when the run was cut short
        if position in self.suspended:
            return self.suspended[position].reason
        return EFFECT_UNKNOWN  # in flight when the run was cut short


class RunIndex:
    """The runs of one session's log, kept up to date as the log grows (a run's start
    does not read the session's whole history again)."""

    def __init__(self) -> None:
        self.runs: dict[str, RecordedRun] = {}
        self.fed = 0

    def feed(self, events: list[Any]) -> list[RecordedRun]:
        """Take in the events not seen yet; the runs, in the order they began."""
        if len(events) < self.fed:  # the log was read afresh and is shorter: start over
            self.runs, self.fed = {}, 0
        _index(self.runs, events[self.fed :])
        self.fed = len(events)
        return list(self.runs.values())


def _index(runs: dict[str, RecordedRun], events: Iterable[Any]) -> None:
    for event in events:
        if isinstance(event, RunStarted):
            if event.run in runs:  # a revised source: the record so far stays
                runs[event.run].started = event
            else:
                runs[event.run] = RecordedRun(started=event)
            continue
        run = runs.get(getattr(event, "run", ""))
        if run is None:
            continue
        if isinstance(event, ScriptCallStarted):
            run.calls[event.position] = event
        elif isinstance(event, ScriptCallAnswered):
            run.answers[event.position] = event
        elif isinstance(event, RunSuspended):
            run.suspended[event.position] = event
            run.decisions.pop(event.position, None)  # a decision answers one suspension
        elif isinstance(event, RunDecided):
            run.decisions[event.position] = event
        elif isinstance(event, RunPreviewed):
            run.previewed = event
        elif isinstance(event, RunEnded):
            run.ended = event


class Stop(Exception):
    """Ends a durable run's execution from the host's side (its worker goes with it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def answer_json(result: ToolExecutionResult) -> str:
    """What the script received, as JSON text: the message its worker was sent."""
    return json.dumps(answer_message(result), ensure_ascii=False)


def result_of(call: ToolCall, answer: str) -> ToolExecutionResult:
    recorded = json.loads(answer)
    if not recorded.get("ok"):
        return failure(call.id, call.name, recorded["code"], recorded["message"])
    value = recorded.get("value")
    return ToolExecutionSuccess(
        call_id=call.id,
        name=call.name,
        value=freeze(value),
        content=(TextBlock(text=json.dumps(value, ensure_ascii=False)),),
    )


class RunRecorder:
    """One execution of a recorded run: what the record has is served, the rest recorded.

    ``live``: calls past the record run (the run being executed); otherwise the run is an
    earlier one replayed to rebuild the session's names, and must stay inside its record.
    It is also the run's tape (``replay``, ``fresh``, ``received``) for the worker.
    """

    def __init__(
        self,
        log: Session,
        run: RecordedRun,
        *,
        fresh: bool,
        live: bool,
        repeatable: Callable[[str], bool],
        writes: Callable[[str], bool] | None = None,
        bounds: tuple[int, int] | None = None,
    ) -> None:
        self.log = log
        self.record = run
        # (max run bytes, max session bytes) and what the record holds of each so far
        self._bounds = bounds
        self._run_size = self._session_size = 0
        for event in log.events if bounds is not None else ():
            size = record_size(event)
            self._session_size += size
            if getattr(event, "run", None) == run.run:
                self._run_size += size
        self.fresh = fresh
        self.live = live
        self.replay = run.readings()
        self._repeatable = repeatable
        # a preview's: whether a new call's tool writes (planned, not made); None: not one
        self._writes = writes
        self._reads: list[list[JsonValue]] = []
        self._lines: deque[int | None] = deque()  # the lines of the calls asked, in order
        self.stopped: Stop | None = None
        self.preview_end: PreviewEnd | None = None
        self.planned: list[int] = []  # positions this execution planned instead of making
        self._answered: dict[int, str] = {}  # what this execution recorded, by position
        self._asked: dict[int, ToolCall] = {}  # the calls this execution planned, by position
        self.asked = 0  # the last position the script reached

    # The worker's tape ------------------------------------------------------------------

    def received(
        self, reads: list[list[JsonValue]], diverged: str | None, lines: list[int | None]
    ) -> None:
        if diverged is not None:
            raise self._stop(ErrorCode.REPLAY_DIVERGED, f"the replay diverged at {diverged}")
        self._reads.extend(reads)
        self._lines.extend(lines)

    def _line(self) -> int | None:
        return self._lines.popleft() if self._lines else None

    def take_reads(self) -> str:
        reads, self._reads = self._reads, []
        return json.dumps(reads)

    # Calls --------------------------------------------------------------------------------

    def plan(self, position: int, call: ToolCall, script_name: str) -> ToolExecutionResult | bool:
        """The recorded answer to the call at ``position``, or whether to run it live with
        the person's approval (True) or as any new call (False)."""
        if self.stopped is not None:  # a batch's later calls, after one stopped the run
            raise self.stopped
        self.asked = max(self.asked, position)
        self._asked[position] = call
        line = self._line()
        recorded = self.record.calls.get(position)
        if recorded is None:
            return self._new(position, call, script_name, line)
        if recorded.name != script_name or not self._same_arguments(recorded, call):
            raise self._stop(
                ErrorCode.REPLAY_DIVERGED,
                f"the replay diverged at call {call.id}: the record has "
                f"{recorded.name}({shown_arguments(recorded.arguments)}), the script called "
                f"{script_name}({shown_arguments(call.arguments)})",
            )
        if self._reads:  # it read the clock or entropy more often than the record has
            raise self._stop(
                ErrorCode.REPLAY_DIVERGED,
                f"the replay diverged before call {call.id}: the script read the clock or "
                "entropy more often than its record has",
            )
        answered = self.record.answers.get(position)
        if answered is not None:
            return result_of(call, answered.answer)
        if not self.live:  # an earlier run, replayed: it ended, so only a cancel leaves this
            if self._cancelled():
                raise _Aborted
            raise self._stop(
                ErrorCode.REPLAY_DIVERGED,
                f"the record of run {self.record.run} has no answer for call {call.id}",
            )
        return self._settle(position, call)

    def ended_full(self) -> bool:
        """Did the run end because its record (or its session's) had no room for a call?"""
        ended = self.record.ended
        return (
            ended is not None
            and ended.code == ErrorCode.CODE_RESOURCE_LIMIT
            and RECORD_FULL in ended.outcome
        )

    def _cancelled(self) -> bool:
        ended = self.record.ended
        return ended is not None and ended.code == ErrorCode.ABORTED

    def served(self, position: int, call: ToolCall, script_name: str) -> ToolExecutionResult | None:
        """The recorded answer to a call that matches its record exactly, else None (the
        call then goes through ``plan``, which says what else it is)."""
        recorded = self.record.calls.get(position)
        answered = self.record.answers.get(position)
        if (
            self.stopped is not None
            or recorded is None
            or answered is None
            or self._reads
            or recorded.name != script_name
            or recorded.arguments != call.arguments
        ):
            return None
        self.asked = max(self.asked, position)
        self._line()
        return result_of(call, answered.answer)

    def _same_arguments(self, recorded: ScriptCallStarted, call: ToolCall) -> bool:
        """The call's arguments are its record's; where a preview planned a write with
        another write's result, that result as the commit made it."""
        if recorded.arguments == call.arguments:
            return True
        planned = json.loads(recorded.arguments)
        refs = pending_refs(planned)
        if not refs:
            return False
        results: dict[int, JsonValue] = {}
        for position in refs:
            recorded_answer = self.record.answers.get(position)
            answer = self._answered.get(position) or (
                recorded_answer.answer if recorded_answer is not None else None
            )
            if answer is None:
                return False
            got = json.loads(answer)
            if not got.get("ok"):
                return False
            results[position] = got.get("value")
        return bool(resolved(planned, results) == json.loads(call.arguments))

    def _new(
        self, position: int, call: ToolCall, script_name: str, line: int | None
    ) -> bool | ToolExecutionResult:
        if not self.live:
            if self._cancelled():
                raise _Aborted  # the run was cancelled here: its later calls got ABORTED
            if self.ended_full():  # it stopped here when it ran: so does its replay
                raise self._stop(ErrorCode.CODE_RESOURCE_LIMIT, RECORD_FULL)
            raise self._stop(
                ErrorCode.REPLAY_DIVERGED,
                f"the replay diverged at call {call.id}: the record of run "
                f"{self.record.run} ends before it (the script called {script_name})",
            )
        writes = self._writes is not None and self._writes(call.name)
        refs = pending_refs(json.loads(call.arguments)) if self._writes is not None else []
        if not set(refs) <= set(self.planned):  # a result this execution never handed out
            raise self._stop(
                ErrorCode.CODE_RUNTIME_ERROR,
                f"the worker passed call {call.id} the result of a write it was not sent",
            )
        if refs and not writes:  # a read that needs a planned write's result: stop here
            needed = ", ".join(f"{self.record.run}.{p}" for p in refs)
            message = (
                f"{script_name}() reads with the result of {needed}, which exists only once "
                "that write is made"
            )
            self.preview_end = PreviewEnd(message=message, line=line)
            raise self._stop(ErrorCode.PREVIEW_STOPPED, f"the preview stops here: {message}")
        self.append(
            ScriptCallStarted(
                run=self.record.run,
                position=position,
                name=script_name,
                arguments=call.arguments,
                reads=self.take_reads(),
                line=line,
            )
        )
        if not writes:
            return False
        self.append(RunSuspended(run=self.record.run, position=position, reason=PLANNED_REASON))
        self.planned.append(position)
        return ToolExecutionSuccess(
            call_id=call.id, name=call.name, value=None, content=(), meta={PLANNED: position}
        )

    def _settle(self, position: int, call: ToolCall) -> ToolExecutionResult | bool:
        """A recorded call with no answer: deferred, or in flight at a crash."""
        decision = self.record.decisions.get(position)
        if decision is None:
            if position not in self.record.suspended and self._repeatable(call.name):
                return False  # idempotent: run again, with the same key
            reason = self.record.suspended.get(position)
            if reason is None:
                self.append(
                    RunSuspended(run=self.record.run, position=position, reason=EFFECT_UNKNOWN)
                )
            raise self._suspend(call, reason.reason if reason else EFFECT_UNKNOWN)
        if self.record.begun(position):  # it began before a crash: its effect is unknown
            if self._repeatable(call.name):
                return True  # idempotent: again, with the same key
            self.append(RunSuspended(run=self.record.run, position=position, reason=EFFECT_UNKNOWN))
            raise self._suspend(call, EFFECT_UNKNOWN)
        if decision.approved:
            self.append(
                RunDecided(run=self.record.run, position=position, approved=True, attempted=True)
            )
            return True
        declined = failure(
            call.id, call.name, ErrorCode.POLICY_DENIED, "a person declined this call"
        )
        self.answered(position, declined)
        return declined

    def unreached(self) -> str | None:
        """Why the script ended short of its record (a recorded call it never made)."""
        missed = [p for p in self.record.calls if p > self.asked]
        if not missed:
            return None
        call = self.record.calls[min(missed)]
        return (
            f"the replay diverged: the script ended before call {self.record.run}.{call.position} "
            f"of its record, {call.name}({shown_arguments(call.arguments)})"
        )

    def answered(self, position: int, result: ToolExecutionResult) -> None:
        """Record what the script receives for the call at ``position``; a deferred call
        suspends the run instead (``stopped``, raised once the batch is recorded)."""
        if result.is_error and result.error.code == ErrorCode.SUSPENDED:
            self.append(
                RunSuspended(run=self.record.run, position=position, reason=result.error.message)
            )
            asked = self._asked.get(position)
            self._suspend(asked or ToolCall(result.call_id, result.name), result.error.message)
            return
        if position not in self.record.answers:
            answer = answer_json(result)
            self._answered[position] = answer
            self.append(ScriptCallAnswered(run=self.record.run, position=position, answer=answer))

    def append(self, event: Any) -> None:
        if not self.live:
            return
        if self._bounds is not None:
            size = record_size(event)
            if isinstance(event, ScriptCallStarted):  # before a call: it is not made
                self._check_room(size)
            self._run_size += size
            self._session_size += size
        try:
            self.log.append(event)
        except ConcurrentWriter as error:  # another host wrote this event first
            raise self._stop(ErrorCode.REPLAY_DIVERGED, lost_race(self.log.id, error)) from None
        except Exception as error:  # the log refused: nothing more may run unrecorded
            raise self._stop(
                ErrorCode.CODE_RUNTIME_ERROR, f"the run's log could not be written ({error})"
            ) from None

    def _check_room(self, size: int) -> None:
        """Stop the run before a call whose record would pass the run's or the session's
        bound (an answer made is always recorded: its effect happened)."""
        assert self._bounds is not None
        per_run, per_session = self._bounds
        if self._run_size + size > per_run:
            raise self._stop(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"{RECORD_FULL}: the run's record would pass {per_run:,} bytes "
                "(Durable(max_run_bytes=...)); the call was not made",
            )
        if self._session_size + size > per_session:
            raise self._stop(
                ErrorCode.CODE_RESOURCE_LIMIT,
                f"{RECORD_FULL}: the session's record would pass {per_session:,} bytes "
                "(Durable(max_session_bytes=...)); the call was not made. Continue in a new "
                "session",
            )

    def _suspend(self, call: ToolCall, reason: str) -> Stop:
        return self._stop(
            ErrorCode.SUSPENDED,
            f"the run is suspended at call {call.id}, "
            f"{call.name}({shown_arguments(call.arguments)}): {reason}. Nothing after it "
            "ran. It resumes when someone decides (Runtime.resume); its record is kept.",
        )

    def _stop(self, code: str, message: str) -> Stop:
        if self.stopped is None:
            self.stopped = Stop(code, message)
        return self.stopped


def lost_race(session: str, error: ConcurrentWriter) -> str:
    """What a host that lost a race for a session's record says (one code: REPLAY_DIVERGED)."""
    return (
        f"another host is continuing session {session!r}: its record moved on under this one "
        f"({error}). Nothing more of the run was made here; read the session again"
    )


class _Aborted(Exception):
    """A replayed run reached the point where it was cancelled."""


def decisions_for(run: RecordedRun, decisions: Mapping[str, bool]) -> list[RunDecided]:
    """The decisions given for ``run``'s unanswered calls, as events (one decided before
    and not begun may be decided again); a decision for any other call is a usage error."""
    unanswered = {f"{run.run}.{p}": p for p in sorted(run.calls) if p not in run.answers}
    unknown = sorted(set(decisions) - set(unanswered))
    if unknown:
        pending = [p.call_id for p in run.pending()]
        raise ValueError(
            f"no call of run {run.run} waits for a decision: {', '.join(unknown)} "
            f"(pending: {', '.join(pending) or 'none'})"
        )
    return [
        RunDecided(run=run.run, position=unanswered[call_id], approved=bool(approved))
        for call_id, approved in decisions.items()
    ]


def shown_arguments(arguments: str, limit: int = 200) -> str:
    """A call's arguments as a script writes them (``amount=5``), cut at ``limit``."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return shown_keywords(parsed, limit=limit)
    return arguments if len(arguments) <= limit else arguments[:limit] + "..."


__all__ = [
    "EFFECT_UNKNOWN",
    "RUN",
    "Durable",
    "DurableRun",
    "PendingCall",
    "RecordedRun",
    "ReplayDiverged",
    "RunRecorder",
    "Stop",
    "decisions_for",
    "idempotency_key",
    "shown_arguments",
]
