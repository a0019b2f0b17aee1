"""Dispatch: one pipeline, exactly one result per call, every error code produced."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeact import (
    AbortSignal,
    DispatchEvent,
    ErrorCode,
    Invocation,
    RulePolicy,
    TextBlock,
    Tool,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolError,
    ToolExecutionFailure,
    ToolExecutionResult,
    ToolExecutionSuccess,
    ToolRegistry,
    allow,
    ask,
    deny,
    tool,
)
from codeact.contract import _dispatch as dispatch

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


@tool
async def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@tool
def explode(message: str) -> None:
    """Raise."""
    raise RuntimeError(message)


@tool
def refuse() -> None:
    """Raise a ToolError with a code of its own choosing."""
    raise ToolError("quota exhausted", code="QUOTA")


@tool
def wrong_output() -> int:
    """Claims an int, returns a string."""
    return "nope"  # type: ignore[return-value]


@tool
def keep(items: list[int]) -> list[int]:
    """Return what it was given after mutating it."""
    items.append(99)
    return items


def make_registry(**options: object) -> ToolRegistry:
    registry = ToolRegistry(**options)  # type: ignore[arg-type]
    for definition in (add, shout, explode, refuse, wrong_output, keep):
        registry.register(definition)
    return registry


def error_of(result: ToolExecutionResult) -> str:
    assert isinstance(result, ToolExecutionFailure)
    assert result.content
    assert result.error.message in result.content[0].text
    return result.error.code


async def test_success_carries_value_content_and_call_id() -> None:
    result = await make_registry().execute(ToolCall("c1", "add", '{"a": 40}'))
    assert isinstance(result, ToolExecutionSuccess)
    assert (result.call_id, result.value, result.text) == ("c1", 42, "42")


async def test_async_tools_run() -> None:
    result = await make_registry().execute(ToolCall("c1", "shout", {"text": "hi"}))
    assert result.value == "HI" if isinstance(result, ToolExecutionSuccess) else False


async def test_unknown_tool_lists_close_matches() -> None:
    result = await make_registry().execute(ToolCall("c1", "ad", "{}"))
    assert error_of(result) == ErrorCode.UNKNOWN_TOOL
    assert "Did you mean: add" in result.text


async def test_invalid_arguments_name_the_path_and_expectation() -> None:
    result = await make_registry().execute(ToolCall("c1", "add", '{"a": "x"}'))
    assert error_of(result) == ErrorCode.INVALID_ARGUMENTS
    assert "$.a" in result.text
    assert "integer" in result.text


async def test_unparseable_arguments_are_rejected_with_actionable_text() -> None:
    result = await make_registry().execute(ToolCall("c1", "add", '{"a": 1'))
    assert error_of(result) == ErrorCode.INVALID_ARGUMENTS
    assert "not valid JSON" in result.text


async def test_empty_arguments_mean_no_arguments() -> None:
    result = await make_registry().execute(ToolCall("c1", "add", ""))
    assert error_of(result) == ErrorCode.INVALID_ARGUMENTS
    assert "'a' is a required property" in result.text


async def test_tool_exception_becomes_tool_error() -> None:
    result = await make_registry().execute(ToolCall("c1", "explode", {"message": "boom"}))
    assert error_of(result) == ErrorCode.TOOL_ERROR
    assert "RuntimeError: boom" in result.text


async def test_tool_error_keeps_its_own_code() -> None:
    result = await make_registry().execute(ToolCall("c1", "refuse", {}))
    assert error_of(result) == "QUOTA"


async def test_output_breaking_its_schema_is_invalid_output() -> None:
    result = await make_registry().execute(ToolCall("c1", "wrong_output", {}))
    assert error_of(result) == ErrorCode.INVALID_OUTPUT


async def test_value_with_no_json_form_is_invalid_output() -> None:
    registry = ToolRegistry()
    registry.register(
        Tool.from_schema(
            name="obj", description="", parameters={"type": "object"}, function=lambda: object()
        )
    )
    result = await registry.execute(ToolCall("c1", "obj", {}))
    assert error_of(result) == ErrorCode.INVALID_OUTPUT


@pytest.mark.parametrize("leaf", [b"bytes", object()], ids=["bytes", "object"])
async def test_a_value_nested_past_the_json_depth_is_invalid_output_not_a_crash(
    leaf: object,
) -> None:
    deep: object = [leaf]
    for _ in range(5_000):  # far past the 200 levels a value may have, and the stack
        deep = [deep]
    registry = ToolRegistry()
    registry.register(
        Tool.from_schema(
            name="deep", description="", parameters={"type": "object"}, function=lambda: deep
        )
    )
    result = await registry.execute(ToolCall("c1", "deep", {}))
    assert error_of(result) == ErrorCode.INVALID_OUTPUT
    assert "nested deeper than 200 levels" in result.text


async def test_tool_gets_a_detached_copy_and_the_result_is_frozen() -> None:
    seen: list[Invocation] = []
    registry = make_registry(post_hooks=[lambda invocation, result: seen.append(invocation)])
    result = await registry.execute(ToolCall("c1", "keep", {"items": [1]}))
    assert isinstance(result, ToolExecutionSuccess)
    assert result.value == (1, 99)
    assert isinstance(seen[0].arguments, Mapping)
    assert seen[0].arguments["items"] == (1,)  # the tool's mutation did not reach the record
    with pytest.raises(TypeError):
        seen[0].arguments["items"] = ()  # type: ignore[index]


async def test_a_sleeping_sync_tool_times_out_while_its_body_still_runs() -> None:
    release = threading.Event()
    finished = threading.Event()

    @tool(timeout=0.3)
    def nap() -> None:
        """Sleep until released."""
        release.wait(30)
        finished.set()

    registry = ToolRegistry()
    registry.register(nap)
    result = await registry.execute(ToolCall("c1", "nap", {}))
    still_running = not finished.is_set()  # the result came at the deadline, not after the body
    release.set()
    assert error_of(result) == ErrorCode.TIMEOUT
    assert still_running


async def test_sleeping_async_tool_times_out() -> None:
    @tool(timeout=0.2)
    async def wait_forever() -> None:
        """Wait."""
        await anyio.sleep_forever()

    registry = ToolRegistry()
    registry.register(wait_forever)
    result = await registry.execute(ToolCall("c1", "wait_forever", {}))  # returns: it was cut
    assert error_of(result) == ErrorCode.TIMEOUT


async def test_abort_signal_stops_a_running_call_with_aborted() -> None:
    @tool
    async def wait_forever() -> None:
        """Wait."""
        await anyio.sleep_forever()

    registry = ToolRegistry()
    registry.register(wait_forever)
    signal = AbortSignal()
    async with anyio.create_task_group() as tasks:
        results: list[ToolExecutionResult] = []

        async def run() -> None:
            results.append(await registry.execute(ToolCall("c1", "wait_forever", {}), abort=signal))

        tasks.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        signal.abort("user pressed stop")
    assert error_of(results[0]) == ErrorCode.ABORTED
    assert "user pressed stop" in results[0].text


async def test_cancelling_the_host_task_propagates_and_records_aborted() -> None:
    @tool
    async def wait_forever() -> None:
        """Wait."""
        await anyio.sleep_forever()

    events: list[DispatchEvent] = []
    registry = ToolRegistry(listeners=[events.append])
    registry.register(wait_forever)
    with anyio.move_on_after(0.05) as scope:
        await registry.execute(ToolCall("c1", "wait_forever", {}))
    assert scope.cancelled_caught
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.code) for e in finished] == [("c1", ErrorCode.ABORTED)]


async def test_policy_deny_by_name_and_by_argument_predicate() -> None:
    policy = RulePolicy(
        [
            deny("explode", reason="explosions are off"),
            deny("add", when=lambda args: args.get("a") == 13),
            allow("*"),
        ]
    )
    registry = make_registry(policy=policy)
    denied = await registry.execute(ToolCall("c1", "explode", {"message": "x"}))
    assert error_of(denied) == ErrorCode.POLICY_DENIED
    assert "explosions are off" in denied.text
    unlucky = await registry.execute(ToolCall("c2", "add", {"a": 13}))
    assert error_of(unlucky) == ErrorCode.POLICY_DENIED
    lucky = await registry.execute(ToolCall("c3", "add", {"a": 12}))
    assert not lucky.is_error


async def test_policy_ask_consults_the_async_approver() -> None:
    asked: list[str] = []

    async def approver(invocation: Invocation) -> bool:
        asked.append(invocation.call_id)
        return invocation.call_id == "yes"

    registry = make_registry(policy=RulePolicy([ask("add")], approver=approver))
    assert not (await registry.execute(ToolCall("yes", "add", {"a": 1}))).is_error
    assert error_of(await registry.execute(ToolCall("no", "add", {"a": 1}))) == "POLICY_DENIED"
    assert asked == ["yes", "no"]


async def test_ask_without_approver_denies() -> None:
    registry = make_registry(policy=RulePolicy([ask()]))
    result = await registry.execute(ToolCall("c1", "add", {"a": 1}))
    assert error_of(result) == ErrorCode.POLICY_DENIED
    assert "no approver" in result.text


async def test_pre_hook_vetoes_and_cannot_rewrite_identity() -> None:
    def hook(invocation: Invocation) -> str | None:
        with pytest.raises(AttributeError):
            invocation.name = "explode"  # type: ignore[misc]
        return "not on Sundays" if invocation.arguments == {"a": 7} else None

    registry = make_registry(pre_hooks=[hook])
    vetoed = await registry.execute(ToolCall("c1", "add", {"a": 7}))
    assert error_of(vetoed) == ErrorCode.POLICY_DENIED
    assert "not on Sundays" in vetoed.text
    assert (await registry.execute(ToolCall("c2", "add", {"a": 8}))).value == 10  # type: ignore[union-attr]


async def test_post_hooks_see_the_result_and_a_failing_one_is_reported() -> None:
    seen: list[tuple[str, bool]] = []

    async def record(invocation: Invocation, result: ToolExecutionResult) -> None:
        seen.append((invocation.call_id, result.is_error))

    def broken(invocation: Invocation, result: ToolExecutionResult) -> None:
        raise ValueError("audit store offline")

    registry = make_registry(post_hooks=[record, broken])
    result = await registry.execute(ToolCall("c1", "add", {"a": 1}))
    assert seen == [("c1", False)]
    assert error_of(result) == ErrorCode.TOOL_ERROR
    assert "audit store offline" in result.text


async def test_long_content_is_truncated_visibly_but_value_is_whole() -> None:
    @tool(max_content_chars=100)
    def big() -> str:
        """Big."""
        return "x" * 1000

    registry = ToolRegistry()
    registry.register(big)
    result = await registry.execute(ToolCall("c1", "big", {}))
    assert isinstance(result, ToolExecutionSuccess)
    assert result.value == "x" * 1000
    assert result.text.startswith("x" * 100)
    assert "truncated: showing 100 of 1,000 characters" in result.text


async def test_custom_renderer_makes_prose_from_value() -> None:
    @tool(render=lambda args, value: [TextBlock(text=f"{args['city']}: {value} degrees")])
    def temperature(city: str) -> int:
        """Temperature."""
        return 21

    registry = ToolRegistry()
    registry.register(temperature)
    result = await registry.execute(ToolCall("c1", "temperature", {"city": "Oslo"}))
    assert (result.value, result.text) == (21, "Oslo: 21 degrees")  # type: ignore[union-attr]


async def test_events_record_start_and_finish_with_parent() -> None:
    events: list[DispatchEvent] = []
    registry = make_registry(listeners=[events.append])
    await registry.execute(ToolCall("c1", "add", {"a": 1}), parent="run-1")
    assert [type(e) for e in events] == [ToolCallStarted, ToolCallFinished]
    assert all(e.parent == "run-1" and e.call_id == "c1" for e in events)


async def test_execute_many_runs_safe_tools_together_and_keeps_order() -> None:
    both_inside = anyio.Event()
    inside = 0

    @tool(concurrency_safe=True)
    async def meet(n: int) -> int:
        """Wait until both calls are inside at once."""
        nonlocal inside
        inside += 1
        if inside == 2:
            both_inside.set()
        with anyio.fail_after(2):
            await both_inside.wait()
        return n

    registry = make_registry()
    registry.register(meet)
    calls = [
        ToolCall("a", "meet", {"n": 1}),
        ToolCall("b", "meet", {"n": 2}),
        ToolCall("c", "add", {"a": 1}),
        ToolCall("d", "nope", {}),
    ]
    results = await registry.execute_many(calls)
    assert [r.call_id for r in results] == ["a", "b", "c", "d"]
    assert [r.is_error for r in results] == [False, False, False, True]


async def test_execute_many_aborted_batch_gives_every_call_a_result() -> None:
    signal = AbortSignal()

    @tool
    async def stop_everything() -> None:
        """Abort the batch, then wait."""
        signal.abort("batch cancelled")
        await anyio.sleep_forever()

    registry = make_registry()
    registry.register(stop_everything)
    calls = [ToolCall("a", "add", {"a": 1}), ToolCall("b", "stop_everything", {})]
    calls += [ToolCall("c", "add", {"a": 2}), ToolCall("d", "shout", {"text": "x"})]
    results = await registry.execute_many(calls, abort=signal)
    assert [r.call_id for r in results] == ["a", "b", "c", "d"]
    assert [r.error.code if r.is_error else "ok" for r in results] == [
        "ok",
        "ABORTED",
        "ABORTED",
        "ABORTED",
    ]
    assert "before dispatch" in results[2].text


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=80), arguments=st.text(max_size=200), call_id=st.text(max_size=20))
def test_any_name_and_any_arguments_give_exactly_one_result(
    name: str, arguments: str, call_id: str
) -> None:
    registry = make_registry()
    names = [name, "add", "keep"]

    async def run() -> list[ToolExecutionResult]:
        return [await registry.execute(ToolCall(call_id, n, arguments)) for n in names]

    results = anyio.run(run)
    assert len(results) == 3
    for result in results:
        assert result.call_id == call_id
        assert result.content
        json.dumps([block.text for block in result.content])


async def test_values_and_arguments_are_plain_json_for_programs() -> None:
    seen: list[str] = []
    registry = make_registry(
        post_hooks=[lambda invocation, result: seen.append(json.dumps(invocation.arguments))]
    )
    result = await registry.execute(ToolCall("c1", "keep", {"items": [1]}))
    assert isinstance(result, ToolExecutionSuccess)
    assert json.loads(json.dumps(result.value)) == [1, 99]
    assert json.loads(seen[0]) == {"items": [1]}
    as_dict = dataclasses.asdict(result)
    assert as_dict["value"] == (1, 99)
    assert json.loads(json.dumps(as_dict["content"][0])) == {"text": "[1,99]", "type": "text"}


async def test_the_pipeline_runs_on_what_it_is_handed_without_a_registry() -> None:
    """Dispatch is given the tool, the policy, the hooks and where events go; it looks
    nothing up, so one hand-built route is the whole of what a call meets."""
    heard: list[DispatchEvent] = []
    vetoed: list[str] = []

    def veto_sevens(invocation: Invocation) -> str | None:
        vetoed.append(invocation.call_id)
        return "no sevens" if invocation.arguments.get("a") == 7 else None  # type: ignore[union-attr]

    route = dispatch.Resolved(
        tool=add,
        policy=RulePolicy([deny("add", when=lambda args: args.get("a") == 13)]),
        pre_hooks=(veto_sevens,),
        post_hooks=(),
        listened=True,
    )
    ran = await dispatch.execute(route, ToolCall("c1", "add", {"a": 1}), emit=heard.append)
    denied = await dispatch.execute(route, ToolCall("c2", "add", {"a": 13}), emit=heard.append)
    hooked = await dispatch.execute(route, ToolCall("c3", "add", {"a": 7}), emit=heard.append)
    assert ran.value == 3  # type: ignore[union-attr]
    assert error_of(denied) == ErrorCode.POLICY_DENIED
    assert error_of(hooked) == ErrorCode.POLICY_DENIED
    assert "no sevens" in hooked.text
    assert vetoed == ["c1", "c3"]  # policy first: the denied call never reached the hook
    assert [(type(e).__name__, e.call_id) for e in heard] == [
        (kind, call_id)
        for call_id in ("c1", "c2", "c3")
        for kind in ("ToolCallStarted", "ToolCallFinished")
    ]
    unheard = dataclasses.replace(route, listened=False)
    await dispatch.execute(unheard, ToolCall("c4", "add", {"a": 1}), emit=heard.append)
    assert len(heard) == 6  # nobody listens: no event is made


async def test_an_unknown_name_is_answered_from_the_names_given() -> None:
    heard: list[DispatchEvent] = []
    result = dispatch.unknown_tool(ToolCall("c1", "ad", {}), ["add", "shout"], emit=heard.append)
    assert error_of(result) == ErrorCode.UNKNOWN_TOOL
    assert "Did you mean: add?" in result.text
    assert "Available tools: add, shout" in result.text
    assert [type(e).__name__ for e in heard] == ["ToolCallFinished"]
