"""The agent loop and its event log: derived history, retries, aborts, crash and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from codeact import (
    AbortSignal,
    Agent,
    CorruptLog,
    ErrorRecorded,
    FunctionModel,
    InProcessExecutor,
    JsonlStore,
    Mode,
    ModelError,
    ModelExchange,
    ModelReply,
    ModelRequest,
    RetryPolicy,
    Runtime,
    ScriptedModel,
    ScriptMismatch,
    Session,
    TokenBudgetExceeded,
    ToolCall,
    ToolCallRecorded,
    ToolRegistry,
    ToolResultRecorded,
    UsageError,
    UserMessage,
    anthropic_messages,
    openai_chat_messages,
    tool,
)

pytestmark = pytest.mark.anyio


@tool(concurrency_safe=True)
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def runtime() -> Runtime:
    registry = ToolRegistry()
    registry.register(add)
    return Runtime(registry, executor=InProcessExecutor())


def valid_transcript(session: Session) -> None:
    """Every top-level call has exactly one result, and both providers accept the history."""
    calls = [e for e in session.events if isinstance(e, ToolCallRecorded) and e.parent is None]
    results = [e for e in session.events if isinstance(e, ToolResultRecorded) and e.parent is None]
    assert sorted(r.call_seq for r in results) == sorted(c.seq for c in calls)
    chat = openai_chat_messages(session.history(), system="s")
    adapter: TypeAdapter[Any] = TypeAdapter(ChatCompletionMessageParam)
    for message in chat:
        adapter.validate_python(message)
    answered = [m["tool_call_id"] for m in chat if m["role"] == "tool"]
    asked = [c["id"] for m in chat if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert sorted(answered) == sorted(asked)
    anthropic = anthropic_messages(session.history())
    uses = [
        b["id"]
        for m in anthropic
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    done = [
        b["tool_use_id"]
        for m in anthropic
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert sorted(uses) == sorted(done)


async def test_a_native_turn_is_recorded_and_history_is_derived(runtime: Runtime) -> None:
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(ToolCall("c1", "add", '{"a": 2, "b": 3}'),)),
            ModelReply(text="It is 5."),
        ]
    )
    agent = Agent(runtime, model, mode=Mode.NATIVE)
    assert await agent.run("What is 2 + 3?") == "It is 5."
    history = agent.session.history()
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2] == {"role": "tool", "call_id": "c1", "content": "5", "is_error": False}
    second_request = model.requests[1]
    assert second_request.messages[-1]["content"] == "5"
    assert [t["name"] for t in second_request.tools] == ["add"]
    valid_transcript(agent.session)


async def test_code_mode_records_nested_calls_with_their_parent(runtime: Runtime) -> None:
    script = json.dumps({"code": "add(1, 1) + add(2, 2)"})
    model = ScriptedModel(
        [ModelReply(tool_calls=(ToolCall("run1", "run_code", script),)), ModelReply(text="6")]
    )
    agent = Agent(runtime, model, mode=Mode.CODE)
    await agent.run("sum things")
    nested = [
        e for e in agent.session.events if isinstance(e, ToolCallRecorded) and e.parent == "run1"
    ]
    assert [e.name for e in nested] == ["add", "add"]
    assert [m["role"] for m in agent.session.history()] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    valid_transcript(agent.session)


async def test_a_scripted_call_of_an_unadvertised_tool_is_caught(runtime: Runtime) -> None:
    model = ScriptedModel([ModelReply(tool_calls=(ToolCall("c1", "add", "{}"),))])
    with pytest.raises(ScriptMismatch):
        await Agent(runtime, model, mode=Mode.CODE).run("hi")


async def test_malformed_calls_become_results_the_model_can_correct(runtime: Runtime) -> None:
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(ToolCall("c1", "add", '{"a": "two"'),)),
            ModelReply(tool_calls=(ToolCall("c2", "add", '{"a": 2}'),)),
            ModelReply(text="2"),
        ]
    )
    agent = Agent(runtime, model, mode=Mode.NATIVE)
    assert await agent.run("add") == "2"
    first = next(e for e in agent.session.events if isinstance(e, ToolResultRecorded))
    assert first.is_error
    assert first.code == "INVALID_ARGUMENTS"
    valid_transcript(agent.session)


async def test_retryable_faults_are_retried_with_retry_after(runtime: Runtime) -> None:
    attempts = []

    def flaky(request: ModelRequest) -> ModelReply:
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ModelError("429 too many requests", retryable=True, retry_after=0.05)
        return ModelReply(text="done", input_tokens=10, output_tokens=2)

    agent = Agent(runtime, FunctionModel(flaky), mode=Mode.NATIVE)
    assert await agent.run("go") == "done"
    assert attempts[2] - attempts[1] >= 0.05
    exchange = next(e for e in agent.session.events if isinstance(e, ModelExchange))
    assert (exchange.attempts, exchange.input_tokens, exchange.output_tokens) == (3, 10, 2)
    assert len([e for e in agent.session.events if isinstance(e, ErrorRecorded)]) == 2


async def test_a_non_retryable_fault_ends_the_turn_with_a_recorded_error(runtime: Runtime) -> None:
    def broken(request: ModelRequest) -> ModelReply:
        raise ModelError("400 bad request", retryable=False)

    agent = Agent(runtime, FunctionModel(broken), mode=Mode.NATIVE, retry=RetryPolicy(attempts=5))
    with pytest.raises(ModelError):
        await agent.run("go")
    assert [type(e) for e in agent.session.events] == [UserMessage, ErrorRecorded]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.integers(min_value=1, max_value=6), stop_at=st.integers(min_value=0, max_value=6))
def test_any_abort_schedule_leaves_every_call_with_exactly_one_result(
    calls: int, stop_at: int
) -> None:
    signal_ = AbortSignal()
    seen = 0

    @tool(name="step")
    async def step(n: int) -> int:
        """Count, and abort the turn at the chosen call."""
        nonlocal seen
        seen += 1
        if seen > stop_at:
            signal_.abort("user pressed stop")
            await anyio.sleep_forever()
        return n

    registry = ToolRegistry()
    registry.register(step)
    runtime = Runtime(registry, executor=InProcessExecutor())
    model = ScriptedModel(
        [
            ModelReply(tool_calls=tuple(ToolCall(f"c{i}", "step", {"n": i}) for i in range(calls))),
            ModelReply(text="ok"),
        ]
    )
    agent = Agent(runtime, model, mode=Mode.NATIVE)
    anyio.run(lambda: agent.run("count", abort=signal_))
    valid_transcript(agent.session)
    codes = [e.code for e in agent.session.events if isinstance(e, ToolResultRecorded)]
    assert codes.count("ABORTED") == max(calls - stop_at, 0)


def test_the_store_drops_a_torn_last_line_and_refuses_a_corrupt_middle(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    session = Session(store=JsonlStore(path))
    session.append(UserMessage(text="one"))
    session.append(UserMessage(text="two"))
    with path.open("a") as handle:
        handle.write('{"kind": "user_message", "seq": 3, "te')
    store = JsonlStore(path)
    assert [e.text for e in store.load()] == ["one", "two"]  # type: ignore[union-attr]
    assert store.dropped_torn_line
    assert path.read_text().endswith("\n")
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\nnot json\n" + lines[1] + "\n")
    with pytest.raises(CorruptLog):
        JsonlStore(path).load()


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import anyio
    from codeact import (
        Agent, InProcessExecutor, JsonlStore, Mode, ModelReply, Runtime, ScriptedModel, Session,
        ToolCall, ToolRegistry, tool,
    )

    store_path, ready = Path(sys.argv[1]), Path(sys.argv[2])

    @tool(timeout=None)
    async def slow(n: int) -> int:
        '''Takes forever.'''
        ready.write_text("in the tool")
        await anyio.sleep(3600)
        return n

    registry = ToolRegistry()
    registry.register(slow)
    agent = Agent(
        Runtime(registry, executor=InProcessExecutor()),
        ScriptedModel([ModelReply(tool_calls=(ToolCall("c1", "slow", {"n": 1}),))]),
        session=Session(store=JsonlStore(store_path)),
        mode=Mode.NATIVE,
    )
    anyio.run(agent.run, "start")
    """
)


def killed_in_a_tool(tmp_path: Path, program: str = CHILD) -> Path:
    """The log of a process running ``program``, killed once it reached its slow tool."""
    store_path, ready, script = tmp_path / "s.jsonl", tmp_path / "ready", tmp_path / "child.py"
    script.write_text(program)
    child = subprocess.Popen([sys.executable, str(script), str(store_path), str(ready)])
    try:
        for _ in range(1_500):  # bounded: at most about 30 s
            if ready.exists():
                break
            time.sleep(0.02)
        assert ready.exists(), "the child never reached its tool"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    return store_path


def test_a_killed_process_resumes_from_its_log_with_a_repaired_transcript(tmp_path: Path) -> None:
    store_path = killed_in_a_tool(tmp_path)
    session = Session.resume(JsonlStore(store_path))
    assert [c.call_id for c in session.open_calls()] == ["c1"]
    assert session.repair() == 1
    registry = ToolRegistry()
    registry.register(add)
    model = ScriptedModel(
        [ModelReply(tool_calls=(ToolCall("c2", "add", {"a": 1}),)), ModelReply(text="resumed")]
    )
    agent = Agent(
        Runtime(registry, executor=InProcessExecutor()), model, session=session, mode=Mode.NATIVE
    )
    assert anyio.run(agent.run, "go on") == "resumed"
    valid_transcript(agent.session)
    reloaded = JsonlStore(store_path).load()
    assert [e.seq for e in reloaded] == list(range(1, len(reloaded) + 1))


def test_an_agent_repairs_a_resumed_session_itself_and_the_log_goes_on(tmp_path: Path) -> None:
    store_path = killed_in_a_tool(tmp_path)
    before = JsonlStore(store_path).load()
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelReply:
        seen.append(request)
        return ModelReply(text="checked first")

    registry = ToolRegistry()
    registry.register(add)
    agent = Agent(
        Runtime(registry, executor=InProcessExecutor()),
        FunctionModel(answer),
        session=Session(store=JsonlStore(store_path)),  # an existing file: loaded, not overwritten
        mode=Mode.NATIVE,
    )
    assert anyio.run(agent.run, "go on") == "checked first"
    (request,) = seen
    (result,) = [m for m in request.messages if m["role"] == "tool"]
    assert result["call_id"] == "c1"
    assert "may or may not have taken effect" in result["content"]
    assert "before this call ran" not in result["content"]
    valid_transcript(agent.session)
    reloaded = JsonlStore(store_path).load()
    assert reloaded[: len(before)] == before
    assert [e.seq for e in reloaded] == list(range(1, len(reloaded) + 1))


def test_a_store_holding_other_events_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session(store=JsonlStore(path)).append(UserMessage(text="first"))
    with pytest.raises(UsageError, match="already holds 1 events"):
        Session(store=JsonlStore(path), events=[UserMessage(text="other", seq=1)])
    assert [e.text for e in JsonlStore(path).load()] == ["first"]  # type: ignore[attr-defined]


async def test_the_token_budget_ends_the_turn(runtime: Runtime) -> None:
    replies = [
        ModelReply(
            tool_calls=(ToolCall(f"c{i}", "add", {"a": i}),), input_tokens=60, output_tokens=5
        )
        for i in range(5)
    ]
    agent = Agent(runtime, ScriptedModel(replies), mode=Mode.NATIVE, token_budget=100)
    with pytest.raises(TokenBudgetExceeded):
        await agent.run("spend")
    assert agent.tokens_spent() == 130
    valid_transcript(agent.session)


async def test_an_image_a_tool_returned_is_kept_in_the_log_and_replayed_to_anthropic(
    tmp_path: Path,
) -> None:
    from codeact import ImageBlock, TextBlock, Tool

    pixel = "iVBORw0KGgo="
    picture = Tool.from_schema(
        name="picture",
        description="Draw.",
        parameters={"type": "object", "properties": {}},
        function=lambda: "drawn",
        render=lambda arguments, value: [
            TextBlock(text="here:"),
            ImageBlock(data=pixel, mime_type="image/png"),
        ],
    )
    registry = ToolRegistry()
    registry.register(picture)
    runtime = Runtime(registry, executor=InProcessExecutor())
    path = tmp_path / "session.jsonl"
    model = ScriptedModel(
        [ModelReply(tool_calls=(ToolCall("p1", "picture", "{}"),)), ModelReply(text="A pixel.")]
    )
    agent = Agent(runtime, model, mode=Mode.NATIVE, session=Session(store=JsonlStore(path)))
    assert await agent.run("Draw") == "A pixel."
    await runtime.aclose()
    reloaded = Session.resume(JsonlStore(path))
    (tool_message,) = [m for m in reloaded.history() if m["role"] == "tool"]
    assert tool_message["images"] == [{"mime_type": "image/png", "data": pixel}]
    assert "[image image/png," in tool_message["content"]  # what text-only readers get
    (result_block,) = [
        block
        for message in anthropic_messages(reloaded.history())
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert result_block["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": pixel},
    }


SCRIPT_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from codeact import (
        Agent, InProcessExecutor, JsonlStore, Mode, ModelReply, Runtime, ScriptedModel, Session,
        ToolCall, ToolRegistry, tool,
    )

    store_path, ready = Path(sys.argv[1]), Path(sys.argv[2])

    @tool
    def add(a: int, b: int = 0) -> int:
        '''Add two integers.'''
        return a + b

    @tool(timeout=None)
    async def slow(n: int) -> int:
        '''Takes forever.'''
        ready.write_text("in the tool")
        await anyio.sleep(3600)
        return n

    registry = ToolRegistry()
    registry.register(add)
    registry.register(slow)
    script = json.dumps({"code": "add(1, 2)\\nadd(3, 4)\\nslow(5)"})
    agent = Agent(
        Runtime(registry, executor=InProcessExecutor()),
        ScriptedModel([ModelReply(tool_calls=(ToolCall("run1", "run_code", script),))]),
        session=Session(store=JsonlStore(store_path)),
        mode=Mode.CODE,
    )
    anyio.run(agent.run, "start")
    """
)


def test_a_script_killed_mid_call_gets_every_call_closed_and_says_what_finished(
    tmp_path: Path,
) -> None:
    store_path = killed_in_a_tool(tmp_path, SCRIPT_CHILD)
    session = Session.resume(JsonlStore(store_path))
    assert [c.name for c in session.open_calls(nested=True)] == ["run_code", "slow"]
    assert session.repair() == 2
    calls = [e for e in session.events if isinstance(e, ToolCallRecorded)]
    results = [e for e in session.events if isinstance(e, ToolResultRecorded)]
    assert sorted(r.call_seq for r in results) == sorted(c.seq for c in calls)  # one each
    closed = {r.name: r for r in results if r.synthetic}
    assert closed["slow"].parent == "run1"
    assert "may or may not have taken effect" in closed["slow"].content
    summary = closed["run_code"].content
    assert "finished: run1.1 add (ok), run1.2 add (ok)" in summary
    assert (
        "In flight when it stopped (each may or may not have taken effect): run1.3 slow" in summary
    )
    assert [m["role"] for m in session.history()] == ["user", "assistant", "tool"]


# A process that imports codeact once and forks an agent per store path it reads: each
# child says "started <pid>", and the parent says "ended" once that child is gone.
STEPS_ZYGOTE = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    import anyio
    from codeact import (
        Agent, InProcessExecutor, JsonlStore, Mode, ModelReply, Runtime, ScriptedModel, Session,
        ToolCall, ToolRegistry, tool,
    )

    @tool
    def step(n: int) -> int:
        '''One small step, with an effect that takes a moment.'''
        print("step", flush=True)  # the test kills the process at a step it chose
        time.sleep(0.01)
        return n + 1

    def converse(store_path):
        registry = ToolRegistry()
        registry.register(step)
        code = "total = 0\\nfor i in range(6):\\n    total += step(i)\\ntotal"
        replies = [
            ModelReply(tool_calls=(ToolCall(f"run{n}", "run_code", json.dumps({"code": code})),))
            for n in range(40)
        ]
        agent = Agent(
            Runtime(registry, executor=InProcessExecutor()),
            ScriptedModel([*replies, ModelReply(text="done")]),
            session=Session(store=JsonlStore(store_path)),
            mode=Mode.CODE,
        )
        print("started", os.getpid(), flush=True)
        anyio.run(agent.run, "start")

    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                converse(Path(line.strip()))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        print("ended", flush=True)
    """
)


def test_an_agent_killed_at_random_points_resumes_with_one_result_per_call(
    tmp_path: Path,
) -> None:
    import random

    chooser = random.Random(50)
    interrupted_scripts = 0
    script = tmp_path / "zygote.py"
    script.write_text(STEPS_ZYGOTE)
    zygote = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    try:
        for number in range(50):
            store_path = tmp_path / f"s{number}.jsonl"
            zygote.stdin.write(f"{store_path}\n")
            zygote.stdin.flush()
            said, pid = zygote.stdout.readline().split()
            assert said == "started"
            # a random point of the conversation: inside a tool call (a step just began),
            # or between calls and turns (a moment later); counted, not timed
            for _ in range(chooser.randint(1, 60)):
                assert zygote.stdout.readline().strip() == "step"
            if chooser.random() < 0.5:
                time.sleep(chooser.uniform(0.0, 0.02))
            os.kill(int(pid), signal.SIGKILL)
            while (line := zygote.stdout.readline().strip()) == "step":
                pass  # steps printed before the kill landed
            # a step the kill cut short may leave its word without an end of line
            assert line.replace("step", "") == "ended"
            session = Session.resume(JsonlStore(store_path))  # always loads
            interrupted_scripts += any(c.parent for c in session.open_calls(nested=True))
            registry = ToolRegistry()
            registry.register(add)
            agent = Agent(
                Runtime(registry, executor=InProcessExecutor()),
                ScriptedModel([ModelReply(text="resumed")]),
                session=session,
                mode=Mode.CODE,
            )
            assert anyio.run(agent.run, "go on") == "resumed"  # the final run completes
            calls = [e for e in session.events if isinstance(e, ToolCallRecorded)]
            results = [e for e in session.events if isinstance(e, ToolResultRecorded)]
            answered = [r.call_seq for r in results]
            assert sorted(answered) == sorted(c.seq for c in calls), number  # one each
            assert session.open_calls(nested=True) == []
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=60)
        zygote.stdout.close()
    assert interrupted_scripts > 0  # some kills landed while a script's call was open


async def test_a_retry_after_past_the_retry_budget_says_so_and_is_not_waited_for(
    runtime: Runtime,
) -> None:
    attempts = []

    def throttled(request: ModelRequest) -> ModelReply:
        attempts.append(1)
        raise ModelError("429 too many requests", retryable=True, retry_after=600)

    agent = Agent(
        runtime, FunctionModel(throttled), mode=Mode.NATIVE, retry=RetryPolicy(total_seconds=60)
    )
    with pytest.raises(ModelError) as raised:
        await agent.run("go")
    assert len(attempts) == 1
    message = raised.value.message
    assert message.startswith("429 too many requests")
    assert "retry after 600 s, beyond the retry budget" in message
    assert "total_seconds=60" in message
    recorded = [e for e in agent.session.events if isinstance(e, ErrorRecorded)]
    assert recorded[-1].message == message
