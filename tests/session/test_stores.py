"""The session stores: the same behaviour from a JSONL file and from a SQLite database, and
SQLite's own promises (many sessions and processes in one file, nothing lost to a kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeact import (
    AbortRecorded,
    AssistantMessage,
    ConcurrentWriter,
    CorruptLog,
    ErrorRecorded,
    EventStore,
    JsonlStore,
    ModelExchange,
    PostgresStore,
    Session,
    SqliteStore,
    ToolCallRecorded,
    ToolResultRecorded,
    UsageError,
    UserMessage,
)
from tests.hosts import REPO
from tests.postgres_server import fresh_database, running_server

MakeStore = Callable[[str], EventStore]


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A real PostgreSQL server for this module's tests (skipped, saying why, where none
    can be had); gone when they are, so later tests see no process of it."""
    try:
        with running_server() as conninfo:
            yield conninfo
    except LookupError as reason:
        pytest.skip(str(reason))


@pytest.fixture
def database(request: pytest.FixtureRequest, postgres: str) -> str:
    """An empty database of this test's own."""
    return fresh_database(postgres, f"t{uuid.uuid4().hex[:16]}")


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    if request.param == "jsonl":
        yield lambda name: JsonlStore(tmp_path / f"{name}.jsonl")
        return
    if request.param == "sqlite":
        yield lambda name: SqliteStore(tmp_path / "sessions.db", name)
        return
    conninfo = request.getfixturevalue("database")
    opened: list[PostgresStore] = []

    def make(name: str) -> EventStore:
        opened.append(PostgresStore(conninfo, name))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


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


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A store several processes share: (kind, SQLite path or PostgreSQL conninfo)."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "sessions.db")
    return "postgres", request.getfixturevalue("database")


def open_store(kind: str, where: str, name: str) -> SqliteStore | PostgresStore:
    return SqliteStore(where, name) if kind == "sqlite" else PostgresStore(where, name)


def test_two_writers_of_one_session_cannot_both_record_an_event(shared: tuple[str, str]) -> None:
    one = Session(store=open_store(*shared, "shared"))
    two = Session(store=open_store(*shared, "shared"))  # both start from the same (empty) log
    one.append(UserMessage(text="first"))
    with pytest.raises(ConcurrentWriter, match="another writer"):
        two.append(UserMessage(text="stale"))
    assert [e.text for e in open_store(*shared, "shared").load()] == ["first"]  # type: ignore[union-attr]


WRITER = """
import sys
from codeact import PostgresStore, Session, SqliteStore, UserMessage
kind, where, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = SqliteStore(where, name) if kind == "sqlite" else PostgresStore(where, name)
session = Session(store=store)
for number in range(count):
    session.append(UserMessage(text=f"{name} {number}"))
    print(number, flush=True)
"""


def writer(kind: str, where: str, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, where, name, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_many_processes_write_their_sessions_into_one_store_at_once(
    shared: tuple[str, str],
) -> None:
    names = [f"client-{number}" for number in range(8)]
    processes = [writer(*shared, name, 150) for name in names]
    codes = []
    for process in processes:  # every writer waited for, whatever one of them did
        codes.append(process.wait(timeout=300))
        assert process.stdout is not None
        process.stdout.close()
    assert codes == [0] * len(names)
    assert open_store(*shared, "any").sessions() == sorted(names)
    for name in names:
        events = open_store(*shared, name).load()
        assert [e.text for e in events] == [f"{name} {n}" for n in range(150)]  # type: ignore[union-attr]
        assert [e.seq for e in events] == list(range(1, 151))


def test_a_writer_killed_mid_stream_loses_no_event_it_had_appended(
    shared: tuple[str, str],
) -> None:
    process = writer(*shared, "doomed", 1_000_000)
    assert process.stdout is not None
    with process.stdout:
        for _ in range(300):  # each line is printed after its event was committed
            appended = int(process.stdout.readline())
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    events = open_store(*shared, "doomed").load()
    assert len(events) >= appended + 1
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing torn, no gap
    resumed = Session.resume(open_store(*shared, "doomed"))
    resumed.append(UserMessage(text="after the kill"))
    assert open_store(*shared, "doomed").load()[-1].seq == len(events) + 1


# A damaged record: the store's own error, naming where, before anything runs -------------

DAMAGE = {
    "not JSON": "{oops",
    "an unknown kind": '{"kind": "nonsense", "seq": 2}',
    "missing fields": '{"kind": "user_message", "seq": 2}',
    "not an object": "[1, 2]",
    "another position": '{"kind": "user_message", "seq": 5, "text": "moved"}',
}


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def located(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A store's kind and where it is: the JSONL folder, SQLite file or PostgreSQL conninfo."""
    if request.param == "jsonl":
        return "jsonl", str(tmp_path)
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "sessions.db")
    return "postgres", request.getfixturevalue("database")


def located_store(kind: str, where: str, name: str) -> EventStore:
    if kind == "jsonl":
        return JsonlStore(Path(where) / f"{name}.jsonl")
    return open_store(kind, where, name)


def overwrite(kind: str, where: str, name: str, seq: int, body: str) -> None:
    """Replace event ``seq``'s stored text, as a damaged disk or a careless hand would."""
    if kind == "jsonl":
        path = Path(where) / f"{name}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        lines[seq - 1] = body
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif kind == "sqlite":
        import sqlite3

        with sqlite3.connect(where) as connection:
            connection.execute(
                "UPDATE events SET body = ? WHERE session = ? AND seq = ?", (body, name, seq)
            )
    else:
        import psycopg

        with psycopg.connect(where, autocommit=True) as connection:
            connection.execute(
                "UPDATE codeact_events SET body = %s WHERE session = %s AND seq = %s",
                (body, name, seq),
            )


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_event_is_the_stores_own_error_naming_the_store_session_and_event(
    located: tuple[str, str], damage: str
) -> None:
    kind, where = located
    session = Session(store=located_store(kind, where, "alice"))
    for text in ("one", "two", "three"):
        session.append(UserMessage(text=text))
    overwrite(kind, where, "alice", 2, DAMAGE[damage])
    with pytest.raises(CorruptLog) as raised:
        located_store(kind, where, "alice").load()
    message = str(raised.value)
    assert "'alice'" in message
    assert ("line 2" if kind == "jsonl" else "event 2") in message
    assert (where if kind != "postgres" else "codeact_events") in message


def test_a_file_that_is_not_a_database_is_a_corrupt_store(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"these are not the pages of a SQLite database\n" * 100)
    with pytest.raises(CorruptLog, match="not a readable store") as raised:
        SqliteStore(path, "alice").load()
    assert str(path) in str(raised.value)
    assert "'alice'" in str(raised.value)
    with pytest.raises(CorruptLog):
        Session(store=SqliteStore(path, "alice")).append(UserMessage(text="lost?"))
    assert path.read_bytes().startswith(b"these are not")  # left as it was
