"""The restricted interpreter behind ``run_code``."""

from ._errors import LimitExceeded, SecurityViolation
from ._interpreter import BoundTool, Sandbox, ScriptError, ScriptOutcome, ToolCallRecord
from ._limits import Limits

__all__ = [
    "BoundTool",
    "LimitExceeded",
    "Limits",
    "Sandbox",
    "ScriptError",
    "ScriptOutcome",
    "SecurityViolation",
    "ToolCallRecord",
]
