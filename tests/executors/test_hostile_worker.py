"""A worker that escaped its interpreter turns on the host through the channel: it gains
nothing. Each behaviour of ``tests/executors/hostile_worker.py`` ends its run by the deadline with a
clear error, the worker is killed, the host's threads and descriptors return to where
they were, and the session's next run gets its own result."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact import Runtime, ToolCall, ToolExecutionResult, ToolRegistry, tool
from codeact.executors._early_template import available
from codeact.executors._process import ProcessExecutor
from codeact.executors._worker_messages import oversized
from codeact.executors._worker_process import WorkerOptions
from codeact.sandbox import Limits, ScriptOutcome
from codeact.sandbox._errors import LimitExceeded
from codeact.sandbox._interpreter import plain_result
from tests.executors.test_process import children, open_descriptors
from tests.hosts import REPO

pytestmark = pytest.mark.anyio

HOSTILE = "tests.executors.hostile_worker"
LIMITS = Limits(wall_seconds=2.0, cpu_seconds=2.0, max_output_chars=10_000, max_tool_calls=100)
RULES = "broke the channel's rules"
DEADLINE = "killed at the 2 s deadline"
# What each behaviour must end in: the stable code, and words of the model-readable reason.
ENDINGS = {
    "stall": ("CODE_RESOURCE_LIMIT", DEADLINE),
    "partial": ("CODE_RESOURCE_LIMIT", DEADLINE),
    "never_reads": ("CODE_RESOURCE_LIMIT", DEADLINE),
    "trickle": ("CODE_RESOURCE_LIMIT", DEADLINE),
    "flood": ("CODE_RUNTIME_ERROR", "more printed output than the run's limit"),
    "endless_line": ("CODE_RUNTIME_ERROR", "longer than the channel allows"),
    "garbage": ("CODE_RUNTIME_ERROR", "not JSON"),
    "deep": ("CODE_RUNTIME_ERROR", "nested deeper than the decoder allows"),
    "invalid_utf8": ("CODE_RUNTIME_ERROR", "not JSON"),
    "forged_run": ("CODE_RUNTIME_ERROR", "belongs to another run"),
    "earlier_run": ("CODE_RUNTIME_ERROR", "belongs to another run"),
    "unknown_op": ("CODE_RUNTIME_ERROR", "an unexpected message"),
    "forged_calls": ("CODE_RUNTIME_ERROR", "a tool the run did not bind"),
    "misshapen_calls": ("CODE_RUNTIME_ERROR", "a call that is not an object"),
    "too_many_calls": ("CODE_RESOURCE_LIMIT", "more than 100 tool calls"),
    "wrong_code": ("CODE_RUNTIME_ERROR", "an unknown error code"),
    "bad_outcome": ("CODE_RUNTIME_ERROR", "an outcome of the wrong shape"),
    "bad_cause": ("CODE_RUNTIME_ERROR", "an outcome of the wrong shape"),
    "huge_value": ("CODE_RUNTIME_ERROR", "an outcome value larger than 1,000,000 characters"),
    "deep_value": ("CODE_RUNTIME_ERROR", "an outcome value nested deeper than 50 levels"),
    "wide_keys": ("CODE_RUNTIME_ERROR", "an outcome value larger than 1,000,000 characters"),
    "nan_value": ("CODE_RUNTIME_ERROR", "an outcome value holding NaN or infinity"),
    "unrecorded_readings": ("CODE_RUNTIME_ERROR", "a recording's fields in a run that records"),
    "unplanned_preview_stop": ("CODE_RUNTIME_ERROR", "a preview stop in a run that was sent no"),
}
# A worker that writes without end is stopped by whichever comes first on a busy machine:
# the channel's line limit or the run's deadline. Either ending names its fact.
RACES_THE_DEADLINE = frozenset({"endless_line", "flood"})
dispatched: list[str] = []


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    dispatched.append("add")
    return a + b


@tool
def big(size: int) -> str:
    """A long text."""
    dispatched.append("big")
    return "b" * size


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(add)
    tools.register(big)
    return tools


def hostile_executor(*, template: bool) -> ProcessExecutor:
    executor = ProcessExecutor(limits=LIMITS, warm=0, template=template)
    executor.options = WorkerOptions(module=HOSTILE)  # test-only: the worker program replaced
    return executor


async def run(executor: ProcessExecutor, source: str, session: str = "s") -> ScriptOutcome:
    tools = registry()

    async def call_tool(name: str, arguments: dict[str, object]) -> ToolExecutionResult:
        return await tools.execute(ToolCall("t", name, arguments))  # type: ignore[arg-type]

    with anyio.fail_after(60):  # generous: every ending comes by the 2 s deadline
        return await executor.run(
            source,
            session=session,
            tools={"add": ("a", "b"), "big": ("size",)},
            call_tool=call_tool,
        )


def alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def our_threads() -> set[str]:
    """The host's threads that codeact started (anyio's pool keeps idle threads of its own)."""
    return {t.name for t in threading.enumerate() if t.name.startswith("codeact")}


async def settled(before: set[str]) -> set[str]:
    """Our threads once those of the killed worker have ended (a bounded wait)."""
    with anyio.move_on_after(30):
        while our_threads() - before:
            await anyio.sleep(0.05)
    return our_threads() - before


@pytest.mark.parametrize("behaviour", sorted(ENDINGS))
async def test_a_hostile_worker_is_killed_and_the_session_goes_on(behaviour: str) -> None:
    code, reason = ENDINGS[behaviour]
    threads, descriptors, kids = our_threads(), open_descriptors(), children()
    executor = hostile_executor(template=False)
    try:
        assert (await run(executor, "kept = 1\nkept")).value == 1
        (worker,) = executor.workers
        dispatched.clear()
        outcome = await run(executor, f"#hostile: {behaviour}")
        assert outcome.error is not None, outcome
        ending = (outcome.error.code, reason in outcome.error.message)
        if behaviour in RACES_THE_DEADLINE and ending != (code, True):
            code, reason = "CODE_RESOURCE_LIMIT", DEADLINE  # the deadline came first
        assert outcome.error.code == code, outcome.error.message
        assert reason in outcome.error.message
        assert "a fresh worker will serve the next run" in outcome.error.message
        assert len(outcome.error.message) < 1_000
        assert not alive(worker.pid)  # killed, not left to the host's close
        if behaviour == "too_many_calls":
            assert dispatched == []  # refused before any call of the batch ran
        after = await run(executor, "40 + 2")
        assert after.value == 42
        assert executor.workers[0].pid != worker.pid
    finally:
        await executor.aclose()
    assert children() == kids
    assert open_descriptors() == descriptors
    assert await settled(threads) == set()


async def test_what_a_worker_claims_is_bounded_and_its_calls_are_the_hosts_record() -> None:
    executor = hostile_executor(template=False)
    try:
        assert (await run(executor, "kept = 1")).ok
        (worker,) = executor.workers
        outcome = await run(executor, "#hostile: huge_error")
        assert outcome.error is not None
        assert outcome.error.code == "CODE_RUNTIME_ERROR"
        assert len(outcome.error.message) < 4_100  # 15 MB claimed
        assert len(outcome.error.kind) < 1_100
        assert outcome.error.cause is not None
        assert len(outcome.error.cause) < 4_100  # 15 MB claimed
        assert len(outcome.output) <= LIMITS.max_output_chars + 300  # 5 MB claimed
        assert outcome.tool_calls == ()  # 50 claimed, none made
        hidden = await run(executor, "#hostile: hides_calls")
        assert hidden.value == "hidden"
        assert len(hidden.tool_calls) == 50  # made and answered, though the worker claims none
        assert {c.name for c in hidden.tool_calls} == {"add"}
        assert (await run(executor, "kept")).value == 1  # a worker that kept the rules lives on
        assert executor.workers[0].pid == worker.pid
    finally:
        await executor.aclose()


@pytest.mark.skipif(not available(), reason="forking from a template needs pidfds (Linux)")
@pytest.mark.parametrize("behaviour", ["deep", "never_reads", "forged_run", "stall"])
async def test_a_hostile_forked_worker_is_killed_alike(behaviour: str) -> None:
    code, reason = ENDINGS[behaviour]
    executor = hostile_executor(template=True)
    try:
        assert await executor.prepare()
        assert (await run(executor, "1")).ok
        (worker,) = executor.workers
        assert worker.pid not in children()  # forked from the template
        outcome = await run(executor, f"#hostile: {behaviour}")
        assert outcome.error is not None
        assert (outcome.error.code, reason in outcome.error.message) == (code, True)
        with anyio.fail_after(10):
            while alive(worker.pid):
                await anyio.sleep(0.02)
        assert (await run(executor, "40 + 2")).value == 42
    finally:
        await executor.aclose()


async def test_the_model_reads_a_bounded_error_through_the_runtime() -> None:
    executor = hostile_executor(template=False)
    runtime = Runtime(registry(), mode="code", executor=executor, limits=LIMITS)
    async with runtime:
        result = await runtime.execute(
            ToolCall("c1", "run_code", {"code": "#hostile: huge_error"}), session="s"
        )
        assert result.is_error
        assert result.error.code == "CODE_RUNTIME_ERROR"
        assert 0 < len(result.error.message) < 20_000
        assert sum(len(getattr(block, "text", "")) for block in result.content) < 20_000


def test_the_hostile_worker_is_test_only() -> None:
    """No production code names it: only a test that replaces the worker program can."""
    package = REPO / "codeact"
    assert not [p for p in package.rglob("*.py") if HOSTILE in p.read_text()]
    assert os.path.exists(Path(__file__).with_name("hostile_worker.py"))


class Tape:
    """A durable run's tape, as the host keeps it: what the worker reported."""

    def __init__(self) -> None:
        self.replay: list[list[object]] = []
        self.fresh = False
        self.reported: list[list[object]] = []

    def received(
        self, reads: list[list[object]], diverged: str | None, lines: list[int | None]
    ) -> None:
        self.reported.extend(reads)


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("forged_reading", "a reading of an unknown kind"),
        ("flood_readings", "readings that are not a bounded list"),
        ("heavy_readings", "more clock and entropy readings than a run may record"),
        ("forged_line", "a call line that is not a line of the script"),
        ("misshapen_lines", "call lines that do not match the calls"),
        ("line_past_the_script", "a call line that is not a line of the script"),
        ("unplanned_preview_stop", "a preview stop in a run that was sent no planned write"),
    ],
)
async def test_a_worker_that_forges_clock_or_entropy_readings_is_killed(
    behaviour: str, reason: str
) -> None:
    executor = hostile_executor(template=False)
    tools = registry()
    tape = Tape()

    async def call_tool(name: str, arguments: dict[str, object]) -> ToolExecutionResult:
        return await tools.execute(ToolCall("t", name, arguments))  # type: ignore[arg-type]

    try:
        dispatched.clear()
        with anyio.fail_after(60):
            outcome = await executor.run(
                f"#hostile: {behaviour}",
                session="s",
                tools={"add": ("a", "b")},
                call_tool=call_tool,
                tape=tape,
            )
        assert outcome.error is not None
        assert RULES in outcome.error.message
        assert reason in outcome.error.message
        assert tape.reported == []  # nothing of it reached the run's record
        assert dispatched == []  # the call it came with never ran
        assert executor.workers == []
    finally:
        await executor.aclose()


async def test_a_previewed_worker_that_passes_a_result_it_was_never_sent_is_killed(
    tmp_path: Path,
) -> None:
    from codeact import Durable, JsonlStore

    executor = ProcessExecutor(limits=LIMITS, warm=0, template=False, hash_seed=0)
    executor.options = WorkerOptions(module=HOSTILE, hash_seed=0)
    durable = Durable(lambda session: JsonlStore(tmp_path / f"{session}.jsonl"))
    runtime = Runtime(registry(), mode="code", executor=executor, limits=LIMITS, durable=durable)
    async with runtime:
        dispatched.clear()
        code = {"code": "#hostile: unsent_pending", "preview": True}
        with anyio.fail_after(60):
            result = await runtime.execute(ToolCall("c1", "run_code", code), session="s")
        assert result.is_error
        assert "the result of a write it was not sent" in result.error.message
        assert dispatched == []  # the call it came with never ran
        assert executor.workers == []  # killed
        assert runtime.plan("s") is None


@pytest.mark.parametrize("behaviour", ["huge_value", "deep_value"])
async def test_an_oversized_value_reaches_the_model_as_an_error_not_a_crash(
    behaviour: str,
) -> None:
    executor = hostile_executor(template=False)
    runtime = Runtime(registry(), mode="code", executor=executor, limits=LIMITS)
    async with runtime:
        result = await runtime.execute(
            ToolCall("c1", "run_code", {"code": f"#hostile: {behaviour}"}), session="s"
        )
        assert result.is_error
        assert result.error.code == "CODE_RUNTIME_ERROR"
        assert ENDINGS[behaviour][1] in result.error.message
        after = await runtime.execute(ToolCall("c2", "run_code", {"code": "6 * 7"}), session="s")
        assert not after.is_error, after.text
        assert after.value["result"] == 42  # a fresh worker serves the session's next run


# Values a script may return: what the interpreter makes of them always passes the host's
# check (an honest worker is never taken for a forged one), however near the bounds.
script_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=50)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=20) | st.integers(), inner, max_size=5)
    ),
    max_leaves=40,
)


def nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


@settings(max_examples=60, deadline=None)
@given(value=script_values, depth=st.integers(0, 80), width=st.integers(0, 300_000))
def test_what_the_interpreter_makes_of_any_value_passes_the_hosts_check(
    value: object, depth: int, width: int
) -> None:
    for shaped in (nested(value, depth), [value] * (width // 10), "x" * width):
        try:
            made = plain_result(shaped)
        except LimitExceeded:
            continue  # the interpreter refused it: nothing is sent
        assert oversized(json.loads(json.dumps(made))) is None
