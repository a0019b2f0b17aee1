"""codeact: let language-model agents act through code.

One tool-calling contract (advertise, emit, dispatch, return) over one registry,
in native, code or both modes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._abort import AbortSignal
    from ._call import ToolCall, parse_arguments
    from ._code_mode import run_code_tool
    from ._compare import Comparison, ComparisonTask, Interval, RunRecord, compare
    from ._confine import ConfinementReport
    from ._dispatch import report_progress
    from ._durable import Durable, PendingCall, ReplayDiverged, idempotency_key
    from ._events import (
        DispatchEvent,
        FinalAnswer,
        ModelRetry,
        ScriptOutput,
        ToolCallFinished,
        ToolCallStarted,
        ToolProgress,
    )
    from ._exceptions import CodeActError, ErrorCode, ToolDefinitionError, ToolError, UsageError
    from ._executors import Executor, InProcessExecutor
    from ._http_models import AnthropicModel, OpenAIChatModel
    from ._invocation import Invocation
    from ._json import FrozenJson, JsonValue, thaw
    from ._loop import (
        Agent,
        AgentEvent,
        Context,
        RetryPolicy,
        StepLimit,
        TokenBudgetExceeded,
        TurnStream,
    )
    from ._models import (
        Delta,
        FunctionModel,
        Model,
        ModelError,
        ModelReply,
        ModelRequest,
        ScriptedModel,
        ScriptMismatch,
    )
    from ._modes import Mode, Runtime
    from ._policy import (
        LATER,
        Action,
        Approver,
        Later,
        Policy,
        Rule,
        RulePolicy,
        Verdict,
        allow,
        ask,
        deny,
    )
    from ._process import ProcessExecutor
    from ._providers import (
        anthropic_messages,
        anthropic_results,
        anthropic_tools,
        calls_from_anthropic,
        calls_from_openai_chat,
        calls_from_openai_responses,
        openai_chat_messages,
        openai_chat_results,
        openai_chat_tools,
        openai_responses_input,
        openai_responses_results,
        openai_responses_tools,
    )
    from ._registry import Disposer, Owner, ToolRegistry
    from ._results import (
        AudioBlock,
        ContentBlock,
        ImageBlock,
        ResourceBlock,
        ResourceLinkBlock,
        TextBlock,
        ToolExecutionFailure,
        ToolExecutionResult,
        ToolExecutionSuccess,
        ToolFailure,
    )
    from ._sandbox import Limits
    from ._session import (
        AbortRecorded,
        AssistantMessage,
        CorruptLog,
        ErrorRecorded,
        JsonlStore,
        ModelExchange,
        Session,
        ToolCallRecorded,
        ToolResultRecorded,
        UserMessage,
    )
    from ._stores import ConcurrentWriter, EventStore, PostgresStore, SqliteStore
    from ._strict import to_strict
    from ._suite.real import Cassette, CassetteMismatch, CassetteModel
    from ._tool import Tool, tool
    from ._tracing import configure_tracing


_EXPORTS: dict[str, str] = {
    "compare": "._compare",
    "Comparison": "._compare",
    "ComparisonTask": "._compare",
    "RunRecord": "._compare",
    "Interval": "._compare",
    "Cassette": "._suite.real",
    "CassetteModel": "._suite.real",
    "CassetteMismatch": "._suite.real",
    "AgentEvent": "._loop",
    "TurnStream": "._loop",
    "ScriptOutput": "._events",
    "ModelRetry": "._events",
    "FinalAnswer": "._events",
    "configure_tracing": "._tracing",
    "Delta": "._models",
    "to_strict": "._strict",
    "anthropic_messages": "._providers",
    "openai_chat_messages": "._providers",
    "CorruptLog": "._session",
    "UserMessage": "._session",
    "AssistantMessage": "._session",
    "ToolCallRecorded": "._session",
    "ToolResultRecorded": "._session",
    "ModelExchange": "._session",
    "ErrorRecorded": "._session",
    "AbortRecorded": "._session",
    "ScriptMismatch": "._models",
    "AbortSignal": "._abort",
    "AnthropicModel": "._http_models",
    "Action": "._policy",
    "LATER": "._policy",
    "Later": "._policy",
    "Durable": "._durable",
    "PendingCall": "._durable",
    "ReplayDiverged": "._durable",
    "idempotency_key": "._durable",
    "Agent": "._loop",
    "Approver": "._policy",
    "CodeActError": "._exceptions",
    "ConfinementReport": "._confine",
    "AudioBlock": "._results",
    "ContentBlock": "._results",
    "ImageBlock": "._results",
    "ResourceBlock": "._results",
    "ResourceLinkBlock": "._results",
    "Context": "._loop",
    "DispatchEvent": "._events",
    "Disposer": "._registry",
    "ErrorCode": "._exceptions",
    "Executor": "._executors",
    "InProcessExecutor": "._executors",
    "FrozenJson": "._json",
    "FunctionModel": "._models",
    "Invocation": "._invocation",
    "JsonValue": "._json",
    "thaw": "._json",
    "JsonlStore": "._session",
    "SqliteStore": "._stores",
    "PostgresStore": "._stores",
    "EventStore": "._stores",
    "ConcurrentWriter": "._stores",
    "Limits": "._sandbox",
    "Mode": "._modes",
    "OpenAIChatModel": "._http_models",
    "Model": "._models",
    "ModelError": "._models",
    "ModelReply": "._models",
    "ModelRequest": "._models",
    "Owner": "._registry",
    "Policy": "._policy",
    "ProcessExecutor": "._process",
    "RetryPolicy": "._loop",
    "StepLimit": "._loop",
    "TokenBudgetExceeded": "._loop",
    "Rule": "._policy",
    "RulePolicy": "._policy",
    "Runtime": "._modes",
    "ScriptedModel": "._models",
    "Session": "._session",
    "TextBlock": "._results",
    "Tool": "._tool",
    "ToolCall": "._call",
    "ToolCallFinished": "._events",
    "ToolCallStarted": "._events",
    "ToolProgress": "._events",
    "report_progress": "._dispatch",
    "ToolDefinitionError": "._exceptions",
    "ToolError": "._exceptions",
    "ToolExecutionFailure": "._results",
    "ToolExecutionResult": "._results",
    "ToolExecutionSuccess": "._results",
    "ToolFailure": "._results",
    "ToolRegistry": "._registry",
    "UsageError": "._exceptions",
    "Verdict": "._policy",
    "allow": "._policy",
    "ask": "._policy",
    "deny": "._policy",
    "parse_arguments": "._call",
    "anthropic_results": "._providers",
    "anthropic_tools": "._providers",
    "calls_from_anthropic": "._providers",
    "calls_from_openai_chat": "._providers",
    "calls_from_openai_responses": "._providers",
    "openai_chat_results": "._providers",
    "openai_chat_tools": "._providers",
    "openai_responses_input": "._providers",
    "openai_responses_results": "._providers",
    "openai_responses_tools": "._providers",
    "run_code_tool": "._code_mode",
    "tool": "._tool",
}

# Names resolve on first use (PEP 562), so a sandbox worker process that needs only
# the interpreter does not pay for importing pydantic and jsonschema.


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codeact' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 (plain sorted order: LATER among the Ls)
    "AbortRecorded",
    "AbortSignal",
    "Action",
    "Agent",
    "AgentEvent",
    "AnthropicModel",
    "Approver",
    "AssistantMessage",
    "AudioBlock",
    "Cassette",
    "CassetteMismatch",
    "CassetteModel",
    "CodeActError",
    "Comparison",
    "ComparisonTask",
    "ConcurrentWriter",
    "ConfinementReport",
    "ContentBlock",
    "Context",
    "CorruptLog",
    "Delta",
    "DispatchEvent",
    "Disposer",
    "Durable",
    "ErrorCode",
    "ErrorRecorded",
    "EventStore",
    "Executor",
    "FinalAnswer",
    "FrozenJson",
    "FunctionModel",
    "ImageBlock",
    "InProcessExecutor",
    "Interval",
    "Invocation",
    "JsonValue",
    "JsonlStore",
    "LATER",
    "Later",
    "Limits",
    "Mode",
    "Model",
    "ModelError",
    "ModelExchange",
    "ModelReply",
    "ModelRequest",
    "ModelRetry",
    "OpenAIChatModel",
    "Owner",
    "PendingCall",
    "Policy",
    "PostgresStore",
    "ProcessExecutor",
    "ReplayDiverged",
    "ResourceBlock",
    "ResourceLinkBlock",
    "RetryPolicy",
    "Rule",
    "RulePolicy",
    "RunRecord",
    "Runtime",
    "ScriptMismatch",
    "ScriptOutput",
    "ScriptedModel",
    "Session",
    "SqliteStore",
    "StepLimit",
    "TextBlock",
    "TokenBudgetExceeded",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallRecorded",
    "ToolCallStarted",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionFailure",
    "ToolExecutionResult",
    "ToolExecutionSuccess",
    "ToolFailure",
    "ToolProgress",
    "ToolRegistry",
    "ToolResultRecorded",
    "TurnStream",
    "UsageError",
    "UserMessage",
    "Verdict",
    "allow",
    "anthropic_messages",
    "anthropic_results",
    "anthropic_tools",
    "ask",
    "calls_from_anthropic",
    "calls_from_openai_chat",
    "calls_from_openai_responses",
    "compare",
    "configure_tracing",
    "deny",
    "idempotency_key",
    "openai_chat_messages",
    "openai_chat_results",
    "openai_chat_tools",
    "openai_responses_input",
    "openai_responses_results",
    "openai_responses_tools",
    "parse_arguments",
    "report_progress",
    "run_code_tool",
    "thaw",
    "to_strict",
    "tool",
]
