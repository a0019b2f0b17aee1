"""Tool calls a script runs concurrently (``asyncio.gather``), on both executors.

Concurrency is shown with events, never a clock: a tool that waits until every call of
the batch is in flight at once can only succeed when they really are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from codeact import (
    AbortSignal,
    DispatchEvent,
    ToolCall,
    ToolCallFinished,
    ToolExecutionResult,
    ToolRegistry,
    tool,
)
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.contract._json import JsonValue, freeze
from codeact.contract._results import TextBlock, ToolExecutionSuccess, failure
from codeact.executors._in_process import Executor, InProcessExecutor
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits

pytestmark = pytest.mark.anyio
GENEROUS = 30.0


def success(call_id: str, name: str, value: JsonValue) -> ToolExecutionSuccess:
    return ToolExecutionSuccess(
        call_id=call_id, name=name, value=freeze(value), content=(TextBlock(text=str(value)),)
    )


@dataclass
class Meeting:
    """Calls that wait for one another: they finish only if ``expected`` are in flight at once."""

    expected: int
    in_flight: int = 0
    peak: int = 0
    started: int = 0
    everyone: anyio.Event = field(default_factory=anyio.Event)
    some_started: anyio.Event = field(default_factory=anyio.Event)

    async def meet(self, key: str, hold: float) -> str:
        self.in_flight += 1
        self.started += 1
        self.peak = max(self.peak, self.in_flight)
        if self.started >= min(self.expected, 3):
            self.some_started.set()
        if self.in_flight >= self.expected:
            self.everyone.set()
        try:
            with anyio.fail_after(GENEROUS):  # sequential calls would wait here in vain
                await self.everyone.wait()
            await anyio.sleep(hold)
        finally:
            self.in_flight -= 1
        return key.upper()


def registry_for(meeting: Meeting, hold: float = 0.0) -> ToolRegistry:
    @tool(concurrency_safe=True)
    async def meet(key: str) -> str:
        """Wait until the others arrive, then answer."""
        return await meeting.meet(key, hold)

    @tool(concurrency_safe=True)
    async def wait_forever(key: str) -> str:
        """Never answer."""
        meeting.started += 1
        if meeting.started >= meeting.expected:
            meeting.some_started.set()
        await anyio.sleep_forever()
        return key

    registry = ToolRegistry()
    registry.register(meet)
    registry.register(wait_forever)
    return registry


def make_executor(kind: str, limits: Limits) -> Executor:
    return (
        InProcessExecutor(limits=limits) if kind == "inprocess" else ProcessExecutor(limits=limits)
    )


@pytest.fixture(params=["inprocess", "process"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def run_code(
    kind: str,
    registry: ToolRegistry,
    code: str,
    *,
    limits: Limits,
    events: list[DispatchEvent] | None = None,
    abort: AbortSignal | None = None,
) -> ToolExecutionResult:
    """``code`` through run_code on a fresh executor of ``kind``, closed afterwards."""
    executor = make_executor(kind, limits)
    scope = ToolRegistry(listeners=[events.append] if events is not None else [])
    for definition in registry.tools():
        scope.register(definition)
    scope.register(run_code_tool(scope, limits=limits, executor=executor))
    try:
        return await scope.execute(ToolCall("outer", RUN_CODE, {"code": code}), abort=abort)
    finally:
        await executor.aclose()


async def test_ten_gathered_calls_are_all_in_flight_at_once(kind: str) -> None:
    meeting = Meeting(expected=10)
    events: list[DispatchEvent] = []
    result = await run_code(
        kind,
        registry_for(meeting, hold=0.2),
        "import asyncio\nawait asyncio.gather(*(meet(k) for k in 'abcdefghij'))",
        limits=Limits(wall_seconds=5),
        events=events,
    )
    assert not result.is_error, result.text
    assert result.value["result"] == tuple("ABCDEFGHIJ")  # type: ignore[index]
    assert meeting.peak == 10
    nested = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "meet"]
    assert len(nested) == 10
    assert {e.parent for e in nested} == {"outer"}
    assert all(e.code is None for e in nested)


async def test_a_batch_crosses_to_the_host_once(kind: str) -> None:
    limits = Limits(wall_seconds=5)
    executor = make_executor(kind, limits)
    batches: list[int] = []
    singles: list[str] = []

    async def call_tool(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
        singles.append(name)
        return success("s", name, arguments["x"])

    async def call_tools(
        calls: list[tuple[str, dict[str, JsonValue]]],
    ) -> list[ToolExecutionResult]:
        batches.append(len(calls))
        return [success("s", name, arguments["x"]) for name, arguments in calls]

    script = (
        "import asyncio\n"
        "first = await asyncio.gather(*(echo(x=i) for i in range(8)))\n"
        "second = await echo(x=100)\n"
        "third = echo(x=7)\n"
        "[first, second, third]"
    )
    try:
        outcome = await executor.run(
            script,
            session="s",
            tools={"echo": ("x",)},
            call_tool=call_tool,
            call_tools=call_tools,
        )
    finally:
        await executor.aclose()
    assert outcome.error is None, outcome.error
    assert outcome.value == [list(range(8)), 100, 7]
    assert batches == [8, 1]  # the gather in one crossing, the lone await in another
    assert singles == ["echo"]  # the plain call stays a plain, synchronous call
    assert [c.name for c in outcome.tool_calls] == ["echo"] * 10


async def test_the_concurrency_cap_holds(kind: str) -> None:
    meeting = Meeting(expected=3)
    result = await run_code(
        kind,
        registry_for(meeting, hold=0.05),
        "import asyncio\nawait asyncio.gather(*(meet(str(i)) for i in range(9)))",
        limits=Limits(wall_seconds=5, max_concurrent_tool_calls=3),
    )
    assert not result.is_error, result.text
    assert meeting.peak == 3


async def test_aborting_a_run_aborts_every_call_in_flight(kind: str) -> None:
    meeting = Meeting(expected=3)
    events: list[DispatchEvent] = []
    signal = AbortSignal()
    results: list[ToolExecutionResult] = []

    async def go() -> None:
        results.append(
            await run_code(
                kind,
                registry_for(meeting),
                "import asyncio\nawait asyncio.gather(*(wait_forever(k) for k in 'xyz'))",
                limits=Limits(wall_seconds=5),
                events=events,
                abort=signal,
            )
        )

    with anyio.fail_after(GENEROUS):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(go)
            await meeting.some_started.wait()
            signal.abort("user stop")
    assert results[0].error.code == "ABORTED"  # type: ignore[union-attr]
    nested = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "wait_forever"]
    assert [e.code for e in nested] == ["ABORTED"] * 3
    assert {e.parent for e in nested} == {"outer"}


async def test_a_tool_error_reaches_the_awaiting_task_only(kind: str) -> None:
    limits = Limits(wall_seconds=5)
    executor = make_executor(kind, limits)

    async def call_tool(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
        raise AssertionError("batches only")

    async def call_tools(calls: list[tuple[str, dict[str, Any]]]) -> list[ToolExecutionResult]:
        return [
            failure("s", n, "TOOL_ERROR", "bad x") if a["x"] < 0 else success("s", n, a["x"])
            for n, a in calls
        ]

    script = (
        "import asyncio\n"
        "r = await asyncio.gather(echo(x=1), echo(x=-1), echo(x=2), return_exceptions=True)\n"
        "[v if not isinstance(v, ToolError) else (v.code, v.message) for v in r]"
    )
    try:
        outcome = await executor.run(
            script, session="s", tools={"echo": ("x",)}, call_tool=call_tool, call_tools=call_tools
        )
    finally:
        await executor.aclose()
    assert outcome.value == [1, ["TOOL_ERROR", "bad x"], 2]
    assert [(c.ok, c.code) for c in outcome.tool_calls] == [
        (True, None),
        (False, "TOOL_ERROR"),
        (True, None),
    ]


async def test_an_awaited_call_past_the_tool_wait_limit_ends_as_timeout(kind: str) -> None:
    meeting = Meeting(expected=1)
    result = await run_code(
        kind,
        registry_for(meeting),
        "try:\n    await wait_forever('k')\nexcept ToolError as e:\n    r = e.code\nr",
        limits=Limits(wall_seconds=5, tool_wait_seconds=0.3),
    )
    assert not result.is_error, result.text
    assert result.value["result"] == "TIMEOUT"  # type: ignore[index]


async def test_the_description_teaches_the_concurrent_form_and_its_example_runs_as_written() -> (
    None
):
    from codeact import Runtime
    from codeact.code_mode._run_code import describe_run_code

    text = describe_run_code(ToolRegistry(), modules=frozenset({"asyncio"}), limits=Limits())
    assert "await asyncio.gather(*(tool(x) for x in xs))" in text
    found = re.search(r"(import \w+), then (await .+?\)\))", text)
    assert found is not None
    example = f"xs = [1, 2, 3]\n{found.group(1)}\n{found.group(2)}"

    @tool(name="tool")
    def doubled(x: int) -> int:
        """Double x (the example calls a tool named tool)."""
        return 2 * x

    registry = ToolRegistry()
    registry.register(doubled)
    runtime = Runtime(registry, executor=InProcessExecutor())
    result = await runtime.execute(ToolCall("c", "run_code", {"code": example}), mode="code")
    assert not result.is_error, result.text
    assert result.value["result"] == (2, 4, 6)  # type: ignore[index]  # frozen JSON


async def test_a_module_used_before_its_import_is_hinted_to_be_imported() -> None:
    runner = InProcessExecutor(limits=Limits(wall_seconds=5))
    outcome = await runner.run("await asyncio.gather()", session="s", tools={}, call_tool=None)  # type: ignore[arg-type]
    assert outcome.error is not None
    assert "NameError: name 'asyncio' is not defined" in outcome.error.message
    assert outcome.error.hint == "import asyncio first: it is importable"
    outcome = await runner.run("jsn.dumps(1)", session="s", tools={}, call_tool=None)  # type: ignore[arg-type]
    assert outcome.error is not None
    assert outcome.error.hint != "import jsn first: it is importable"  # not a module
    await runner.aclose()


async def test_an_executor_without_the_batch_keywords_still_runs_gathered_calls() -> None:
    """An Executor written against the older protocol gets calls one at a time."""
    inner = InProcessExecutor(limits=Limits(wall_seconds=5))

    class OlderExecutor:
        async def run(self, source: str, *, session: str, tools: Any, call_tool: Any) -> Any:
            return await inner.run(source, session=session, tools=tools, call_tool=call_tool)

        async def reset(self, session: str) -> None:
            await inner.reset(session)

        async def close_session(self, session: str) -> None:
            await inner.close_session(session)

        async def aclose(self) -> None:
            await inner.aclose()

    registry = registry_for(Meeting(expected=1))
    scope = ToolRegistry()
    for definition in registry.tools():
        scope.register(definition)
    older = OlderExecutor()
    scope.register(run_code_tool(scope, limits=Limits(wall_seconds=5), executor=older))
    try:
        result = await scope.execute(
            ToolCall(
                "o",
                RUN_CODE,
                {"code": "import asyncio\nawait asyncio.gather(meet('a'), meet('b'))"},
            )
        )
    finally:
        await older.aclose()
    assert not result.is_error, result.text
    assert result.value["result"] == ("A", "B")  # type: ignore[index]
