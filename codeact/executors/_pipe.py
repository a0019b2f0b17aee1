"""The host's end of a worker's channel: newline-delimited JSON over two pipes.

Reads and writes are blocking calls made from a thread. A run is served by one thread
from its first message to its last, so a tool call from a script crosses two pipes and
nothing else: no event loop wakes between the question and the answer.

The worker is not trusted. Every read and every write waits at most until a deadline
(``TimeoutError``): a worker that stops reading cannot hold a host thread. A line longer
than ``max_bytes``, one that is not a JSON object (invalid UTF-8, nesting too deep for
the decoder, anything else) is refused (``Garbled``), and the host stops talking to
that worker.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from typing import IO, Any

from ._lines import decoded, encoded
from ._spin import READ_CHUNK, Spinner


class PipeClosed(Exception):
    """The other end is gone (or we closed ours)."""


class Garbled(Exception):
    """The worker sent something that is not one bounded JSON object per line."""


class WorkerPipe:
    """One worker's two pipes; safe to close while another thread is using them.

    A descriptor is closed only once no call is using it: closing one that a blocked
    ``receive`` still waits on would let the number be reused by an unrelated file.
    """

    def __init__(self, reader: IO[bytes], writer: IO[bytes], *, max_bytes: int) -> None:
        self._files = (reader, writer)  # closed through these: they own the descriptors
        self._read_fd = reader.fileno()
        self._write_fd = write_fd = writer.fileno()
        self._max_bytes = max_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline: never searched twice
        os.set_blocking(write_fd, False)  # a full pipe is waited on, never blocked in
        os.set_blocking(self._read_fd, False)  # an empty one too (and polled, see _spin)
        self._spinner = Spinner()
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False
        self._closed = False

    def send(self, message: dict[str, Any], deadline: float | None = None) -> None:
        """Write the whole message, waiting while the pipe is full, until ``deadline`` (a
        ``time.monotonic()`` value) at most: TimeoutError then, with the message half sent."""
        data = memoryview(encoded(message))
        with self._using():
            while data:
                try:
                    data = data[os.write(self._write_fd, data) :]
                except BlockingIOError:
                    self._wait_writable(deadline)  # TimeoutError (an OSError) passes as it is
                except OSError as error:  # EPIPE: the worker is gone
                    raise PipeClosed(str(error)) from None
                if data and _past(deadline):  # a worker that drains a little at a time
                    raise TimeoutError("the worker did not read in time")

    def send_at_once(self, message: dict[str, Any]) -> bool:
        """Write a short message without ever waiting (safe on an event loop); False, with
        nothing written, when it is too long or the pipe is full (a worker not reading)."""
        data = encoded(message)
        if len(data) > select.PIPE_BUF:  # longer writes may be split, and could wait
            return False
        with self._using():
            try:
                os.write(self._write_fd, data)  # at most PIPE_BUF bytes: all or nothing
            except BlockingIOError:
                return False
            except OSError as error:
                raise PipeClosed(str(error)) from None
        return True

    def _wait_writable(self, deadline: float | None) -> None:
        while not self._closing:
            if select.select([], [self._write_fd], [], _wait(deadline))[1]:
                return
            if _past(deadline):
                raise TimeoutError("the worker did not read in time")  # a worker that never reads
        raise PipeClosed("the channel was closed")

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message; TimeoutError when none arrives within ``timeout`` seconds."""
        return self.receive_by(None if timeout is None else time.monotonic() + timeout)

    def receive_by(self, deadline: float | None, *, spin: bool = False) -> dict[str, Any]:
        """The next message; TimeoutError when none has arrived by ``deadline``.

        ``spin``: the answer is likely on its way (a worker's next call, mid-run): the
        pipe is polled for a moment before this thread sleeps on it."""
        with self._using():
            while True:
                message = self._take_line()
                if message is not None:
                    return message
                if _past(deadline):  # bytes that keep coming and never make a message
                    raise TimeoutError("the worker did not answer in time")
                if spin:
                    message = self._polled(self._spinner)
                    if message is not None:
                        return message
                slept = time.monotonic()
                self._wait_readable(deadline)
                if spin:
                    self._spinner.slept(time.monotonic() - slept)
                self._read_some()

    def receive_soon(self, spinner: Spinner) -> dict[str, Any] | None:
        """A message already read or arriving within ``spinner``'s window (one window in
        all, however the bytes come); None when there is none by then, or polling is off."""
        with self._using():
            return self._polled(spinner)

    def _polled(self, spinner: Spinner) -> dict[str, Any] | None:
        end = spinner.window_end()
        while True:
            message = self._take_line()
            if message is not None:
                return message
            try:
                chunk = spinner.read(self._read_fd, end)
            except OSError as error:  # as _read_some: the worker's end is gone, nothing else
                raise PipeClosed(str(error)) from None
            if chunk is None:
                return None
            self._add(chunk)

    @property
    def read_fd(self) -> int:
        return self._read_fd

    def buffered(self) -> bool:
        """Is a whole message already read and waiting (so polling the pipe would wait for
        the one after it)?"""
        return self._line_end() >= 0

    def receive_available(self) -> dict[str, Any] | None:
        """After the read end polled readable: one read, and the message if it is whole."""
        with self._using():
            if self._line_end() < 0:
                self._read_some()
            return self._take_line()

    def _read_some(self) -> None:
        try:
            chunk = os.read(self._read_fd, READ_CHUNK)
        except BlockingIOError:  # readable was a false alarm: nothing to read yet
            return
        except OSError as error:
            raise PipeClosed(str(error)) from None
        self._add(chunk)

    def _add(self, chunk: bytes) -> None:
        if not chunk:
            raise PipeClosed("the worker closed its end")
        self._buffer += chunk

    def _line_end(self) -> int:
        """Where the first whole message ends, or -1; a flood of bytes with no newline is
        searched once, not once per read (which would cost the host quadratic time)."""
        end = self._buffer.find(b"\n", self._scanned)
        self._scanned = len(self._buffer) if end < 0 else end
        return end

    def _take_line(self) -> dict[str, Any] | None:
        end = self._line_end()
        if end < 0:
            if len(self._buffer) > self._max_bytes:
                raise Garbled("a message longer than the channel allows")
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self._scanned = 0
        return _parsed(line)

    def _wait_readable(self, deadline: float | None) -> None:
        while True:
            if self._closing:
                raise PipeClosed("the channel was closed")
            readable, _, _ = select.select([self._read_fd], [], [], _wait(deadline))
            if readable:
                return
            if _past(deadline):
                raise TimeoutError("the worker did not answer in time")

    def close(self) -> None:
        """Close both ends now, or as soon as the call using them returns."""
        with self._lock:
            self._closing = True
            if self._users == 0:
                self._close_now()

    def _using(self) -> _Use:
        return _Use(self)

    def _enter(self) -> None:
        with self._lock:
            if self._closing:
                raise PipeClosed("the channel was closed")
            self._users += 1

    def _leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._closing and self._users == 0:
                self._close_now()

    def _close_now(self) -> None:
        if not self._closed:
            self._closed = True
            for file in self._files:
                with contextlib.suppress(OSError):
                    file.close()


class _Use:
    __slots__ = ("_pipe",)

    def __init__(self, pipe: WorkerPipe) -> None:
        self._pipe = pipe

    def __enter__(self) -> None:
        self._pipe._enter()

    def __exit__(self, *exc_info: object) -> None:
        self._pipe._leave()


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _wait(deadline: float | None) -> float:
    """How long one select may wait: until the deadline, and never longer than a quarter
    second (a close from another thread ends the wait promptly)."""
    if deadline is None:
        return 0.25
    return min(max(deadline - time.monotonic(), 0.0), 0.25)


def _parsed(line: bytes) -> dict[str, Any]:
    try:
        message = decoded(line)
    except ValueError:
        raise Garbled("a message that is not JSON") from None
    except RecursionError:  # 200,000 brackets: deeper than the decoder's stack
        raise Garbled("a message nested deeper than the decoder allows") from None
    if type(message) is not dict:
        raise Garbled("a message that is not a JSON object")
    return message


__all__ = ["Garbled", "PipeClosed", "WorkerPipe"]
