"""run_code through the registry: tools as functions, same pipeline, one parent."""

from __future__ import annotations

import anyio
import pytest

from codeact import (
    AbortSignal,
    DispatchEvent,
    RulePolicy,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolExecutionResult,
    ToolRegistry,
    deny,
    tool,
)
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.executors._in_process import InProcessExecutor
from codeact.sandbox import Limits

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
async def lookup(key: str) -> dict[str, int]:
    """Look a key up."""
    return {"key_length": len(key)}


@tool
def wipe(path: str) -> str:
    """Delete a path."""
    return f"wiped {path}"


def code_registry(**options: object) -> tuple[ToolRegistry, ToolRegistry]:
    base = ToolRegistry(**options)  # type: ignore[arg-type]
    for definition in (add, lookup, wipe):
        base.register(definition)
    scope = base.child()
    limits = Limits(wall_seconds=2)
    scope.register(run_code_tool(base, limits=limits, executor=InProcessExecutor(limits=limits)))
    return base, scope


async def run(scope: ToolRegistry, code: str, call_id: str = "r1") -> ToolExecutionResult:
    return await scope.execute(ToolCall(call_id, RUN_CODE, {"code": code}))


async def test_tools_are_called_as_functions_and_values_returned() -> None:
    _, scope = code_registry()
    result = await run(
        scope, "s = add(2, b=3)\ninfo = lookup('abcd')\nprint(s)\n[s, info['key_length']]"
    )
    assert not result.is_error
    assert result.value["result"] == (5, 4)  # type: ignore[index]
    assert result.value["output"] == "5\n"  # type: ignore[index]
    assert "Result: [5,4]" in result.text


async def test_nested_calls_pass_the_same_pipeline_with_run_code_as_parent() -> None:
    events: list[DispatchEvent] = []
    _, scope = code_registry(listeners=[events.append])
    await run(scope, "add(1)\nadd('not a number')", call_id="outer")
    nested = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "add"]
    assert [(e.parent, e.code) for e in nested] == [("outer", None), ("outer", "INVALID_ARGUMENTS")]
    started = [e.call_id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["outer", "outer.1", "outer.2"]


async def test_policy_applies_inside_scripts_too() -> None:
    _, scope = code_registry(policy=RulePolicy([deny("wipe", reason="never wipe")]))
    result = await run(
        scope, "try:\n    wipe('/')\nexcept ToolError as e:\n    r = (e.code, e.message)\nr"
    )
    assert result.value["result"] == ("POLICY_DENIED", "never wipe")  # type: ignore[index]


async def test_a_failed_script_shows_the_error_line_and_the_calls_already_made() -> None:
    _, scope = code_registry()
    result = await run(scope, "add(1)\nx = 1\nwipe('a')\nnot_defined + 1")
    assert result.is_error
    assert result.error.code == "CODE_RUNTIME_ERROR"
    text = result.text
    assert "NameError" in text
    assert "at line 4: not_defined + 1" in text
    assert "add (ok), wipe (ok)" in text


async def test_syntax_errors_show_line_column_and_caret() -> None:
    _, scope = code_registry()
    result = await run(scope, "x = (1,\ny = 2")
    assert result.error.code == "CODE_SYNTAX_ERROR"  # type: ignore[union-attr]
    assert "line 1" in result.text
    assert "^" in result.text


async def test_name_errors_hint_at_the_closest_tool() -> None:
    _, scope = code_registry()
    checked = await run(scope, "lokup('x')")
    assert checked.error.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]
    assert "Did you mean: lookup?" in checked.text  # found before running
    result = await run(scope, "f = lokup")
    assert "did you mean: lookup" in result.text  # found while running


async def test_the_precheck_advises_and_never_refuses_what_cpython_runs() -> None:
    _, scope = code_registry()
    result = await run(scope, "print('before')\nx = add(1, 2)\nlokup('k')")
    assert result.error.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]
    assert "Output before the error:\nbefore" in result.text  # it ran up to the NameError
    assert "add (ok)" in result.text
    assert "Did you mean: lookup?" in result.text  # the check's hint, inside the error
    taken = await run(scope, "if False:\n    lokup('k')\n'fine'")
    assert taken.value["result"] == "fine"  # type: ignore[index]  # a branch never taken


async def test_state_persists_between_run_code_calls() -> None:
    _, scope = code_registry()
    await run(scope, "memo = {'n': add(20, 1)}")
    result = await run(scope, "memo['n'] * 2")
    assert result.value["result"] == 42  # type: ignore[index]


async def test_aborting_run_code_stops_the_script_with_aborted() -> None:
    _, scope = code_registry()
    signal = AbortSignal()
    results: list[ToolExecutionResult] = []

    async def go() -> None:
        results.append(
            await scope.execute(
                ToolCall("r", RUN_CODE, {"code": "while True:\n    pass"}), abort=signal
            )
        )

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(go)
            await anyio.sleep(0.2)
            signal.abort("user stop")
    assert results[0].error.code == "ABORTED"  # type: ignore[union-attr]
    after = await run(scope, "add(1, 1)")
    assert after.value["result"] == 2  # type: ignore[index]


async def test_run_code_advertises_tools_as_python_signatures() -> None:
    _, scope = code_registry()
    (schema,) = [s for s in scope.schemas() if s["name"] == RUN_CODE]
    description = str(schema["description"])
    assert "def add(a: int, b: int = 0) -> int:" in description
    assert "def lookup(key: str) -> dict[str, int]:" in description
    assert "json" in description


async def test_a_call_the_script_guards_with_except_name_error_is_not_refused() -> None:
    _, scope = code_registry()
    result = await run(
        scope, "try:\n    r = maybe_helper(1)\nexcept NameError as e:\n    r = 'no ' + e.name\nr"
    )
    assert result.value["result"] == "no maybe_helper"  # type: ignore[index]


async def test_the_precheck_explains_calls_made_before_gather() -> None:
    _, scope = code_registry()
    result = await run(
        scope, "import asyncio\ncalls = [add(i) for i in range(3)]\nawait asyncio.gather(*calls)"
    )
    assert result.error.code == "INVALID_ARGUMENTS"  # type: ignore[union-attr]
    assert "await asyncio.gather(*(add(x) for x in xs))" in result.text
    fixed = await run(scope, "import asyncio\nawait asyncio.gather(*(add(i) for i in range(3)))")
    assert fixed.value["result"] == (0, 1, 2)  # type: ignore[index]


async def test_a_failure_after_many_calls_lists_the_first_and_counts_the_rest() -> None:
    _, scope = code_registry()
    result = await run(scope, "for i in range(50):\n    add(i)\n1 / 0")
    assert result.text.count("add (ok)") == 20
    assert "... and 30 more" in result.text
