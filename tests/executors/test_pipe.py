"""The host's end of a worker channel, over real pipes: bounds, full pipes, closing."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeact.executors._pipe import Garbled, PipeClosed, WorkerPipe


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
    pipe.send({"op": "run", "source": "1 + 1 \u2260 3", "nested": {"a": [1.5, None, True]}})
    line = b'{"op":"run","source":"1 + 1 \xe2\x89\xa0 3","nested":{"a":[1.5,null,true]}}\n'
    assert os.read(worker_reads, 1_000) == line  # compact, UTF-8, one line
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
    [
        (b"x" * 2_000, "longer"),
        (b"[1, 2]\n", "not a JSON object"),
        (b"{nope\n", "not JSON"),
        (b'{"op": "done"} {"op": "done"}\n', "not JSON"),  # two values on one line
        (b'{"op": "done"}]\n', "not JSON"),
        (b'{"op": "d\xff"}\n', "not JSON"),  # not UTF-8
        (b'\xef\xbb\xbf{"op": "done"}\n', "not JSON"),  # a byte-order mark: not a value
        (b'"\x00\x00\x00{"\n', "not JSON"),
        (b"\n", "not JSON"),
    ],
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


def test_a_message_on_its_way_is_read_within_the_window_and_a_silence_is_not_waited_out(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    """Polling returns what arrives, gives up after one window whatever trickles in, and
    keeps the partial message for the read that follows."""
    from codeact.executors._spin import Spinner

    pipe, _, worker_writes = ends
    spinner = Spinner(window=0.005)
    os.write(worker_writes, b'{"op": "done"}\n')
    assert pipe.receive_soon(spinner) == {"op": "done"}
    stop = threading.Event()

    def trickle() -> None:  # a worker sending a byte at a time, never a newline
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.write(worker_writes, b" ")
            stop.wait(0.0005)

    writer = threading.Thread(target=trickle)
    writer.start()
    try:
        assert pipe.receive_soon(spinner) is None  # one window in all, not one per byte
    finally:
        stop.set()
        writer.join()
    assert pipe.receive_soon(spinner) is None  # polling is off after a window went by
    os.write(worker_writes, b'{"op": "call"}\n')
    assert pipe.receive(5) == {"op": "call"}  # the spaces before it were kept and parsed


def _pressure_record(path: Path, stalled_us: int) -> None:
    """A record in the kernel's format (``/proc/pressure/cpu``) saying how long some task
    has waited for a processor since boot."""
    path.write_text(
        f"some avg10=0.00 avg60=0.00 avg300=0.00 total={stalled_us}\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )


def test_a_spinner_that_lost_the_processor_on_a_busy_machine_backs_off(tmp_path: Path) -> None:
    """An answer read past the window while tasks waited for processors most of the time
    since (the kernel's pressure record) means other processes want the cores: a short
    sleep does not turn polling on again until the back-off is over. A window lost while
    nothing else waited (a daemon's turn on a machine at rest) leaves polling on."""
    from codeact.executors._spin import Spinner

    record = tmp_path / "pressure"
    _pressure_record(record, 1_000_000)
    pressure = os.open(record, os.O_RDONLY)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        spinner = Spinner(window=0.001, backoff=3600.0, pressure=pressure)
        os.write(write_end, b"x")
        # an end that has passed whatever the clock says: the answer came past the window
        assert spinner.read(read_end, float("-inf")) == b"x"
        os.write(write_end, b"y")
        assert spinner.read(read_end) == b"y"  # nothing waited meanwhile: still polling
        _pressure_record(record, 1_000_000 + 3_600_000_000)  # an hour of waiting since
        os.write(write_end, b"z")
        assert spinner.read(read_end, float("-inf")) == b"z"
        os.write(write_end, b"w")
        assert spinner.read(read_end) is None  # off: the caller sleeps instead
        spinner.slept(0.0)
        assert spinner.read(read_end) is None  # and stays off through the back-off
        assert os.read(read_end, 1) == b"w"
    finally:
        for fd in (pressure, read_end, write_end):
            os.close(fd)


def test_when_a_back_off_ends_the_pressure_record_decides_whether_polling_resumes(
    tmp_path: Path,
) -> None:
    """The record is read again as the back-off ends: tasks still waiting keep polling off
    for another back-off, without a window lost to learn it; a machine at rest resumes it."""
    from codeact.executors._spin import Spinner

    record = tmp_path / "pressure"
    stalled = 1_000_000
    _pressure_record(record, stalled)
    pressure = os.open(record, os.O_RDONLY)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        spinner = Spinner(window=0.001, backoff=0.0, pressure=pressure)
        stalled += 3_600_000_000
        _pressure_record(record, stalled)
        os.write(write_end, b"x")
        assert spinner.read(read_end, float("-inf")) == b"x"  # lost, on a busy machine
        os.write(write_end, b"y")
        assert spinner.read(read_end) is None
        assert os.read(read_end, 1) == b"y"
        stalled += 3_600_000_000
        _pressure_record(record, stalled)
        spinner.slept(0.0)  # the back-off is over, but the machine is still busy
        os.write(write_end, b"z")
        assert spinner.read(read_end) is None
        assert os.read(read_end, 1) == b"z"
        spinner.slept(0.0)  # nothing waited since: polling again
        os.write(write_end, b"w")
        assert spinner.read(read_end) == b"w"
    finally:
        for fd in (pressure, read_end, write_end):
            os.close(fd)


def test_without_a_pressure_record_any_lost_window_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeact.executors import _spin

    monkeypatch.setattr(_spin, "BLIND_SECONDS", 3600.0)  # over only when the test is
    unreadable = tmp_path / "not-a-record"
    unreadable.write_text("no pressure here\n")
    pressure = os.open(unreadable, os.O_RDONLY)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        spinner = _spin.Spinner(window=0.001, backoff=0.0, pressure=pressure)
        os.write(write_end, b"x")
        assert spinner.read(read_end, float("-inf")) == b"x"
        os.write(write_end, b"y")
        assert spinner.read(read_end) is None  # off: the caller sleeps instead
        spinner.slept(0.0)
        assert spinner.read(read_end) is None  # and polls again only after BLIND_SECONDS
        assert os.read(read_end, 1) == b"y"
    finally:
        for fd in (pressure, read_end, write_end):
            os.close(fd)


def test_a_spinner_polls_again_only_after_a_wait_that_would_have_fitted(tmp_path: Path) -> None:
    from codeact.executors._spin import Spinner

    record = tmp_path / "pressure"
    _pressure_record(record, 1_000_000)  # a machine at rest, however this one is loaded
    pressure = os.open(record, os.O_RDONLY)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        spinner = Spinner(window=0.001, pressure=pressure)
        os.write(write_end, b"x")
        assert spinner.read(read_end) == b"x"
        assert spinner.read(read_end) is None  # nothing came: off
        os.write(write_end, b"y")
        assert spinner.read(read_end) is None  # off: the caller sleeps instead
        spinner.slept(10.0)
        assert spinner.read(read_end) is None  # a long sleep keeps it off
        spinner.slept(0.0)
        assert spinner.read(read_end) == b"y"  # a short one turns it on again
        os.close(write_end)
        assert spinner.read(read_end) == b""  # the writer closed its end
    finally:
        os.close(pressure)
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.close(write_end)


def test_bytes_that_keep_coming_do_not_outlast_the_deadline() -> None:
    """A worker that always has another byte ready, never a whole message: every read
    brings something, so only the deadline ends the wait (here already past)."""
    import time

    pipe = WorkerPipe(open("/dev/zero", "rb"), open(os.devnull, "wb"), max_bytes=1 << 24)  # noqa: SIM115
    try:
        for spin in (False, True):
            with pytest.raises(TimeoutError):
                pipe.receive_by(time.monotonic(), spin=spin)
    finally:
        pipe.close()


def test_a_worker_draining_a_little_at_a_time_does_not_outlast_the_deadline(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    import time

    pipe, worker_reads, _ = ends
    stop = threading.Event()

    def drain() -> None:  # reads on, a little at a time: the pipe is never full for long
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.read(worker_reads, 512)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        with pytest.raises(TimeoutError):
            pipe.send({"op": "answer", "value": "x" * 1_000_000}, time.monotonic())
    finally:
        stop.set()
        pipe.close()
        reader.join()


def test_a_polled_read_that_fails_is_a_closed_channel_as_a_waited_one_is(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    from codeact.executors._spin import Spinner

    pipe, _, _ = ends
    folder = os.open(".", os.O_RDONLY)  # read() on a directory fails (EISDIR), never EAGAIN
    try:
        os.dup2(folder, pipe.read_fd)
    finally:
        os.close(folder)
    with pytest.raises(PipeClosed):
        pipe.receive_soon(Spinner())
    with pytest.raises(PipeClosed):
        pipe.receive_by(None, spin=True)


@pytest.mark.parametrize(
    "message",
    [{"op": "x", "text": '\u00e9\u2260\U0001f600\\"\n\t'}, {"op": "x", "deep": [[[{"a": []}]]]}],
)
def test_a_message_reads_back_as_it_was_sent(
    ends: tuple[WorkerPipe, int, int], message: dict[str, object]
) -> None:
    pipe, worker_reads, worker_writes = ends
    pipe.send(message)
    os.write(worker_writes, os.read(worker_reads, 1_000))  # the worker's end, echoed back
    assert pipe.receive(5) == message


def test_a_message_the_channel_cannot_carry_is_refused_before_anything_is_written(
    ends: tuple[WorkerPipe, int, int],
) -> None:
    pipe, worker_reads, _ = ends
    looped: dict[str, object] = {"op": "run"}
    looped["self"] = looped
    with pytest.raises(ValueError, match="holds itself"):
        pipe.send(looped)
    with pytest.raises(TypeError, match="bytes is not JSON serializable"):
        pipe.send({"op": "run", "source": b"1 + 1"})
    pipe.send({"op": "ping"})
    assert os.read(worker_reads, 1_000) == b'{"op":"ping"}\n'


@pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no pressure record")
def test_the_kernels_pressure_record_reads_as_a_growing_time() -> None:
    from codeact.executors._spin import open_pressure, stalled_seconds

    by_name = stalled_seconds()
    pressure = open_pressure()
    assert pressure is not None
    try:
        by_descriptor = stalled_seconds(pressure)
        again = stalled_seconds(pressure)  # read from the start each time, not where it ended
    finally:
        os.close(pressure)
    assert by_name is not None
    assert by_descriptor is not None
    assert again is not None
    assert 0 <= by_name <= by_descriptor <= again
