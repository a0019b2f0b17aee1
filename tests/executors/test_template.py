"""Workers forked from the template process: confined alike, gone with it, nothing left."""

from __future__ import annotations

import itertools
import os
import signal
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from codeact.executors._early_template import available
from codeact.executors._process import ProcessExecutor
from codeact.executors._template import WorkerTemplate
from codeact.executors._worker_environment import template_command
from codeact.executors._worker_process import Worker, WorkerOptions
from codeact.sandbox import Limits
from tests.executors.test_confinement import ESCAPE_MODULE, escape
from tests.executors.test_process import LIMITS, children, killed_mid_run, run

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not available(), reason="forking from a template needs pidfds (Linux)"),
]


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("\nPPid:\t", 1)[1].split("\n", 1)[0])


def descendants_alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)}


def _zombie(pid: int) -> bool:
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


async def test_a_forked_worker_collects_the_cycles_its_scripts_drop() -> None:
    """The template imports with the collector paused, and its workers collect again: 400
    MB of dropped cycles fit in a 128 MB limit (uncollected, the run would stop at it)."""
    limits = replace(LIMITS, memory_bytes=128 * 1024 * 1024, wall_seconds=60, cpu_seconds=60)
    executor = ProcessExecutor(limits=limits, warm=0)
    script = "for i in range(4000):\n    a = [bytearray(100_000)]\n    a.append(a)\n'dropped'"
    try:
        outcome = await run(executor, script, session="cycles")
        assert outcome.error is None, outcome.error
        assert outcome.value == "dropped"
        assert parent_of(executor._sessions["cycles"].pid) == executor.template_pid
    finally:
        await executor.aclose()


async def test_even_the_first_session_runs_in_a_worker_forked_from_the_template() -> None:
    os.environ["CODEACT_HOST_SECRET"] = "do-not-leak"
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    fresh = ProcessExecutor(limits=LIMITS, warm=0, template=False)
    try:
        assert (await run(fresh, "1", session="started")).ok
        started = fresh._sessions["started"]
        # the first run waits for the template rather than start a worker beside it
        outcome = await run(executor, "state = add(2, 3)\nstate", session="forked")
        assert outcome.value == 5
        template = executor.template_pid
        assert template is not None
        worker = executor._sessions["forked"]
        assert parent_of(worker.pid) == template  # forked from it, not started by us
        assert worker.pid not in children()
        # confined as a started worker is: the same layers, its own folder, few descriptors
        assert parent_of(started.pid) == os.getpid()
        assert worker.confinement.active.keys() == started.confinement.active.keys()
        assert worker.confinement.missing.keys() == started.confinement.missing.keys()
        assert b"do-not-leak" not in Path(f"/proc/{worker.pid}/environ").read_bytes()
        assert len(os.listdir(f"/proc/{worker.pid}/fd")) <= 8
        cwd = os.readlink(f"/proc/{worker.pid}/cwd")
        assert Path(cwd).name.startswith("codeact-worker-")
        assert (await run(executor, "state + 1", session="forked")).value == 6  # names persist
    finally:
        del os.environ["CODEACT_HOST_SECRET"]
        await executor.aclose()
        await fresh.aclose()
    assert not Path(cwd).exists()
    assert descendants_alive({template, worker.pid}) == set()


async def test_a_forked_worker_killed_mid_run_is_reported_and_replaced() -> None:
    executor = ProcessExecutor(limits=LIMITS.__class__(wall_seconds=10.0), warm=0)
    try:
        assert await executor.prepare()
        assert (await run(executor, "x = 1", session="k")).ok
        outcome = await killed_mid_run(executor, executor._sessions["k"].pid, session="k")
        assert outcome.error is not None
        assert "killed (SIGKILL)" in outcome.error.message  # the template relayed its end
        assert (await run(executor, "add(1, 1)", session="k")).value == 2
    finally:
        await executor.aclose()


async def test_when_the_template_dies_its_workers_die_and_the_next_run_still_works() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert await executor.prepare()
        template = executor.template_pid
        assert template is not None
        assert (await run(executor, "1", session="a")).ok
        forked = executor._sessions["a"].pid
        os.kill(template, signal.SIGKILL)
        with anyio.fail_after(20):
            while descendants_alive({forked}):  # its parent-death signal
                await anyio.sleep(0.05)
        lost = await run(executor, "1", session="a")
        assert lost.error is not None
        assert "state was lost" in lost.error.message
        assert "the worker template died" in lost.error.message  # not "out of memory"
        assert (await run(executor, "add(4, 4)", session="a")).value == 8
        assert (await run(executor, "add(5, 5)", session="b")).value == 10
    finally:
        await executor.aclose()
    assert children() == set()


async def test_after_the_template_is_killed_every_new_sessions_first_run_succeeds() -> None:
    async with ProcessExecutor(limits=LIMITS, warm=2) as executor:
        assert await executor.prepare()
        template = executor.template_pid
        with anyio.fail_after(60):  # spares forked from the template
            for number in itertools.count():
                if len(executor._spare) == 2:
                    if all(parent_of(w.pid) == template for w in executor._spare):
                        break
                    # one started before the template was ready: hand it to a session
                    assert (await run(executor, "1", session=f"first{number}")).ok
                await anyio.sleep(0.05)
        spares = {w.pid for w in executor._spare}
        assert template is not None
        os.kill(template, signal.SIGKILL)
        with anyio.fail_after(20):
            while descendants_alive({template}):
                await anyio.sleep(0.01)
        for number in range(4):  # at once, and again while the pool refills
            outcome = await run(executor, f"add({number}, 1)", session=f"new{number}")
            assert outcome.value == number + 1, outcome.error
            assert executor._sessions[f"new{number}"].pid not in spares
        with anyio.fail_after(30):  # a new template, for the workers after these
            while executor.template_pid in (None, template):
                await executor.prepare()
        assert (await run(executor, "add(2, 2)", session="later")).value == 4


async def test_a_stopped_template_is_killed_at_the_fork_deadline_and_sessions_are_served() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert await executor.prepare()
        template = executor.template_pid
        assert template is not None
        assert executor._template is not None
        executor._template.fork_timeout = 1.0  # the test's own, shorter deadline
        os.kill(template, signal.SIGSTOP)  # it answers nothing, and holds the fork lock
        values: dict[str, object] = {}

        async def session(number: int) -> None:
            outcome = await run(executor, f"add({number}, 1)", session=f"s{number}")
            values[f"s{number}"] = outcome.value if outcome.ok else outcome.error

        with anyio.fail_after(60):  # generous: each waits one fork deadline at most
            async with anyio.create_task_group() as tasks:
                for number in range(3):
                    tasks.start_soon(session, number)
        assert values == {f"s{n}": n + 1 for n in range(3)}
        with anyio.fail_after(20):
            while descendants_alive({template}):  # killed, not left stopped
                await anyio.sleep(0.02)
        assert await executor.prepare()  # and a new template serves the workers after these
        assert executor.template_pid not in (None, template)
        assert (await run(executor, "add(2, 2)", session="later")).value == 4
        assert parent_of(executor._sessions["later"].pid) == executor.template_pid
    finally:
        await executor.aclose()
    assert children() == set()


async def test_many_sessions_fork_at_once_and_closing_leaves_no_process() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert await executor.prepare()
        template = executor.template_pid
        values: dict[str, object] = {}

        async def session(number: int) -> None:
            outcome = await run(executor, f"add({number}, 1)", session=f"s{number}")
            values[f"s{number}"] = outcome.value

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                for number in range(16):
                    tasks.start_soon(session, number)
        assert values == {f"s{n}": n + 1 for n in range(16)}
        pids = {worker.pid for worker in executor.workers}
        assert len(pids) == 16
        assert {parent_of(pid) for pid in pids} == {template}
    finally:
        await executor.aclose()
    assert descendants_alive({*pids, template}) == set()  # type: ignore[arg-type]
    assert children() == set()


async def test_forked_workers_do_not_share_random_state() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert await executor.prepare()
        draws = [
            (await run(executor, "import random\nrandom.random()", session=f"r{n}")).value
            for n in range(3)
        ]
        tokens = [
            (await run(executor, "import secrets\nsecrets.token_hex(8)", session=f"r{n}")).value
            for n in range(3)
        ]
    finally:
        await executor.aclose()
    assert len(set(draws)) == 3
    assert len(set(tokens)) == 3


# Each limit, as a script meets it; the words of the error that names the limit.
LIMIT_SCRIPTS = {
    # 250 MB, under the kernel's address-space backstop: the watchdog must see it
    "memory": (
        "kept = ['x' * 1_000 + str(i) for i in range(240_000)]\nlen(kept)",
        "memory (128 MiB)",
    ),
    "cpu": ("n = 0\nwhile True:\n    n += 1", "CPU time"),
    "output": ("for i in range(10_000):\n    print('x' * 100)", "printed more than"),
    "tool calls": ("for i in range(200):\n    add(i, 1)", "more than 100 tool calls"),
}
FORKED_LIMITS = Limits(
    wall_seconds=30.0,
    cpu_seconds=20.0,
    memory_bytes=128 * 1024 * 1024,
    max_output_chars=5_000,
    max_printed_chars=50_000,
    max_tool_calls=100,
)


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "started"])
@pytest.mark.parametrize("limit", sorted(LIMIT_SCRIPTS))
async def test_every_limit_holds_in_forked_and_started_workers(limit: str, forked: bool) -> None:
    script, words = LIMIT_SCRIPTS[limit]
    limits = replace(FORKED_LIMITS, cpu_seconds=1.0) if limit == "cpu" else FORKED_LIMITS
    executor = ProcessExecutor(limits=limits, warm=0, template=forked)
    try:
        if forked:
            assert await executor.prepare()
        assert (await run(executor, "kept_before = 1")).ok
        worker = executor._sessions["s"]
        assert (parent_of(worker.pid) == executor.template_pid) is forked
        outcome = await run(executor, script)
        assert outcome.error is not None, outcome.value
        assert outcome.error.code == "CODE_RESOURCE_LIMIT"
        assert words in outcome.error.message
    finally:
        await executor.aclose()


async def test_the_template_runs_with_no_new_privileges_and_a_filter() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert await executor.prepare()
        template = executor.template_pid
        report = executor.template_confinement
        assert template is not None
        assert report is not None
        assert set(report.active) == {"no_new_privs", "seccomp"}, report.missing
        status = Path(f"/proc/{template}/status").read_text()
        assert "\nNoNewPrivs:\t1\n" in status
        assert "\nSeccomp:\t2\n" in status  # a filter is loaded
        # its workers still fork, drop their user and confine themselves further
        assert (await run(executor, "add(20, 22)", session="after")).value == 42
        worker = executor._sessions["after"]
        assert parent_of(worker.pid) == template
        assert {"no_new_privs", "landlock", "seccomp"} <= set(worker.confinement.active)
    finally:
        await executor.aclose()


async def test_a_worker_program_whose_main_is_borrowed_runs_whole_when_forked() -> None:
    # the escape worker calls the standard worker's main() with an operation of its own:
    # forked from a template, it must run as its own program, not as that main() alone
    options = WorkerOptions(module=ESCAPE_MODULE)
    template = WorkerTemplate.spawn(template_command(ESCAPE_MODULE), options.environment)
    try:
        await anyio.to_thread.run_sync(template.wait_ready)
        worker = await Worker.start(Limits(), frozenset({"json"}), options, template)
        try:
            assert parent_of(worker.pid) == template.process.pid
            assert await escape(worker, "result = 6 * 7") == {
                "op": "escaped",
                "ok": True,
                "value": "42",
            }
        finally:
            await worker.close()
    finally:
        await anyio.to_thread.run_sync(template.close)
