"""Durable runs: a script that waits for a person, survives a crash, never repeats an effect.

Real parts throughout: worker processes, the JSONL, SQLite and PostgreSQL stores, and
second host processes; effects are counted in a ledger file no host owns.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from codeact import (
    Agent,
    CorruptLog,
    Durable,
    JsonlStore,
    ModelReply,
    ReplayDiverged,
    Runtime,
    ScriptedModel,
    SqliteStore,
    ToolCall,
    ToolExecutionResult,
    ToolRegistry,
    UsageError,
    idempotency_key,
    thaw,
    tool,
)
from codeact.durable._record import EFFECT_UNKNOWN
from tests.durable.durable_host import (
    HASH_SEED,
    SESSION,
    Ledger,
    open_store,
    registry,
    runtime,
)
from tests.hosts import REPO
from tests.postgres_server import fresh_database, running_server

pytestmark = pytest.mark.anyio

PAYS = """
import random, uuid, secrets, time
seen = [random.random(), str(uuid.uuid4()), secrets.token_hex(8), time.time()]
total = add(0, 5)
note(str(seen))
try:
    receipt = pay(total)
except ToolError as error:
    receipt = f"refused: {error.code}: {error.message}"
note(receipt)
print(receipt)
{"receipt": receipt, "seen": seen}
"""

TWO_PAYMENTS = """
first = pay(1)
note(first)
second = pay(2)
[first, second]
"""


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


@pytest.fixture
async def host(tmp_path: Path, ledger: Ledger) -> AsyncIterator[Runtime]:
    async with runtime("jsonl", str(tmp_path), ledger) as made:
        yield made


def script_result(result: ToolExecutionResult) -> Any:
    """What the script returned, as plain JSON data."""
    assert not result.is_error, result.text
    return thaw(result.value)["result"]


async def start(host: Runtime, source: str, call_id: str = "c1") -> Any:
    return await host.execute(ToolCall(call_id, "run_code", {"code": source}), session=SESSION)


# Suspension ---------------------------------------------------------------------------


async def test_a_deferred_approval_suspends_the_run_and_resume_runs_the_call_once(
    tmp_path: Path, ledger: Ledger
) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        suspended = await start(host, PAYS)
        assert suspended.error.code == "SUSPENDED"
        assert "c1.3, pay(amount=5)" in suspended.error.message
        [pending] = host.pending(SESSION)
        assert (pending.call_id, pending.name, pending.arguments) == ("c1.3", "pay", {"amount": 5})
        assert [name for name, _ in ledger.lines()] == ["add", "note"]  # nothing after it ran
        resumed = await host.resume(SESSION, {"c1.3": True})
    assert not resumed.is_error
    assert script_result(resumed)["receipt"] == "paid 5"
    assert ledger.counts() == {
        ("add", f"{SESSION}/c1.1"): 1,
        ("note", f"{SESSION}/c1.2"): 1,
        ("pay", f"{SESSION}/c1.3"): 1,
        ("note", f"{SESSION}/c1.4"): 1,
    }
    assert host.pending(SESSION) == []


async def test_what_the_facades_returned_before_the_suspension_is_what_the_resumed_run_sees(
    tmp_path: Path, ledger: Ledger
) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        await start(host, PAYS)
        resumed = await host.resume(SESSION, {"c1.3": True})
    # the note written before the suspension carries the readings of the first execution;
    # a replay that read other values would have called note differently and diverged
    events = [json.loads(line) for line in (tmp_path / f"{SESSION}.jsonl").read_text().splitlines()]
    noted = next(e for e in events if e["kind"] == "script_call_started" and e["name"] == "note")
    assert json.loads(noted["arguments"])["text"] == str(list(script_result(resumed)["seen"]))


async def test_a_denial_reaches_the_script_as_an_error_it_can_catch(
    tmp_path: Path, ledger: Ledger
) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        await start(host, PAYS)
        resumed = await host.resume(SESSION, {"c1.3": False})
    assert (
        script_result(resumed)["receipt"] == "refused: POLICY_DENIED: a person declined this call"
    )
    assert [name for name, _ in ledger.lines()] == ["add", "note", "note"]


async def test_a_run_can_suspend_several_times(tmp_path: Path, ledger: Ledger) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        first = await start(host, TWO_PAYMENTS)
        assert first.error.code == "SUSPENDED"
        second = await host.resume(SESSION, {"c1.1": True})
        assert second.error.code == "SUSPENDED"
        assert "c1.3, pay(amount=2)" in second.error.message
        assert [p.call_id for p in host.pending(SESSION)] == ["c1.3"]
        done = await host.resume(SESSION, {"c1.3": True})
    assert script_result(done) == ["paid 1", "paid 2"]
    assert sorted(ledger.counts().values()) == [1, 1, 1]


async def test_a_suspended_session_runs_nothing_new_until_its_run_is_resumed(
    host: Runtime, ledger: Ledger
) -> None:
    await start(host, TWO_PAYMENTS)
    refused = await start(host, "note('x')", call_id="c2")
    assert refused.error.code == "SUSPENDED"
    assert "c1.1" in refused.error.message
    assert ledger.lines() == []
    with pytest.raises(UsageError, match=r"c9\.1"):
        await host.resume(SESSION, {"c9.1": True})  # no such pending call


async def test_names_persist_across_runs_and_across_a_resume(host: Runtime) -> None:
    await start(host, "import random\nbase = add(0, 40)\nluck = random.random()", "c0")
    await start(host, TWO_PAYMENTS)
    await host.resume(SESSION, {"c1.1": True})
    await host.resume(SESSION, {"c1.3": True})
    later = await start(host, "[base + 2, luck]", "c2")
    base, luck = script_result(later)
    assert base == 42
    assert 0 <= luck < 1


async def test_a_resume_after_the_end_gives_the_recorded_result_and_runs_nothing(
    host: Runtime, ledger: Ledger
) -> None:
    with pytest.raises(UsageError, match="no run"):
        await host.resume(SESSION)
    ended = await start(host, "print('once')\nnote('x')")
    again = await host.resume(SESSION)
    assert again.to_dict() == ended.to_dict()
    assert len(ledger.lines()) == 1


async def test_runtime_without_durable_cannot_resume_and_keys_are_none_outside_runs() -> None:
    seen = []

    @tool
    def probe() -> str:
        """Report the idempotency key."""
        seen.append(idempotency_key())
        return "ok"

    plain = ToolRegistry()
    plain.register(probe)
    with Runtime(plain) as host:
        host.execute_sync(ToolCall("c", "run_code", {"code": "probe()"}))
        with pytest.raises(UsageError, match="durable"):
            host.pending()
    assert seen == [None]
    assert idempotency_key() is None


def test_a_durable_runtime_refuses_an_executor_with_another_hash_seed(tmp_path: Path) -> None:
    from codeact import ProcessExecutor

    store = Durable(lambda name: JsonlStore(tmp_path / name), hash_seed=7)
    with pytest.raises(UsageError, match="hash_seed=7"):
        Runtime(ToolRegistry(), durable=store, executor=ProcessExecutor(hash_seed=8))


# Divergence ----------------------------------------------------------------------------


async def test_a_tool_that_changed_between_suspend_and_resume_is_refused_naming_the_call(
    tmp_path: Path, ledger: Ledger
) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        await start(host, PAYS)
    before = ledger.lines()
    renamed = registry(ledger, note_parameter="message")
    durable = Durable(open_store("jsonl", str(tmp_path)), hash_seed=HASH_SEED)
    async with Runtime(renamed, durable=durable) as other:
        with pytest.raises(ReplayDiverged, match=r"c1\.2.*note\(text=.*note\(message="):
            await other.resume(SESSION, {"c1.3": True})
    assert ledger.lines() == before  # nothing executed on a guess
    async with runtime("jsonl", str(tmp_path), ledger) as host:  # the record is intact
        assert script_result(await host.resume(SESSION, {"c1.3": True}))["receipt"] == "paid 5"


async def test_a_script_changed_between_suspend_and_resume_is_refused_naming_the_call(
    host: Runtime, ledger: Ledger
) -> None:
    await start(host, TWO_PAYMENTS)
    await host.resume(SESSION, {"c1.1": True})
    with pytest.raises(
        ReplayDiverged, match=r"c1\.2.*note\(text=\"paid 1\"\).*note\(text=\"other\"\)"
    ):
        await host.resume(
            SESSION, {"c1.3": True}, source=TWO_PAYMENTS.replace("note(first)", "note('other')")
        )
    with pytest.raises(ReplayDiverged, match=r"ended before call c1\.3"):
        await host.resume(SESSION, {"c1.3": True}, source="first = pay(1)\nnote(first)\n")
    assert [name for name, _ in ledger.lines()] == ["pay", "note"]
    amended = TWO_PAYMENTS.replace("[first, second]", "{'both': [first, second]}")
    done = await host.resume(SESSION, {"c1.3": True}, source=amended)
    assert script_result(done) == {"both": ["paid 1", "paid 2"]}
    later = await start(host, "second", "c2")
    assert script_result(later) == "paid 2"


# Two hosts -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    try:
        with running_server() as conninfo:
            yield conninfo
    except LookupError as reason:
        pytest.skip(str(reason))


def _host(*arguments: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.durable.durable_host", *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "runs.db")
    conninfo = request.getfixturevalue("postgres")
    return "postgres", fresh_database(conninfo, f"d{uuid.uuid4().hex[:16]}")


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_run_suspended_on_one_host_resumes_on_another(
    shared_store: tuple[str, str], tmp_path: Path, decision: str
) -> None:
    kind, where = shared_store
    ledger = tmp_path / "ledger"
    first = _host("start", kind, where, str(ledger), PAYS)
    assert first["error"] == "SUSPENDED"
    assert [name for name, _ in Ledger(ledger).lines()] == ["add", "note"]
    second = _host("resume", kind, where, str(ledger), decision)
    assert second["error"] is None
    receipt = second["value"]["result"]["receipt"]
    effects = Ledger(ledger).counts()
    if decision == "approve":
        assert receipt == "paid 5"
        assert effects[("pay", f"{SESSION}/c1.3")] == 1
    else:
        assert receipt.startswith("refused: POLICY_DENIED")
        assert not any(name == "pay" for name, _ in effects)
    assert all(count == 1 for count in effects.values())


# The agent ---------------------------------------------------------------------------


async def test_an_agent_resumes_its_suspended_run_and_the_model_reads_the_result(
    tmp_path: Path, ledger: Ledger
) -> None:
    code = ToolCall("r1", "run_code", {"code": TWO_PAYMENTS.replace("pay(2)", "note('end')")})
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(code,)),
            ModelReply(text="The payment waits for approval."),
            ModelReply(text="Paid."),
        ]
    )
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        agent = Agent(host, model, script_session="trip")
        assert await agent.run("Pay and note it") == "The payment waits for approval."
        [pending] = host.pending("trip")
        assert pending.call_id == "r1.1"
        assert await agent.resume({"r1.1": True}) == "Paid."
    told = model.requests[-1].messages[-1]
    assert told["role"] == "user"
    assert "run_code call r1," in told["content"]
    assert "r1.1 approved" in told["content"]
    assert "paid 1" in told["content"]
    assert [name for name, _ in ledger.lines()] == ["pay", "note", "note"]


def test_durable_takes_a_store_per_session_not_one_store(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="lambda session"):
        Durable(JsonlStore(tmp_path / "one.jsonl"))  # type: ignore[arg-type]


def test_durable_runs_need_an_executor_that_tapes_them(tmp_path: Path) -> None:
    from codeact import InProcessExecutor

    durable = Durable(lambda name: JsonlStore(tmp_path / name))
    with pytest.raises(UsageError, match="ProcessExecutor"):
        Runtime(ToolRegistry(), durable=durable, executor=InProcessExecutor())


async def test_calls_made_together_are_recorded_as_each_completes_and_resume_once(
    host: Runtime, ledger: Ledger
) -> None:
    source = (
        "import asyncio\ndone = await asyncio.gather(note('a'), pay(3), note('b'), add(1, 2))\ndone"
    )
    suspended = await start(host, source)
    assert suspended.error.code == "SUSPENDED"
    assert sorted(name for name, _ in ledger.lines()) == ["add", "note", "note"]
    resumed = await host.resume(SESSION, {"c1.2": True})
    assert script_result(resumed) == ["A", "paid 3", "B", 3]
    assert sorted(ledger.counts().values()) == [1, 1, 1, 1]


async def test_a_closed_session_is_let_go_and_continues_from_its_record(host: Runtime) -> None:
    await start(host, "kept = add(20, 22)", "c0")
    assert host.durable is not None
    assert "durable" in host.durable.warm
    await host.close_session(SESSION)
    assert host.durable.warm == {}
    again = await start(host, "kept", "c2")  # a new worker, rebuilt from the record
    assert script_result(again) == 42


async def test_a_record_made_under_another_hash_seed_is_refused_and_left_as_it_was(
    tmp_path: Path, ledger: Ledger
) -> None:
    async with runtime("jsonl", str(tmp_path), ledger) as host:
        await start(host, "kept = add(1, 2)", "c0")
    log = tmp_path / f"{SESSION}.jsonl"
    before = log.read_text()
    other = Durable(open_store("jsonl", str(tmp_path)), hash_seed=HASH_SEED + 1)
    async with Runtime(registry(ledger), durable=other) as host:
        refused = await start(host, "kept", "c1")
    assert refused.error.code == "REPLAY_DIVERGED"
    assert f"hash_seed={HASH_SEED}" in refused.error.message
    assert log.read_text() == before


async def test_a_cancelled_run_ends_in_its_record_and_its_session_is_rebuilt_later(
    tmp_path: Path, ledger: Ledger
) -> None:
    started = anyio.Event()

    @tool
    async def block() -> str:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    def tools() -> ToolRegistry:
        found = registry(ledger)
        found.register(block)
        return found

    durable = Durable(open_store("jsonl", str(tmp_path)), hash_seed=HASH_SEED)
    async with Runtime(tools(), durable=durable) as host, anyio.create_task_group() as group:
        group.start_soon(start, host, "before = note('a')\nblock()\nafter = note('b')")
        with anyio.fail_after(60):
            await started.wait()
        group.cancel_scope.cancel()
    log = tmp_path / f"{SESSION}.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["kind"], last["code"]) == ("run_ended", "ABORTED")
    again = Durable(open_store("jsonl", str(tmp_path)), hash_seed=HASH_SEED)
    async with Runtime(tools(), durable=again) as other:  # rebuilt up to the cancel point
        later = await start(other, "[before, 'after' in globals()]", "c2")
    assert script_result(later) == ["A", False]
    assert ledger.lines() == [("note", f"{SESSION}/c1.1")]


GATHER_HOST = """
import asyncio, sys
from pathlib import Path
from codeact import Durable, Runtime, SqliteStore, ToolCall, ToolRegistry, tool

store, flight = sys.argv[1], Path(sys.argv[2])

def in_flight(name):
    with flight.open("a") as file:
        file.write(name + "\\n")

async def stay():
    await asyncio.sleep(3600)  # until the host is killed

@tool(concurrency_safe=True)
async def charge(amount: int) -> str:
    '''Charge a card (neither read-only nor idempotent).'''
    in_flight("charge")
    await stay()
    return "charged"

@tool(read_only=True, concurrency_safe=True)
async def stock(item: str) -> int:
    '''How many are left.'''
    in_flight("stock")
    await stay()
    return 3

@tool(annotations={"idempotentHint": True}, concurrency_safe=True)
async def reserve(item: str) -> str:
    '''Hold an item (idempotent).'''
    in_flight("reserve")
    await stay()
    return "held"

registry = ToolRegistry()
for made in (charge, stock, reserve):
    registry.register(made)
script = '''
import asyncio
async def main():
    return await asyncio.gather(charge(amount=5), stock(item="pen"), reserve(item="pen"))
asyncio.run(main())
'''
async def run():
    durable = Durable(lambda session: SqliteStore(store, session))
    async with Runtime(registry, durable=durable) as host:
        await host.execute(ToolCall("c1", "run_code", {"code": script}), session="shop")
asyncio.run(run())
"""


def test_after_a_crash_mid_batch_only_the_call_with_an_unknown_effect_is_a_question(
    tmp_path: Path,
) -> None:
    store, flight = tmp_path / "runs.db", tmp_path / "flight"
    flight.touch()
    child = subprocess.Popen([sys.executable, "-c", GATHER_HOST, str(store), str(flight)], cwd=REPO)
    try:
        with anyio.from_thread.start_blocking_portal() as portal:  # a bounded wait, on an event

            async def all_in_flight() -> None:
                with anyio.fail_after(60):
                    while sorted(flight.read_text().split()) != ["charge", "reserve", "stock"]:
                        await anyio.sleep(0.02)

            portal.call(all_in_flight)
    finally:
        child.kill()
        child.wait(timeout=30)
    made: list[str] = []

    @tool
    def charge(amount: int) -> str:
        """Charge a card (neither read-only nor idempotent)."""
        made.append("charge")
        return "charged"

    @tool(read_only=True)
    def stock(item: str) -> int:
        """How many are left."""
        made.append("stock")
        return 3

    @tool(annotations={"idempotentHint": True})
    def reserve(item: str) -> str:
        """Hold an item (idempotent)."""
        made.append("reserve")
        return "held"

    registry = ToolRegistry()
    for tool_made in (charge, stock, reserve):
        registry.register(tool_made)
    durable = Durable(lambda session: SqliteStore(str(store), session))
    with Runtime(registry, durable=durable) as host:
        questions = host.pending("shop")
        assert [(q.name, q.reason) for q in questions] == [("charge", EFFECT_UNKNOWN)]
        result = host.resume_sync("shop", {questions[0].call_id: True})  # it did not go through
    assert sorted(made) == ["charge", "reserve", "stock"]  # the other two simply ran again
    assert not result.is_error, result.text
    assert thaw(result.value)["result"] == ["charged", 3, "held"]


def test_entropy_drawn_in_a_loop_ends_in_a_limit_and_the_record_stays_small(
    tmp_path: Path,
) -> None:
    durable = Durable(lambda session: JsonlStore(tmp_path / f"{session}.jsonl"))
    with Runtime(ToolRegistry(), durable=durable) as host:
        result = host.execute_sync(
            ToolCall(
                "c1",
                "run_code",
                {"code": "import secrets\nwhile True:\n    secrets.token_bytes(4096)"},
            ),
            session="s",
        )
        assert result.error.code == "CODE_RESOURCE_LIMIT"
        assert "2,000,000 characters of clock and entropy readings" in result.error.message
        after = host.execute_sync(ToolCall("c2", "run_code", {"code": "1 + 1"}), session="s")
        assert not after.is_error, after.text  # the run ended: the session goes on
    assert (tmp_path / "s.jsonl").stat().st_size < 3_000_000


def echoing(calls: list[int]) -> ToolRegistry:
    @tool
    def echo(text: str) -> int:
        """Keep a text; say how long it was."""
        calls.append(len(text))
        return len(text)

    registry = ToolRegistry()
    registry.register(echo)
    return registry


def test_a_run_whose_record_would_pass_its_bound_ends_before_the_call(tmp_path: Path) -> None:
    calls: list[int] = []
    durable = Durable(
        lambda session: JsonlStore(tmp_path / f"{session}.jsonl"), max_run_bytes=200_000
    )
    script = "for n in range(100):\n    echo(text='x' * 10_000)"
    with Runtime(echoing(calls), durable=durable) as host:
        result = host.execute_sync(ToolCall("c1", "run_code", {"code": script}), session="s")
        assert result.error.code == "CODE_RESOURCE_LIMIT"
        assert "the run's record would pass 200,000 bytes" in result.error.message
        assert 10 <= len(calls) < 20  # the calls that fitted were made, the next was not
        assert host.pending("s") == []  # the run ended: nothing waits
        after = host.execute_sync(ToolCall("c2", "run_code", {"code": "1 + 1"}), session="s")
        assert not after.is_error, after.text
    assert (tmp_path / "s.jsonl").stat().st_size < 250_000


def test_a_session_whose_record_would_pass_its_bound_stops_the_run_that_would(
    tmp_path: Path,
) -> None:
    calls: list[int] = []
    durable = Durable(
        lambda session: JsonlStore(tmp_path / f"{session}.jsonl"), max_session_bytes=300_000
    )
    script = "for n in range(10):\n    echo(text='x' * 10_000)"
    with Runtime(echoing(calls), durable=durable) as host:
        ends = [
            host.execute_sync(ToolCall(f"c{n}", "run_code", {"code": script}), session="s")
            for n in range(4)
        ]
    assert [end.is_error for end in ends[:2]] == [False, False]  # 100 kB each
    stopped = [end for end in ends if end.is_error]
    assert stopped, "no run was stopped"
    assert stopped[0].error.code == "CODE_RESOURCE_LIMIT"
    assert "the session's record would pass 300,000 bytes" in stopped[0].error.message
    assert "new session" in stopped[0].error.message
    assert (tmp_path / "s.jsonl").stat().st_size < 350_000


@pytest.mark.parametrize("damage", ["{oops", '{"kind": "nonsense", "seq": 3}', "[1]"])
def test_a_damaged_record_is_refused_naming_where_and_nothing_runs(
    shared_store: tuple[str, str], tmp_path: Path, damage: str
) -> None:
    from tests.session.test_stores import overwrite

    kind, where = shared_store
    ledger = Ledger(tmp_path / "ledger")
    first = _host("start", kind, where, str(ledger.path), PAYS)
    assert first["error"] == "SUSPENDED"
    effects = ledger.lines()
    overwrite(kind, where, SESSION, 3, damage)
    with runtime(kind, where, ledger) as host:
        with pytest.raises(CorruptLog) as asked:
            host.pending(SESSION)
        with pytest.raises(CorruptLog) as resumed:
            host.resume_sync(SESSION, {"c1.3": True})
    for raised in (asked, resumed):
        assert f"session {SESSION!r}, event 3 is unreadable" in str(raised.value)
    assert ledger.lines() == effects  # nothing ran


def test_two_hosts_resuming_one_run_at_once_the_loser_is_told_with_one_code(
    tmp_path: Path,
) -> None:
    import threading

    where = str(tmp_path / "runs.db")
    ledger = Ledger(tmp_path / "ledger")
    first = _host("start", "sqlite", where, str(ledger.path), PAYS)
    assert first["error"] == "SUSPENDED"
    hosts = [runtime("sqlite", where, ledger) for _ in range(2)]
    for host in hosts:
        host.__enter__()
    try:
        codes: list[str | None] = []

        def resume(host: Runtime, start: threading.Barrier) -> None:
            start.wait(timeout=60)
            try:
                end = host.resume_sync(SESSION, {"c1.3": True})
            except ReplayDiverged:  # what resume raises for REPLAY_DIVERGED
                codes.append("REPLAY_DIVERGED")
            else:
                codes.append(end.error.code if end.is_error else None)

        for _ in range(6):  # each round: both hosts resume the same run at the same moment
            start = threading.Barrier(2)
            threads = [threading.Thread(target=resume, args=(host, start)) for host in hosts]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            if codes[-2:] == [None, None]:
                break  # the run ended: both read its recorded result
    finally:
        for host in hosts:
            host.__exit__(None, None, None)
    # a host that lost the race for the record says so, with one code; none says otherwise
    assert set(codes) <= {None, "REPLAY_DIVERGED", "SUSPENDED"}, codes
    assert [name for name, _ in ledger.lines()].count("pay") <= 1
