"""``hashlib.shake_128`` and ``shake_256`` for scripts, with a bounded digest length.

The real digests are extendable-output: ``digest(n)`` makes ``n`` bytes in one C call
that no limit interrupts (and a negative ``n`` raises ``MemoryError``). These hold the
real hash and check the length first.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..sandbox._errors import LimitExceeded
from ..sandbox._ownership import register_readable

MAX_SHAKE_LENGTH = 1 << 20  # bytes per digest: far past any use, well inside a run's memory


class Shake:
    """A shake digest as a script holds it: the real object's methods, lengths checked."""

    __slots__ = ("_hash",)

    def __init__(self, made: Any) -> None:
        self._hash = made

    @property
    def name(self) -> str:
        return str(self._hash.name)

    @property
    def digest_size(self) -> int:
        return 0

    @property
    def block_size(self) -> int:
        return int(self._hash.block_size)

    def update(self, data: Any) -> None:
        self._hash.update(data)

    def copy(self) -> Shake:
        return Shake(self._hash.copy())

    def digest(self, length: int) -> bytes:
        return bytes(self._hash.digest(_checked(length)))

    def hexdigest(self, length: int) -> str:
        return str(self._hash.hexdigest(_checked(length)))

    def __repr__(self) -> str:
        return f"<{self.name} _hashlib.HASHXOF object>"


def _checked(length: Any) -> int:
    if type(length) is not int and not isinstance(length, int):
        raise TypeError(f"'{type(length).__name__}' object cannot be interpreted as an integer")
    if length < 0:  # the real digest raises MemoryError
        raise ValueError("a digest's length must not be negative")
    if length > MAX_SHAKE_LENGTH:  # a digest made in one C call that no limit interrupts
        raise LimitExceeded("sequence size", f"a shake digest of {length:,} bytes is too long")
    return int(length)


def shake_128(data: Any = b"", **options: Any) -> Shake:
    """``hashlib.shake_128``."""
    return Shake(hashlib.shake_128(data, **options))


def shake_256(data: Any = b"", **options: Any) -> Shake:
    """``hashlib.shake_256``."""
    return Shake(hashlib.shake_256(data, **options))


# what type() of a digest shows, as the real one's class
Shake.__module__, Shake.__name__, Shake.__qualname__ = "_hashlib", "HASHXOF", "HASHXOF"
register_readable(
    Shake, names=("name", "digest_size", "block_size", "update", "copy", "digest", "hexdigest")
)

__all__ = ["MAX_SHAKE_LENGTH", "Shake", "shake_128", "shake_256"]
