"""Sync tools called from in-process scripts run in the script's thread (no handoff), with
the same pipeline: every result and event equals the one the event loop's path gives; calls
the loop answers send back a caller lingering on the run."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from codeact import (
    DispatchEvent,
    RulePolicy,
    ToolCall,
    ToolExecutionResult,
    ToolRegistry,
    deny,
    tool,
)
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.contract._dispatch import current_invocation
from codeact.executors import _threads
from codeact.executors._in_process import InProcessExecutor
from codeact.sandbox import Limits
from codeact.sandbox._limits import WATCHDOG

pytestmark = pytest.mark.anyio
SEEN: list[tuple[bool, str | None]] = []

SCRIPT = """
out = [double(2), double(x=5)]
for bad in ({'x': 'no'}, {'y': 1}):
    try:
        double(**bad)
    except ToolError as e:
        out.append(e.code)
for name in ('boom', 'slow', 'wipe'):
    try:
        globals()[name]()
    except ToolError as e:
        out.append(e.code)
out
"""


@tool
def double(x: int) -> int:
    """Twice x."""
    invocation = current_invocation()
    here = threading.get_ident()
    in_script_thread = any(
        run.thread_id == here for run in tuple(WATCHDOG._runs) if not run.finished
    )
    SEEN.append((in_script_thread, invocation.call_id if invocation else None))
    return 2 * x


@tool
def boom() -> int:
    """Always fails."""
    raise ValueError("no")


@tool(timeout=0.05)
def slow() -> int:
    """Past its timeout."""
    time.sleep(0.2)
    return 1


@tool
def wipe() -> str:
    """Denied by policy."""
    return "wiped"


async def run_through(*, with_hook: bool) -> tuple[ToolExecutionResult, list[Any], set[int]]:
    events: list[DispatchEvent] = []
    listener_threads: set[int] = set()

    def listen(event: DispatchEvent) -> None:
        listener_threads.add(threading.get_ident())
        events.append(event)

    hooks = [lambda invocation: None] if with_hook else []  # a hook: the loop's path
    registry = ToolRegistry(
        policy=RulePolicy([deny("wipe", reason="never")]), pre_hooks=hooks, listeners=[listen]
    )
    for definition in (double, boom, slow, wipe):
        registry.register(definition)
    scope = registry.child()
    limits = Limits(wall_seconds=5)
    executor = InProcessExecutor(limits=limits)
    scope.register(run_code_tool(registry, limits=limits, executor=executor))
    try:
        result = await scope.execute(ToolCall("outer", RUN_CODE, {"code": SCRIPT}))
    finally:
        await executor.aclose()
    shape = [
        (type(e).__name__, e.call_id, e.name, e.parent, getattr(e, "code", None)) for e in events
    ]
    return result, shape, listener_threads


async def test_both_paths_give_the_same_results_and_events() -> None:
    fast, fast_events, fast_threads = await run_through(with_hook=False)
    slow_, slow_events, slow_threads = await run_through(with_hook=True)
    assert not fast.is_error, fast.text
    assert fast.value["result"] == (
        4,
        10,
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "TOOL_ERROR",
        "TIMEOUT",
        "POLICY_DENIED",
    )  # type: ignore[index]
    assert fast.value == slow_.value
    assert fast_events == slow_events
    loop_thread = threading.get_ident()
    assert fast_threads == slow_threads == {loop_thread}  # listeners hear it on the loop


async def test_the_fast_path_runs_the_tool_in_the_scripts_own_thread() -> None:
    SEEN.clear()
    await run_through(with_hook=False)
    assert SEEN == [(True, "outer.1"), (True, "outer.2")]  # the invocation is set there too
    SEEN.clear()
    await run_through(with_hook=True)
    assert SEEN == [(False, "outer.1"), (False, "outer.2")]  # a worker thread of the loop's


async def test_events_of_calls_answered_in_the_script_thread_arrive_in_order() -> None:
    _, shape, _ = await run_through(with_hook=False)
    kinds = [(kind, call_id) for kind, call_id, *_ in shape]
    assert kinds[0] == ("ToolCallStarted", "outer")
    assert kinds[-1] == ("ToolCallFinished", "outer")
    for index in range(1, 8):
        assert kinds.index(("ToolCallStarted", f"outer.{index}")) < kinds.index(
            ("ToolCallFinished", f"outer.{index}")
        )


@tool
async def echo_later(x: int) -> int:
    """x, after a turn of the event loop."""
    await anyio.lowlevel.checkpoint()
    return x


async def test_a_run_whose_calls_need_the_loop_sends_a_lingering_caller_back_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A caller served alone lingers on its run for a moment; made a minute here, a run that
    # did not send it back before a call the loop answers would hold the loop past the bound.
    monkeypatch.setattr(_threads, "LINGER_SECONDS", 60.0)
    registry = ToolRegistry()
    registry.register(echo_later)
    limits = Limits(wall_seconds=30)
    executor = InProcessExecutor(limits=limits)
    registry.register(run_code_tool(registry, limits=limits, executor=executor))
    script = "import asyncio\nfirst = echo_later(1)\n[first, await asyncio.gather(*(echo_later(i) for i in range(3)))]"
    try:
        with anyio.fail_after(30):
            for number in range(3):
                result = await registry.execute(
                    ToolCall(f"run{number}", RUN_CODE, {"code": script})
                )
                assert not result.is_error, result.text
                assert result.value["result"] == (1, (0, 1, 2))  # type: ignore[index]
    finally:
        await executor.aclose()
