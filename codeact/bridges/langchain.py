"""LangChain and LangGraph: a runtime's tools as LangChain tools.

``create_react_agent(model, langchain.tools(runtime))`` (or a ``ToolNode``, or
``model.bind_tools``) gives the agent ``run_code``; ``mode="both"`` adds every tool
natively beside it. The tools work from ``invoke`` and ``ainvoke``; a model's tool
call id is the call's id (and the ``ToolMessage``'s); an image reaches the model as an
image content block; a failure is a ``ToolMessage`` with ``status="error"``.

A conversation is LangGraph's thread (``configurable.thread_id``): each has a script
session. A call made without a thread runs in a session of its own, closed after it: a
graph invoked without a thread keeps no names between its steps, and never hands one
caller's names to another (give it a thread, or ``session=``, to keep them).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

from ..contract._results import ToolExecutionResult
from ..runtime._modes import Mode
from ._common import Dispatcher, Sessions, ToolSource, images, text_of

# The model's id for the call being run: LangChain hands it to ``run``/``arun`` only.
_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "codeact_langchain_call_id", default=None
)


class CodeactTool(BaseTool):
    """One advertised tool; its arguments go to the runtime as the model sent them."""

    dispatcher: Any
    sessions: Any
    session: Any = None  # Callable[[RunnableConfig], str] | None
    handle_tool_error: bool = True  # a failure is a result the model reads

    def run(
        self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any
    ) -> Any:
        token = _CALL_ID.set(tool_call_id)
        try:
            return super().run(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL_ID.reset(token)

    async def arun(
        self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any
    ) -> Any:
        token = _CALL_ID.set(tool_call_id)
        try:
            return await super().arun(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def _run(self, config: RunnableConfig, **arguments: Any) -> Any:
        session = self._session_of(config)
        if session is None:
            result = self.dispatcher.call_alone(
                self.name, arguments, call_id=_CALL_ID.get(), prefix=self.sessions.prefix
            )
        else:
            result = self.dispatcher.call(
                self.name, arguments, call_id=_CALL_ID.get(), session=session
            )
        return _output(result)

    async def _arun(self, config: RunnableConfig, **arguments: Any) -> Any:
        session = self._session_of(config)
        if session is None:
            result = await self.dispatcher.acall_alone(
                self.name, arguments, call_id=_CALL_ID.get(), prefix=self.sessions.prefix
            )
        else:
            result = await self.dispatcher.acall(
                self.name, arguments, call_id=_CALL_ID.get(), session=session
            )
        return _output(result)

    def _session_of(self, config: RunnableConfig) -> str | None:
        """The thread's session; None for a call with no thread (it runs alone)."""
        configurable = config.get("configurable") or {}
        if self.session is not None:
            return str(self.sessions.named(self.session(config)))
        thread = configurable.get("thread_id")
        return None if thread is None else str(self.sessions.named(str(thread)))


def tools(
    source: ToolSource,
    *,
    mode: Mode | str | None = None,
    session: Callable[[RunnableConfig], str] | None = None,
) -> list[BaseTool]:
    """``source``'s advertisement in ``mode`` as LangChain tools.

    ``session`` names the script session of a call from its run config, when a
    conversation is something else than a LangGraph thread.
    """
    dispatcher = Dispatcher(source, mode=mode)
    sessions = Sessions(dispatcher.runtime, "langchain")
    return [
        CodeactTool(
            name=str(schema["name"]),
            description=str(schema["description"]),
            args_schema=dict(schema["parameters"]),
            dispatcher=dispatcher,
            sessions=sessions,
            session=session,
        )
        for schema in dispatcher.schemas()
    ]


def _output(result: ToolExecutionResult) -> str | list[dict[str, Any]]:
    """The result's text, and its images as standard image content blocks."""
    if result.is_error:
        raise ToolException(result.text)
    pictures = images(result)
    if not pictures:
        return result.text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text_of(result)}]
    blocks += [{"type": "image", "base64": p.data, "mime_type": p.mime_type} for p in pictures]
    return blocks


__all__ = ["CodeactTool", "tools"]
