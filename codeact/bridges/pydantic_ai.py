"""pydantic-ai: a runtime's tools as a toolset.

``Agent(model, toolsets=[pydantic_ai.toolset(runtime)])`` gives the agent ``run_code``;
``mode="both"`` adds every tool natively beside it. ``ctx.tool_call_id`` is the call's
id, an image reaches the model as ``BinaryContent`` in the tool result, and a failure
reaches it as the error text (the run goes on).

A conversation is pydantic-ai's own: ``ctx.conversation_id``, which every run that
continues a message history shares, so each conversation has a script session.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from pydantic_ai import BinaryContent, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from ..contract._results import ToolExecutionResult
from ..runtime._modes import Mode
from ._common import Dispatcher, Sessions, ToolSource, images, text_of

# The runtime validates arguments against the advertised schema itself (and says what
# is wrong in a result the model reads): here they pass through as they are.
_ANY_OBJECT = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)


class CodeactToolset(AbstractToolset[Any]):
    """A runtime's advertisement in one mode, each call dispatched through the runtime."""

    def __init__(
        self,
        source: ToolSource,
        *,
        mode: Mode | str | None = None,
        session: Callable[[RunContext[Any]], str] | None = None,
        id: str | None = None,
        max_retries: int = 1,
    ) -> None:
        self._dispatcher = Dispatcher(source, mode=mode)
        self._sessions = Sessions(self._dispatcher.runtime, "pydantic-ai")
        self._session = session
        self._id = id
        self._max_retries = max_retries

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            str(schema["name"]): ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=str(schema["name"]),
                    description=str(schema["description"]),
                    parameters_json_schema=dict(schema["parameters"]),
                ),
                max_retries=self._max_retries,
                args_validator=_ANY_OBJECT,
            )
            for schema in self._dispatcher.schemas()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        result = await self._dispatcher.acall(
            name, tool_args, call_id=ctx.tool_call_id, session=self._session_of(ctx)
        )
        return _output(result)

    def _session_of(self, ctx: RunContext[Any]) -> str:
        if self._session is not None:
            return self._sessions.named(self._session(ctx))
        if ctx.conversation_id:
            return self._sessions.named(ctx.conversation_id)
        return self._sessions.of(ctx.usage)  # no conversation id: the run is the conversation


def toolset(
    source: ToolSource,
    *,
    mode: Mode | str | None = None,
    session: Callable[[RunContext[Any]], str] | None = None,
) -> CodeactToolset:
    """``source``'s advertisement in ``mode`` as a pydantic-ai toolset.

    ``session`` names the script session of a call from its run context, when a
    conversation is something else than pydantic-ai's ``conversation_id``.
    """
    return CodeactToolset(source, mode=mode, session=session)


def _output(result: ToolExecutionResult) -> str | list[Any]:
    """The result's text, and its images as binary content the model sees as images."""
    pictures = images(result)
    if not pictures:
        return result.text
    media = [BinaryContent(base64.b64decode(p.data), media_type=p.mime_type) for p in pictures]
    return [text_of(result), *media]


__all__ = ["CodeactToolset", "toolset"]
