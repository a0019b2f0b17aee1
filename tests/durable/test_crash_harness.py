"""The crash harness: a 100-call script, its worker and (separately) its host SIGKILLed at
every event boundary of its record, resumed each time.

After every kill and resume: each idempotent tool's effect happened exactly once (its
key made a repeat harmless), no call of the tool that is not idempotent was repeated
without the question being asked, and the final result is the uncrashed run's, byte
for byte. The "person" answering a question checks the ledger, as a person would check
the system the call changes: repeat it only if it did not take effect.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeact import Durable, PendingCall, Runtime, ToolCall, ToolExecutionResult
from codeact.durable._record import EFFECT_UNKNOWN
from tests.durable.durable_host import (
    HASH_SEED,
    HUNDRED_CALLS,
    KillAfter,
    Ledger,
    open_store,
    registry,
    shown,
)
from tests.hosts import REPO

pytestmark = pytest.mark.anyio

EFFECTS_PER_RUN = 100  # 50 add, 50 note


async def settle(
    host: Runtime, session: str, ledger: Ledger, result: ToolExecutionResult
) -> tuple[ToolExecutionResult, list[PendingCall]]:
    """Resume until the run ends, answering each question from the ledger."""
    questions: list[PendingCall] = []
    for _ in range(10):
        if not (result.is_error and result.error.code in ("ABORTED", "SUSPENDED")):
            return result, questions
        pending = host.pending(session)
        questions.extend(pending)
        decisions = {p.call_id: not ledger.has(f"{session}/{p.call_id}") for p in pending}
        result = await host.resume(session, decisions)
    raise AssertionError(f"the run did not settle: {result.text}")


def assert_effects_once(ledger: Ledger, session: str) -> None:
    counts = {key: n for (_, key), n in ledger.counts(session).items()}
    assert len(counts) == EFFECTS_PER_RUN
    assert set(counts.values()) == {1}, {k: n for k, n in counts.items() if n != 1}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crashes")


@pytest.fixture(scope="module")
async def uncrashed(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run without a crash: its result, and its record's events in order."""
    ledger = Ledger(folder / "uncrashed.ledger")
    durable = Durable(open_store("jsonl", str(folder)), hash_seed=HASH_SEED)
    async with Runtime(registry(ledger), durable=durable) as host:
        call = ToolCall("c1", "run_code", {"code": HUNDRED_CALLS})
        result = await host.execute(call, session="uncrashed")
    assert not result.is_error, result.text
    assert_effects_once(ledger, "uncrashed")
    events = [json.loads(line) for line in (folder / "uncrashed.jsonl").read_text().splitlines()]
    assert len(events) == 2 + 2 * EFFECTS_PER_RUN
    return shown(result), events


# Each test's boundaries are dealt to shards (every SHARDS-th one), so parallel test
# processes share the work; together the shards cover every boundary.
WORKER_SHARDS = 2
HOST_SHARDS = 4


@pytest.mark.parametrize("shard", range(WORKER_SHARDS))
async def test_the_worker_killed_at_every_event_boundary(
    folder: Path, uncrashed: tuple[dict[str, Any], list[dict[str, Any]]], shard: int
) -> None:
    expected, events = uncrashed
    ledger = Ledger(folder / f"worker-{shard}.ledger")
    kills = KillAfter(open_store("jsonl", str(folder)), 0, lambda: None)
    async with Runtime(registry(ledger), durable=Durable(kills, hash_seed=HASH_SEED)) as host:
        killed = 0
        # event 1 is written before the run has a worker; every later boundary has one
        boundaries = range(2 + shard, len(events) + 1, WORKER_SHARDS)
        for at in boundaries:
            session = f"worker-{at}"

            def kill_worker(session: str = session) -> None:
                pid = host.executor.session_worker(session)  # type: ignore[attr-defined]
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)

            kills.at, kills.then, kills.appended = at, kill_worker, 0
            call = ToolCall("c1", "run_code", {"code": HUNDRED_CALLS})
            first = await host.execute(call, session=session)
            killed += first.is_error
            kills.at = 0
            result, questions = await settle(host, session, ledger, first)
            assert shown(result) == expected, at
            assert questions == []  # the host lived: every call it ran has its answer
            assert_effects_once(ledger, session)
            await host.close_session(session)
    # a kill after the last call's answer (or the run's end) may come too late to matter
    assert killed >= len(boundaries) - 3


@pytest.fixture(scope="module")
def zygote() -> Iterator[subprocess.Popen[str]]:
    """A host process that forks each crashing host from its imported self."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.durable.durable_host", "zygote"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield process
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.close()
    process.wait(timeout=60)
    process.stdout.close()


@pytest.fixture(scope="module")
async def resumer(folder: Path) -> AsyncIterator[tuple[Runtime, Ledger]]:
    ledger = Ledger(folder / "host.ledger")
    durable = Durable(open_store("jsonl", str(folder)), hash_seed=HASH_SEED)
    async with Runtime(registry(ledger), durable=durable) as host:
        yield host, ledger


@pytest.mark.parametrize("shard", range(HOST_SHARDS))
async def test_the_host_killed_at_every_event_boundary(
    folder: Path,
    uncrashed: tuple[dict[str, Any], list[dict[str, Any]]],
    zygote: subprocess.Popen[str],
    resumer: tuple[Runtime, Ledger],
    shard: int,
) -> None:
    expected, events = uncrashed
    host, ledger = resumer
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    for at in range(1 + shard, len(events) + 1, HOST_SHARDS):
        session = f"host-{at}"
        zygote.stdin.write(f"jsonl {folder} {ledger.path} {session} {at}\n")
        zygote.stdin.flush()
        reported = zygote.stdout.readline().split()
        assert reported == [str(at), str(-signal.SIGKILL)], reported  # it died at the point
        # another host takes the run over from the log
        result, questions = await settle(host, session, ledger, await host.resume(session))
        assert shown(result) == expected, at
        assert_effects_once(ledger, session)
        # the one call a question is owed for: a note whose start was the last event written
        last = events[at - 1]
        owed = last["kind"] == "script_call_started" and last["name"] == "note"
        assert [q.call_id for q in questions] == ([f"c1.{last['position']}"] if owed else [])
        assert all(q.reason == EFFECT_UNKNOWN for q in questions)
        await host.close_session(session)
