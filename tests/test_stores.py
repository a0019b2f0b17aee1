"""The session stores: the same behaviour from a JSONL file and from a SQLite database, and
SQLite's own promises (many sessions and processes in one file, nothing lost to a kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from codeact import (
    AbortRecorded,
    AssistantMessage,
    ConcurrentWriter,
    ErrorRecorded,
    EventStore,
    JsonlStore,
    ModelExchange,
    Session,
    SqliteStore,
    ToolCallRecorded,
    ToolResultRecorded,
    UsageError,
    UserMessage,
)
from tests.hosts import REPO

MakeStore = Callable[[str], EventStore]


@pytest.fixture(params=["jsonl", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    if request.param == "jsonl":
        return lambda name: JsonlStore(tmp_path / f"{name}.jsonl")
    return lambda name: SqliteStore(tmp_path / "sessions.db", name)


def every_kind() -> list[object]:
    return [
        UserMessage(text="add 2 and 3, then say ünïcode"),
        AssistantMessage(text="I will add them."),
        ToolCallRecorded(call_id="c1", name="add", arguments='{"a": 2, "b": 3}'),
        ToolResultRecorded(
            call_id="c1",
            name="add",
            call_seq=3,
            content="5 [image image/png, 3 bytes]",
            is_error=False,
            code=None,
            images=({"data": "iVBO", "mime_type": "image/png"},),
        ),
        ModelExchange(model="m", mode="code", input_tokens=10, output_tokens=2, attempts=1),
        ErrorRecorded(message="429", retryable=True),
        AbortRecorded(reason="stopped"),
    ]


def test_every_event_kind_comes_back_as_it_was_appended(make_store: MakeStore) -> None:
    session = Session(store=make_store("alice"))
    for event in every_kind():
        session.append(event)  # type: ignore[arg-type]
    assert make_store("alice").load() == session.events
    assert Session.resume(make_store("alice")).events == session.events
    assert session.id == "alice"


def test_a_resumed_session_goes_on_numbering_and_another_stays_apart(make_store: MakeStore) -> None:
    first = Session(store=make_store("alice"))
    first.append(UserMessage(text="one"))
    other = Session(store=make_store("bob"))
    other.append(UserMessage(text="elsewhere"))
    again = Session.resume(make_store("alice"))
    again.append(UserMessage(text="two"))
    assert [(e.seq, e.text) for e in make_store("alice").load()] == [(1, "one"), (2, "two")]  # type: ignore[union-attr]
    assert [e.text for e in make_store("bob").load()] == ["elsewhere"]  # type: ignore[union-attr]


def test_a_store_with_other_events_is_never_appended_over(make_store: MakeStore) -> None:
    Session(store=make_store("alice")).append(UserMessage(text="kept"))
    with pytest.raises(UsageError, match="'alice' already holds 1 events"):
        Session(store=make_store("alice"), events=[UserMessage(text="different", seq=1)])


def test_two_writers_of_one_sqlite_session_cannot_both_record_an_event(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    one = Session(store=SqliteStore(path, "shared"))
    two = Session(store=SqliteStore(path, "shared"))  # both start from the same (empty) log
    one.append(UserMessage(text="first"))
    with pytest.raises(ConcurrentWriter, match="another writer"):
        two.append(UserMessage(text="stale"))
    assert [e.text for e in SqliteStore(path, "shared").load()] == ["first"]  # type: ignore[union-attr]


WRITER = """
import sys
from codeact import Session, SqliteStore, UserMessage
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
session = Session(store=SqliteStore(path, name))
for number in range(count):
    session.append(UserMessage(text=f"{name} {number}"))
    print(number, flush=True)
"""


def writer(path: Path, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_many_processes_write_their_sessions_into_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    names = [f"client-{number}" for number in range(8)]
    processes = [writer(path, name, 150) for name in names]
    for process in processes:
        assert process.wait(timeout=300) == 0
        assert process.stdout is not None
        process.stdout.close()
    store = SqliteStore(path, "any")
    assert store.sessions() == sorted(names)
    for name in names:
        events = SqliteStore(path, name).load()
        assert [e.text for e in events] == [f"{name} {n}" for n in range(150)]  # type: ignore[union-attr]
        assert [e.seq for e in events] == list(range(1, 151))


def test_a_writer_killed_mid_stream_loses_no_event_it_had_appended(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    process = writer(path, "doomed", 1_000_000)
    assert process.stdout is not None
    with process.stdout:
        for _ in range(300):  # each line is printed after its event was committed
            appended = int(process.stdout.readline())
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    events = SqliteStore(path, "doomed").load()
    assert len(events) >= appended + 1
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing torn, no gap
    resumed = Session.resume(SqliteStore(path, "doomed"))
    resumed.append(UserMessage(text="after the kill"))
    assert SqliteStore(path, "doomed").load()[-1].seq == len(events) + 1
