"""What a tool call returns: a discriminated result citing the call it answers.

``value`` is the canonical JSON a tool produced, for programs; ``content`` is the
rendered blocks a model reads. Different code makes each, so neither parses the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

from ._json import FrozenJson, thaw


@dataclass(frozen=True, kw_only=True, slots=True)
class TextBlock:
    """A block of text the model reads."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Media:
    data: str  # base64
    mime_type: str
    type: str

    @property
    def text(self) -> str:
        """What a reader of text only is told: that it is there, and what it is."""
        return f"[{self.type} {self.mime_type}, {len(self.data) * 3 // 4:,} bytes]"


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageBlock(_Media):
    """An image: providers that take images in tool results get it."""

    type: Literal["image"] = "image"


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioBlock(_Media):
    """Audio: no provider takes it in tool results, so models read its line."""

    type: Literal["audio"] = "audio"


@dataclass(frozen=True, kw_only=True, slots=True)
class ResourceBlock:
    """An embedded resource: its text is read; a binary one (``blob``) is named."""

    uri: str
    mime_type: str | None = None
    body: str | None = None
    blob: str | None = None
    type: Literal["resource"] = "resource"

    @property
    def text(self) -> str:
        about = f"[resource {self.uri}{' ' + self.mime_type if self.mime_type else ''}]"
        if self.body is not None:
            return f"{about}\n{self.body}"
        size = len(self.blob or "") * 3 // 4
        return f"{about[:-1]}, {size:,} bytes]" if self.blob else about


@dataclass(frozen=True, kw_only=True, slots=True)
class ResourceLinkBlock:
    """A link to a resource the model may ask for."""

    uri: str
    name: str = ""
    mime_type: str | None = None
    type: Literal["resource_link"] = "resource_link"

    @property
    def text(self) -> str:
        return f"[resource link {self.uri}{' ' + self.name if self.name else ''}]"


ContentBlock: TypeAlias = TextBlock | ImageBlock | AudioBlock | ResourceBlock | ResourceLinkBlock


def joined_text(content: Sequence[ContentBlock]) -> str:
    """The blocks' text in order; a media block's line only where the text before it does
    not already name it (a value holding an image names it where the image was)."""
    lines: list[str] = []
    for block in content:
        line = block.text
        if not isinstance(block, TextBlock) and any(line in said for said in lines):
            continue
        lines.append(line)
    return "\n".join(lines)


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
        return joined_text(self.content)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (mutable copies), for logs, APIs and ``json.dumps``."""
        return _plain(self)

    def __repr__(self) -> str:  # the value as JSON data reads, not as frozen types
        media = [block.type for block in self.content if not isinstance(block, TextBlock)]
        extra = f", media={media!r}" if media else ""
        return (
            f"ToolExecutionSuccess(call_id={self.call_id!r}, name={self.name!r}, "
            f"value={thaw(self.value)!r}{extra})"
        )


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
        return joined_text(self.content)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (mutable copies), for logs, APIs and ``json.dumps``."""
        return _plain(self)

    def __repr__(self) -> str:
        return (
            f"ToolExecutionFailure(call_id={self.call_id!r}, name={self.name!r}, "
            f"code={self.error.code!r}, message={self.error.message!r})"
        )


def _plain(result: ToolExecutionSuccess | ToolExecutionFailure) -> dict[str, Any]:
    data = thaw(asdict(result))
    assert isinstance(data, dict)
    data["text"] = result.text
    return data


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
    "AudioBlock",
    "ContentBlock",
    "ImageBlock",
    "ResourceBlock",
    "ResourceLinkBlock",
    "TextBlock",
    "ToolExecutionFailure",
    "ToolExecutionResult",
    "ToolExecutionSuccess",
    "ToolFailure",
    "failure",
]
