"""The in-process executor runs a brief script where its caller is (no handoff to the
session's thread); one that outlasts its moment is handed back and run there from the
start, printing once, and the event loop is never held for its length."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from codeact.contract._results import ToolExecutionResult, failure
from codeact.executors._in_process import InProcessExecutor
from codeact.sandbox import Limits, _interpreter

pytestmark = pytest.mark.anyio
GENEROUS = 60.0
LIMITS = Limits(wall_seconds=60, cpu_seconds=60)


async def _no_tools(name: str, arguments: dict[str, Any]) -> ToolExecutionResult:
    return failure("c", name, "UNKNOWN_TOOL", "no tools here")


async def _run(
    executor: InProcessExecutor, source: str, session: str = "s"
) -> tuple[Any, list[tuple[str, int]]]:
    heard: list[tuple[str, int]] = []  # each print, and the thread that passed it on
    outcome = await executor.run(
        source,
        session=session,
        tools={},
        call_tool=_no_tools,
        on_output=lambda text: heard.append((text, threading.get_ident())),
    )
    return outcome, heard


def _handing_back_after(monkeypatch: pytest.MonkeyPatch, seconds: float) -> InProcessExecutor:
    """An executor whose brief runs are handed back once they outlast ``seconds``."""
    monkeypatch.setattr(_interpreter, "BRIEF_MOMENT_SECONDS", seconds)
    return InProcessExecutor(limits=LIMITS)


async def test_a_brief_script_runs_in_the_callers_thread_and_a_loop_in_the_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executor = _handing_back_after(monkeypatch, GENEROUS)  # never handed back, however busy
    here = threading.get_ident()
    try:
        brief, heard_brief = await _run(executor, "x = 2\nprint(x * 3)\nx")
        looped, heard_loop = await _run(executor, "for i in range(1):\n    print(x)")
    finally:
        await executor.aclose()
    assert (brief.value, brief.output) == (2, "6\n")
    assert heard_brief == [("6\n", here)]
    assert looped.output == "2\n"
    assert [thread for _, thread in heard_loop] != [here]  # the session's own thread


async def test_brief_runs_can_be_turned_off() -> None:
    executor = InProcessExecutor(limits=LIMITS)
    executor.brief_runs = False
    try:
        outcome, heard = await _run(executor, "print('a')")
    finally:
        await executor.aclose()
    assert outcome.output == "a\n"
    assert heard[0][1] != threading.get_ident()


LONG = "kept = 'new'\nprint('early')\ntotal = sum(range(3 * 10**6))\ntotal"


async def test_a_run_handed_back_runs_again_in_its_thread_and_prints_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executor = _handing_back_after(monkeypatch, 0.0)  # handed back at once
    try:
        with anyio.fail_after(GENEROUS):
            await _run(executor, "kept = 'old'")
            outcome, heard = await _run(executor, LONG)
            after, _ = await _run(executor, "kept")
    finally:
        await executor.aclose()
    assert outcome.error is None, outcome.error
    assert outcome.value == sum(range(3 * 10**6))
    assert outcome.output == "early\n"
    assert [text for text, _ in heard] == ["early\n"]  # once: the first attempt showed none
    assert heard[0][1] != threading.get_ident()  # passed on from the session's thread
    assert after.value == "new"


async def test_the_event_loop_goes_on_while_a_long_brief_shaped_script_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the hand back, the loop would be held for the whole run: no tick would come
    # before the run ended (here: never, as the run is cancelled once ten have come).
    executor = _handing_back_after(monkeypatch, 0.001)
    ticks = 0
    ticked = anyio.Event()
    ended = anyio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not ended.is_set():
            await anyio.sleep(0.001)
            ticks += 1
            if ticks == 10:
                ticked.set()

    try:
        with anyio.fail_after(GENEROUS):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(tick)

                async def run_long() -> None:
                    with anyio.CancelScope() as scope:
                        scope_box.append(scope)
                        await _run(executor, "total = sum(range(10**12))")
                    ended.set()

                scope_box: list[anyio.CancelScope] = []
                tasks.start_soon(run_long)
                await ticked.wait()
                assert not ended.is_set()  # ten ticks while the run went on
                scope_box[0].cancel()
    finally:
        await executor.aclose()


async def test_sessions_running_brief_and_long_runs_at_once_keep_their_own_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executor = _handing_back_after(monkeypatch, 0.0005)
    runs = 12
    scripts = [
        "n = n + 1",  # brief: a session int
        "n = n + 1\nw = sum(range(200_000))",  # brief in shape, often handed back
        "for _ in range(1):\n    n = n + 1",  # a loop: the session's thread
    ]
    results: dict[str, Any] = {}

    async def session(name: str, start: int) -> None:
        await executor.run(
            f"n = {start}\nlabel = {name!r}", session=name, tools={}, call_tool=_no_tools
        )
        for number in range(runs):
            outcome = await executor.run(
                scripts[number % 3], session=name, tools={}, call_tool=_no_tools
            )
            assert outcome.error is None, outcome.error
        final = await executor.run("(n, label)", session=name, tools={}, call_tool=_no_tools)
        results[name] = final.value

    try:
        with anyio.fail_after(GENEROUS):
            async with anyio.create_task_group() as tasks:
                for index in range(8):
                    tasks.start_soon(session, f"s{index}", index * 1000)
    finally:
        await executor.aclose()
    assert results == {f"s{i}": [i * 1000 + runs, f"s{i}"] for i in range(8)}
