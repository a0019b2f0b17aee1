"""The process executor: real worker processes, hard limits, and nothing left behind."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact import AbortSignal, ToolCall, ToolExecutionResult, ToolRegistry, tool
from codeact.code_mode._run_code import RUN_CODE, run_code_tool
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits, ScriptOutcome
from codeact.sandbox._outcome import outcome_from_json

pytestmark = pytest.mark.anyio

LIMITS = Limits(wall_seconds=2.0, cpu_seconds=2.0, memory_bytes=64 * 1024 * 1024)


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


def registry() -> ToolRegistry:
    base = ToolRegistry()
    base.register(add)
    return base


async def run(executor: ProcessExecutor, source: str, session: str = "s") -> ScriptOutcome:
    base = registry()

    async def call_tool(name: str, arguments: dict[str, object]) -> ToolExecutionResult:
        return await base.execute(ToolCall("t", name, arguments))  # type: ignore[arg-type]

    return await executor.run(
        source, session=session, tools={"add": ("a", "b")}, call_tool=call_tool
    )


async def killed_mid_run(executor: ProcessExecutor, pid: int, session: str = "s") -> ScriptOutcome:
    """The outcome of a run whose worker ``pid`` is killed while the script loops."""
    results: list[ScriptOutcome] = []

    async def loop_forever() -> None:
        results.append(await run(executor, "while True:\n    pass", session=session))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(loop_forever)
        await anyio.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
    (outcome,) = results
    return outcome


def children() -> set[int]:
    """Our direct child processes, read from /proc."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{me}\n" in status:
                found.add(int(entry.name))
    return found


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_memory_blowup_inside_a_c_call_is_stopped_by_the_kernel_limit() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert (await run(executor, "kept = 'still here'")).ok
        outcome = await run(executor, "big = list(range(10**7))\nlen(big)")
        assert outcome.error is not None
        assert outcome.error.code == "CODE_RESOURCE_LIMIT"
        assert "out of memory" in outcome.error.message  # MemoryError from RLIMIT_AS
        assert (await run(executor, "kept")).value == "still here"  # the worker lived on
    finally:
        await executor.aclose()


async def test_a_killed_worker_gives_an_error_and_the_next_run_works() -> None:
    executor = ProcessExecutor(limits=Limits(wall_seconds=10.0), warm=0)
    try:
        assert (await run(executor, "state = 1")).ok
        (worker,) = executor.workers
        outcome = await killed_mid_run(executor, worker.pid)
        assert outcome.error is not None
        assert "killed" in outcome.error.message
        assert "state was lost" in outcome.error.message
        after = await run(executor, "add(2, 2)")
        assert after.value == 4
        lost = await run(executor, "state")
        assert lost.error is not None
        assert "NameError" in lost.error.message
    finally:
        await executor.aclose()


async def test_a_stall_in_c_code_is_stopped_at_the_deadline() -> None:
    executor = ProcessExecutor(limits=Limits(wall_seconds=1.0, cpu_seconds=1.0), warm=0)
    try:
        outcome = await run(
            executor,
            "xs = [(i % 1000, str(i * 7919 % 1000003)) for i in range(500_000)]\nsorted(xs * 16)",
        )
        assert outcome.error is not None
        assert outcome.error.code == "CODE_RESOURCE_LIMIT"
        # the host kills the worker stuck in C; on a busy machine the run may still be in
        # Python at the deadline and the worker's own watchdog stops it: both say so
        assert "exceeded its wall-clock time (1 s) limit" in outcome.error.message
        assert (await run(executor, "1 + 1")).value == 2
    finally:
        await executor.aclose()


async def test_a_hundred_concurrent_sessions_leave_nothing_behind() -> None:
    before_children, before_fds = children(), open_descriptors()
    # generous limits: a hundred workers starting at once on two cores are slow to answer
    executor = ProcessExecutor(
        limits=Limits(wall_seconds=60.0, cpu_seconds=30.0), warm=0, max_sessions=100
    )
    outcomes: dict[int, ScriptOutcome] = {}

    async def session(number: int) -> None:
        outcomes[number] = await run(executor, f"add({number}, 1)", session=f"s{number}")

    async with anyio.create_task_group() as tasks:
        for number in range(100):
            tasks.start_soon(session, number)
    errors = [o.error for o in outcomes.values() if o.error is not None]
    assert {n: o.value for n, o in outcomes.items()} == {n: n + 1 for n in range(100)}, errors
    assert len(executor.workers) == 100
    await executor.aclose()
    assert children() == before_children
    assert open_descriptors() == before_fds


async def test_cancelling_the_call_aborts_the_script_and_keeps_the_worker() -> None:
    executor = ProcessExecutor(limits=Limits(wall_seconds=10.0), warm=0)
    base = registry()
    scope = base.child()
    scope.register(run_code_tool(base, executor=executor))
    try:
        await scope.execute(ToolCall("r1", RUN_CODE, {"code": "kept = 7"}))
        signal_ = AbortSignal()
        results: list[ToolExecutionResult] = []

        async def go() -> None:
            call = ToolCall("r2", RUN_CODE, {"code": "while True:\n    pass"})
            results.append(await scope.execute(call, abort=signal_))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(go)
                await anyio.sleep(0.3)
                signal_.abort("stop")
        assert results[0].is_error
        assert results[0].error.code == "ABORTED"
        again = await scope.execute(ToolCall("r3", RUN_CODE, {"code": "kept"}))
        assert again.value["result"] == 7  # type: ignore[index]
    finally:
        await executor.aclose()


async def test_the_warm_pool_serves_a_new_session_without_starting_a_process() -> None:
    async with ProcessExecutor(limits=LIMITS, warm=2) as executor:
        with anyio.fail_after(20):
            while len(executor.workers) < 2:
                await anyio.sleep(0.05)
        spare = {w.pid for w in executor.workers}
        assert (await run(executor, "1", session="fresh")).value == 1
        assert executor._sessions["fresh"].pid in spare  # no process was started for it


async def test_workers_get_a_scrubbed_environment_few_descriptors_and_their_own_directory() -> None:
    os.environ["CODEACT_HOST_SECRET"] = "do-not-leak"
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        assert (await run(executor, "1")).ok
        (worker,) = executor.workers
        environment = Path(f"/proc/{worker.pid}/environ").read_bytes()
        assert b"do-not-leak" not in environment
        assert b"CODEACT_HOST_SECRET" not in environment
        descriptors = os.listdir(f"/proc/{worker.pid}/fd")
        assert len(descriptors) <= 8
        held = {os.readlink(f"/proc/{worker.pid}/fd/{fd}") for fd in descriptors}
        if os.path.exists("/proc/pressure/cpu"):  # opened before confinement, for its spinners
            assert "/proc/pressure/cpu" in held
        cwd = os.readlink(f"/proc/{worker.pid}/cwd")
        limits = {
            line[:26].strip(): line[26:].split()[0]
            for line in Path(f"/proc/{worker.pid}/limits").read_text().splitlines()[1:]
        }
        assert limits["Max file size"] == "0"
        assert limits["Max open files"] == "64"
        assert limits["Max cpu time"] != "unlimited"
        assert limits["Max address space"] != "unlimited"
        assert Path(cwd).name.startswith("codeact-worker-")
    finally:
        del os.environ["CODEACT_HOST_SECRET"]
        await executor.aclose()
    assert not Path(cwd).exists()


async def test_idle_workers_are_reaped() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0, idle_seconds=0.0)
    try:
        assert (await run(executor, "1")).ok
        (worker,) = executor.workers
        await executor.reap_idle()
        assert executor.workers == []
        assert worker.process.returncode is not None
    finally:
        await executor.aclose()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
outcome_like = st.fixed_dictionaries(
    {},
    optional={
        "value": json_values,
        "output": json_values,
        "tool_calls": st.lists(
            st.dictionaries(st.sampled_from(["name", "ok", "code", "x"]), json_values)
        )
        | json_values,
        "error": st.dictionaries(
            st.sampled_from(["code", "message", "kind", "line", "hint", "x"]), json_values
        )
        | json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(outcome_like | json_values)
def test_an_outcome_from_a_worker_is_read_or_refused_never_half_read(data: object) -> None:
    """A worker is not trusted: anything but a well-formed outcome is a TypeError, nothing else."""
    try:
        outcome = outcome_from_json(data)
    except TypeError:
        return
    assert isinstance(outcome.output, str)
    assert all(isinstance(c.name, str) and isinstance(c.ok, bool) for c in outcome.tool_calls)
    if outcome.error is not None:
        assert isinstance(outcome.error.message, str)


async def test_past_the_session_cap_the_idlest_session_makes_room_and_is_told() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=0, max_sessions=3)
    try:
        for name in ("a", "b", "c"):
            assert (await run(executor, f"mine = {name!r}", session=name)).ok
        assert (await run(executor, "mine", session="a")).value == "a"  # now b is the idlest
        assert (await run(executor, "mine = 'd'", session="d")).ok
        assert sorted(executor._sessions) == ["a", "c", "d"]
        assert len(executor.workers) == 3
        told = await run(executor, "mine", session="b")
        assert told.error is not None
        assert told.error.code == "CODE_RESOURCE_LIMIT"
        assert "idle the longest" in told.error.message
        assert "nothing of this script ran" in told.error.message
        assert (await run(executor, "mine = 'b again'\nmine", session="b")).value == "b again"
        assert len(executor.workers) == 3
    finally:
        await executor.aclose()


async def test_when_every_session_is_busy_a_new_one_gets_a_clear_error() -> None:
    executor = ProcessExecutor(limits=Limits(wall_seconds=30.0), warm=0, max_sessions=2)
    release = anyio.Event()
    entered: list[str] = []

    @tool
    async def hold() -> int:
        """Wait until the test lets go."""
        entered.append("hold")
        await release.wait()
        return 1

    base = ToolRegistry()
    base.register(hold)

    async def call_tool(name: str, arguments: dict[str, object]) -> ToolExecutionResult:
        return await base.execute(ToolCall("t", name, arguments))  # type: ignore[arg-type]

    async def busy(session: str) -> None:
        outcome = await executor.run(
            "hold()", session=session, tools={"hold": ()}, call_tool=call_tool
        )
        assert outcome.value == 1

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(busy, "one")
                tasks.start_soon(busy, "two")
                while len(entered) < 2:
                    await anyio.sleep(0.02)
                refused = await run(executor, "1", session="three")
                release.set()
        assert refused.error is not None
        assert refused.error.code == "CODE_RESOURCE_LIMIT"
        assert "at most 2 sessions at once" in refused.error.message
        assert len(executor.workers) == 2
        assert (await run(executor, "add(1, 2)", session="three")).value == 3  # room again
    finally:
        await executor.aclose()


# Recursion a CPython script reaches (depth 900 of its 1,000), through the constructs
# whose guards add frames of their own: it must not stop early in a worker.
DEEP_RECURSIONS = {
    "plain": "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nf(900)",
    "getattr": (
        "class G:\n    def __init__(self, n):\n        self.n = n\n"
        "    def __getattr__(self, name):\n"
        "        return 0 if self.n == 0 else getattr(G(self.n - 1), name)\nG(900).missing"
    ),
    "decorated": (
        "def deco(fn):\n    def wrapper(*args):\n        return fn(*args)\n    return wrapper\n"
        "@deco\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nf(450)"
    ),
    "repr": (
        "class Node:\n    def __init__(self, n):\n        self.n = n\n"
        "    def __repr__(self):\n        return 'x' if self.n == 0 else repr(Node(self.n - 1))\n"
        "repr(Node(300))"
    ),
}


@pytest.mark.parametrize("script", DEEP_RECURSIONS.values(), ids=DEEP_RECURSIONS.keys())
async def test_a_worker_recurses_as_deep_as_cpython_and_endless_recursion_is_a_limit(
    script: str,
) -> None:
    errors: list[BaseException] = []

    def under_cpython() -> None:  # a thread of its own: its depth starts at zero
        try:
            exec(compile(script, "<cpython>", "exec"), {})
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=under_cpython)
    thread.start()
    thread.join()
    assert errors == []  # CPython reaches this depth
    executor = ProcessExecutor(limits=LIMITS, warm=0)
    try:
        outcome = await run(executor, script)
        assert outcome.error is None, outcome.error
        endless = await run(executor, "def f(n):\n    return f(n + 1)\nf(0)")
        assert endless.error is not None
        assert endless.error.code == "CODE_RESOURCE_LIMIT"
        assert (await run(executor, "1 + 1")).value == 2  # the worker lives on
    finally:
        await executor.aclose()


HOST_WITH_WORKERS = """
import json, sys
from codeact import Runtime, ToolCall, tool

@tool
def lookup(key: int) -> int:
    '''A cheap host tool.'''
    return key * 2

with Runtime([lookup], mode="code") as runtime:
    result = runtime.execute_sync(ToolCall("c", "run_code", {"code": "lookup(20) + 2"}))
loaded = [name for name in ("codeact.sandbox._interpreter", "RestrictedPython") if name in sys.modules]
print(json.dumps({"text": result.text, "loaded": loaded}))
"""


def test_a_host_whose_scripts_run_in_workers_never_loads_the_interpreter() -> None:
    """The worker runs the restricted interpreter; the host only speaks to it, so neither
    the interpreter nor RestrictedPython is imported there (memory and start-up it never
    uses)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", HOST_WITH_WORKERS],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "42" in seen["text"]
    assert seen["loaded"] == []
