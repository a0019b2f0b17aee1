"""The Agents SDK bridge, run by the SDK's own Runner against a scripted model."""

from __future__ import annotations

import asyncio
import json
import warnings
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


@pytest.mark.anyio
async def test_runs_sharing_an_sdk_session_or_conversation_id_share_one_script_session(
    workshop: Workshop,
) -> None:
    from agents import SQLiteSession

    tools = openai_agents.tools(workshop.runtime)

    async def two_runs(**arguments: Any) -> ScriptedModel:
        first = ScriptedModel([run_code("a1", FIRST), answer])
        await openai_agents.run(Agent(name="one", model=first, tools=tools), "go", **arguments)
        second = ScriptedModel([run_code("a2", SECOND), answer])
        await openai_agents.run(Agent(name="two", model=second, tools=tools), "go", **arguments)
        return second

    alice = SQLiteSession("alice")  # the SDK's own memory of a conversation
    assert "Result: 15" in outputs(await two_runs(session=alice))["a2"]
    assert "Result: 15" in outputs(await two_runs(conversation_id="conv_7"))["a2"]
    # another SDK session is another conversation: `total` is not there
    bob = SQLiteSession("bob")
    third = ScriptedModel([run_code("b1", SECOND), answer])
    await openai_agents.run(Agent(name="b", model=third, tools=tools), "go", session=bob)
    assert "NameError" in outputs(third)["b1"]
    # without a name, a run is still a conversation of its own
    fourth = ScriptedModel([run_code("n1", SECOND), answer])
    await openai_agents.run(Agent(name="n", model=fourth, tools=tools), "go")
    assert "NameError" in outputs(fourth)["n1"]


@pytest.mark.anyio
async def test_runs_started_inside_a_named_conversation_through_runner_share_names(
    workshop: Workshop,
) -> None:
    tools = openai_agents.tools(workshop.runtime)
    with openai_agents.conversation("ticket-42"):
        first = ScriptedModel([run_code("t1", FIRST), answer])
        await Runner.run(Agent(name="one", model=first, tools=tools), "go")
        second = ScriptedModel([run_code("t2", SECOND), answer])
        await Runner.run(Agent(name="two", model=second, tools=tools), "go")
    assert "Result: 15" in outputs(second)["t2"]
    outside = ScriptedModel([run_code("o1", SECOND), answer])
    await Runner.run(Agent(name="out", model=outside, tools=tools), "go")
    assert "NameError" in outputs(outside)["o1"]


def test_run_sync_names_the_conversation_from_the_sdk_session(workshop: Workshop) -> None:
    from agents import SQLiteSession

    tools = openai_agents.tools(workshop.runtime)
    carol = SQLiteSession("carol")
    try:
        first = ScriptedModel([run_code("s1", FIRST), answer])
        openai_agents.run_sync(Agent(name="one", model=first, tools=tools), "go", session=carol)
        second = ScriptedModel([run_code("s2", SECOND), answer])
        openai_agents.run_sync(Agent(name="two", model=second, tools=tools), "go", session=carol)
    finally:  # the SDK leaves the thread's default loop open on purpose; the test closes it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.get_event_loop_policy().get_event_loop().close()
        asyncio.set_event_loop(None)
    assert "Result: 15" in outputs(second)["s2"]


@pytest.mark.anyio
async def test_run_streamed_keeps_the_conversation_while_it_streams(workshop: Workshop) -> None:
    from agents import SQLiteSession
    from agents.testing import ModelStep
    from agents.testing import ScriptedModel as SdkScriptedModel

    tools = openai_agents.tools(workshop.runtime)
    dana = SQLiteSession("dana")
    finals = []
    for call_id, code in (("d1", FIRST), ("d2", SECOND)):
        # the SDK's own test model, streaming: a run_code call, then the tool's output back
        model = SdkScriptedModel(
            [run_code(call_id, code)([]), ModelStep.respond(lambda call: answer(call.input))]
        )
        agent = Agent(name="streamer", model=model, tools=tools)
        streamed = openai_agents.run_streamed(agent, "go", session=dana)
        async for _ in streamed.stream_events():
            pass
        finals.append(streamed.final_output)
    assert "Result: 5" in finals[0]
    assert "Result: 15" in finals[1]  # the second run saw the first one's `total`
