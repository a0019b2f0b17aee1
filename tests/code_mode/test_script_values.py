"""What a script receives for a call is the tool's value, a copy of its own, by every path:
answered in the script's thread with nobody else reading the result (plain, never frozen
or rendered), heard by a listener (rendered for it), through the loop (a hook), and in a
worker process. A renderer of the tool's own still runs, and still fails the call."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact import (
    DispatchEvent,
    InProcessExecutor,
    ProcessExecutor,
    ToolCall,
    ToolCallFinished,
    ToolRegistry,
    tool,
)
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.contract._json import dumps, thaw
from codeact.sandbox import Limits

pytestmark = pytest.mark.anyio

ROWS: list[dict[str, Any]] = [
    {"id": i, "title": f"row {i}", "score": i / 7, "tags": ["a", "ü"], "gone": None}
    for i in range(50)
]
SHOWN = copy.deepcopy(ROWS)

# Each call's value is changed deeply by the script; the next call must not see it.
MUTATING = """
first = rows()
first[0]['title'] = 'changed'
first[1]['tags'].append('more')
first.pop()
second = rows()
[len(first), first[0]['title'], second, first is second]
"""


@tool
def rows() -> list[dict[str, Any]]:
    """The same host list every time."""
    return ROWS


@tool(render=lambda arguments, value: f"{len(value)} rows")  # type: ignore[arg-type]
def rows_told() -> list[dict[str, Any]]:
    """Rows, told in prose."""
    return ROWS


def _broken(arguments: Any, value: Any) -> str:
    raise RuntimeError("the renderer broke")


@tool(render=_broken)
def rows_broken() -> list[dict[str, Any]]:
    """Rows, with a renderer that fails."""
    return ROWS


PATHS = ("unheard", "heard", "hooked")


def _registry(path: str, events: list[DispatchEvent]) -> ToolRegistry:
    listeners = [events.append] if path == "heard" else []
    hooks = [lambda invocation: None] if path == "hooked" else []  # a hook: the loop's path
    registry = ToolRegistry(listeners=listeners, pre_hooks=hooks)
    for definition in (rows, rows_told, rows_broken):
        registry.register(definition)
    return registry


async def _run(path: str, kind: str, script: str) -> tuple[Any, list[DispatchEvent]]:
    events: list[DispatchEvent] = []
    registry = _registry(path, events)
    limits = Limits(wall_seconds=30)
    executor = (
        InProcessExecutor(limits=limits)
        if kind == "inprocess"
        else ProcessExecutor(limits=limits, warm=0)
    )
    scope = registry.child()
    scope.register(run_code_tool(registry, limits=limits, executor=executor))
    try:
        result = await scope.execute(ToolCall("outer", RUN_CODE, {"code": script}))
    finally:
        await executor.aclose()
    return result, events


@pytest.mark.parametrize("kind", ["inprocess", "process"])
@pytest.mark.parametrize("path", PATHS)
async def test_a_scripts_value_is_its_own_by_every_path(path: str, kind: str) -> None:
    result, _ = await _run(path, kind, MUTATING)
    assert not result.is_error, result.text
    length, title, second, same = thaw(result.value["result"])  # type: ignore[index, misc]
    assert (length, title, same) == (len(ROWS) - 1, "changed", False)
    assert second == SHOWN  # the second call saw nothing of the first one's changes
    assert ROWS == SHOWN  # nor did the host's own list change


async def test_a_listener_hears_the_rendered_result_of_a_scripts_call() -> None:
    result, events = await _run("heard", "inprocess", "len(rows())")
    assert not result.is_error, result.text
    finished = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "rows"]
    assert len(finished) == 1
    heard = finished[0].result
    assert heard is not None
    assert heard.text == dumps(SHOWN)  # rendered for the listener, as on every other path
    assert thaw(heard.value) == SHOWN  # type: ignore[union-attr]


@pytest.mark.parametrize("path", PATHS)
async def test_a_tools_own_renderer_still_runs_for_a_scripts_call(path: str) -> None:
    told, _ = await _run(path, "inprocess", "len(rows_told())")
    assert not told.is_error, told.text
    assert told.value["result"] == len(ROWS)  # type: ignore[index]
    broken, _ = await _run(
        path, "inprocess", "try:\n    rows_broken()\nexcept ToolError as e:\n    r = e.code\nr"
    )
    assert not broken.is_error, broken.text
    assert broken.value["result"] == "INVALID_OUTPUT"  # type: ignore[index]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _typed(value: Any) -> Any:
    """``value`` with every scalar's exact type beside it (True == 1 and 1 == 1.0 hide a
    changed type)."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


GIVEN: list[Any] = [None]


@tool
def given_value() -> Any:
    """Whatever the test put there."""
    return GIVEN[0]


@settings(max_examples=60, deadline=None)
@given(value=JSON)
def test_the_unheard_path_hands_over_exactly_the_tools_value(value: Any) -> None:
    GIVEN[0] = value
    registry = ToolRegistry()
    registry.register(given_value)
    limits = Limits(wall_seconds=30)
    executor = InProcessExecutor(limits=limits)
    registry.register(run_code_tool(registry, limits=limits, executor=executor))

    async def main() -> Any:
        try:
            return await registry.execute(ToolCall("c", RUN_CODE, {"code": "given_value()"}))
        finally:
            await executor.aclose()

    result = anyio.run(main)
    assert not result.is_error, result.text
    assert _typed(thaw(result.value["result"])) == _typed(value)
