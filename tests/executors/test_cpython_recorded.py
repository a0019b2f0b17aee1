"""Durable runs, approvals and previews with scripts in plain CPython: the worker tapes
the clock and entropy the script reads through the real modules (numpy's generator
included), so a run resumed after its worker was killed reads what it read the first
time and makes no effect twice; a preview plans a CPython script's writes and makes
none; a clock the tape cannot see ends a resumed run in ``REPLAY_DIVERGED``, never in a
repeated effect."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from codeact import Durable, ProcessExecutor, ReplayDiverged, Runtime, SqliteStore, ToolCall
from tests.durable.durable_host import HASH_SEED, KillAfter, Ledger, open_store, registry
from tests.durable.test_crash_harness import settle
from tests.durable.test_preview import World, world_tools

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="the kernel layers this mode needs"
    ),
]

# Every kind of reading the worker tapes reaches a note's argument and the run's value: a
# replay that read any of them afresh would call note differently and be refused.
READINGS = """
import random, secrets, time, uuid
import numpy as np
total = 0
for i in range(4):
    total = add(total, i)
    time.sleep(0.01)
    note(f"{i} {time.time()} {time.perf_counter_ns()} {uuid.uuid4()} {secrets.token_hex(8)}"
         f" {random.random()} {np.random.rand()} {random.SystemRandom().random()}")
[total, random.random(), float(np.random.standard_normal()), time.monotonic()]
"""
EVENTS = 2 + 2 * 8  # run_started, a start and an answer per call, run_ended


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cpython_executor() -> ProcessExecutor:
    return ProcessExecutor(interpreter="cpython", packages=("numpy",), hash_seed=HASH_SEED, warm=0)


def assert_each_effect_once(ledger: Ledger, session: str, effects: int) -> None:
    counts = {key: n for (_, key), n in ledger.counts(session).items()}
    assert len(counts) == effects
    assert set(counts.values()) == {1}, {k: n for k, n in counts.items() if n != 1}


def kill_worker_of(host: Runtime, session: str) -> None:
    pid = host.executor.session_worker(session)  # type: ignore[attr-defined]
    if pid is not None:
        os.kill(pid, signal.SIGKILL)


@asynccontextmanager
async def killed_after_the_first_answer(
    folder: Path, ledger: Ledger, source: str
) -> AsyncIterator[Runtime]:
    """A runtime whose run of ``source`` (session "s") lost its worker right after the
    record took the first call's answer (its third event)."""
    kills = KillAfter(open_store("jsonl", str(folder)), 3, lambda: None)
    async with Runtime(
        registry(ledger), durable=Durable(kills, hash_seed=HASH_SEED), executor=cpython_executor()
    ) as host:
        kills.then = lambda: kill_worker_of(host, "s")
        first = await host.execute(ToolCall("c1", "run_code", {"code": source}), session="s")
        assert first.is_error, first.text
        assert first.error.code == "ABORTED", first.text
        kills.at = 0
        yield host


async def test_a_cpython_run_killed_at_each_boundary_resumes_reading_what_it_read(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path / "ledger")
    async with Runtime(
        registry(ledger),
        durable=Durable(open_store("jsonl", str(tmp_path)), hash_seed=HASH_SEED),
        executor=cpython_executor(),
    ) as host:
        call = ToolCall("c1", "run_code", {"code": READINGS})
        uncrashed = await host.execute(call, session="uncrashed")
    assert not uncrashed.is_error, uncrashed.text
    assert_each_effect_once(ledger, "uncrashed", 8)
    assert len((tmp_path / "uncrashed.jsonl").read_text().splitlines()) == EVENTS

    kills = KillAfter(open_store("jsonl", str(tmp_path)), 0, lambda: None)
    async with Runtime(
        registry(ledger), durable=Durable(kills, hash_seed=HASH_SEED), executor=cpython_executor()
    ) as host:
        killed = 0
        for at in (2, 3, 4, 7, 10, 13, 16):  # after starts and answers, early and late
            session = f"killed-{at}"
            kills.at, kills.appended = at, 0

            def kill(session: str = session) -> None:
                kill_worker_of(host, session)

            kills.then = kill
            first = await host.execute(
                ToolCall("c1", "run_code", {"code": READINGS}), session=session
            )
            killed += first.is_error
            kills.at = 0
            result, _ = await settle(host, session, ledger, first)
            # a replay that read a clock or entropy afresh would pass note other text, and
            # end in REPLAY_DIVERGED
            assert not result.is_error, (at, result.text)
            assert_each_effect_once(ledger, session, 8)
            await host.close_session(session)
    assert killed >= 6  # a kill after the last answer may come when the run has ended


async def test_a_resumed_cpython_run_returns_what_the_first_run_read(tmp_path: Path) -> None:
    """The worker killed after the first call's answer: the resumed run reads the clock,
    the generators and entropy as the first run read them before the kill."""
    ledger = Ledger(tmp_path / "ledger")
    source = (
        "import random, time, uuid\nimport numpy as np\n"
        "before = [time.time(), random.random(), float(np.random.rand()), str(uuid.uuid4())]\n"
        "note(str(before))\nnote('again')\n"
        "after = time.time()\n"
        "{'before': before, 'after': after}"
    )
    async with killed_after_the_first_answer(tmp_path, ledger, source) as host:
        result, questions = await settle(host, "s", ledger, await host.resume("s"))
    assert not result.is_error, result.text
    assert questions == []  # the host lived: the answered note is in the record
    assert_each_effect_once(ledger, "s", 2)
    # the replay passed the first note what the first run read, and returned the same
    started = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    [first_note] = [e for e in started if e["kind"] == "script_call_started" and e["position"] == 1]
    value: Any = result.value
    before = list(value["result"]["before"])
    assert json.loads(first_note["arguments"]) == {"text": str(before)}


async def test_a_cpython_preview_plans_the_writes_and_makes_none(tmp_path: Path) -> None:
    world = World()
    source = (
        "import numpy as np\n"
        "amounts = np.array([balance('a'), balance('b')]) // 10\n"
        "for customer in list_customers():\n"
        "    send_email(to=customer, subject='hello')\n"
        "order = create_order(item='pen', qty=int(amounts.sum()))\n"
        "tag(order=order, label='rush')\n"
        "print(order['id'])\n"
    )
    store = str(tmp_path / "runs.db")
    async with Runtime(
        world_tools(world),
        durable=Durable(lambda name: SqliteStore(store, name), hash_seed=HASH_SEED),
        executor=cpython_executor(),
    ) as host:
        plan = await host.preview(source, session="p")
    assert world.effects == []  # nothing written while the script was previewed
    assert [w.tool for w in plan.writes] == ["send_email"] * 3 + ["create_order", "tag"]
    assert [w.line for w in plan.writes] == [4, 4, 4, 5, 6]
    assert [w.loop for w in plan.writes] == [3, 3, 3, None, None]
    assert plan.writes[3].arguments == {"item": "pen", "qty": 12}  # (100 + 20) // 10
    assert plan.writes[4].uses == (plan.writes[3].call_id,)
    assert plan.reads == 3
    assert plan.stopped is not None
    assert plan.stopped.line == 7
    assert "indexes the result of create_order()" in plan.stopped.message


async def test_a_clock_the_tape_cannot_see_ends_a_resumed_run_diverged_not_repeated(
    tmp_path: Path,
) -> None:
    """``datetime.now()`` is read in C: the replay reads a later time, passes it to note
    (a call that is not idempotent), and the host refuses the call instead of repeating it."""
    ledger = Ledger(tmp_path / "ledger")
    source = "import datetime\nnote(datetime.datetime.now().isoformat())\nnote('second')\n"
    async with killed_after_the_first_answer(tmp_path, ledger, source) as host:
        with pytest.raises(ReplayDiverged, match=r"the replay diverged at call c1\.1"):
            await host.resume("s")
    assert ledger.lines("s") == [("note", "s/c1.1")]  # made once, and nothing after it
