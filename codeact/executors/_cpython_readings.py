"""The clock and entropy a CPython script reads, through the durable runs' tape.

A recorded run is re-run to resume it, and must read what it read the first time. The
restricted interpreter hands scripts modules that read through ``TAPE``; a CPython
script reads the real modules, so its worker wraps their readers in place (``install``):

- the ``time`` module's clocks, when the script's own code calls them; asyncio and the
  libraries read the clock live, as often as timing makes them, which a replay could
  never match. ``time.sleep`` called by the script returns at once while it replays:
  that wait already happened.
- entropy drawn on the script's behalf, through whatever library: ``os.urandom``, and
  what ``SystemRandom``, ``secrets`` and ``uuid.uuid4`` draw from (a module drawing as it
  is imported draws live: that happens once per worker, not once per run);
  ``random``'s and numpy's global generators are seeded from it when a recorded session
  starts (``reseed``).

Outside a recorded run the tape is off and every wrapper reads live. Clocks read in C
(``datetime.now()``, ``date.today()``) are not taped: a replay that reads another value
there and lets it reach a tool call's arguments stops with ``REPLAY_DIVERGED``, because
the host compares every replayed call with its record; it never repeats an effect.
None of this is a boundary: a script may undo it, and only spoils its own replay.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from ..sandbox._compiler import SCRIPT_FILENAME
from ..stdlib._recorded import TAPE, entropy, seed_value
from ..stdlib._tape_bounds import MAX_ENTROPY_BYTES

CLOCKS = (
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
)
NUMPY_SEED_RANGE = 2**32  # numpy's legacy global generator takes a 32-bit seed


def install() -> None:
    """Wrap the readers, once per worker, before its first script."""
    for kind in CLOCKS:
        setattr(time, kind, _clock(kind, getattr(time, kind)))
    time.sleep = _sleep(time.sleep)
    live = os.urandom
    os.urandom = _entropy(live)
    random._urandom = os.urandom  # type: ignore[attr-defined]  # SystemRandom, secrets


def reseed() -> None:
    """The global generators seeded from taped entropy: a recorded session's first run
    and its replay draw the same numbers."""
    if not TAPE.recording:
        return
    random.seed(seed_value())
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed_value() % NUMPY_SEED_RANGE)


def _from_script() -> bool:
    """Did the script's own code make the call being wrapped (two frames up)?"""
    return sys._getframe(2).f_code.co_filename == SCRIPT_FILENAME


def _drawn_by_script() -> bool:
    """Is the script's code on the stack, and not importing a module? What a module draws
    as it is imported happens once per worker, so a replay in a worker that has it already
    would not draw it again."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name == SCRIPT_FILENAME:
            return True
        if name.startswith("<frozen importlib"):
            return False
        frame = frame.f_back
    return False


def _clock(kind: str, live: Callable[[], Any]) -> Callable[[], Any]:
    def read() -> Any:
        if TAPE.recording and _from_script():
            return TAPE.read(kind, live)
        return live()

    read.__name__ = read.__qualname__ = kind
    read.__doc__ = live.__doc__
    return read


def _sleep(live: Callable[[Any], None]) -> Callable[[Any], None]:
    def sleep(seconds: Any) -> None:
        if TAPE.replaying and _from_script():  # the wait already happened, when recorded
            return
        live(seconds)

    sleep.__doc__ = live.__doc__
    return sleep


def _entropy(live: Callable[[int], bytes]) -> Callable[[int], bytes]:
    def urandom(size: int) -> bytes:
        if not (TAPE.recording and _drawn_by_script()):
            return live(size)
        if not isinstance(size, int) or size < 0:
            raise ValueError("negative argument not allowed")
        # a library's large draw taped in readings of the size the record allows
        chunks = range(0, size, MAX_ENTROPY_BYTES)
        return b"".join(entropy(min(MAX_ENTROPY_BYTES, size - start)) for start in chunks)

    urandom.__doc__ = live.__doc__
    return urandom


__all__ = ["install", "reseed"]
