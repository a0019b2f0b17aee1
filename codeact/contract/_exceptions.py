"""Exceptions, split by who must act on them.

    CodeActError
    ├── ToolDefinitionError      the developer: a tool or schema that cannot be registered
    ├── UsageError               the developer: the library was called the wrong way
    └── ToolError                the model: a failed tool call, as a script sees it
                                 (carries the stable error ``code`` and ``message``)

Limits and denials reached while running are not raised to the host: the dispatch
pipeline turns them into failure results carrying one of the stable codes below, at
one boundary. Exceptions carry data and never log.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Stable error codes: other code matches on these strings."""

    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    POLICY_DENIED = "POLICY_DENIED"
    TIMEOUT = "TIMEOUT"
    ABORTED = "ABORTED"
    TOOL_ERROR = "TOOL_ERROR"
    INVALID_OUTPUT = "INVALID_OUTPUT"
    CODE_SYNTAX_ERROR = "CODE_SYNTAX_ERROR"
    CODE_RUNTIME_ERROR = "CODE_RUNTIME_ERROR"
    CODE_SECURITY_VIOLATION = "CODE_SECURITY_VIOLATION"
    CODE_RESOURCE_LIMIT = "CODE_RESOURCE_LIMIT"
    SUSPENDED = "SUSPENDED"
    REPLAY_DIVERGED = "REPLAY_DIVERGED"
    PREVIEW_STOPPED = "PREVIEW_STOPPED"


class CodeActError(Exception):
    """Base of every exception this library raises on purpose."""


class ToolDefinitionError(CodeActError, ValueError):
    """A tool cannot be registered: bad name, bad schema, duplicate, unschematic type."""


class UsageError(CodeActError, TypeError):
    """The library was called in a way it does not support."""


class ToolError(CodeActError):
    """A tool call failed; inside a script this is what a failed call raises.

    A tool body may raise it too, to choose the message the model reads.
    """

    def __init__(self, message: str, code: str = ErrorCode.TOOL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = str(code)

    def __reduce__(self) -> tuple[type[ToolError], tuple[str, str]]:
        return (type(self), (self.message, self.code))


# What scripts and tracebacks show: the public name, not this private module.
ToolError.__module__ = "codeact"

__all__ = ["CodeActError", "ErrorCode", "ToolDefinitionError", "ToolError", "UsageError"]
