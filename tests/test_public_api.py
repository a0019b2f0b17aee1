"""The public surface: one sorted ``__all__`` that matches what the package exports."""

from __future__ import annotations

import codeact


def test_all_is_sorted_and_unique() -> None:
    assert list(codeact.__all__) == sorted(set(codeact.__all__))


def test_every_public_name_is_exported_and_every_export_is_public() -> None:
    exported = {name for name in dir(codeact) if not name.startswith("_")}
    modules = {name for name in exported if type(getattr(codeact, name)).__name__ == "module"}
    assert exported - modules == set(codeact.__all__)


def test_stable_error_codes_are_all_present() -> None:
    expected = {
        "UNKNOWN_TOOL",
        "INVALID_ARGUMENTS",
        "POLICY_DENIED",
        "TIMEOUT",
        "ABORTED",
        "TOOL_ERROR",
        "INVALID_OUTPUT",
        "CODE_SYNTAX_ERROR",
        "CODE_RUNTIME_ERROR",
        "CODE_SECURITY_VIOLATION",
        "CODE_RESOURCE_LIMIT",
        "SUSPENDED",
        "REPLAY_DIVERGED",
        "PREVIEW_STOPPED",
    }
    assert {code.value for code in codeact.ErrorCode} == expected


def test_every_name_in_all_resolves_to_an_object() -> None:
    for name in codeact.__all__:
        assert getattr(codeact, name) is not None, name


# What a user configures, catches or types, by what it is for: each importable from codeact.
PUBLIC = {
    "tools and the registry": [
        "Tool",
        "tool",
        "ToolRegistry",
        "ToolCall",
        "parse_arguments",
        "Invocation",
        "Owner",
        "Disposer",
        "report_progress",
    ],
    "results and content": [
        "ToolExecutionResult",
        "ToolExecutionSuccess",
        "ToolExecutionFailure",
        "ToolFailure",
        "ContentBlock",
        "TextBlock",
        "ImageBlock",
        "AudioBlock",
        "ResourceBlock",
        "ResourceLinkBlock",
        "FrozenJson",
        "JsonValue",
        "thaw",
    ],
    "modes, runtime and executors": [
        "Mode",
        "Runtime",
        "Executor",
        "InProcessExecutor",
        "ProcessExecutor",
        "Limits",
        "ConfinementReport",
        "run_code_tool",
        "AbortSignal",
    ],
    "policy": [
        "Policy",
        "RulePolicy",
        "Rule",
        "Action",
        "Verdict",
        "Approver",
        "allow",
        "ask",
        "deny",
        "LATER",
        "Later",
    ],
    "durable runs": ["Durable", "PendingCall", "ReplayDiverged", "idempotency_key"],
    "preview and commit": ["Approval", "Plan", "PlanPolicy", "PlannedWrite", "PreviewEnd"],
    "events": [
        "DispatchEvent",
        "ToolCallStarted",
        "ToolCallFinished",
        "ToolProgress",
        "ScriptOutput",
        "AgentEvent",
        "ModelRetry",
        "FinalAnswer",
        "TurnStream",
    ],
    "the loop and its terminal errors": [
        "Agent",
        "Context",
        "RetryPolicy",
        "StepLimit",
        "TokenBudgetExceeded",
    ],
    "models": [
        "Model",
        "ModelRequest",
        "ModelReply",
        "ModelError",
        "Delta",
        "OpenAIChatModel",
        "AnthropicModel",
        "ScriptedModel",
        "ScriptMismatch",
        "FunctionModel",
    ],
    "sessions": [
        "Session",
        "JsonlStore",
        "SqliteStore",
        "PostgresStore",
        "EventStore",
        "ConcurrentWriter",
        "CorruptLog",
        "UserMessage",
        "AssistantMessage",
        "ToolCallRecorded",
        "ToolResultRecorded",
        "ModelExchange",
        "ErrorRecorded",
        "AbortRecorded",
    ],
    "provider formats": [
        "openai_chat_tools",
        "openai_responses_tools",
        "anthropic_tools",
        "to_strict",
        "calls_from_openai_chat",
        "calls_from_openai_responses",
        "calls_from_anthropic",
        "openai_chat_results",
        "openai_responses_results",
        "anthropic_results",
        "openai_chat_messages",
        "openai_responses_input",
        "anthropic_messages",
    ],
    "tracing": ["configure_tracing"],
    "comparing styles": [
        "compare",
        "Comparison",
        "ComparisonTask",
        "RunRecord",
        "Interval",
        "Cassette",
        "CassetteModel",
        "CassetteMismatch",
    ],
    "errors": ["CodeActError", "ErrorCode", "ToolDefinitionError", "ToolError", "UsageError"],
}


def test_everything_a_user_configures_catches_or_types_is_public() -> None:
    listed = [name for names in PUBLIC.values() for name in names]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(codeact.__all__)
