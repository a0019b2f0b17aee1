"""``zlib`` for scripts: one-shot functions and the streaming objects, every output bounded.

A few hundred bytes of deflated input can inflate to gigabytes in one C call, where no
limit's check runs. So ``decompress`` and a ``decompressobj``'s every call inflate at
most the run's sequence limit (``max_sequence_items`` bytes) and stop the run past it,
as building a sequence that long would; a script that asks for less (``max_length``)
gets exactly CPython's answer, the rest kept in ``unconsumed_tail``.

The streaming objects are the runtime's own, around the real ones: what reaches zlib's C
code is an exact number or bytes, and ``flush`` inflates what is left within the limit
too (the real one inflates all of ``unconsumed_tail`` at once).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from ..sandbox._errors import LimitExceeded
from ..sandbox._guards import Guards
from ..sandbox._ownership import register_readable
from ..sandbox._plain_arguments import plain_values
from ..sandbox._work_bounds import exact_index
from ._copy import register_copies
from ._facade import Facade, pick

CONSTANTS = (
    "MAX_WBITS DEFLATED DEF_MEM_LEVEL DEF_BUF_SIZE ZLIB_VERSION ZLIB_RUNTIME_VERSION "
    "Z_NO_COMPRESSION Z_BEST_SPEED Z_BEST_COMPRESSION Z_DEFAULT_COMPRESSION "
    "Z_FILTERED Z_HUFFMAN_ONLY Z_RLE Z_FIXED Z_DEFAULT_STRATEGY "
    "Z_NO_FLUSH Z_PARTIAL_FLUSH Z_SYNC_FLUSH Z_FULL_FLUSH Z_FINISH Z_BLOCK Z_TREES"
)


def _data(value: Any) -> Any:
    """What zlib's C code is handed to read as bytes: a plain value (a bytes subclass as its
    bytes); its own TypeError names anything else, as CPython's does."""
    (value,) = plain_values("zlib", value)
    return value


def _integer(value: Any) -> int:
    value = exact_index(value)
    if type(value) is not int:
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    return value


def _past(limit: int) -> LimitExceeded:
    return LimitExceeded("sequence size", f"the data decompresses past {limit:,} bytes")


def _not_made_here(kind: type) -> TypeError:
    # made only by compressobj and decompressobj, as CPython's: type(c)(...) would wrap
    # whatever a script passed, and call its methods from here
    return TypeError(f"cannot create 'zlib.{kind.__name__}' instances")


class Compress:
    """A compression object (``zlib.compressobj()``): its output is never larger than
    its input by more than a few bytes, so it is zlib's own, given exact values."""

    __slots__ = ("_real",)
    _real: Any  # zlib's own object

    def __init__(self, *args: Any, **options: Any) -> None:
        raise _not_made_here(Compress)

    @classmethod
    def around(cls, real: Any) -> Compress:
        made = object.__new__(cls)
        made._real = real
        return made

    def compress(self, data: Any, /) -> bytes:
        return self._real.compress(_data(data))  # type: ignore[no-any-return]

    def flush(self, mode: Any = zlib.Z_FINISH, /) -> bytes:
        return self._real.flush(_integer(mode))  # type: ignore[no-any-return]

    def copy(self) -> Compress:
        return Compress.around(self._real.copy())


class Decompress:
    """A decompression object (``zlib.decompressobj()``) whose every call inflates at
    most the run's sequence limit."""

    __slots__ = ("_limit", "_real")
    _real: Any  # zlib's own object
    _limit: Callable[[], int]

    def __init__(self, *args: Any, **options: Any) -> None:
        raise _not_made_here(Decompress)

    @classmethod
    def around(cls, real: Any, limit: Callable[[], int]) -> Decompress:
        """``limit``: the session's sequence limit, read at every call (a sandbox's
        limits may be replaced between runs)."""
        made = object.__new__(cls)
        made._real = real
        made._limit = limit
        return made

    @property
    def unused_data(self) -> bytes:
        return self._real.unused_data  # type: ignore[no-any-return]

    @property
    def unconsumed_tail(self) -> bytes:
        return self._real.unconsumed_tail  # type: ignore[no-any-return]

    @property
    def eof(self) -> bool:
        return self._real.eof  # type: ignore[no-any-return]

    def decompress(self, data: Any, /, max_length: Any = 0) -> bytes:
        data, wanted, limit = _data(data), _integer(max_length), self._limit()
        if wanted < 0:
            raise ValueError("max_length must be non-negative")
        if 0 < wanted <= limit:
            return self._real.decompress(data, wanted)  # type: ignore[no-any-return]
        # all of it, as CPython inflates it, unless it is longer than the limit: then the
        # output buffer filled up before the input ran out
        out: bytes = self._real.decompress(data, limit + 1)
        if len(out) > limit:
            raise _past(limit)
        return out

    def flush(self, length: Any = zlib.DEF_BUF_SIZE, /) -> bytes:
        if _integer(length) <= 0:
            raise ValueError("length must be greater than zero")
        # what a max_length left unread is inflated here, bounded; the real flush then
        # has nothing left to inflate and only ends the stream
        tail = self._real.unconsumed_tail
        out = self.decompress(tail) if tail else b""
        if tail and self._real.eof:
            # ended: zlib keeps what followed the stream as unconsumed_tail as well as
            # unused_data, which its flush would then add to unused_data a second time
            return out
        return out + self._real.flush()  # type: ignore[no-any-return]

    def copy(self) -> Decompress:
        return Decompress.around(self._real.copy(), self._limit)


for _kind in (Compress, Decompress):
    _kind.__module__ = "zlib"  # type() shows them as CPython's: zlib.Compress
    register_copies(_kind, _kind.copy)  # copy.copy(c) is c.copy(), as in CPython
register_readable(Compress, names=("compress", "flush", "copy"))
register_readable(
    Decompress, names=("decompress", "flush", "copy", "unused_data", "unconsumed_tail", "eof")
)


def compressobj(
    level: Any = zlib.Z_DEFAULT_COMPRESSION,
    method: Any = zlib.DEFLATED,
    wbits: Any = zlib.MAX_WBITS,
    memLevel: Any = zlib.DEF_MEM_LEVEL,  # CPython's keyword
    strategy: Any = zlib.Z_DEFAULT_STRATEGY,
    zdict: Any = None,
) -> Compress:
    level, method, wbits = _integer(level), _integer(method), _integer(wbits)
    memory, strategy = _integer(memLevel), _integer(strategy)
    if zdict is None:
        return Compress.around(zlib.compressobj(level, method, wbits, memory, strategy))
    zdict = _data(zdict)
    return Compress.around(zlib.compressobj(level, method, wbits, memory, strategy, zdict))


def zlib_facade(guards: Guards) -> Facade:
    """One session's ``zlib``: its decompression bounded by the session's limits."""

    def limit() -> int:  # read per call: a sandbox's limits may be replaced between runs
        return guards.limits.max_sequence_items

    def decompress(data: Any, /, wbits: Any = zlib.MAX_WBITS, bufsize: Any = 16384) -> bytes:
        inflater = Decompress.around(zlib.decompressobj(_integer(wbits)), limit)
        out = inflater.decompress(data)
        if not inflater.eof:
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        return out

    def decompressobj(wbits: Any = zlib.MAX_WBITS, zdict: Any = b"") -> Decompress:
        return Decompress.around(zlib.decompressobj(_integer(wbits), _data(zdict)), limit)

    return Facade(
        "zlib",
        {
            **pick(zlib, f"compress crc32 adler32 error {CONSTANTS}"),
            "decompress": decompress,
            "compressobj": compressobj,
            "decompressobj": decompressobj,
        },
    )


__all__ = ["Compress", "Decompress", "compressobj", "zlib_facade"]
