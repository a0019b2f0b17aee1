"""The host's end of a worker channel, over real pipes: bounds, full pipes, closing."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import pytest

from codeact._pipe import Garbled, PipeClosed, WorkerPipe


@pytest.fixture
def ends() -> Iterator[tuple[WorkerPipe, int, int]]:
    """A WorkerPipe, plus the worker's ends: where it reads from, where it writes to."""
    to_worker_read, to_worker_write = os.pipe()
    from_worker_read, from_worker_write = os.pipe()
    pipe = WorkerPipe(
        os.fdopen(from_worker_read, "rb", buffering=0),
        os.fdopen(to_worker_write, "wb", buffering=0),
        max_bytes=1_000,
    )
    yield pipe, to_worker_read, from_worker_write
    pipe.close()
    for fd in (to_worker_read, from_worker_write):
        with contextlib.suppress(OSError):  # a test may have closed it already
            os.close(fd)


def test_messages_cross_in_both_directions(ends: tuple[WorkerPipe, int, int]) -> None:
    pipe, worker_reads, worker_writes = ends
    pipe.send({"op": "run", "source": "1 + 1"})
    assert os.read(worker_reads, 1_000) == b'{"op": "run", "source": "1 + 1"}\n'
    os.write(worker_writes, b'{"op": "done"}\n{"op": "ca')
    assert pipe.receive(5) == {"op": "done"}
    os.write(worker_writes, b'll"}\n')
    assert pipe.receive(5) == {"op": "call"}


def test_a_silent_worker_times_out(ends: tuple[WorkerPipe, int, int]) -> None:
    pipe, _, _ = ends
    with pytest.raises(TimeoutError):
        pipe.receive(0.05)


@pytest.mark.parametrize(
    ("sent", "why"),
    [(b"x" * 2_000, "longer"), (b"[1, 2]\n", "not a JSON object"), (b"{nope\n", "not JSON")],
)
def test_what_a_worker_may_not_send_is_refused(
    ends: tuple[WorkerPipe, int, int], sent: bytes, why: str
) -> None:
    pipe, _, worker_writes = ends
    os.write(worker_writes, sent)
    with pytest.raises(Garbled, match=why):
        pipe.receive(5)


def test_a_full_pipe_never_blocks_a_send_meant_for_the_event_loop(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    pipe, worker_reads, _ = ends
    filled = 0
    while pipe.send_at_once({"op": "run", "source": "x" * 1_000}):  # a worker not reading
        filled += 1
    assert filled > 0
    assert not pipe.send_at_once({"op": "run", "source": "x" * 1_000})  # still full
    assert not pipe.send_at_once({"op": "run", "source": "y" * 10_000})  # too long at once
    received = b""
    while len(received) < filled * 1_000:
        received += os.read(worker_reads, 1 << 16)
    assert received.count(b"\n") == filled  # every message whole, none torn by a refusal


def test_closing_ends_a_wait_in_another_thread_and_frees_the_descriptors_after(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    pipe, _, _ = ends
    outcome: list[BaseException] = []
    waiting = threading.Thread(target=lambda: _capture(pipe, outcome))
    waiting.start()
    pipe.close()
    waiting.join(10)
    assert not waiting.is_alive()
    assert isinstance(outcome[0], PipeClosed)
    with pytest.raises(OSError, match="Bad file descriptor"):  # closed: nothing used it
        os.fstat(pipe.read_fd)
    with pytest.raises(PipeClosed):
        pipe.send({"op": "exit"})


def test_a_worker_that_exits_closes_the_channel(ends: tuple[WorkerPipe, int, int]) -> None:
    pipe, _, worker_writes = ends
    os.write(worker_writes, b'{"op": "done"}\n')
    os.close(worker_writes)  # the worker is gone
    assert pipe.receive(5) == {"op": "done"}  # what it sent before is still read
    with pytest.raises(PipeClosed):
        pipe.receive(5)


def _capture(pipe: WorkerPipe, outcome: list[BaseException]) -> None:
    try:
        pipe.receive(30)
    except BaseException as error:  # what the waiting thread saw
        outcome.append(error)


def test_two_messages_in_one_read_are_both_delivered_without_polling_again(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    pipe, _, worker_writes = ends
    os.write(worker_writes, b'{"op": "output", "text": "x"}\n{"op": "call", "name": "f"}\n')
    assert not pipe.buffered()
    assert pipe.receive_available() == {"op": "output", "text": "x"}
    assert pipe.buffered()  # polling the pipe now would wait for a third message
    assert pipe.receive_available() == {"op": "call", "name": "f"}
    assert not pipe.buffered()
