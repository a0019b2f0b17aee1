"""A turn's events as they happen: a script's printed lines before it ends (in both
executors), the order of a code-mode turn, retries and failures, listeners, and two
agents on one runtime that never see each other's events."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from codeact import (
    Agent,
    AgentEvent,
    Delta,
    Executor,
    FinalAnswer,
    FunctionModel,
    InProcessExecutor,
    ModelError,
    ModelReply,
    ModelRequest,
    ModelRetry,
    ProcessExecutor,
    RetryPolicy,
    Runtime,
    ScriptedModel,
    ScriptOutput,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolRegistry,
    ToolResultRecorded,
    tool,
)

pytestmark = pytest.mark.anyio
EXECUTORS = {"inprocess": InProcessExecutor, "process": ProcessExecutor}
RELEASED = threading.Event()  # set by the reader once it has seen the first line


@tool(timeout=None)
def wait_for_reader() -> str:
    """Blocks until the test has read the script's first line (or 60 s pass)."""
    return "released" if RELEASED.wait(60) else "never released"


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


def runtime_of(executor: Executor) -> Runtime:
    registry = ToolRegistry()
    registry.register(wait_for_reader)
    registry.register(add)
    return Runtime(registry, executor=executor)


def run_code(call_id: str, code: str) -> ModelReply:
    return ModelReply(
        text="Running it.", tool_calls=(ToolCall(call_id, "run_code", {"code": code}),)
    )


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
async def test_a_scripts_lines_arrive_while_it_runs(executor: str) -> None:
    RELEASED.clear()
    script = "print('first')\nstate = wait_for_reader()\nprint('second', state)\nstate"
    async with runtime_of(EXECUTORS[executor]()) as runtime:
        agent = Agent(runtime, ScriptedModel([run_code("r1", script), ModelReply(text="ok")]))
        lines: list[str] = []
        async with agent.stream("go") as events:
            async for event in events:
                if isinstance(event, ScriptOutput):
                    lines.append(event.text)
                    RELEASED.set()  # only a line read before the script ends releases it
        assert lines == ["first\n", "second released\n"]
        assert events.answer == "ok"
        (result,) = [
            e
            for e in agent.session.events
            if isinstance(e, ToolResultRecorded) and e.parent is None
        ]
        assert "released" in result.content
        assert "never" not in result.content


async def test_a_code_mode_turn_streams_its_events_in_order_and_listeners_get_them_too() -> None:
    script = "print('adding')\nx = add(a=1, b=2)\nprint('got', x)\nx"
    async with runtime_of(InProcessExecutor()) as runtime:
        agent = Agent(runtime, ScriptedModel([run_code("r1", script), ModelReply(text="It is 3.")]))
        heard: list[AgentEvent] = []
        agent.add_listener(heard.append)
        streamed: list[AgentEvent] = []
        async with agent.stream("1 + 2?") as events:
            async for event in events:
                streamed.append(event)
    assert streamed == heard

    def label(event: AgentEvent) -> tuple[Any, ...]:
        if isinstance(event, Delta):
            return ("delta", event.text)
        if isinstance(event, ToolCallStarted | ToolCallFinished):
            return (event.kind, event.call_id, event.parent)
        if isinstance(event, ScriptOutput):
            return ("output", event.call_id, event.text)
        assert isinstance(event, FinalAnswer)
        return ("final", event.text)

    assert [label(e) for e in streamed] == [
        ("delta", "Running it."),
        ("tool_call_started", "r1", None),
        ("output", "r1", "adding\n"),
        ("tool_call_started", "r1.1", "r1"),
        ("tool_call_finished", "r1.1", "r1"),
        ("output", "r1", "got 3\n"),
        ("tool_call_finished", "r1", None),
        ("delta", "It is 3."),
        ("final", "It is 3."),
    ]
    nested = next(e for e in streamed if isinstance(e, ToolCallFinished) and e.parent == "r1")
    assert nested.result is not None
    assert nested.result.text == "3"


async def test_the_log_keeps_what_each_script_call_returned() -> None:
    async with runtime_of(InProcessExecutor()) as runtime:
        agent = Agent(
            runtime,
            ScriptedModel([run_code("r1", "add(a=20, b=22)\nadd(a='x')"), ModelReply(text="done")]),
        )
        await agent.run("go")
    nested = [
        e for e in agent.session.events if isinstance(e, ToolResultRecorded) and e.parent == "r1"
    ]
    assert nested[0].content == "42"
    assert nested[1].code == "INVALID_ARGUMENTS"
    assert "is not of type 'integer'" in nested[1].content


async def test_retries_and_a_failed_turn_are_streamed_then_raised() -> None:
    attempts: list[int] = []

    def flaky(request: ModelRequest) -> ModelReply:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelError("503 server error: busy", retryable=True, retry_after=0.0)
        raise ModelError("401 request refused: bad key")

    async with runtime_of(InProcessExecutor()) as runtime:
        agent = Agent(runtime, FunctionModel(flaky), retry=RetryPolicy(base_seconds=0.01))
        seen: list[AgentEvent] = []

        async def read() -> None:
            async with agent.stream("hi") as events:
                async for event in events:
                    seen.append(event)

        with pytest.raises(ModelError, match="401"):
            await read()
    assert seen == [ModelRetry(attempt=1, message="503 server error: busy", delay=0.0)]


async def test_two_agents_on_one_runtime_see_only_their_own_events() -> None:
    async with runtime_of(ProcessExecutor()) as runtime:

        def agent_for(tag: str, a: int) -> Agent:
            script = f"print('{tag}')\nadd(a={a}, b=1)"
            return Agent(
                runtime, ScriptedModel([run_code(f"{tag}-run", script), ModelReply(text=tag)])
            )

        agents = [agent_for(f"agent{n}", n) for n in range(6)]
        streams: dict[str, list[AgentEvent]] = {}

        async def drive(agent: Agent, tag: str) -> None:
            collected = streams.setdefault(tag, [])
            async with agent.stream("go") as events:
                async for event in events:
                    collected.append(event)

        async with anyio.create_task_group() as tasks:
            for n, agent in enumerate(agents):
                tasks.start_soon(drive, agent, f"agent{n}")
    for n, agent in enumerate(agents):
        tag = f"agent{n}"
        ids = {getattr(e, "call_id", None) for e in streams[tag]} - {None}
        assert ids == {f"{tag}-run", f"{tag}-run.1"}, (streams[tag], agent.session.events)
        outputs = [e.text for e in streams[tag] if isinstance(e, ScriptOutput)]
        assert outputs == [f"{tag}\n"]
        logged = {getattr(e, "call_id", None) for e in agent.session.events} - {None}
        assert logged == {f"{tag}-run", f"{tag}-run.1"}
        assert streams[tag][-1] == FinalAnswer(text=tag)


async def test_leaving_the_stream_early_ends_the_turn() -> None:
    RELEASED.clear()
    async with runtime_of(InProcessExecutor()) as runtime:
        agent = Agent(
            runtime, ScriptedModel([run_code("r1", "print('started')\nwait_for_reader()")])
        )
        async with agent.stream("go") as events:
            async for event in events:
                if isinstance(event, ScriptOutput):
                    break  # the reader leaves while the script waits
        RELEASED.set()
    assert events.answer is None
