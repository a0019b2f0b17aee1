"""The OpenAI Agents SDK: a runtime's tools as ``FunctionTool``s.

``Agent(name="a", tools=openai_agents.tools(runtime))`` gives the agent ``run_code``;
``mode="both"`` adds every tool natively beside it. The SDK's call id is the call's id,
an image a tool or script gives reaches the model as the SDK's image output, and a
failure reaches it as the error text (the run goes on).

A conversation gets a script session of its own. The SDK does not show a tool which
``session`` or ``conversation_id`` its run was given, so ``openai_agents.run`` (and
``run_sync``, ``run_streamed``) take ``Runner``'s arguments and name the conversation from
them: the SDK session's ``session_id``, else ``conversation_id``, else the run config's
``group_id``. Through ``Runner`` itself a conversation is one run, or every run sharing a
``group_id``; ``conversation(key)`` names it for the runs started inside it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from agents import FunctionTool, Runner, ToolOutputImage, ToolOutputText
from agents.result import RunResult, RunResultStreaming
from agents.tool_context import ToolContext

from ..contract._results import ToolExecutionResult
from ..runtime._modes import Mode
from ._common import Dispatcher, Sessions, ToolSource, data_url, images, text_of


def tools(
    source: ToolSource,
    *,
    mode: Mode | str | None = None,
    session: Callable[[ToolContext[Any]], str] | None = None,
) -> list[FunctionTool]:
    """``source``'s advertisement in ``mode`` as Agents SDK tools.

    ``session`` names the script session of a call from its tool context, when a
    conversation is something else than a run or a ``group_id``.
    """
    dispatcher = Dispatcher(source, mode=mode)
    sessions = Sessions(dispatcher.runtime, "agents")

    def session_of(context: ToolContext[Any]) -> str:
        if session is not None:
            return sessions.named(session(context))
        named = _CONVERSATION.get()
        if named is not None:
            return sessions.named(named)
        group = getattr(context.run_config, "group_id", None)
        return sessions.named(group) if group else sessions.of(context.usage)

    def function_tool(schema: dict[str, Any]) -> FunctionTool:
        name = str(schema["name"])

        async def invoke(context: ToolContext[Any], arguments: str) -> Any:
            result = await dispatcher.acall(
                name, arguments or "{}", call_id=context.tool_call_id, session=session_of(context)
            )
            return _output(result)

        return FunctionTool(
            name=name,
            description=str(schema["description"]),
            params_json_schema=dict(schema["parameters"]),
            on_invoke_tool=invoke,
            strict_json_schema=False,  # the schema as advertised, not rewritten
        )

    return [function_tool(schema) for schema in dispatcher.schemas()]


_CONVERSATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "codeact_agents_conversation", default=None
)


@contextlib.contextmanager
def conversation(key: str) -> Iterator[None]:
    """Runs started inside this block belong to the conversation ``key``: their scripts
    share one session (a name one defines, the next can use)."""
    token = _CONVERSATION.set(str(key))
    try:
        yield
    finally:
        _CONVERSATION.reset(token)


def conversation_of(arguments: dict[str, Any]) -> str | None:
    """The conversation ``Runner``'s keyword arguments name, if any: the SDK session's
    ``session_id``, else ``conversation_id``, else the run config's ``group_id``."""
    session = arguments.get("session")
    named = getattr(session, "session_id", None) or arguments.get("conversation_id")
    if named is None:
        named = getattr(arguments.get("run_config"), "group_id", None)
    return None if named is None else str(named)


async def run(agent: Any, input: Any, **arguments: Any) -> RunResult:
    """``Runner.run`` with the conversation named from its own arguments."""
    with _named(arguments):
        return await Runner.run(agent, input, **arguments)


def run_sync(agent: Any, input: Any, **arguments: Any) -> RunResult:
    """``Runner.run_sync`` with the conversation named from its own arguments."""
    with _named(arguments):
        return Runner.run_sync(agent, input, **arguments)


def run_streamed(agent: Any, input: Any, **arguments: Any) -> RunResultStreaming:
    """``Runner.run_streamed`` with the conversation named from its own arguments (the
    run's task starts inside the block, so it keeps the name while it streams)."""
    with _named(arguments):
        return Runner.run_streamed(agent, input, **arguments)


def _named(arguments: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    key = conversation_of(arguments)
    return contextlib.nullcontext() if key is None else conversation(key)


def _output(result: ToolExecutionResult) -> str | list[ToolOutputText | ToolOutputImage]:
    """The result's text, and its images as image outputs the SDK sends as images."""
    pictures = images(result)
    if not pictures:
        return result.text
    return [
        ToolOutputText(text=text_of(result)),
        *(ToolOutputImage(image_url=data_url(image)) for image in pictures),
    ]


__all__ = ["conversation", "conversation_of", "run", "run_streamed", "run_sync", "tools"]
