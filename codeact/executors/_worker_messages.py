"""What a worker may send during a run, checked by the host before anything is believed.

The worker is the boundary: a script that escaped the interpreter owns it, and writes
whatever it likes to its end of the channel. So every message of a run is checked for
its run number, its kind and its shape, and anything a well-behaved worker never sends
(``Forged``) costs the worker its life. What the run did is the host's own record: the
calls the host answered, the output it passed on; the worker's outcome supplies only
the value and the error, both bounded here.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..contract._dispatch import owned_value
from ..contract._exceptions import ErrorCode
from ..contract._json import JsonValue
from ..contract._results import ToolExecutionResult
from ..sandbox import Limits, ScriptError, ScriptOutcome, ToolCallRecord
from ..sandbox._outcome import (
    MAX_RESULT_CHARS,
    MAX_RESULT_DEPTH,
    SCALAR_CHARS,
    outcome_from_json,
)
from ..stdlib._tape_bounds import FLOAT_KINDS, INT_KINDS, MAX_ENTROPY_BYTES

MAX_ERROR_CHARS = 4_000  # the interpreter's own bound on an error message
MAX_LINE_CHARS = 1_000  # a source line, an exception's kind, a hint
OUTPUT_NOTE_CHARS = 200  # room for the interpreter's own "output truncated" line
RUN_OPS = frozenset({"call", "calls", "output", "done"})
# The codes a run can end with (a tool's own code reaches the model inside the message).
RUN_CODES = frozenset(
    {
        ErrorCode.ABORTED,
        ErrorCode.CODE_SYNTAX_ERROR,
        ErrorCode.CODE_RUNTIME_ERROR,
        ErrorCode.CODE_SECURITY_VIOLATION,
        ErrorCode.CODE_RESOURCE_LIMIT,
        ErrorCode.PREVIEW_STOPPED,
    }
)
# A result's meta key that makes it a planned write: the script gets a pending value.
PLANNED = "codeact.planned"


class Forged(Exception):
    """A message no well-behaved worker sends: another run's, unknown, or misshapen."""


def checked(message: dict[str, Any], run: int) -> str:
    """The message's kind, once it is known to belong to ``run`` and to be one a run has."""
    if message.get("run") != run:  # a stale or forged message: another run's answer
        raise Forged("a message that belongs to another run")
    op = message.get("op")
    if op not in RUN_OPS:  # anything else is out of order here
        raise Forged(f"an unexpected message during a run ({str(op)[:40]!r})")
    return op  # type: ignore[no-any-return]


def asked_calls(
    message: dict[str, Any], op: str, bound: Collection[str]
) -> list[tuple[str, dict[str, JsonValue]]]:
    """The calls a ``call`` or ``calls`` message asks for; only tools this run bound.

    The interpreter never asks for a tool it was not given, so a name outside ``bound``
    (of any length or type) is forged, not an unknown tool to report back.
    """
    if op == "call":
        return [_asked(message, bound)]
    calls = message.get("calls")
    if type(calls) is not list or not calls:
        raise Forged("a batch of calls that is not a list of calls")
    return [_asked(call, bound) for call in calls]


def _asked(call: Any, bound: Collection[str]) -> tuple[str, dict[str, JsonValue]]:
    if type(call) is not dict:
        raise Forged("a call that is not an object")
    name, arguments = call.get("name"), call.get("arguments")
    if type(name) is not str or name not in bound:  # a forged name never reaches dispatch
        raise Forged("a call to a tool the run did not bind")
    if type(arguments) is not dict:
        raise Forged("a call whose arguments are not an object")
    return name, arguments


def readings(message: dict[str, Any], room: int) -> tuple[list[list[JsonValue]], str | None]:
    """A durable run's fresh clock and entropy readings, and whether the worker saw its
    replayed ones differ; at most ``room`` readings (the run's bound, less those it sent)."""
    reads = message.get("reads", [])
    if type(reads) is not list or len(reads) > room:  # the worker's tape is bounded too
        raise Forged("readings that are not a bounded list")
    for reading in reads:
        if type(reading) is not list or len(reading) != 2:
            raise Forged("a reading that is not a pair")
        kind, value = reading
        if not _reading_fits(kind, value):  # only the kinds the facades read, of their type
            raise Forged("a reading of an unknown kind or the wrong type")
    diverged = message.get("diverged")
    if diverged is not None and type(diverged) is not str:
        raise Forged("a divergence that is not text")
    return reads, None if diverged is None else bounded(diverged, MAX_LINE_CHARS)


# What only a durable run's messages carry (its worker's tape and call lines).
RECORDING_FIELDS = ("reads", "diverged", "line", "lines")


def call_lines(message: dict[str, Any], op: str, count: int, last: int) -> list[int | None]:
    """The script lines (1 to ``last``) a durable run's ``count`` calls were made on, as
    its ``call`` ("line") or ``calls`` ("lines") says; None where not said."""
    own, other = ("line", "lines") if op == "call" else ("lines", "line")
    if other in message or (op == "done" and own in message):  # not this message's field
        raise Forged(f"a {op} message with the field {other if other in message else own!r}")
    if op == "call":
        lines = [message.get("line")]
    else:
        lines = message.get("lines", [None] * count)
        if type(lines) is not list or len(lines) != count:
            raise Forged("call lines that do not match the calls")
    for line in lines:
        if line is not None and (type(line) is not int or not 0 < line <= last):
            raise Forged("a call line that is not a line of the script")
    return lines


def _reading_fits(kind: Any, value: Any) -> bool:
    if kind in FLOAT_KINDS:
        return type(value) is float or type(value) is int
    if kind in INT_KINDS:
        return type(value) is int
    if kind == "entropy":
        return (
            type(value) is str
            and len(value) <= 2 * MAX_ENTROPY_BYTES
            and all(c in "0123456789abcdef" for c in value)
        )
    return False


def answer_message(result: ToolExecutionResult) -> dict[str, Any]:
    """What a script receives for a call, as the worker is sent it (and a record keeps it)."""
    if result.is_error:
        return {
            "op": "result",
            "ok": False,
            "code": result.error.code,
            "message": result.error.message,
        }
    if isinstance(result.meta, Mapping) and type(result.meta.get(PLANNED)) is int:
        return {"op": "result", "ok": True, "pending": result.meta[PLANNED]}
    return {"op": "result", "ok": True, "value": owned_value(result)}


def printed_text(message: dict[str, Any]) -> str:
    text = message.get("text")
    if type(text) is not str:
        raise Forged("printed output that is not text")
    return text


def host_outcome(
    message: dict[str, Any], records: Sequence[ToolCallRecord], limits: Limits
) -> ScriptOutcome:
    """The run's outcome as the host reports it: the value and error from the worker
    (checked, bounded), the tool calls from the host's own record, output bounded."""
    sent = message.get("outcome")
    if type(sent) is dict:  # the calls are the host's own record: the claim is not even read
        if type(sent.get("tool_calls", [])) is not list:
            raise Forged("an outcome of the wrong shape")
        sent = {key: value for key, value in sent.items() if key != "tool_calls"}
    try:
        claimed = outcome_from_json(sent)
    except (TypeError, ValueError, AttributeError):
        raise Forged("an outcome of the wrong shape") from None
    problem = oversized(claimed.value)
    if problem is not None:  # an honest worker cuts its value long before this
        raise Forged(f"an outcome value {problem}")
    error = claimed.error
    if error is not None:
        if error.code not in RUN_CODES:  # programs match on codes: only a run's own
            raise Forged("an outcome with an unknown error code")
        error = _bounded_error(error)
    return ScriptOutcome(
        value=claimed.value,
        output=bounded(claimed.output, limits.max_output_chars + OUTPUT_NOTE_CHARS),
        tool_calls=tuple(records),  # the host's record, never the worker's claim
        error=error,
    )


def oversized(value: Any) -> str | None:
    """What is wrong with a value the worker claims its script returned, or None.

    The interpreter makes a run's value with ``plain_result``: exact JSON types, at most
    ``MAX_RESULT_DEPTH`` containers deep, and at most ``MAX_RESULT_CHARS`` spent by the same
    count (a string its length, a key its length, a container its length, any other leaf
    ``SCALAR_CHARS``). The same count here, without recursion, bounds what a lying worker
    can hand the host's program (or the host's encoders, which do recurse).
    """
    budget = MAX_RESULT_CHARS
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is str:
            budget -= max(len(item), 1)
        elif kind is list or kind is dict:
            if depth >= MAX_RESULT_DEPTH:
                return f"nested deeper than {MAX_RESULT_DEPTH} levels"
            budget -= max(len(item), 1)
            if kind is dict:
                for key in item:
                    if type(key) is not str:
                        return "with a key that is not text"
                    budget -= len(key)
                items = item.values()
            else:
                items = item
            if budget < 0:
                break
            stack.extend((inner, depth + 1) for inner in items)
        elif kind is float and not math.isfinite(item):
            return "holding NaN or infinity, which JSON has not"
        elif item is None or kind is bool or kind is int or kind is float:
            budget -= SCALAR_CHARS
        else:
            return f"holding a {kind.__name__}, which JSON has not"
        if budget < 0:
            break
    if budget < 0:
        return f"larger than {MAX_RESULT_CHARS:,} characters"
    return None


def _bounded_error(error: ScriptError) -> ScriptError:
    return replace(
        error,
        message=bounded(error.message, MAX_ERROR_CHARS),
        kind=bounded(error.kind, MAX_LINE_CHARS),
        source_line=None
        if error.source_line is None
        else bounded(error.source_line, MAX_LINE_CHARS),
        hint=None if error.hint is None else bounded(error.hint, MAX_LINE_CHARS),
        cause=None if error.cause is None else bounded(error.cause, MAX_ERROR_CHARS),
    )


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit:,} more characters]"


__all__ = [
    "Forged",
    "answer_message",
    "asked_calls",
    "bounded",
    "checked",
    "host_outcome",
    "oversized",
    "printed_text",
    "readings",
]
