"""The LangChain bridge, run by LangChain's agent (a LangGraph graph) against LangChain's
fake chat model, from invoke and ainvoke, and by a tool called directly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from codeact.bridges import langchain

from .conftest import FIRST, PICTURE, PNG, SECOND, Workshop


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, which an agent may bind tools to."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:
        return self


def run_code(call_id: str, code: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": "run_code", "args": {"code": code}, "id": call_id, "type": "tool_call"}
        ],
    )


def model(*replies: AIMessage) -> ToolCallingFakeModel:
    return ToolCallingFakeModel(messages=iter([*replies, AIMessage(content="done")]))


def tool_messages(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


@pytest.fixture
def tools(workshop: Workshop) -> Iterator[list[Any]]:
    return langchain.tools(workshop.runtime)


def test_a_two_step_task_runs_from_invoke_with_the_call_ids(
    workshop: Workshop, tools: list[Any]
) -> None:
    agent = create_agent(model(run_code("call_a", FIRST), run_code("call_b", SECOND)), tools)
    state = agent.invoke({"messages": [("user", "add things")]}, thread("t1"))

    replies = tool_messages(state["messages"])
    assert "Result: 5" in replies["call_a"].content
    assert "Result: 15" in replies["call_b"].content
    assert workshop.ids_of("run_code") == ["call_a", "call_b"]


@pytest.mark.anyio
async def test_a_two_step_task_runs_from_ainvoke_with_the_call_ids(
    workshop: Workshop, tools: list[Any]
) -> None:
    agent = create_agent(model(run_code("c1", FIRST), run_code("c2", SECOND)), tools)
    state = await agent.ainvoke({"messages": [("user", "add things")]}, thread("t1"))

    assert "Result: 15" in tool_messages(state["messages"])["c2"].content
    assert workshop.ids_of("run_code") == ["c1", "c2"]


def test_each_thread_is_a_session_and_a_checkpointed_thread_continues_it(
    tools: list[Any],
) -> None:
    memory = InMemorySaver()
    first = create_agent(model(run_code("a1", FIRST)), tools, checkpointer=memory)
    first.invoke({"messages": [("user", "go")]}, thread("alice"))

    other = create_agent(model(run_code("b1", SECOND)), tools, checkpointer=memory)
    state = other.invoke({"messages": [("user", "go")]}, thread("bob"))
    reply = tool_messages(state["messages"])["b1"]
    assert reply.status == "error"
    assert "NameError" in reply.content

    again = create_agent(model(run_code("a2", SECOND)), tools, checkpointer=memory)
    state = again.invoke({"messages": [("user", "go on")]}, thread("alice"))
    assert "Result: 15" in tool_messages(state["messages"])["a2"].content


def test_an_image_a_script_returns_is_an_image_block(tools: list[Any]) -> None:
    reply = tools[0].invoke(
        {"name": "run_code", "args": {"code": PICTURE}, "id": "pic", "type": "tool_call"},
        thread("t"),
    )
    assert isinstance(reply, ToolMessage)
    assert reply.tool_call_id == "pic"
    text, image = reply.content
    assert image == {"type": "image", "base64": PNG, "mime_type": "image/png"}
    assert PNG not in text["text"]
    assert "[image image/png" in text["text"]


def test_native_tools_sit_beside_run_code_in_both_mode(workshop: Workshop) -> None:
    both = langchain.tools(workshop.runtime, mode="both")
    assert [t.name for t in both] == ["add", "snap", "run_code"]
    reply = both[0].invoke(
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "n1", "type": "tool_call"}
    )
    assert reply.content == "3"
    assert reply.tool_call_id == "n1"
    assert workshop.ids_of("add") == ["n1"]


@pytest.mark.anyio
async def test_many_threads_at_once_each_keep_their_own_names_and_close_leaves_no_worker(
    workshop: Workshop, tools: list[Any]
) -> None:
    import os

    import anyio

    from tests.hosts import children_of

    run = tools[0]
    before = children_of(os.getpid())  # anything else's: not this runtime's to close

    async def conversation(number: int, replies: dict[int, Any]) -> None:
        first = {
            "name": "run_code",
            "args": {"code": f"secret = {number}"},
            "id": f"s{number}",
            "type": "tool_call",
        }
        await run.ainvoke(first, thread(f"user-{number}"))
        again = {
            "name": "run_code",
            "args": {"code": "secret"},
            "id": f"r{number}",
            "type": "tool_call",
        }
        replies[number] = await run.ainvoke(again, thread(f"user-{number}"))

    replies: dict[int, Any] = {}
    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for number in range(8):
                group.start_soon(conversation, number, replies)
    for number, reply in replies.items():
        assert reply.content == f"Result: {number}", reply.content
    assert len(replies) == 8
    assert children_of(os.getpid()) - before  # the conversations' workers, while it lasts
    workshop.runtime.close()
    with anyio.fail_after(60):
        while children_of(os.getpid()) - before:
            await anyio.sleep(0.05)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_graphs_invoked_without_a_thread_never_share_names(
    workshop: Workshop, tools: list[Any], how: str
) -> None:
    import anyio

    def invoke(agent: Any) -> Any:
        request = {"messages": [("user", "go")]}
        if how == "invoke":
            return agent.invoke(request)
        return anyio.run(agent.ainvoke, request)

    invoke(create_agent(model(run_code("a1", "secret = 'alice'")), tools))
    state = invoke(create_agent(model(run_code("b1", "secret")), tools))
    reply = tool_messages(state["messages"])["b1"]
    assert reply.status == "error"  # the second caller never sees the first one's names
    assert "NameError" in reply.content
    executor = workshop.runtime.executor
    assert getattr(executor, "_sessions", {}) == {}  # each call's session was closed after it
