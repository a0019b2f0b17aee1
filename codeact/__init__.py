"""codeact: let language-model agents act through code.

One tool-calling contract (advertise, emit, dispatch, return) over one registry,
in native, code or both modes.
"""

from ._abort import AbortSignal
from ._call import ToolCall, parse_arguments
from ._events import DispatchEvent, ToolCallFinished, ToolCallStarted
from ._exceptions import CodeActError, ErrorCode, ToolDefinitionError, ToolError, UsageError
from ._invocation import Invocation
from ._json import FrozenJson, JsonValue
from ._policy import Action, Policy, Rule, RulePolicy, Verdict, allow, ask, deny
from ._registry import Disposer, Owner, ToolRegistry
from ._results import (
    ContentBlock,
    TextBlock,
    ToolExecutionFailure,
    ToolExecutionResult,
    ToolExecutionSuccess,
    ToolFailure,
)
from ._tool import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "AbortSignal",
    "Action",
    "CodeActError",
    "ContentBlock",
    "DispatchEvent",
    "Disposer",
    "ErrorCode",
    "FrozenJson",
    "Invocation",
    "JsonValue",
    "Owner",
    "Policy",
    "Rule",
    "RulePolicy",
    "TextBlock",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionFailure",
    "ToolExecutionResult",
    "ToolExecutionSuccess",
    "ToolFailure",
    "ToolRegistry",
    "UsageError",
    "Verdict",
    "allow",
    "ask",
    "deny",
    "parse_arguments",
    "tool",
]
