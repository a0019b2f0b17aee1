"""``codeact serve-mcp --http`` as a real server: one client's sessions are capped with a
clear error past the cap, and when clients leave the server's children and descriptors
return to where they started."""

from __future__ import annotations

import os
import signal
import socket
import sys
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from tests.hosts import REPO, children_of, stopped, wait_until_listening

pytestmark = pytest.mark.anyio

PER_CLIENT = 4


def descendants_of(pid: int) -> set[int]:
    """Its children, theirs, and so on (workers forked from the template are grandchildren)."""
    found, frontier = set(), {pid}
    while frontier:
        below = set().union(*(children_of(p) for p in frontier)) - found
        found |= below
        frontier = below
    return found


def descriptors_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def worker_folders_of(pid: int) -> list[str]:
    import tempfile

    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"codeact-worker-{pid}-")]


async def settle(read: Any, *, want: Any = None, seconds: float = 60) -> Any:
    """``read()`` once it equals ``want``, or (without one) once it has not changed for a
    second; bounded. A steady value is not the awaited one: an idle limit keeps counts
    steady until it passes."""
    last, steady = read(), 0
    with anyio.move_on_after(seconds):
        while (last != want) if want is not None else (steady < 10):
            await anyio.sleep(0.1)
            now = read()
            steady = steady + 1 if now == last else 0
            last = now
    return last


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> Any:
    extra = getattr(request, "param", [])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await anyio.open_process(
        [
            sys.executable,
            "-m",
            "codeact",
            "serve-mcp",
            "--tools",
            "tests.cli_tools:TOOLS",
            "--http",
            f"127.0.0.1:{port}",
            "--max-sessions",
            "8",
            "--max-sessions-per-client",
            str(PER_CLIENT),
            *extra,
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        await wait_until_listening(port)
        yield process, f"http://127.0.0.1:{port}/mcp"
    finally:
        await stopped(process)


async def test_one_clients_sessions_are_capped_and_freed_when_it_leaves(server: Any) -> None:
    process, url = server
    pid = process.pid
    for _ in range(2):  # the spares started before the template was ready are handed out
        async with Client(url, mode="legacy") as client:
            assert not (await client.call_tool("run_code", {"code": "1"})).is_error
    start_children = await settle(lambda: len(descendants_of(pid)))  # the pool and template
    start_descriptors = await settle(lambda: descriptors_of(pid))
    release = anyio.Event()
    served: list[int] = []
    refused: list[str] = []
    during: list[int] = []

    async def session(number: int) -> None:
        try:
            async with Client(url, mode="legacy") as client:
                result = await client.call_tool(
                    "run_code", {"code": f"mine = double({number})\nmine"}
                )
                assert not result.is_error, result
                served.append(number)
                await release.wait()
                again = await client.call_tool("run_code", {"code": "mine"})
                assert f"Result: {number * 2}" in again.content[0].text  # type: ignore[union-attr]
        except Exception as error:  # refused at the handshake
            refused.append(f"{type(error).__name__}: {error}")

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tasks:
            for number in range(24):
                tasks.start_soon(session, number)
            while len(served) + len(refused) < 24:
                await anyio.sleep(0.05)
            during.append(len(descendants_of(pid)))
            release.set()
    assert len(served) == PER_CLIENT, refused[:3]
    assert len(refused) == 24 - PER_CLIENT
    assert during[0] <= start_children + PER_CLIENT
    # what a refused client is told, read as the HTTP answer
    async with httpx.AsyncClient() as http:
        held = []
        for _ in range(PER_CLIENT):
            opened = await http.post(url, json=_initialize(), headers=_accept())
            held.append(opened.headers["mcp-session-id"])
        answer = await http.post(url, json=_initialize(), headers=_accept())
        assert answer.status_code == 429
        assert "already holds 4 open MCP sessions" in answer.json()["error"]["message"]
        for session_id in held:
            await http.delete(url, headers={**_accept(), "mcp-session-id": session_id})
    assert await settle(lambda: len(descendants_of(pid)), want=start_children) == start_children
    assert await settle(lambda: descriptors_of(pid), want=start_descriptors) == start_descriptors


async def test_sigterm_closes_every_worker_and_folder(server: Any) -> None:
    process, url = server
    pid = process.pid
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("run_code", {"code": "double(21)"})
        assert not result.is_error
        workers = descendants_of(pid)
        assert workers
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            await process.wait()
    assert process.returncode == 0
    assert all(_zombie(p) for p in workers if os.path.exists(f"/proc/{p}"))
    assert worker_folders_of(pid) == []


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


def _accept() -> dict[str, str]:
    return {"accept": "application/json, text/event-stream"}


def test_sigterm_ends_a_stdio_server_with_its_workers_and_folders() -> None:
    import subprocess
    import threading

    process = subprocess.Popen(
        [sys.executable, "-m", "codeact", "serve-mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        warm = threading.Event()
        for _ in range(600):  # the warm pool is up: workers and their folders exist
            if len(worker_folders_of(process.pid)) >= 2:
                break
            warm.wait(0.05)
        workers = descendants_of(process.pid)
        assert workers
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            assert stream is not None
            stream.close()
    assert worker_folders_of(process.pid) == []
    assert all(_zombie(p) for p in workers if os.path.exists(f"/proc/{p}"))


def test_serving_in_process_warns_that_it_is_for_trusted_scripts() -> None:
    import subprocess

    finished = subprocess.run(
        [sys.executable, "-m", "codeact", "serve-mcp", "--executor", "inprocess"],
        input=b"",  # no client: the server ends at once
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert b"for trusted scripts" in finished.stderr
    assert b"--executor process" in finished.stderr


@pytest.mark.parametrize(
    "server",
    [["--idle-seconds", "2", "--max-sessions", "32", "--max-sessions-per-client", "20"]],
    indirect=True,
)
async def test_clients_that_vanish_are_freed_within_the_idle_limit(server: Any) -> None:
    process, url = server
    pid = process.pid
    for _ in range(2):  # the spares started before the template was ready are handed out
        async with Client(url, mode="legacy") as client:
            assert not (await client.call_tool("run_code", {"code": "1"})).is_error
    start = await settle(lambda: (len(descendants_of(pid)), len(worker_folders_of(pid))))
    async with httpx.AsyncClient(timeout=60) as http:
        for number in range(20):  # each opens a session, runs a script, and never says bye
            opened = await http.post(url, json=_initialize(), headers=_accept())
            session = {**_accept(), "mcp-session-id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(url, json=initialized, headers=session)
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": f"kept = double({number})"}},
            }
            answer = await http.post(url, json=call, headers=session)
            assert answer.status_code == 200
            assert '"isError":false' in answer.text.replace(" ", "")  # it ran in a worker
    counts = await settle(
        lambda: (len(descendants_of(pid)), len(worker_folders_of(pid))), want=start
    )
    assert counts == start


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_stdio_server_answers_the_call_in_flight_that_it_is_shutting_down(
    tmp_path: Any, stop: signal.Signals
) -> None:
    import json
    import queue
    import subprocess
    import threading

    ledger = tmp_path / "ledger"
    process = subprocess.Popen(
        [sys.executable, "-m", "codeact", "serve-mcp", "--tools", "tests.cli_ledger_tools:TOOLS"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEACT_TEST_LEDGER": str(ledger)},
    )
    assert process.stdin is not None
    assert process.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout])  # type: ignore[union-attr]
    reader.start()  # type: ignore[union-attr]

    def send(message: dict[str, Any]) -> None:
        process.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def answer_to(number: int) -> dict[str, Any]:
        while True:  # a generous bound on each line: the test fails, it never hangs
            message = json.loads(lines.get(timeout=120))
            if message.get("id") == number:
                return message  # type: ignore[no-any-return]

    try:
        send(_initialize())
        assert "result" in answer_to(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        busy = 'log_note(text="started")\nwhile True:\n    pass'
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": busy}},
            }
        )
        waited = threading.Event()
        for _ in range(1200):  # a bounded wait (two minutes) for the script to be running
            if ledger.exists() and ledger.read_text():
                break
            waited.wait(0.1)
        assert ledger.read_text(), "the script never started"
        workers = descendants_of(process.pid)
        process.send_signal(stop)
        answer = answer_to(2)["result"]
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        reader.join(60)  # it ends at the pipe's end, which came with the process's
        process.stdout.close()
    assert answer["isError"] is True
    text = " ".join(block["text"] for block in answer["content"])
    assert "ABORTED" in text, text
    assert "the server is shutting down" in text
    assert worker_folders_of(process.pid) == []
    assert all(_zombie(p) for p in workers if os.path.exists(f"/proc/{p}"))


@pytest.mark.parametrize("client_mode", ["auto", "legacy"])  # 2026-07-28, and the handshake
async def test_a_stopped_http_server_answers_the_call_in_flight_that_it_is_shutting_down(
    tmp_path: Any, client_mode: str
) -> None:
    ledger = tmp_path / "ledger"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "codeact", "serve-mcp", "--http", f"127.0.0.1:{port}"]
    process = await anyio.open_process(
        [*command, "--tools", "tests.cli_ledger_tools:TOOLS"],
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEACT_TEST_LEDGER": str(ledger)},
    )
    answers: list[Any] = []
    try:
        await wait_until_listening(port)
        before = descendants_of(process.pid)  # the warm pool and the template
        async with Client(f"http://127.0.0.1:{port}/mcp", mode=client_mode) as client:

            async def call() -> None:
                busy = 'log_note(text="started")\nwhile True:\n    pass'
                answers.append(await client.call_tool("run_code", {"code": busy}))

            with anyio.fail_after(120):  # generous: the test fails, it never hangs
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(call)
                    while not (ledger.exists() and ledger.read_text()):
                        await anyio.sleep(0.05)  # the script is running
                    process.send_signal(signal.SIGTERM)
                await process.wait()
    finally:
        await stopped(process)
    assert process.returncode == 0
    (answer,) = answers
    assert answer.is_error
    assert "the server is shutting down" in answer.content[0].text
    assert worker_folders_of(process.pid) == []
    assert before  # workers were there, and none outlived the server
    assert all(_zombie(p) for p in before if os.path.exists(f"/proc/{p}"))
