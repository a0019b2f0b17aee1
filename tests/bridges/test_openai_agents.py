"""The Agents SDK bridge, run by the SDK's own Runner against a scripted model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, set_tracing_disabled
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from codeact import Runtime
from codeact.bridges import openai_agents

from .conftest import FIRST, PICTURE, PNG, SECOND, Workshop

set_tracing_disabled(True)  # no trace export: the tests never reach the network

Step = Callable[[list[Any]], list[Any]]


def run_code(call_id: str, code: str) -> Step:
    def step(seen: list[Any]) -> list[Any]:
        return [
            ResponseFunctionToolCall(
                type="function_call",
                call_id=call_id,
                name="run_code",
                arguments=json.dumps({"code": code}),
                id=f"fc_{call_id}",
                status="completed",
            )
        ]

    return step


def answer(seen: list[Any]) -> list[Any]:
    """The final message repeats what the last tool output said, for the test to read."""
    text = json.dumps(seen[-1]["output"])
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return [
        ResponseOutputMessage(
            type="message", id="msg", role="assistant", status="completed", content=content
        )
    ]


class ScriptedModel(Model):
    """The SDK's model interface, answering from a script of steps; it keeps what it saw."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        seen = list(input) if isinstance(input, list) else [input]
        self.inputs.append(seen)
        return ModelResponse(output=self.steps.pop(0)(seen), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def outputs(model: ScriptedModel) -> dict[str, Any]:
    """Each function call's output as the model received it, by call id."""
    return {
        item["call_id"]: item["output"]
        for item in model.inputs[-1]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


@pytest.mark.anyio
async def test_a_two_step_task_runs_with_the_call_ids_of_the_sdk(workshop: Workshop) -> None:
    model = ScriptedModel([run_code("call_a", FIRST), run_code("call_b", SECOND), answer])
    agent = Agent(name="calc", model=model, tools=openai_agents.tools(workshop.runtime))

    result = await Runner.run(agent, "add things")

    assert [tool.name for tool in agent.tools] == ["run_code"]
    assert workshop.ids_of("run_code") == ["call_a", "call_b"]
    seen = outputs(model)
    assert "Result: 5" in seen["call_a"]
    assert "Result: 15" in seen["call_b"]
    assert "Result: 15" in result.final_output


@pytest.mark.anyio
async def test_each_run_is_a_conversation_of_its_own_and_a_group_id_joins_runs(
    workshop: Workshop,
) -> None:
    tools = openai_agents.tools(workshop.runtime)
    first = ScriptedModel([run_code("a1", FIRST), answer])
    await Runner.run(Agent(name="one", model=first, tools=tools), "go")
    second = ScriptedModel([run_code("b1", SECOND), answer])
    await Runner.run(Agent(name="two", model=second, tools=tools), "go")
    assert "NameError" in outputs(second)["b1"]  # another run never sees `total`

    grouped = RunConfig(group_id="conversation-7")
    for steps in ([run_code("c1", FIRST), answer], [run_code("c2", SECOND), answer]):
        model = ScriptedModel(steps)
        await Runner.run(Agent(name="g", model=model, tools=tools), "go", run_config=grouped)
    assert "Result: 15" in outputs(model)["c2"]


@pytest.mark.anyio
async def test_an_image_a_script_returns_reaches_the_model_as_an_image(workshop: Workshop) -> None:
    model = ScriptedModel([run_code("pic", PICTURE), answer])
    agent = Agent(name="cam", model=model, tools=openai_agents.tools(workshop.runtime))
    await Runner.run(agent, "take a picture")

    sent = outputs(model)["pic"]
    assert isinstance(sent, list)
    kinds = [part["type"] for part in sent]
    assert kinds == ["input_text", "input_image"]
    assert sent[1]["image_url"] == f"data:image/png;base64,{PNG}"
    assert PNG not in sent[0]["text"]  # the text names the image, never carries it


@pytest.mark.anyio
async def test_native_tools_sit_beside_run_code_in_both_mode(workshop: Workshop) -> None:
    tools = openai_agents.tools(workshop.runtime, mode="both")
    assert [tool.name for tool in tools] == ["add", "snap", "run_code"]
    call = ResponseFunctionToolCall(
        type="function_call", call_id="n1", name="add", arguments='{"a": 1, "b": 2}', id="fc"
    )
    model = ScriptedModel([lambda seen: [call], answer])
    await Runner.run(Agent(name="n", model=model, tools=tools), "go")
    assert outputs(model)["n1"] == "3"
    assert workshop.ids_of("add") == ["n1"]


def test_a_runtimes_chosen_mode_is_what_the_agent_is_offered(workshop: Workshop) -> None:
    registry = workshop.runtime.registry
    native = Runtime(registry, mode="native")
    both = Runtime(registry, mode="both")
    try:
        assert sorted(t.name for t in openai_agents.tools(native)) == ["add", "snap"]
        assert sorted(t.name for t in openai_agents.tools(both)) == ["add", "run_code", "snap"]
        # a runtime whose mode nobody chose, and an explicit mode, as before
        assert [t.name for t in openai_agents.tools(workshop.runtime)] == ["run_code"]
        assert [t.name for t in openai_agents.tools(native, mode="code")] == ["run_code"]
    finally:
        native.close()
        both.close()
