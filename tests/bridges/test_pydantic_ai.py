"""The pydantic-ai bridge, run by pydantic-ai's Agent against its own FunctionModel."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from codeact.bridges import pydantic_ai

from .conftest import FIRST, PICTURE, PNG, SECOND, Workshop


def returns(messages: list[ModelMessage]) -> dict[str, Any]:
    """Every tool return the model has been sent, by call id."""
    return {
        part.tool_call_id: part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


@pytest.mark.anyio
async def test_a_two_step_task_runs_with_the_call_ids_of_pydantic_ai(workshop: Workshop) -> None:
    model, seen = steps_model([("call_a", FIRST), ("call_b", SECOND)])
    agent = Agent(model, toolsets=[pydantic_ai.toolset(workshop.runtime)])

    result = await agent.run("add things")

    assert result.output == "done"
    assert workshop.ids_of("run_code") == ["call_a", "call_b"]
    sent = returns(seen[-1])
    assert "Result: 5" in sent["call_a"]
    assert "Result: 15" in sent["call_b"]


def steps_model(scripts: list[tuple[str, str]]) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """A model that makes one run_code call per step of this run, then answers."""
    seen: list[list[ModelMessage]] = []
    pending = list(scripts)

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if pending:
            call_id, code = pending.pop(0)
            return ModelResponse(
                parts=[ToolCallPart("run_code", {"code": code}, tool_call_id=call_id)]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(reply), seen


@pytest.mark.anyio
async def test_each_conversation_has_its_own_session_and_history_continues_it(
    workshop: Workshop,
) -> None:
    tools = pydantic_ai.toolset(workshop.runtime)
    model, _ = steps_model([("a1", FIRST)])
    first = await Agent(model, toolsets=[tools]).run("go")

    model, seen = steps_model([("b1", SECOND)])
    await Agent(model, toolsets=[tools]).run("go")  # a new conversation
    assert "NameError" in returns(seen[-1])["b1"]

    model, seen = steps_model([("a2", SECOND)])
    await Agent(model, toolsets=[tools]).run("go on", message_history=first.all_messages())
    assert "Result: 15" in returns(seen[-1])["a2"]


@pytest.mark.anyio
async def test_an_image_a_script_returns_reaches_the_model_as_binary_content(
    workshop: Workshop,
) -> None:
    model, seen = steps_model([("pic", PICTURE)])
    await Agent(model, toolsets=[pydantic_ai.toolset(workshop.runtime)]).run("take a picture")

    parts = [
        part for message in seen[-1] if isinstance(message, ModelRequest) for part in message.parts
    ]
    images = [
        item
        for part in parts
        for item in (part.content if isinstance(part.content, list) else [part.content])
        if isinstance(item, BinaryContent)
    ]
    assert [image.media_type for image in images] == ["image/png"]
    assert images[0].data == base64.b64decode(PNG)
    assert PNG not in str(returns(seen[-1])["pic"][0])


@pytest.mark.anyio
async def test_native_tools_sit_beside_run_code_in_both_mode(workshop: Workshop) -> None:
    seen: list[list[ModelMessage]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            assert [t.name for t in info.function_tools] == ["add", "snap", "run_code"]
            return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="n1")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(reply), toolsets=[pydantic_ai.toolset(workshop.runtime, mode="both")]
    )
    await agent.run("go")
    assert returns(seen[-1])["n1"] == "3"
    assert workshop.ids_of("add") == ["n1"]


@pytest.mark.anyio
async def test_a_dropped_agent_built_in_one_line_leaves_no_runtime_and_no_worker() -> None:
    import gc
    import weakref
    from pathlib import Path

    from codeact import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    tools = pydantic_ai.toolset([add])  # the one-liner: the toolset owns its runtime
    model, seen = steps_model([("a1", FIRST)])
    # named: an unnamed Agent reads its caller's frame locals for a name, and on Python
    # 3.11 that snapshot keeps this function's names alive past their ``del``
    agent = Agent(model, toolsets=[tools], name="shop")
    assert (await agent.run("go")).output == "done"
    assert "Result: 5" in returns(seen[-1])["a1"]
    runtime = tools._dispatcher.runtime
    (worker,) = runtime.executor.workers  # type: ignore[attr-defined]
    pid = worker.pid
    collected = weakref.ref(runtime)
    del agent, tools, runtime, worker, model, seen
    gc.collect()
    # nothing (an idle session thread's copy of this task's context, say) keeps it alive
    assert collected() is None
    with anyio.fail_after(60):  # closing the collected runtime ends its worker
        while Path(f"/proc/{pid}").exists() and "\nState:\tZ" not in _status(pid):
            await anyio.sleep(0.05)


def _status(pid: int) -> str:
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "\nState:\tZ"
