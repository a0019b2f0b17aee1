"""What every bridge test shares: real tools behind a real runtime (worker processes), and
a record of the calls the runtime dispatched."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from codeact import ImageBlock, Runtime, ToolCallStarted, ToolRegistry, tool


def _png() -> str:
    """A real 1x1 PNG, base64: what an image a tool returns looks like on the wire."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    body = zlib.compress(b"\x00\xff\x00\x00")
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


PNG = _png()

# The two-step task every bridge runs: the second script uses a name the first defined.
FIRST = "total = add(2, 3)\ntotal"
SECOND = "add(total, 10)"
PICTURE = "snap()"


@dataclass
class Workshop:
    runtime: Runtime
    started: list[ToolCallStarted] = field(default_factory=list)

    def ids_of(self, name: str) -> list[str]:
        return [event.call_id for event in self.started if event.name == name]


@pytest.fixture
def workshop() -> Iterator[Workshop]:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def snap() -> ImageBlock:
        """Take a picture."""
        return ImageBlock(data=PNG, mime_type="image/png")

    registry = ToolRegistry()
    registry.register(add)
    registry.register(snap)
    runtime = Runtime(registry)
    shop = Workshop(runtime)
    registry.add_listener(
        lambda event: shop.started.append(event) if isinstance(event, ToolCallStarted) else None
    )
    try:
        yield shop
    finally:
        runtime.close()
