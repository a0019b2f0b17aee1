"""A tool reports its progress; listeners get it as events of that call, on the loop."""

from __future__ import annotations

import threading

import pytest

from codeact import (
    DispatchEvent,
    Runtime,
    ToolCall,
    ToolProgress,
    ToolRegistry,
    report_progress,
    tool,
)
from codeact.executors._in_process import InProcessExecutor

pytestmark = pytest.mark.anyio


@tool
def crunch(steps: int) -> int:
    """Work in steps, saying how far it got."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step}")
    return steps


@tool
async def crunch_async(steps: int) -> int:
    """The same, as a coroutine."""
    for step in range(1, steps + 1):
        report_progress(step, steps)
    return steps


def recorded() -> tuple[ToolRegistry, list[tuple[ToolProgress, str]]]:
    events: list[tuple[ToolProgress, str]] = []

    def listen(event: DispatchEvent) -> None:
        if isinstance(event, ToolProgress):
            events.append((event, threading.current_thread().name))

    registry = ToolRegistry(listeners=[listen])
    registry.register(crunch)
    registry.register(crunch_async)
    return registry, events


@pytest.mark.parametrize("name", ["crunch", "crunch_async"])
async def test_progress_reaches_listeners_as_events_of_the_call(name: str) -> None:
    registry, events = recorded()
    result = await registry.execute(ToolCall("c1", name, {"steps": 3}))
    assert not result.is_error
    assert [(e.call_id, e.progress, e.total) for e, _ in events] == [
        ("c1", 1.0, 3.0),
        ("c1", 2.0, 3.0),
        ("c1", 3.0, 3.0),
    ]
    # delivered on the loop's thread, even from a sync tool's worker thread
    assert {thread for _, thread in events} == {threading.current_thread().name}


async def test_a_scripts_calls_report_progress_with_run_code_as_their_parent() -> None:
    registry, events = recorded()
    runtime = Runtime(registry, mode="code", executor=InProcessExecutor())
    async with runtime:
        result = await runtime.execute(ToolCall("r", "run_code", {"code": "crunch(2)"}))
    assert not result.is_error, result.text
    assert [(e.parent, e.progress, e.message) for e, _ in events] == [
        ("r", 1.0, "step 1"),
        ("r", 2.0, "step 2"),
    ]
