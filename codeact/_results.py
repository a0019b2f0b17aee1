"""What a tool call returns: a discriminated result citing the call it answers.

``value`` is the canonical JSON a tool produced, for programs; ``content`` is the
rendered blocks a model reads. Different code makes each, so neither parses the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ._json import FrozenJson


@dataclass(frozen=True, kw_only=True, slots=True)
class TextBlock:
    """A block of text the model reads."""

    text: str
    type: Literal["text"] = "text"


ContentBlock: TypeAlias = TextBlock


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolFailure:
    """Why a call failed: a message the model can act on and a stable code."""

    message: str
    code: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolExecutionSuccess:
    """A call that ran and produced a value that passed its output schema."""

    call_id: str
    name: str
    value: FrozenJson
    content: tuple[ContentBlock, ...]
    meta: FrozenJson = None
    is_error: Literal[False] = field(default=False, init=False)

    @property
    def text(self) -> str:
        """All text blocks joined, as a model would read them."""
        return "\n".join(block.text for block in self.content)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolExecutionFailure:
    """A call that failed anywhere between resolution and rendering."""

    call_id: str
    name: str
    error: ToolFailure
    content: tuple[ContentBlock, ...]
    is_error: Literal[True] = field(default=True, init=False)

    @property
    def text(self) -> str:
        """All text blocks joined, as a model would read them."""
        return "\n".join(block.text for block in self.content)


ToolExecutionResult: TypeAlias = ToolExecutionSuccess | ToolExecutionFailure


def failure(call_id: str, name: str, code: str, message: str) -> ToolExecutionFailure:
    """A failure result whose content tells the model what went wrong."""
    return ToolExecutionFailure(
        call_id=call_id,
        name=name,
        error=ToolFailure(message=message, code=str(code)),
        content=(TextBlock(text=f"Error [{code}]: {message}"),),
    )


__all__ = [
    "ContentBlock",
    "TextBlock",
    "ToolExecutionFailure",
    "ToolExecutionResult",
    "ToolExecutionSuccess",
    "ToolFailure",
    "failure",
]
