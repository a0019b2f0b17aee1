"""State lives exactly as long and as wide as its owner: an agent's script session is its
own, and a runtime can be entered in one task (or loop) and left in another."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from codeact import (
    Agent,
    Executor,
    InProcessExecutor,
    Limits,
    Mode,
    ModelReply,
    ProcessExecutor,
    Runtime,
    ScriptedModel,
    ToolCall,
    ToolRegistry,
    tool,
)

pytestmark = pytest.mark.anyio

LIMITS = Limits(wall_seconds=20, cpu_seconds=20)
EXECUTORS: dict[str, Callable[[], Executor]] = {
    "inprocess": lambda: InProcessExecutor(limits=LIMITS),
    "process": lambda: ProcessExecutor(limits=LIMITS, warm=0),
}


@tool
def echo(text: str) -> str:
    """Give the text back."""
    return text


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(echo)
    return tools


def scripted(*scripts: str) -> ScriptedModel:
    replies = [
        ModelReply(tool_calls=(ToolCall(f"r{n}", "run_code", json.dumps({"code": code})),))
        for n, code in enumerate(scripts)
    ]
    return ScriptedModel([*replies, ModelReply(text="done")])


def script_results(agent: Agent) -> list[str]:
    return [m["content"] for m in agent.session.history() if m["role"] == "tool"]


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_two_agents_on_one_runtime_never_see_each_others_names(kind: str) -> None:
    async with Runtime(registry(), mode="code", executor=EXECUTORS[kind]()) as runtime:
        alice = Agent(runtime, scripted("secret = 'hunter2'", "secret"), mode=Mode.CODE)
        bob = Agent(runtime, scripted("secret"), mode=Mode.CODE)
        await alice.run("remember")
        await bob.run("peek")  # after alice, in turn
        assert "hunter2" in script_results(alice)[1]
        assert "NameError" in script_results(bob)[0]
        assert "hunter2" not in script_results(bob)[0]
        # at once: each keeps its own names while the other runs
        carol = Agent(runtime, scripted("mine = 'carol'", "echo(mine)"), mode=Mode.CODE)
        dave = Agent(runtime, scripted("mine = 'dave'", "echo(mine)"), mode=Mode.CODE)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(carol.run, "c")
            tasks.start_soon(dave.run, "d")
        assert "carol" in script_results(carol)[1]
        assert "dave" in script_results(dave)[1]
        await alice.aclose()  # its script session ends with it
        again = Agent(runtime, scripted("secret"), session=alice.session, mode=Mode.CODE)
        await again.run("after close")
        assert "NameError" in script_results(again)[-1]


async def test_an_agents_script_session_can_be_named_and_shared_on_purpose() -> None:
    async with Runtime(registry(), mode="code", executor=InProcessExecutor()) as runtime:
        first = Agent(runtime, scripted("shared = 1"), mode=Mode.CODE, script_session="team")
        second = Agent(runtime, scripted("shared + 1"), mode=Mode.CODE, script_session="team")
        await first.run("a")
        await second.run("b")
        assert "Result: 2" in script_results(second)[0]


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_a_runtime_entered_in_one_task_is_left_in_another(kind: str) -> None:
    runtime = Runtime(registry(), mode="code", executor=EXECUTORS[kind]())
    entered = anyio.Event()
    leave = anyio.Event()

    async def enter() -> None:
        await runtime.__aenter__()
        entered.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(enter)
        await entered.wait()
    result = await runtime.execute(ToolCall("c", "run_code", {"code": "echo('still here')"}))
    assert result.value["result"] == "still here"  # type: ignore[index]

    async def leave_here() -> None:
        await runtime.__aexit__(None, None, None)
        leave.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(leave_here)
    assert leave.is_set()
    if isinstance(runtime.executor, ProcessExecutor):
        assert runtime.executor.workers == []


def test_a_runtime_used_on_one_loop_can_be_left_on_another() -> None:
    """A fixture that enters and leaves through separate ``run_until_complete`` calls, each
    on a loop of its own."""
    runtime = Runtime(registry(), mode="code", executor=ProcessExecutor(limits=LIMITS, warm=1))
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(runtime.__aenter__())
        call = ToolCall("c", "run_code", {"code": "echo('one')"})
        result: Any = first.run_until_complete(runtime.execute(call))
        assert result.value["result"] == "one"
    finally:
        first.close()
    second = asyncio.new_event_loop()
    try:
        second.run_until_complete(runtime.__aexit__(None, None, None))
    finally:
        second.close()
    assert isinstance(runtime.executor, ProcessExecutor)
    assert runtime.executor.workers == []


CANCELLED_SCRIPTS = (
    "while True:\n    pass",
    "for i in range(10**7):\n    echo('x')",
    "for i in range(10**7):\n    print(i)",
    "await_many = [echo(str(i)) for i in range(50)]\nwhile True:\n    pass",
    "kept",
)


def session_runner(executor: Executor) -> Callable[[str], Any]:
    """Runs a script in the executor's session "s", its echo tool dispatched for real."""
    tools = registry()

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return await tools.execute(ToolCall("t", name, arguments))

    async def run(source: str) -> Any:
        return await executor.run(
            source, session="s", tools={"echo": ("text",)}, call_tool=call_tool
        )

    return run


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_after_many_random_cancellations_every_next_run_gets_its_own_result(
    kind: str,
) -> None:
    import random

    chooser = random.Random(29)
    # a deadline far beyond the bound each run is given: waiting one out fails the test
    limits = Limits(wall_seconds=300, cpu_seconds=300)
    executor: Executor = (
        InProcessExecutor(limits=limits)
        if kind == "inprocess"
        else ProcessExecutor(limits=limits, warm=0)
    )
    run = session_runner(executor)

    # A host's gc callbacks run in whatever thread collects, a script's too, and an abort
    # meant for the script can land in one (in-process, the executor for trusted code);
    # hypothesis leaves one installed by earlier tests in this process.
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()
    try:
        assert (await run("kept = 1000")).ok
        killed = 0
        for number in range(500):
            with anyio.move_on_after(chooser.uniform(0, 0.03)):
                await run(chooser.choice(CANCELLED_SCRIPTS))
            with anyio.fail_after(60):  # generous, and far below the deadline
                outcome = await run(f"kept + {number}")
            if outcome.error is not None and "did not stop within" in outcome.error.message:
                # a worker that could not stop in time (busy cores) was killed: the run
                # says so, runs nothing, and the session starts again
                assert "names are gone" in outcome.error.message
                killed += 1
                assert (await run("kept = 1000")).ok
                continue
            assert outcome.error is None, (number, outcome.error)
            assert outcome.value == 1000 + number  # its own result, the session's state kept
        assert killed <= 5  # rare: most cancelled runs stop well within the grace
    finally:
        gc.callbacks[:] = callbacks
        await executor.aclose()


KEEPS_PARTS = "try:\n    kept\nexcept NameError:\n    kept = []\nwhile True:\n    kept.append('x' * 1_000_000)"


async def test_a_worker_killed_because_a_cancelled_run_would_not_stop_is_named_next_run() -> None:
    """A cancelled run whose worker cannot stop (here: stopped by SIGSTOP) loses the worker
    and the session's names; nobody hears the cancelled run, so the next one is told."""
    import os
    import signal

    executor = ProcessExecutor(limits=Limits(wall_seconds=60, cpu_seconds=60), warm=0)
    run = session_runner(executor)

    try:
        assert (await run("kept = 1")).ok
        pid = executor.session_worker("s")
        assert pid is not None
        with anyio.move_on_after(0.5):
            os.kill(pid, signal.SIGSTOP)  # it can neither stop its run nor say so
            await run("while True:\n    pass")
        told = await run("kept")
        assert told.error is not None
        assert "did not stop within" in told.error.message
        assert "names are gone" in told.error.message
        assert executor.session_worker("s") is None  # nothing of it ran
        again = await run("kept = 2\nkept")
        assert again.value == 2  # the session starts afresh
    finally:
        await executor.aclose()


async def test_in_process_a_session_never_holds_more_than_its_memory_limit() -> None:
    from codeact.sandbox._limits import resident_bytes

    limit = 64 * 1024 * 1024
    executor = InProcessExecutor(limits=Limits(memory_bytes=limit, wall_seconds=60))

    async def no_tools(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError(name)

    async def run(source: str) -> Any:
        return await executor.run(source, session="s", tools={}, call_tool=no_tools)

    try:
        assert (await run("1")).ok
        before = resident_bytes()
        for _ in range(3):  # each try keeps what it could allocate in a top-level name
            outcome = await run(KEEPS_PARTS)
            assert outcome.error is not None
            assert outcome.error.code == "CODE_RESOURCE_LIMIT"
            assert "names were cleared" in outcome.error.message
        gone = await run("kept")
        assert gone.error is not None
        assert "NameError" in gone.error.message
        # nor does the host stay at its high-water mark (it had kept about 3 x 64 MiB)
        assert resident_bytes() - before < limit
    finally:
        await executor.aclose()


def test_a_runtime_collected_on_its_own_loop_still_closes_its_worker_and_threads() -> None:
    import threading
    from pathlib import Path

    def alive(pid: int) -> bool:
        try:
            return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False

    runtime = Runtime(registry(), mode="code", executor=ProcessExecutor(limits=LIMITS, warm=0))
    result: Any = runtime.execute_sync(ToolCall("c", "run_code", {"code": "echo('one')"}))
    assert result.value["result"] == "one"
    pid = runtime.executor.session_worker("default")  # type: ignore[attr-defined]
    assert pid is not None
    assert alive(pid)
    loop = runtime._loop
    assert loop is not None
    loop_thread = loop._thread
    held = [runtime]
    del runtime, result

    async def drop() -> None:  # the last reference goes inside a callback on the loop
        held.clear()
        gc.collect()

    loop.call(drop)
    for _ in range(600):  # a bounded wait (up to a minute), on what closing does
        if not alive(pid) and not loop_thread.is_alive():
            break
        threading.Event().wait(0.1)
    assert not alive(pid), "the worker outlived its collected runtime"
    assert not loop_thread.is_alive()
