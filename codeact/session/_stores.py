"""Where a session's events live: one small interface; a JSONL file, SQLite or PostgreSQL.

A store holds one session's events in order. ``load`` returns them all; ``append`` makes
one durable before it returns. A server gives each conversation a store of its own over
one SQLite file that any number of processes share.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, Self, cast

from ._events import CorruptLog, Event, event_from_json, event_to_json

BUSY_SECONDS = 30.0  # how long a writer waits for another process's transaction


class EventStore(Protocol):
    """What a session needs of its storage."""

    @property
    def name(self) -> str:
        """The session's name (its id in traces)."""
        ...

    def load(self) -> list[Event]: ...

    def append(self, event: Event) -> None: ...


class ConcurrentWriter(RuntimeError):
    """Another writer recorded an event at this sequence number first: two hosts are
    continuing one session, and this one's view of it is stale."""


class JsonlStore:
    """Events as JSON lines, appended and flushed one by one.

    A torn last line (a crash in the middle of a write) is detected and dropped on
    load; a bad line anywhere else is an error, never silently skipped.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.dropped_torn_line = False
        self._offset: int | None = None  # where this store last read or wrote to

    @property
    def name(self) -> str:
        """The session's name: the file's, without its suffix."""
        return self.path.stem

    def load(self) -> list[Event]:
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        self._offset = len(raw)
        lines = raw.split(b"\n")
        events: list[Event] = []
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            last = index >= len(lines) - 1 or not any(rest.strip() for rest in lines[index + 1 :])
            try:
                event = event_from_json(line.decode("utf-8"))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                if last and not raw.endswith(b"\n"):
                    self.dropped_torn_line = True
                    self._truncate_to(len(raw) - len(line))
                    break
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, line {index + 1} is unreadable "
                    f"({type(error).__name__}: {error})"[:600]
                ) from None
            if event.seq != len(events) + 1:  # events are numbered as they were appended
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, line {index + 1} holds event "
                    f"{event.seq} where event {len(events) + 1} belongs"
                )
            events.append(event)
        return events

    def load_after(self, seq: int) -> list[Event]:
        """The events after ``seq``: read from where this store last read or wrote."""
        offset = self._offset
        if offset is None or not self.path.exists() or self.path.stat().st_size < offset:
            return [event for event in self.load() if event.seq > seq]
        with self.path.open("rb") as handle:
            handle.seek(offset)
            raw = handle.read()
        if not raw.endswith(b"\n"):  # a line being written: read it when it is whole
            raw = raw[: raw.rfind(b"\n") + 1]
        events = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                events.append(event_from_json(line.decode("utf-8")))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise CorruptLog(
                    f"{self.path}: session {self.name!r}, an event after event {seq} is "
                    f"unreadable ({type(error).__name__}: {error})"[:600]
                ) from None
        self._offset = offset + len(raw)
        return [event for event in events if event.seq > seq]

    def append(self, event: Event) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(event_to_json(event) + "\n")
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
            if self._offset is not None:
                self._offset = os.fstat(handle.fileno()).st_size

    def _truncate_to(self, size: int) -> None:
        with self.path.open("r+b") as handle:
            handle.truncate(size)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID
"""


def _events(rows: Iterable[tuple[Any, Any]], where: str, session: str) -> list[Event]:
    """A store's rows (sequence number, body) as events; a row that is not one raises
    ``CorruptLog`` naming the store, the session and the row, before anything runs."""
    events: list[Event] = []
    for seq, body in rows:
        try:
            event = event_from_json(body)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            reason = f"{type(error).__name__}: {error}"[:300]
            raise CorruptLog(
                f"{where}: session {session!r}, event {seq} is unreadable ({reason})"
            ) from None
        if event.seq != seq:
            raise CorruptLog(
                f"{where}: session {session!r}, the row of event {seq} holds event {event.seq}"
            )
        events.append(event)
    return events


class _Connected:
    """A store over one database connection: opened on first use, used by one thread at
    a time, closed by ``close``, by leaving ``with``, or when the store is collected."""

    _connection: Any = None

    def __init__(self, session: str) -> None:
        if not session:
            raise ValueError(f"a {type(self).__name__} needs a session name")
        self.session = session
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.session

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        connection, self._connection = getattr(self, "_connection", None), None
        if connection is not None:
            connection.close()


class SqliteStore(_Connected):
    """One session's events in a SQLite file that many sessions and processes share.

    Each append is a transaction of its own, committed to the write-ahead log with
    ``synchronous=FULL``: a crash of this process or of the machine loses no event that
    was appended and leaves none half-written. Sequence numbers are the key, so two
    writers cannot both record the same one: the second gets ``ConcurrentWriter``.
    """

    def __init__(
        self, path: str | os.PathLike[str], session: str, *, busy_seconds: float = BUSY_SECONDS
    ) -> None:
        self.path = Path(path)
        self._busy_seconds = busy_seconds
        super().__init__(session)

    def load(self) -> list[Event]:
        return self.load_after(0)

    def load_after(self, seq: int) -> list[Event]:
        """The events after ``seq`` (another process's, since this one last looked)."""
        with self._lock, self._readable():
            rows = self._connect().execute(
                "SELECT seq, body FROM events WHERE session = ? AND seq > ? ORDER BY seq",
                (self.session, seq),
            )
            return _events(rows, str(self.path), self.session)

    @contextlib.contextmanager
    def _readable(self) -> Iterator[None]:
        """A file that is not a SQLite database (or is a damaged one) is a corrupt store."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            if type(error) is not sqlite3.DatabaseError:  # locked, busy, constraint: not this
                raise
            raise CorruptLog(
                f"{self.path}: session {self.session!r}: not a readable store ({error})"
            ) from None

    def append(self, event: Event) -> None:
        with self._lock, self._readable():
            connection = self._connect()
            try:
                with connection:  # one transaction, committed (or rolled back) here
                    connection.execute(
                        "INSERT INTO events (session, seq, body) VALUES (?, ?, ?)",
                        (self.session, event.seq, event_to_json(event)),
                    )
            except sqlite3.IntegrityError:
                raise ConcurrentWriter(
                    f"session {self.session!r} already has an event {event.seq} in "
                    f"{self.path}: another writer is continuing it"
                ) from None

    def sessions(self) -> list[str]:
        """Every session the file holds, by name."""
        with self._lock:
            rows = self._connect().execute("SELECT DISTINCT session FROM events ORDER BY session")
            return [name for (name,) in rows]

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(
                self.path, timeout=self._busy_seconds, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            connection.execute("PRAGMA synchronous=FULL")  # a commit survives power loss
            with connection:
                connection.execute(_SCHEMA)
            self._connection = connection
        return cast(sqlite3.Connection, self._connection)


_PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS codeact_events (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, seq)
)
"""


class PostgresStore(_Connected):
    """One session's events in PostgreSQL, for several hosts sharing sessions.

    ``conninfo`` is a libpq connection string or URL. Each append is a committed
    transaction; the (session, seq) key refuses a second writer of the same event
    (``ConcurrentWriter``), as SQLite's does. Needs ``pip install 'codeact[postgres]'``.
    """

    def __init__(self, conninfo: str, session: str) -> None:
        self.conninfo = conninfo
        super().__init__(session)

    def load(self) -> list[Event]:
        return self.load_after(0)

    def load_after(self, seq: int) -> list[Event]:
        """The events after ``seq`` (another host's, since this one last looked)."""
        with self._lock:
            connection = self._connect()
            with connection.transaction():
                rows = connection.execute(
                    "SELECT seq, body FROM codeact_events WHERE session = %s AND seq > %s "
                    "ORDER BY seq",
                    (self.session, seq),
                ).fetchall()
            return _events(rows, "PostgreSQL table codeact_events", self.session)

    def append(self, event: Event) -> None:
        import psycopg

        with self._lock:
            connection = self._connect()
            try:
                with connection.transaction():
                    connection.execute(
                        "INSERT INTO codeact_events (session, seq, body) VALUES (%s, %s, %s)",
                        (self.session, event.seq, event_to_json(event)),
                    )
            except psycopg.errors.UniqueViolation:
                raise ConcurrentWriter(
                    f"session {self.session!r} already has an event {event.seq}: "
                    "another writer is continuing it"
                ) from None

    def sessions(self) -> list[str]:
        """Every session the database holds, by name."""
        with self._lock:
            connection = self._connect()
            with connection.transaction():
                rows = connection.execute(
                    "SELECT DISTINCT session FROM codeact_events ORDER BY session"
                ).fetchall()
            return [name for (name,) in rows]

    def _connect(self) -> Any:
        if self._connection is None or self._connection.closed:
            import psycopg

            connection = psycopg.connect(self.conninfo, autocommit=True)
            try:
                with connection.transaction():
                    connection.execute(_PG_SCHEMA)
            except (
                psycopg.errors.UniqueViolation,
                psycopg.errors.DuplicateTable,
                psycopg.errors.DuplicateObject,  # its row type, made by the same race
            ):
                pass  # another process created it at the same moment
            self._connection = connection
        return self._connection


__all__ = [
    "BUSY_SECONDS",
    "ConcurrentWriter",
    "EventStore",
    "JsonlStore",
    "PostgresStore",
    "SqliteStore",
]
