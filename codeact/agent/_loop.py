"""The agent loop: compose context, call the model, run its calls, record everything.

Every step is recorded in the session before it matters: the assistant's calls
before they run, each result as it arrives. Cancellation records synthetic ABORTED
results for calls that did not run; a terminal model failure records the error
and keeps what was recorded, inventing nothing.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TypeAlias

import anyio

from ..contract._abort import AbortSignal
from ..contract._events import (
    DispatchEvent,
    FinalAnswer,
    ModelRetry,
    ScriptOutput,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from ..contract._results import ImageBlock
from ..durable._plan import Approval
from ..providers._models import Delta, Model, ModelError, ModelReply, ModelRequest
from ..runtime._modes import Mode, Runtime
from ..session._session import (
    AbortRecorded,
    AssistantMessage,
    ErrorRecorded,
    ModelExchange,
    Session,
    ToolCallRecorded,
    ToolResultRecorded,
    UserMessage,
)
from ._spans import agent_span, model_span, record_reply

# What the log keeps of each result a script's call got (the model reads the script's
# own result; this is for whoever reads the log).
MAX_NESTED_CONTENT = 2_000
AgentEvent: TypeAlias = (
    Delta
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | ScriptOutput
    | ModelRetry
    | FinalAnswer
)

MODE_INSTRUCTIONS = {
    Mode.NATIVE: "Call the tools you are given when they help; answer in text when you are done.",
    Mode.CODE: (
        "Act by writing Python scripts for the run_code tool: call the tools as functions, "
        "combine their results in code, and print or return what you need. "
        "Answer in text when done."
    ),
    Mode.BOTH: (
        "Call tools directly for single steps; use run_code to call several tools in one script. "
        "Answer in text when you are done."
    ),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded in attempts and total time.

    A provider's Retry-After is honoured as given, however long, as long as it fits in
    ``total_seconds``; ``max_seconds`` bounds only the policy's own backoff.
    """

    attempts: int = 4
    base_seconds: float = 0.5
    max_seconds: float = 8.0
    total_seconds: float = 60.0

    def delay(self, attempt: int, error: ModelError) -> float:
        if error.retry_after is not None:
            return max(error.retry_after, 0.0)
        return random.uniform(0, min(self.max_seconds, self.base_seconds * 2**attempt))


@dataclass
class Context:
    """The system prompt as named sections, in order; inspect or replace any of them."""

    sections: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        return "\n\n".join(text for text in self.sections.values() if text)


def _beyond_budget(error: ModelError, elapsed: float, total: float) -> ModelError:
    """The same fault, saying why it was not retried: the asked wait is past the budget."""
    note = (
        f"{error.message} (the provider asked to retry after {error.retry_after:g} s, "
        f"beyond the retry budget: {max(total - elapsed, 0.0):.1f} s of "
        f"RetryPolicy.total_seconds={total:g} left; not retried)"
    )
    return ModelError(
        note,
        retryable=error.retryable,
        retry_after=error.retry_after,
        context_length=error.context_length,
    )


class StepLimit(Exception):
    """The loop reached its step limit without a final answer."""


class TokenBudgetExceeded(Exception):
    """The turn spent more tokens than its budget allowed."""


class Agent:
    """Runs turns of a conversation over a runtime and a model, recording a session."""

    def __init__(
        self,
        runtime: Runtime,
        model: Model,
        *,
        session: Session | None = None,
        system: str = "",
        mode: Mode | str | None = None,
        max_steps: int = 20,
        retry: RetryPolicy | None = None,
        compact: Callable[[Session], bool] | None = None,
        token_budget: int | None = None,
        name: str = "codeact",
        script_session: str | None = None,
    ) -> None:
        self.name = name  # the agent's name in traces (gen_ai.agent.name)
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._sinks: list[Callable[[AgentEvent], None]] = []  # streams of turns running
        self._turn_calls: set[str] = set()  # this turn's calls: others' events are not ours
        self.runtime = runtime
        self.model = model
        self.session = session or Session()
        # Where this agent's scripts keep their names: its own, unless it is given one to
        # share on purpose; closed with the agent.
        self.script_session = script_session or f"agent-{self.session.id}"
        self.mode = Mode(mode or runtime.mode)
        self.max_steps = max_steps
        self.retry = retry or RetryPolicy()
        self.compact = compact
        self.token_budget = token_budget
        self.context = Context(
            {
                "base": "You are an agent that acts through tools.",
                "mode": MODE_INSTRUCTIONS[self.mode],
                "user": system,
            }
        )

    async def aclose(self) -> None:
        """End the agent's script session (its names, and its worker if it has one); the
        conversation's log stays as it is."""
        await self.runtime.close_session(self.script_session)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def request(self) -> ModelRequest:
        """The exact request the next step would send, derived from the session."""
        return ModelRequest(
            system=self.context.render(),
            messages=tuple(self.session.history()),
            tools=tuple(self.runtime.schemas(self.mode)),
            mode=str(self.mode),
            on_delta=self._tell,
        )

    async def run(self, text: str, *, abort: AbortSignal | None = None) -> str:
        """One user turn: steps until the model answers in text; returns that text.

        Calls a resumed session left open get their synthetic results first, since every
        provider refuses a call with no result.
        """
        return await self._continue(text, abort)

    async def resume(
        self, decisions: Mapping[str, bool] | None = None, *, abort: AbortSignal | None = None
    ) -> str:
        """Go on with this conversation's suspended run (``Runtime.resume``), then with the
        turn: the model reads the run's result and answers; returns that answer.

        The run's own call was answered when it suspended (the model read that it waits),
        so its result arrives as the next user message, which every provider accepts.
        """
        pending = {p.call_id for p in self.runtime.pending(self.script_session)}
        result = await self.runtime.resume(self.script_session, decisions, abort=abort)
        decided = ", ".join(
            f"{call_id} {'approved' if approved else 'denied'}"
            for call_id, approved in (decisions or {}).items()
            if call_id in pending
        )
        status = "failed" if result.is_error else "finished"
        text = (
            f"The run_code call {result.call_id}, which was suspended, has resumed"
            f"{f' ({decided})' if decided else ''} and {status}. Its result:\n{result.text}"
        )
        return await self._continue(text, abort)

    async def _continue(self, text: str, abort: AbortSignal | None) -> str:
        """One turn from ``text`` (the user's, or what a resumed run did), traced as one."""
        with agent_span(self.name, self.model.name, self.session.id):
            return await self._turn(text, abort)

    async def commit(
        self,
        approval: Approval = True,
        *,
        digest: str | None = None,
        abort: AbortSignal | None = None,
    ) -> str:
        """Decide the plan this conversation's previewed run waits on (``Runtime.commit``,
        ``digest`` binding the decision to the plan a person saw), then go on with the
        turn: the model reads what the commit did and answers."""
        result = await self.runtime.commit(
            self.script_session, approval, digest=digest, abort=abort
        )
        decided = (
            "approved"
            if approval is True
            else "declined"
            if approval is False
            else "decided write by write or tool by tool"
        )
        status = "failed" if result.is_error else "finished"
        text = (
            f"The plan of run {result.call_id}, which waited for a decision, was {decided}; "
            f"the run {status}. Its result:\n{result.text}"
        )
        return await self._continue(text, abort)

    def stream(self, text: str, *, abort: AbortSignal | None = None) -> TurnStream:
        """One user turn, its events as they happen::

            async with agent.stream("...") as events:
                async for event in events:
                    ...

        Model text deltas (``Delta``), calls starting and finishing (nested ones with their
        ``parent``), progress, a script's printed lines (``ScriptOutput``) while it runs,
        retries (``ModelRetry``), then the ``FinalAnswer``. A fault of the turn is raised
        from the iteration once the events before it are read.
        """
        return TurnStream(self, text, abort)

    def add_listener(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Receive the events of every turn (what ``stream`` yields); returns the remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tell(self, event: AgentEvent) -> None:
        for listener in (*self._listeners, *self._sinks):
            listener(event)

    async def _turn(self, text: str, abort: AbortSignal | None) -> str:
        self.session.repair()
        self.session.append(UserMessage(text=text))
        self._turn_calls = set()
        stop = self.runtime.registry.add_listener(self._on_dispatch)
        try:
            for _ in range(self.max_steps):
                reply = await self._ask()
                self.session.append(AssistantMessage(text=reply.text))
                self._check_budget()
                if not reply.tool_calls:
                    self._tell(FinalAnswer(text=reply.text))
                    return reply.text
                self._turn_calls.update(call.id for call in reply.tool_calls)
                await self._run_calls(reply, abort)
                if abort is not None and abort.aborted:
                    self.session.append(AbortRecorded(reason=abort.reason or "aborted"))
                    return ""
            raise StepLimit(f"no final answer within {self.max_steps} steps")
        finally:
            stop()

    def tokens_spent(self) -> int:
        """Input and output tokens of every model exchange in the session."""
        return sum(
            (e.input_tokens or 0) + (e.output_tokens or 0)
            for e in self.session.events
            if isinstance(e, ModelExchange)
        )

    def _check_budget(self) -> None:
        if self.token_budget is not None and self.tokens_spent() > self.token_budget:
            message = (
                f"the session spent {self.tokens_spent():,} tokens (budget {self.token_budget:,})"
            )
            self.session.append(ErrorRecorded(message=message))
            raise TokenBudgetExceeded(message)

    async def _run_calls(self, reply: ModelReply, abort: AbortSignal | None) -> None:
        recorded = [
            self.session.append(ToolCallRecorded(call_id=c.id, name=c.name, arguments=c.arguments))
            for c in reply.tool_calls
        ]
        try:
            results = await self.runtime.execute_many(
                list(reply.tool_calls), mode=self.mode, abort=abort, session=self.script_session
            )
        except anyio.get_cancelled_exc_class():
            self.session.append(AbortRecorded(reason="cancelled"))
            self.session.repair(
                "the turn was cancelled while this call was open: it may or may not have "
                "taken effect; check before repeating it"
            )
            raise
        for call_event, result in zip(recorded, results, strict=True):
            self.session.append(
                ToolResultRecorded(
                    call_seq=call_event.seq,
                    call_id=result.call_id,
                    name=result.name,
                    is_error=result.is_error,
                    code=result.error.code if result.is_error else None,
                    content=result.text,
                    images=tuple(
                        {"mime_type": block.mime_type, "data": block.data}
                        for block in result.content
                        if isinstance(block, ImageBlock)
                    ),
                )
            )

    async def _ask(self) -> ModelReply:
        started = anyio.current_time()
        attempt = 0
        while True:
            attempt += 1
            try:
                request = self.request()
                with model_span(self.model, request) as span:
                    reply = await self.model.respond(request)
                    record_reply(span, reply)
            except ModelError as error:
                if error.context_length and self.compact is not None and self.compact(self.session):
                    continue
                elapsed = anyio.current_time() - started
                delay = self.retry.delay(attempt, error)
                attempts_left = attempt < self.retry.attempts
                over_budget = elapsed + delay > self.retry.total_seconds
                if not error.retryable or not attempts_left or over_budget:
                    if error.retryable and attempts_left and error.retry_after is not None:
                        # the wait the provider asked for is what the budget cannot give
                        error = _beyond_budget(error, elapsed, self.retry.total_seconds)
                    self.session.append(
                        ErrorRecorded(message=error.message, retryable=error.retryable)
                    )
                    raise error from None
                self.session.append(ErrorRecorded(message=error.message, retryable=True))
                self._tell(ModelRetry(attempt=attempt, message=error.message, delay=delay))
                await anyio.sleep(delay)
                continue
            except Exception as error:  # a fault of the adapter itself: recorded, then raised
                self.session.append(
                    ErrorRecorded(message=f"{type(error).__name__}: {error}", retryable=False)
                )
                raise
            self.session.append(
                ModelExchange(
                    model=self.model.name,
                    mode=str(self.mode),
                    input_tokens=reply.input_tokens,
                    output_tokens=reply.output_tokens,
                    attempts=attempt,
                )
            )
            return reply

    def _on_dispatch(self, event: DispatchEvent) -> None:
        """Events of this turn's calls (a registry may serve other agents too): passed on,
        and the calls scripts make recorded with their run_code call as parent."""
        if event.parent is None:
            if event.call_id in self._turn_calls:
                self._tell(event)
            return
        if event.parent not in self._turn_calls:
            return
        self._tell(event)
        if isinstance(event, ToolCallStarted):
            self.session.append(
                ToolCallRecorded(
                    call_id=event.call_id,
                    name=event.name,
                    arguments=event.arguments,
                    parent=event.parent,
                )
            )
        elif isinstance(event, ToolCallFinished):
            call_seq = next(
                (
                    e.seq
                    for e in reversed(self.session.events)
                    if isinstance(e, ToolCallRecorded) and e.call_id == event.call_id
                ),
                0,
            )
            self.session.append(
                ToolResultRecorded(
                    call_seq=call_seq,
                    call_id=event.call_id,
                    name=event.name,
                    is_error=event.is_error,
                    code=event.code,
                    content=_bounded(event.result.text) if event.result is not None else "",
                    parent=event.parent,
                )
            )

    def run_sync(self, text: str) -> str:
        """``run`` from synchronous code, on the runtime's background loop."""
        return self.runtime._blocking().call(lambda: self.run(text))


def _bounded(text: str) -> str:
    """What a script's call returned, as the log keeps it."""
    if len(text) <= MAX_NESTED_CONTENT:
        return text
    return text[:MAX_NESTED_CONTENT] + f"\n[... {len(text) - MAX_NESTED_CONTENT:,} more characters]"


class TurnStream:
    """One turn run in a task of its own, its events read as they come (``Agent.stream``)."""

    def __init__(self, agent: Agent, text: str, abort: AbortSignal | None) -> None:
        self._agent = agent
        self._text = text
        self._abort = abort
        self.answer: str | None = None  # the final text, once the turn has ended
        self._failure: Exception | None = None
        self._send, self._receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        self._tasks = anyio.create_task_group()

    async def __aenter__(self) -> TurnStream:
        await self._tasks.__aenter__()
        self._tasks.start_soon(self._drive)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._tasks.cancel_scope.cancel()  # a reader that stopped early ends the turn
        try:
            # the reader's own exception is not the turn's: it passes on unwrapped
            await self._tasks.__aexit__(None, None, None)
        finally:
            self._receive.close()
        return None

    async def _drive(self) -> None:
        sink = self._send.send_nowait
        self._agent._sinks.append(sink)
        try:
            self.answer = await self._agent.run(self._text, abort=self._abort)
        except Exception as error:  # read by the consumer, after the events before it
            self._failure = error
        finally:
            self._agent._sinks.remove(sink)
            self._send.close()

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> AgentEvent:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            if self._failure is not None:
                failure, self._failure = self._failure, None
                raise failure from None
            raise StopAsyncIteration from None


__all__ = [
    "Agent",
    "AgentEvent",
    "Context",
    "RetryPolicy",
    "StepLimit",
    "TokenBudgetExceeded",
    "TurnStream",
]
