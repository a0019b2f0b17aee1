"""The OpenAI Agents SDK: a runtime's tools as ``FunctionTool``s.

``Agent(name="a", tools=openai_agents.tools(runtime))`` gives the agent ``run_code``;
``mode="both"`` adds every tool natively beside it. The SDK's call id is the call's id,
an image a tool or script gives reaches the model as the SDK's image output, and a
failure reaches it as the error text (the run goes on).

A conversation here is one run, or every run that shares a ``RunConfig(group_id=...)``
(the SDK's link between a conversation's runs): each gets a script session of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents import FunctionTool, ToolOutputImage, ToolOutputText
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


def _output(result: ToolExecutionResult) -> str | list[ToolOutputText | ToolOutputImage]:
    """The result's text, and its images as image outputs the SDK sends as images."""
    pictures = images(result)
    if not pictures:
        return result.text
    return [
        ToolOutputText(text=text_of(result)),
        *(ToolOutputImage(image_url=data_url(image)) for image in pictures),
    ]


__all__ = ["tools"]
