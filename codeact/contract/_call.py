"""Emission: a tool call as a model emitted it, and the defensive argument parse."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ._json import JsonValue, NotJsonError, detach, dumps


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """``{id, name, arguments}`` with ``arguments`` kept as the raw JSON text.

    A mapping is accepted for convenience and stored as its canonical JSON text,
    so a call is always a plain, immutable value.
    """

    id: str
    name: str
    arguments: str = ""

    def __init__(self, id: str, name: str, arguments: str | Mapping[str, object] = "") -> None:
        object.__setattr__(self, "id", str(id))
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "arguments", _raw_text(arguments))

    def parsed_arguments(self) -> JsonValue:
        """The arguments parsed defensively; see :func:`parse_arguments`."""
        return parse_arguments(self.arguments)


def _raw_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return str.__str__(arguments)
    try:
        return dumps(detach(arguments))
    except (NotJsonError, RecursionError):
        return repr(arguments)


def parse_arguments(raw: str) -> JsonValue:
    """Parse model-emitted arguments without ever raising.

    Empty (or blank) text means ``{}``, since models often send nothing for a tool
    without parameters. Text that is not JSON comes back as the string itself, for
    validation to reject with a message the model can act on.
    """
    if not raw.strip():
        return {}
    try:
        return detach(json.loads(raw))
    except (ValueError, RecursionError):
        return raw


__all__ = ["ToolCall", "parse_arguments"]
