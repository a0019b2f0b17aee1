"""The restricted interpreter behind ``run_code``. May import: contract.

The records and limits load on their own; the interpreter (RestrictedPython, the guards,
asyncio) loads when something asks for ``Sandbox`` or ``BoundTool``: a host whose scripts
run in worker processes never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import LimitExceeded, SecurityViolation
from ._limits import Limits
from ._outcome import ScriptError, ScriptOutcome, ToolCallRecord

if TYPE_CHECKING:
    from ._interpreter import BoundTool, Sandbox


def __getattr__(name: str) -> Any:
    if name in ("BoundTool", "Sandbox"):
        from . import _interpreter

        return getattr(_interpreter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
