"""What a script reads from outside itself (the clock, entropy), taped for replay.

A durable run is re-run to resume it, and must see what it saw the first time: so
every clock reading and every draw of entropy a script makes goes through ``TAPE``.
While a run records, fresh readings are kept for the host (which writes them in the
run's record before the next call's effect); while it replays, the recorded readings
are served in order until they run out, then the script reads live again. Outside a
durable run the tape is off and every reading is live, as it always was.
"""

from __future__ import annotations

import base64
import datetime
import os
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..sandbox._errors import LimitExceeded
from ._tape_bounds import (
    FLOAT_KINDS,
    INT_KINDS,
    MAX_ENTROPY_BYTES,
    MAX_READINGS,
    MAX_TAPE_CHARS,
    reading_chars,
)

# What each clock reads live. A script's process time is its own thread's CPU time: in
# process it would be the whole host's, which says what other sessions are doing.
LIVE_CLOCKS = {"process_time": "thread_time", "process_time_ns": "thread_time_ns"}
# The kernel's entropy as it was at import: a CPython worker wraps os.urandom in place to
# tape it, and the tape must still reach the kernel (not its own wrapper) for fresh bytes.
KERNEL_ENTROPY = os.urandom


class Tape:
    """The worker's readings for the run it serves (a worker serves one session)."""

    def __init__(self) -> None:
        self.recording = False
        self._replay: list[list[Any]] = []
        self._next = 0
        self._fresh: list[list[Any]] = []
        self._count = 0
        self._chars = 0
        self.diverged: str | None = None

    @property
    def replaying(self) -> bool:
        return self.recording and self._next < len(self._replay)

    def start(self, replay: list[list[Any]]) -> None:
        """Record this run, serving ``replay`` first."""
        self.recording, self._replay, self._next = True, replay, 0
        self._fresh, self._count, self._chars, self.diverged = [], 0, 0, None

    def stop(self) -> None:
        self.recording, self._replay, self._fresh = False, [], []

    def read(self, kind: str, live: Callable[[], Any]) -> Any:
        if not self.recording:
            return live()
        if self._next < len(self._replay):
            recorded_kind, value = self._replay[self._next]
            self._next += 1
            if recorded_kind == kind:
                return value
            # the script read something else here: it is not the run that was recorded
            self.diverged = (
                f"reading {self._next} of the clock and entropy: the record has "
                f"{recorded_kind}, the script read {kind}"
            )
            self._replay = []
        self._count += 1
        if self._count > MAX_READINGS:  # a reading per loop iteration would fill the log
            raise LimitExceeded(
                "clock and entropy readings",
                f"a recorded run may read the clock or entropy {MAX_READINGS:,} times",
            )
        value = live()
        self._chars += reading_chars(value)
        if self._chars > MAX_TAPE_CHARS:  # a draw of random bytes per iteration fills the log
            raise LimitExceeded(
                "clock and entropy readings",
                f"a recorded run may keep {MAX_TAPE_CHARS:,} characters of clock and entropy "
                "readings in its record",
            )
        self._fresh.append([kind, value])
        return value

    def drain(self) -> list[list[Any]]:
        """The fresh readings since the last drain, for the host's record."""
        fresh, self._fresh = self._fresh, []
        return fresh


TAPE = Tape()


def clock(kind: str, live: Callable[[], Any]) -> Callable[[], Any]:
    def read() -> Any:
        return TAPE.read(kind, live)

    return read


def entropy(size: int) -> bytes:
    """``size`` random bytes from the kernel, or the record's."""
    if not isinstance(size, int) or size < 0:
        raise ValueError("the number of bytes must be a non-negative integer")
    if size > MAX_ENTROPY_BYTES:
        raise LimitExceeded("sequence size", f"more than {MAX_ENTROPY_BYTES:,} random bytes")
    recorded = TAPE.read("entropy", lambda: KERNEL_ENTROPY(size).hex())
    return bytes.fromhex(recorded)


def now_seconds() -> float:
    return float(TAPE.read("time", time.time))


class EntropyRandom(random.Random):
    """``random.SystemRandom`` over taped entropy: what ``secrets`` draws from."""

    def random(self) -> float:
        return (int.from_bytes(entropy(7)) >> 3) * 2**-53

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(entropy(size)) >> (size * 8 - k)

    def seed(self, *args: Any, **kwargs: Any) -> None:
        """Entropy has no seed."""


ENTROPY = EntropyRandom()


def choice(sequence: Any) -> Any:
    """``secrets.choice``: an element drawn with taped entropy."""
    return ENTROPY.choice(sequence)


def seed_value() -> int:
    """A fresh seed for a script's ``random``: 32 bytes of taped entropy."""
    return int.from_bytes(entropy(32))


def uuid4() -> uuid.UUID:
    return uuid.UUID(bytes=entropy(16), version=4)


def token_bytes(nbytes: int | None = None) -> bytes:
    return entropy(32 if nbytes is None else nbytes)


def token_hex(nbytes: int | None = None) -> str:
    return token_bytes(nbytes).hex()


def token_urlsafe(nbytes: int | None = None) -> str:
    return base64.urlsafe_b64encode(token_bytes(nbytes)).rstrip(b"=").decode("ascii")


def _at(when: float | None) -> float:
    return now_seconds() if when is None else when


def gmtime(seconds: float | None = None) -> time.struct_time:
    return time.gmtime(_at(seconds))


def localtime(seconds: float | None = None) -> time.struct_time:
    return time.localtime(_at(seconds))


def ctime(seconds: float | None = None) -> str:
    return time.ctime(_at(seconds))


def asctime(when: Any = None) -> str:
    return time.asctime(time.localtime(now_seconds()) if when is None else when)


def _datetime_now(method: Any, guards: Any) -> Callable[..., datetime.datetime]:
    def now(tz: datetime.tzinfo | None = None) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(now_seconds(), tz)

    return now


def _datetime_utcnow(method: Any, guards: Any) -> Callable[[], datetime.datetime]:
    def utcnow() -> datetime.datetime:
        utc = datetime.datetime.fromtimestamp(now_seconds(), datetime.UTC)
        return utc.replace(tzinfo=None)

    return utcnow


def _datetime_today(method: Any, guards: Any) -> Callable[[], datetime.datetime]:
    def today() -> datetime.datetime:
        return datetime.datetime.fromtimestamp(now_seconds())

    return today


def _date_today(method: Any, guards: Any) -> Callable[[], datetime.date]:
    def today() -> datetime.date:
        return datetime.date.fromtimestamp(now_seconds())

    return today


def register_clock_methods() -> None:
    """``datetime.now()`` and its kin read the taped clock, called from a script."""
    from ..sandbox._ownership import register_host_method

    register_host_method(datetime.datetime, "now", _datetime_now)
    register_host_method(datetime.datetime, "utcnow", _datetime_utcnow)
    register_host_method(datetime.datetime, "today", _datetime_today)
    register_host_method(datetime.date, "today", _date_today)


__all__ = [
    "ENTROPY",
    "FLOAT_KINDS",
    "INT_KINDS",
    "MAX_READINGS",
    "TAPE",
    "Tape",
    "clock",
    "entropy",
    "uuid4",
]
