"""What a run reports: plain records the host reads without loading the interpreter."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..contract._json import JsonValue

# A run's value as a result may be: the interpreter makes it within these, and the host
# checks a worker's claimed value against the same (``executors._worker_messages``).
MAX_RESULT_DEPTH = 50
SCALAR_CHARS = 8  # what a number, a bool or None counts towards a result's size
MAX_RESULT_CHARS = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """A call a script made: what a failed script already did is shown to the model."""

    name: str
    ok: bool
    code: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptError:
    """Why a run failed, in terms the model can act on."""

    code: str
    message: str
    kind: str = ""
    line: int | None = None
    source_line: str | None = None
    hint: str | None = None
    # The exception this one was raised from or while handling, as CPython would show it
    # above it: "ZeroDivisionError: division by zero\n\nThe above exception was ...".
    cause: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptOutcome:
    """What one run produced: the last expression's value, output, tool calls, or an error."""

    value: JsonValue = None
    output: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    error: ScriptError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# On the wire between a worker and its host --------------------------------------------


def outcome_to_json(outcome: ScriptOutcome) -> dict[str, Any]:
    """The outcome as JSON; the value is the run's own plain copy (not copied again)."""
    error = outcome.error
    return {
        "value": outcome.value,
        "output": outcome.output,
        "tool_calls": [{"name": c.name, "ok": c.ok, "code": c.code} for c in outcome.tool_calls],
        "error": None if error is None else asdict(error),
    }


def outcome_from_json(data: Any) -> ScriptOutcome:
    """An outcome read from a worker, checked field by field: the worker is not trusted.

    Anything of the wrong shape raises TypeError, and the host treats the worker as lost.
    """
    if type(data) is not dict:
        raise TypeError("an outcome is an object")
    error = data.get("error")
    calls = data.get("tool_calls", [])
    if type(calls) is not list:
        raise TypeError("tool_calls is a list")
    return ScriptOutcome(
        value=data.get("value"),
        output=_typed(data.get("output", ""), str),
        tool_calls=tuple(
            ToolCallRecord(
                name=_typed(c.get("name"), str),
                ok=_typed(c.get("ok"), bool),
                code=_typed(c.get("code"), str, optional=True),
            )
            for c in calls
            if type(c) is dict or _typed(c, dict)
        ),
        error=None if error is None else _error_from_json(error),
    )


def _error_from_json(data: Any) -> ScriptError:
    if type(data) is not dict:
        raise TypeError("an error is an object")
    return ScriptError(
        code=_typed(data.get("code"), str),
        message=_typed(data.get("message"), str),
        kind=_typed(data.get("kind", ""), str),
        line=_typed(data.get("line"), int, optional=True),
        source_line=_typed(data.get("source_line"), str, optional=True),
        hint=_typed(data.get("hint"), str, optional=True),
        cause=_typed(data.get("cause"), str, optional=True),
    )


def _typed(value: Any, kind: type, *, optional: bool = False) -> Any:
    if (value is None and optional) or type(value) is kind:
        return value
    raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")


__all__ = ["ScriptError", "ScriptOutcome", "ToolCallRecord", "outcome_from_json", "outcome_to_json"]
