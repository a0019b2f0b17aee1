"""Replay determinism over the CPython-oracle scripts: every script, run durably, then
replayed from its record by another runtime (a clean worker, the record's answers and
readings), must make the same calls and end with the same output, value and error."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeact import Durable, JsonlStore, Limits, Runtime, ToolCall
from tests.sandbox.conftest import make_registry
from tests.sandbox.test_oracle import SCRIPTS

LIMITS = Limits(wall_seconds=5.0, cpu_seconds=5.0)


def _runtime(folder: Path) -> Runtime:
    durable = Durable(lambda name: JsonlStore(folder / f"{name}.jsonl"), hash_seed=99)
    return Runtime(make_registry(), durable=durable, limits=LIMITS)


def test_every_oracle_script_replays_from_its_record_to_the_same_end(tmp_path: Path) -> None:
    recorded: dict[str, str] = {}
    with _runtime(tmp_path) as first:
        for number, key in enumerate(SCRIPTS):
            session = f"s{number}"
            first.execute_sync(
                ToolCall("run", "run_code", {"code": SCRIPTS[key][1]}), session=session
            )
            recorded[session] = key
            first.execute_sync(ToolCall("close", "run_code", {"code": "None"}), session=session)
    diverged = []
    with _runtime(tmp_path) as second:
        for session, key in recorded.items():
            # a run in a session this runtime's workers never held: the earlier ones replay
            again = second.execute_sync(
                ToolCall("after", "run_code", {"code": "'replayed'"}), session=session
            )
            if again.is_error:
                diverged.append(f"{key}: {again.text[:300]}")
    assert diverged == []
    assert len(recorded) == len(SCRIPTS) >= 300


def test_a_replay_that_ends_otherwise_than_its_record_is_refused(tmp_path: Path) -> None:
    with _runtime(tmp_path) as first:
        first.execute_sync(ToolCall("run", "run_code", {"code": "x = add(1, 2)\nx"}), session="s")
    log = tmp_path / "s.jsonl"
    forged = log.read_text().replace('"ok\\": true, \\"value\\": 3', '"ok\\": true, \\"value\\": 4')
    assert forged != log.read_text()
    log.write_text(forged)  # the tool's answer, not the run's recorded end
    with _runtime(tmp_path) as second:
        again = second.execute_sync(ToolCall("after", "run_code", {"code": "x"}), session="s")
    assert again.error.code == "REPLAY_DIVERGED"
    assert "run run returned or printed other than it did" in again.error.message


@pytest.mark.parametrize(
    "reading",
    [
        "time.time()",
        "time.monotonic_ns()",
        "datetime.datetime.now().isoformat()",
        "str(uuid.uuid4())",
        "secrets.token_urlsafe(8)",
        "random.random()",
        "random.Random().random()",
        "list({str(n) for n in range(20)})",
    ],
)
def test_a_replay_reads_the_clock_and_entropy_from_its_record(tmp_path: Path, reading: str) -> None:
    source = f"import datetime, random, secrets, time, uuid\nv = {reading}\nv"
    with _runtime(tmp_path) as first:
        recorded = first.execute_sync(ToolCall("run", "run_code", {"code": source}), session="s")
    with _runtime(tmp_path) as second:  # a new worker rebuilds v from the record
        replayed = second.execute_sync(ToolCall("after", "run_code", {"code": "v"}), session="s")
    assert replayed.value["result"] == recorded.value["result"]


def test_a_reading_of_another_kind_than_the_record_kills_the_worker_that_made_it(
    tmp_path: Path,
) -> None:
    with _runtime(tmp_path) as first:
        first.execute_sync(
            ToolCall("run", "run_code", {"code": "import time\nv = time.time()\nv"}), session="s"
        )
    log = tmp_path / "s.jsonl"
    forged = log.read_text().replace('[\\"time\\", ', '[\\"time_ns\\", ')
    assert forged != log.read_text()
    log.write_text(forged)  # the record says the clock was read in nanoseconds
    with _runtime(tmp_path) as second:
        again = second.execute_sync(ToolCall("after", "run_code", {"code": "v"}), session="s")
        assert again.error.code == "REPLAY_DIVERGED"
        assert "the record has time_ns, the script read time" in again.error.message
        assert second.executor.session_worker("s") is None  # type: ignore[attr-defined]
