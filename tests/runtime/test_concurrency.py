"""Many callers, one runtime: ordering, isolation and lifetimes, with real worker processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from codeact import Runtime, ToolCall, ToolExecutionResult, ToolRegistry, tool
from codeact.contract._json import thaw
from codeact.contract._policy import Action, Rule, RulePolicy
from codeact.executors._in_process import Executor, InProcessExecutor
from codeact.executors._process import ProcessExecutor
from codeact.executors._worker_folders import FOLDER_PREFIX
from codeact.sandbox import Limits
from tests.hosts import REPO, children_of, start_host, wait_until_listening

pytestmark = pytest.mark.anyio
LIMITS = Limits(wall_seconds=20, cpu_seconds=20)
EXECUTORS: dict[str, Callable[[], Executor]] = {
    "inprocess": lambda: InProcessExecutor(limits=LIMITS),
    "process": lambda: ProcessExecutor(limits=LIMITS, warm=0),
}


def children() -> set[int]:
    """Live (not zombie) child processes of this process."""
    return children_of(os.getpid())


def our_folders() -> set[str]:
    mine = f"{FOLDER_PREFIX}{os.getpid()}-"
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(mine)}


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def no_tools(name: str, arguments: dict[str, Any]) -> ToolExecutionResult:
    raise AssertionError("no tool is bound")


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_fifty_overlapping_runs_of_one_session_each_get_their_own_result(kind: str) -> None:
    executor = EXECUTORS[kind]()
    results: dict[int, Any] = {}

    async def one(index: int) -> None:
        script = (
            "try:\n    seen\nexcept NameError:\n    seen = []\n"
            f"seen.append({index})\nlast = 'token-{index}'\n[last, len(seen)]"
        )
        outcome = await executor.run(script, session="shared", tools={}, call_tool=no_tools)
        assert outcome.error is None, outcome.error
        results[index] = outcome.value

    try:
        with anyio.fail_after(180):
            async with anyio.create_task_group() as group:
                for index in range(50):
                    group.start_soon(one, index)
    finally:
        await executor.aclose()
    assert {i: v[0] for i, v in results.items()} == {i: f"token-{i}" for i in range(50)}
    assert sorted(v[1] for v in results.values()) == list(range(1, 51))  # one at a time
    if isinstance(executor, ProcessExecutor):
        assert executor.workers == []


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_thirty_two_sessions_of_ten_runs_through_one_runtime_never_cross(kind: str) -> None:
    @tool
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    registry = ToolRegistry()
    registry.register(echo)
    before_fds, before_children = descriptors(), children()
    runtime = Runtime(registry, mode="code", executor=EXECUTORS[kind](), limits=LIMITS)
    crossed: list[str] = []

    async def session(number: int) -> None:
        for run in range(10):
            script = (
                f"mine = 'session-{number}'\n"
                "assert all(k != 'theirs' for k in ['mine'])\n"
                f"[echo(mine), {run}]"
            )
            call = ToolCall(f"s{number}-{run}", "run_code", {"code": script})
            result = await runtime.execute(call, session=f"client-{number}")
            if result.is_error or thaw(result.value)["result"] != [f"session-{number}", run]:  # type: ignore[index]
                crossed.append(f"{number}/{run}: {result.text[:200]}")

    async with runtime:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for number in range(32):
                    group.start_soon(session, number)
        isolated = await runtime.execute(
            ToolCall("probe", "run_code", {"code": "mine"}), session="client-never-used"
        )
    assert crossed == []
    assert isolated.is_error  # a fresh session does not see anybody's `mine`
    assert children() - before_children == set()
    assert our_folders() == set()
    assert descriptors() == before_fds


def test_a_script_that_uses_only_the_sync_api_exits_by_itself(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from codeact import Runtime, ToolCall, ToolRegistry\n"
        "runtime = Runtime(ToolRegistry(), mode='code')\n"
        "result = runtime.execute_sync(ToolCall('1', 'run_code', {'code': '6 * 7'}))\n"
        "print(result.value['result'], flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


def test_a_runtime_is_a_context_manager_that_starts_the_warm_pool() -> None:
    executor = ProcessExecutor(limits=LIMITS, warm=1)
    with Runtime(ToolRegistry(), mode="code", executor=executor) as runtime:
        ready = threading.Event()
        for _ in range(400):  # bounded: the pool fills in the background
            if executor.workers:
                ready.set()
                break
            ready.wait(0.05)
        assert ready.is_set()
        result = runtime.execute_sync(ToolCall("1", "run_code", {"code": "1 + 1"}))
        assert result.value["result"] == 2  # type: ignore[index]
    assert executor.workers == []
    assert our_folders() == set()


def test_folders_of_a_host_killed_mid_run_are_removed_by_the_next_executor(tmp_path: Path) -> None:
    body = (
        "import anyio\n"
        "from codeact.executors._process import ProcessExecutor\n"
        "async def main():\n"
        "    executor = ProcessExecutor(warm=0)\n"
        "    async def no_tools(name, arguments):\n"
        "        raise AssertionError\n"
        "    outcome = await executor.run('1', session='s', tools={}, call_tool=no_tools)\n"
        "    print(executor.workers[0].workdir, flush=True)\n"
        "    await anyio.sleep(120)\n"
        "anyio.run(main)\n"
    )
    with start_host(tmp_path, body) as host:
        assert host.stdout is not None
        folder = Path(host.stdout.readline().strip())
        assert folder.is_dir()
        host.send_signal(signal.SIGKILL)
        host.wait(30)
    assert folder.is_dir()  # nobody cleaned up

    async def start_one() -> None:
        executor = ProcessExecutor(warm=0)
        try:
            outcome = await executor.run("2", session="s", tools={}, call_tool=no_tools)
            assert outcome.value == 2
        finally:
            await executor.aclose()

    anyio.run(start_one)
    assert not folder.exists()


def transfer_runtime(kind: str, limits: Limits, registry: ToolRegistry) -> Runtime:
    @tool
    def transfer(amount: int) -> str:
        """Move money."""
        return f"moved {amount}"

    registry.register(transfer)
    executor: Executor = (
        InProcessExecutor(limits=limits)
        if kind == "inprocess"
        else ProcessExecutor(limits=limits, warm=0)
    )
    return Runtime(registry, mode="code", executor=executor, limits=limits)


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_an_approval_slower_than_the_wall_limit_does_not_kill_the_script(kind: str) -> None:
    limits = Limits(wall_seconds=1.0, cpu_seconds=5.0, tool_wait_seconds=30.0)

    async def slow_approver(invocation: Any) -> bool:
        await anyio.sleep(1.5)  # a person reading the request: longer than the wall limit
        return True

    policy = RulePolicy([Rule(action=Action.ASK, tool="transfer")], approver=slow_approver)
    runtime = transfer_runtime(kind, limits, ToolRegistry(policy=policy))
    try:
        result = await runtime.execute(
            ToolCall("1", "run_code", {"code": "[transfer(1), transfer(2)]"})
        )
    finally:
        await runtime.aclose()
    assert not result.is_error, result.text
    assert thaw(result.value)["result"] == ["moved 1", "moved 2"]  # type: ignore[index]


@pytest.mark.parametrize("kind", EXECUTORS)
async def test_a_script_killed_at_its_deadline_reports_the_calls_it_made(kind: str) -> None:
    limits = Limits(wall_seconds=1.0, cpu_seconds=5.0)

    runtime = transfer_runtime(kind, limits, ToolRegistry())
    script = "transfer(5)\nwhile True:\n    pass"
    if kind == "process":  # a stall in C: only a kill ends it, and the host still knows the calls
        script = "transfer(5)\nxs = [(i % 1000, str(i * 7919 % 1000003)) for i in range(500_000)]\nsorted(xs * 16)"
    try:
        result = await runtime.execute(ToolCall("1", "run_code", {"code": script}))
    finally:
        await runtime.aclose()
    assert result.is_error
    assert result.error.code == "CODE_RESOURCE_LIMIT"  # type: ignore[union-attr]
    assert "transfer (ok)" in result.text


async def test_two_mcp_clients_over_http_each_have_their_own_script_session() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await anyio.open_process(
        [sys.executable, "-m", "codeact", "serve-mcp", "--mode", "code", "--tools",
         "tests.cli_tools:TOOLS", "--executor", "process", "--http", f"127.0.0.1:{port}"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await wait_until_listening(port)
        async with Client(url) as first, Client(url) as second:

            async def run(client: Client, code: str) -> Any:
                result = await client.call_tool("run_code", {"code": code})
                return result.structured_content, result.is_error

            value, failed = await run(first, "secret = 'first-client'\nsecret")
            assert not failed
            assert value["result"] == "first-client"
            _, failed = await run(second, "secret")
            assert failed  # B cannot read A's variable

            answers: dict[int, Any] = {}

            async def overlapping(index: int) -> None:
                answers[index] = await run(second, f"double({index})")

            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    for index in range(16):
                        group.start_soon(overlapping, index)
            assert {i: a[0]["result"] for i, a in answers.items()} == {i: 2 * i for i in range(16)}
    finally:
        process.terminate()
        with anyio.fail_after(30):
            await process.wait()
        await process.aclose()
