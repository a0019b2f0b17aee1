"""codeact: let language-model agents act through code.

One tool-calling contract (advertise, emit, dispatch, return) over one registry,
in native, code or both modes.
"""

from __future__ import annotations

# First of all: the worker template imports the sandbox's world while this process
# imports codeact's, so a first script in a worker waits for the slower of the two, not
# for both in turn (the module imports next to nothing, to start it sooner).
from .executors._early_template import start_early_template as _start_early_template

_start_early_template()

import importlib  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from ._version import __version__ as __version__  # noqa: E402

if TYPE_CHECKING:
    from .agent._loop import (
        Agent,
        AgentEvent,
        Context,
        RetryPolicy,
        StepLimit,
        TokenBudgetExceeded,
        TurnStream,
    )
    from .code_mode._run_code import run_code_tool
    from .comparison._compare import Comparison, ComparisonTask, Interval, RunRecord, compare
    from .comparison._real import Cassette, CassetteMismatch, CassetteModel
    from .contract._abort import AbortSignal
    from .contract._call import ToolCall, parse_arguments
    from .contract._dispatch import report_progress
    from .contract._events import (
        DispatchEvent,
        FinalAnswer,
        ModelRetry,
        ScriptOutput,
        ToolCallFinished,
        ToolCallStarted,
        ToolProgress,
    )
    from .contract._exceptions import (
        CodeActError,
        ErrorCode,
        ToolDefinitionError,
        ToolError,
        UsageError,
    )
    from .contract._invocation import Invocation
    from .contract._json import FrozenJson, JsonValue, thaw
    from .contract._policy import (
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
    from .contract._registry import Disposer, Owner, ToolRegistry
    from .contract._results import (
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
    from .contract._tool import Tool, tool
    from .contract._tracing import configure_tracing
    from .durable._plan import Approval, Plan, PlannedWrite, PlanPolicy, PreviewEnd
    from .durable._record import Durable, PendingCall, ReplayDiverged, idempotency_key
    from .executors._confine import ConfinementReport
    from .executors._in_process import Executor, InProcessExecutor
    from .executors._process import ProcessExecutor
    from .providers._formats import (
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
    from .providers._http import AnthropicModel, OpenAIChatModel
    from .providers._models import (
        Delta,
        FunctionModel,
        Model,
        ModelError,
        ModelReply,
        ModelRequest,
        ScriptedModel,
        ScriptMismatch,
    )
    from .providers._strict import to_strict
    from .runtime._modes import Mode, Runtime
    from .sandbox import Limits
    from .session._session import (
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
    from .session._stores import ConcurrentWriter, EventStore, PostgresStore, SqliteStore


_EXPORTS: dict[str, str] = {
    "compare": ".comparison._compare",
    "Comparison": ".comparison._compare",
    "ComparisonTask": ".comparison._compare",
    "RunRecord": ".comparison._compare",
    "Interval": ".comparison._compare",
    "Cassette": ".comparison._real",
    "CassetteModel": ".comparison._real",
    "CassetteMismatch": ".comparison._real",
    "AgentEvent": ".agent._loop",
    "TurnStream": ".agent._loop",
    "ScriptOutput": ".contract._events",
    "ModelRetry": ".contract._events",
    "FinalAnswer": ".contract._events",
    "configure_tracing": ".contract._tracing",
    "Delta": ".providers._models",
    "to_strict": ".providers._strict",
    "anthropic_messages": ".providers._formats",
    "openai_chat_messages": ".providers._formats",
    "CorruptLog": ".session._session",
    "UserMessage": ".session._session",
    "AssistantMessage": ".session._session",
    "ToolCallRecorded": ".session._session",
    "ToolResultRecorded": ".session._session",
    "ModelExchange": ".session._session",
    "ErrorRecorded": ".session._session",
    "AbortRecorded": ".session._session",
    "ScriptMismatch": ".providers._models",
    "AbortSignal": ".contract._abort",
    "AnthropicModel": ".providers._http",
    "Action": ".contract._policy",
    "LATER": ".contract._policy",
    "Later": ".contract._policy",
    "Durable": ".durable._record",
    "Approval": ".durable._plan",
    "Plan": ".durable._plan",
    "PlannedWrite": ".durable._plan",
    "PlanPolicy": ".durable._plan",
    "PreviewEnd": ".durable._plan",
    "PendingCall": ".durable._record",
    "ReplayDiverged": ".durable._record",
    "idempotency_key": ".durable._record",
    "Agent": ".agent._loop",
    "Approver": ".contract._policy",
    "CodeActError": ".contract._exceptions",
    "ConfinementReport": ".executors._confine",
    "AudioBlock": ".contract._results",
    "ContentBlock": ".contract._results",
    "ImageBlock": ".contract._results",
    "ResourceBlock": ".contract._results",
    "ResourceLinkBlock": ".contract._results",
    "Context": ".agent._loop",
    "DispatchEvent": ".contract._events",
    "Disposer": ".contract._registry",
    "ErrorCode": ".contract._exceptions",
    "Executor": ".executors._in_process",
    "InProcessExecutor": ".executors._in_process",
    "FrozenJson": ".contract._json",
    "FunctionModel": ".providers._models",
    "Invocation": ".contract._invocation",
    "JsonValue": ".contract._json",
    "thaw": ".contract._json",
    "JsonlStore": ".session._session",
    "SqliteStore": ".session._stores",
    "PostgresStore": ".session._stores",
    "EventStore": ".session._stores",
    "ConcurrentWriter": ".session._stores",
    "Limits": ".sandbox",
    "Mode": ".runtime._modes",
    "OpenAIChatModel": ".providers._http",
    "Model": ".providers._models",
    "ModelError": ".providers._models",
    "ModelReply": ".providers._models",
    "ModelRequest": ".providers._models",
    "Owner": ".contract._registry",
    "Policy": ".contract._policy",
    "ProcessExecutor": ".executors._process",
    "RetryPolicy": ".agent._loop",
    "StepLimit": ".agent._loop",
    "TokenBudgetExceeded": ".agent._loop",
    "Rule": ".contract._policy",
    "RulePolicy": ".contract._policy",
    "Runtime": ".runtime._modes",
    "ScriptedModel": ".providers._models",
    "Session": ".session._session",
    "TextBlock": ".contract._results",
    "Tool": ".contract._tool",
    "ToolCall": ".contract._call",
    "ToolCallFinished": ".contract._events",
    "ToolCallStarted": ".contract._events",
    "ToolProgress": ".contract._events",
    "report_progress": ".contract._dispatch",
    "ToolDefinitionError": ".contract._exceptions",
    "ToolError": ".contract._exceptions",
    "ToolExecutionFailure": ".contract._results",
    "ToolExecutionResult": ".contract._results",
    "ToolExecutionSuccess": ".contract._results",
    "ToolFailure": ".contract._results",
    "ToolRegistry": ".contract._registry",
    "UsageError": ".contract._exceptions",
    "Verdict": ".contract._policy",
    "allow": ".contract._policy",
    "ask": ".contract._policy",
    "deny": ".contract._policy",
    "parse_arguments": ".contract._call",
    "anthropic_results": ".providers._formats",
    "anthropic_tools": ".providers._formats",
    "calls_from_anthropic": ".providers._formats",
    "calls_from_openai_chat": ".providers._formats",
    "calls_from_openai_responses": ".providers._formats",
    "openai_chat_results": ".providers._formats",
    "openai_chat_tools": ".providers._formats",
    "openai_responses_input": ".providers._formats",
    "openai_responses_results": ".providers._formats",
    "openai_responses_tools": ".providers._formats",
    "run_code_tool": ".code_mode._run_code",
    "tool": ".contract._tool",
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


__all__ = [  # noqa: RUF022 (plain sorted order: LATER among the Ls)
    "AbortRecorded",
    "AbortSignal",
    "Action",
    "Agent",
    "AgentEvent",
    "AnthropicModel",
    "Approval",
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
    "Plan",
    "PlanPolicy",
    "PlannedWrite",
    "Policy",
    "PostgresStore",
    "PreviewEnd",
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
