"""Media inside a tool's value: images, audio and resources reach the model as blocks.

A value may hold media anywhere: an MCP tool's ``content`` list, a Python tool that
returns an :class:`ImageBlock`, a script that returns (or wraps) what such a tool gave
it. The model reads each one as the content block a native call gives, and the text
names it in one line, never as base64.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._json import FrozenJson, dumps
from ._results import AudioBlock, ContentBlock, ImageBlock, ResourceBlock, TextBlock

# A value's JSON holds one of these exactly where it holds a media dict: the cheap test
# that spares every other value a walk.
_MARKERS = ('"type":"image"', '"type":"audio"', '"type":"resource"')


def media_block(item: Any) -> ContentBlock | None:
    """The block a media dict stands for: MCP's wire form (``mimeType``) or ours
    (``mime_type``, what an ImageBlock a tool returns becomes); None for anything else."""
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind in ("image", "audio"):
        data = item.get("data")
        mime = item.get("mimeType", item.get("mime_type"))
        if not isinstance(data, str) or not isinstance(mime, str):
            return None
        block = ImageBlock if kind == "image" else AudioBlock
        return block(data=data, mime_type=mime)
    if kind == "resource":
        resource = item.get("resource")
        if not isinstance(resource, Mapping) or not isinstance(resource.get("uri"), str):
            return None
        body, blob, mime = resource.get("text"), resource.get("blob"), resource.get("mimeType")
        return ResourceBlock(
            uri=resource["uri"],
            mime_type=mime if isinstance(mime, str) else None,
            body=body if isinstance(body, str) else None,
            blob=blob if isinstance(blob, str) else None,
        )
    return None


def split_media(value: FrozenJson) -> tuple[Any, list[ContentBlock]]:
    """``value`` with each media dict replaced by its one-line text, and the blocks, in order."""
    found: list[ContentBlock] = []

    def walk(item: Any) -> Any:
        block = media_block(item)
        if block is not None:
            found.append(block)
            return block.text
        if isinstance(item, Mapping):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, Sequence) and not isinstance(item, str):
            return [walk(inner) for inner in item]
        return item

    return walk(value), found


_SCALARS = (int, float, bool)


def render_value(value: FrozenJson, text: str | None = None) -> str | list[ContentBlock]:
    """A value as the model reads it: its JSON (or ``text``), or, when it holds media,
    the JSON with each named in one line followed by the media blocks themselves."""
    if text is None and (value is None or type(value) in _SCALARS):
        return dumps(value)  # a number, a boolean or null holds no media
    rendered = text if text is not None else (value if isinstance(value, str) else dumps(value))
    if not any(marker in rendered for marker in _MARKERS):
        return rendered
    shown, found = split_media(value)
    if not found:
        return rendered
    blocks: list[ContentBlock] = [TextBlock(text=shown if isinstance(shown, str) else dumps(shown))]
    return blocks + found


__all__ = ["media_block", "render_value", "split_media"]
