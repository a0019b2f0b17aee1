"""The smolagents bridges: run_code for its ToolCallingAgent, and codeact's workers as the
executor of its CodeAgent, each run by the agent itself against a scripted model."""

from __future__ import annotations

import io
from typing import Any

import pytest

pytest.importorskip("smolagents")

from smolagents import AgentImage, CodeAgent, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from codeact.bridges import smolagents

from .conftest import FIRST, PICTURE, SECOND, Workshop


class ScriptedModel(Model):
    """smolagents' model interface, answering from a list of replies; it keeps what it saw."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.replies = list(replies)
        self.seen: list[Any] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(messages)
        return self.replies.pop(0)


def call(name: str, arguments: dict[str, Any], call_id: str) -> ChatMessage:
    function = ChatMessageToolCallFunction(name=name, arguments=arguments)
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[ChatMessageToolCall(function=function, id=call_id, type="function")],
    )


def code(source: str) -> ChatMessage:
    return ChatMessage(
        role=MessageRole.ASSISTANT, content=f"Thought: go.\n<code>\n{source}\n</code>"
    )


def test_a_two_step_task_runs_through_run_code_in_a_tool_calling_agent(
    workshop: Workshop,
) -> None:
    model = ScriptedModel(
        [
            call("run_code", {"code": FIRST}, "call_a"),
            call("run_code", {"code": SECOND}, "call_b"),
            call("final_answer", {"answer": "done"}, "call_c"),
        ]
    )
    agent = ToolCallingAgent(tools=smolagents.tools(workshop.runtime), model=model, max_steps=4)

    assert agent.run("add things") == "done"

    observations = [
        step.observations for step in agent.memory.steps if getattr(step, "observations", None)
    ]
    assert "Result: 5" in observations[0]
    assert "Result: 15" in observations[1]
    ids = workshop.ids_of("run_code")
    assert len(ids) == 2
    assert len(set(ids)) == 2


def test_each_set_of_tools_is_a_session_of_its_own(workshop: Workshop) -> None:
    first = ToolCallingAgent(
        tools=smolagents.tools(workshop.runtime),
        model=ScriptedModel(
            [call("run_code", {"code": FIRST}, "a"), call("final_answer", {"answer": "x"}, "b")]
        ),
    )
    first.run("go")
    second = ToolCallingAgent(
        tools=smolagents.tools(workshop.runtime),
        model=ScriptedModel(
            [call("run_code", {"code": SECOND}, "c"), call("final_answer", {"answer": "y"}, "d")]
        ),
    )
    second.run("go")
    errors = [str(step.error) for step in second.memory.steps if getattr(step, "error", None)]
    assert any("NameError" in error for error in errors)


def test_an_image_a_script_returns_is_an_agent_image(workshop: Workshop) -> None:
    run_code = smolagents.tools(workshop.runtime)[0]
    picture = run_code(code=PICTURE)
    assert isinstance(picture, AgentImage)
    buffer = io.BytesIO()
    picture.to_raw().save(buffer, format="PNG")
    assert picture.to_raw().size == (1, 1)


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def test_a_code_agent_runs_its_steps_in_codeact_workers_with_one_argument() -> None:
    model = ScriptedModel(
        [code("total = add(2, 3)\nprint('total is', total)"), code("final_answer(add(total, 10))")]
    )
    executor = smolagents.CodeactExecutor()
    agent = CodeAgent(tools=[add], model=model, executor=executor, max_steps=3)
    try:
        assert agent.run("add things") == 15
        observations = [
            step.observations for step in agent.memory.steps if getattr(step, "observations", None)
        ]
        assert "total is 5" in observations[0]
    finally:
        agent.cleanup()


def test_a_code_agent_script_cannot_reach_the_host_and_the_model_reads_why() -> None:
    model = ScriptedModel(
        [code("import subprocess\nsubprocess.run(['true'])"), code("final_answer('gave up')")]
    )
    agent = CodeAgent(tools=[add], model=model, executor=smolagents.CodeactExecutor(), max_steps=3)
    try:
        assert agent.run("escape") == "gave up"
        errors = [str(step.error) for step in agent.memory.steps if getattr(step, "error", None)]
        assert any("os" in error and "CODE_SECURITY_VIOLATION" in error for error in errors)
    finally:
        agent.cleanup()


def test_two_code_agents_never_share_names() -> None:
    agents = []
    for source in ("secret = 41", "final_answer(secret)"):
        model = ScriptedModel([code(source), code("final_answer('none')")])
        agents.append(
            CodeAgent(tools=[], model=model, executor=smolagents.CodeactExecutor(), max_steps=2)
        )
    try:
        agents[0].run("set", max_steps=1)
        assert agents[1].run("read") == "none"
        errors = [
            str(step.error) for step in agents[1].memory.steps if getattr(step, "error", None)
        ]
        assert any("NameError" in error and "secret" in error for error in errors)
    finally:
        for agent in agents:
            agent.cleanup()


def test_plain_variables_the_agent_sends_are_names_in_its_script() -> None:
    model = ScriptedModel([code("final_answer(limit * 2)")])
    agent = CodeAgent(tools=[], model=model, executor=smolagents.CodeactExecutor(), max_steps=2)
    try:
        assert agent.run("double", additional_args={"limit": 21}) == 42
    finally:
        agent.cleanup()


def test_a_code_agent_that_continues_its_conversation_keeps_its_names() -> None:
    model = ScriptedModel([code("kept = 7\nfinal_answer('set')"), code("final_answer(kept * 6)")])
    agent = CodeAgent(tools=[], model=model, executor=smolagents.CodeactExecutor(), max_steps=2)
    try:
        assert agent.run("set") == "set"
        assert agent.run("use", reset=False) == 42
    finally:
        agent.cleanup()


def test_native_codeact_tools_give_a_code_agent_values_not_text() -> None:
    from codeact import tool as codeact_tool

    @codeact_tool
    def price(item: str) -> float:
        """Price of an item in euros."""
        return {"tea": 3.5, "cake": 4.25}[item]

    model = ScriptedModel([code("final_answer(price(item='tea') * 2)")])
    found = smolagents.tools([price], mode="native")
    agent = CodeAgent(tools=found, model=model, max_steps=2)
    try:
        assert agent.run("twice the tea") == 7.0  # computed with the value: 3.5, not "3.5"
    finally:
        agent.cleanup()
        found[0]._dispatcher.runtime.close()


def test_a_code_agent_run_with_reset_starts_without_the_previous_names() -> None:
    model = ScriptedModel(
        [
            code("kept = 7\nfinal_answer('set')"),
            code("final_answer(kept * 6)"),
            code("final_answer('fresh')"),
        ]
    )
    executor = smolagents.CodeactExecutor()
    agent = CodeAgent(tools=[], model=model, executor=executor, max_steps=2)
    try:
        assert agent.run("set") == "set"
        first = executor._session
        assert agent.run("use", reset=True) == "fresh"  # the first try met no `kept`
        errors = [str(step.error) for step in agent.memory.steps if getattr(step, "error", None)]
        assert any("NameError" in error and "kept" in error for error in errors)
        assert executor._runtime is not None
        assert executor._runtime.executor.session_worker(first) is None  # its worker went
    finally:
        agent.cleanup()
