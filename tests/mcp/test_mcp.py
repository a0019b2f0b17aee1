"""MCP against the real reference servers, and our code-mode server used by the official client."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from codeact import Mode, Runtime, ToolCall, ToolRegistry
from codeact.executors._in_process import InProcessExecutor
from codeact.mcp import MCPConnection
from tests.hosts import REPO, wait_until_listening

pytestmark = pytest.mark.anyio
BIN = Path(sys.executable).parent


def server(command: str, *args: str) -> StdioServerParameters:
    path = shutil.which(command, path=str(BIN)) or command
    return StdioServerParameters(command=path, args=list(args))


def serve_mcp(*args: str, cwd: Path | None = None) -> StdioServerParameters:
    """``codeact serve-mcp`` with these options, the tests' tools importable."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "codeact", "serve-mcp", *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(cwd) if cwd else None,
    )


async def bound(connection: MCPConnection) -> Runtime:
    registry = ToolRegistry()
    for made in await connection.tools():
        registry.register(made)
    return Runtime(registry, executor=InProcessExecutor())


async def test_time_server_tools_work_natively_and_from_a_script() -> None:
    async with MCPConnection(server("mcp-server-time", "--local-timezone", "UTC")) as connection:
        runtime = await bound(connection)
        assert {"get_current_time", "convert_time"} <= set(runtime.registry.names())
        native = await runtime.execute(
            ToolCall(
                "c1",
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
            mode=Mode.NATIVE,
        )
        assert not native.is_error, native.text
        assert "21:00" in native.text
        script = (
            "r = convert_time(source_timezone='UTC', time='12:00', target_timezone='Asia/Tokyo')\nr"
        )
        coded = await runtime.execute(ToolCall("c2", "run_code", {"code": script}), mode=Mode.CODE)
        assert not coded.is_error, coded.text
        assert "21:00" in coded.text
        bad = await runtime.execute(
            ToolCall("c3", "get_current_time", {"timezone": "Nowhere/Atlantis"}), mode=Mode.NATIVE
        )
        assert bad.is_error
        await runtime.aclose()


async def test_git_server_reads_a_repository_the_test_created(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    environment = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for command in (
        ["git", "init", "-q"],
        ["git", "commit", "-q", "--allow-empty", "-m", "first commit"],
    ):
        await anyio.run_process(command, cwd=repo, env=environment)
    (repo / "new.txt").write_text("hello")
    async with MCPConnection(server("mcp-server-git", "--repository", str(repo))) as connection:
        runtime = await bound(connection)
        status = await runtime.execute(
            ToolCall("g1", "git_status", {"repo_path": str(repo)}), mode=Mode.NATIVE
        )
        assert "new.txt" in status.text
        script = f"log = git_log(repo_path={str(repo)!r})\nstatus = git_status(repo_path={str(repo)!r})\n('first commit' in log, 'new.txt' in status)"
        coded = await runtime.execute(ToolCall("g2", "run_code", {"code": script}), mode=Mode.CODE)
        assert coded.value["result"] == (True, True)  # type: ignore[index]
        await runtime.aclose()


async def test_an_official_client_uses_our_code_mode_server_end_to_end() -> None:
    parameters = serve_mcp(
        "--mode", "code", "--tools", "tests.cli_tools:TOOLS", "--executor", "inprocess"
    )
    with anyio.fail_after(60):
        async with Client(parameters) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["run_code"]
            assert "def double(x: int) -> int:" in (listed.tools[0].description or "")
            output_schema = listed.tools[0].output_schema or {}
            assert output_schema.get("type") == "object"
            assert set(output_schema.get("required", [])) == {"result", "output", "tool_calls"}
            result = await client.call_tool("run_code", {"code": "print('doubling')\ndouble(21)"})
            assert not result.is_error
            assert result.structured_content == {
                "result": 42,
                "output": "doubling\n",
                "tool_calls": [{"name": "double", "ok": True}],
            }
            texts = [c.text for c in result.content if c.type == "text"]
            assert texts == ["Output:\ndoubling\nResult: 42"]  # what a model reads, once
            with pytest.raises(MCPError, match="Unknown tool: double"):  # not advertised
                await client.call_tool("double", {"x": 1})
            failed = await client.call_tool("run_code", {"code": "import subprocess"})
            assert failed.is_error
            assert "CODE_SECURITY_VIOLATION" in json.dumps([c.model_dump() for c in failed.content])


async def test_json_text_keeps_the_structured_result_as_text_for_clients_that_want_it() -> None:
    parameters = serve_mcp(
        "--mode",
        "both",
        "--tools",
        "tests.cli_tools:TOOLS",
        "--executor",
        "inprocess",
        "--json-text",
    )
    with anyio.fail_after(60):
        async with Client(parameters) as client:
            result = await client.call_tool("run_code", {"code": "double(4)"})
            texts = [c.text for c in result.content if c.type == "text"]
            assert texts[0] == "Result: 8"
            assert json.loads(texts[1]) == result.structured_content
            assert result.structured_content["result"] == 8  # type: ignore[index]


async def test_serve_mcp_binds_the_standard_tools_and_applies_limit_flags(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\n")
    parameters = serve_mcp(
        "--mode",
        "both",
        "--stdlib",
        "--wall-seconds",
        "0.5",
        "--cpu-seconds",
        "0.5",
        cwd=tmp_path,
    )
    with anyio.fail_after(90):
        async with Client(parameters) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"read", "write", "list_files", "run_code"} <= names
            read = await client.call_tool("run_code", {"code": "read('notes.txt')['lines']"})
            assert not read.is_error
            assert read.structured_content["result"] == ["first line"]  # type: ignore[index]
            spin = await client.call_tool("run_code", {"code": "while True:\n    pass"})
            assert spin.is_error
            text = json.dumps([c.model_dump() for c in spin.content])
            assert "CODE_RESOURCE_LIMIT" in text
            assert "(0.5 s)" in text  # the flag's limit, not the default's


def server_processes(name: str) -> list[int]:
    """Our descendants whose command line mentions ``name``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if name in command and "pytest" not in command:
                found.append(int(entry.name))
    return found


async def test_a_lost_server_is_reported_then_reconnected() -> None:
    async with MCPConnection(
        server("mcp-server-time", "--local-timezone", "UTC"), retry_seconds=0.2
    ) as connection:
        runtime = await bound(connection)
        call = ToolCall("t", "get_current_time", {"timezone": "UTC"})
        assert not (await runtime.execute(call, mode=Mode.NATIVE)).is_error
        for pid in server_processes("mcp-server-time"):
            os.kill(pid, signal.SIGKILL)
        failed = await runtime.execute(call, mode=Mode.NATIVE)
        assert failed.is_error
        assert "MCP server" in failed.text
        with anyio.fail_after(20):
            while True:
                again = await runtime.execute(call, mode=Mode.NATIVE)
                if not again.is_error:
                    break
                assert "MCP server" in again.text
                await anyio.sleep(0.1)
        assert connection.connected
        await runtime.aclose()


async def test_tools_bind_over_streamable_http_from_our_server() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await anyio.open_process(
        [
            sys.executable,
            "-m",
            "codeact",
            "serve-mcp",
            "--mode",
            "native",
            "--tools",
            "tests.cli_tools:TOOLS",
            "--executor",
            "inprocess",
            "--http",
            f"127.0.0.1:{port}",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        await wait_until_listening(port)
        async with MCPConnection(f"http://127.0.0.1:{port}/mcp", prefix="remote_") as connection:
            runtime = await bound(connection)
            assert runtime.registry.names() == ["remote_double"]
            assert connection.renamed == {}  # the prefix asked for is not a rename
            result = await runtime.execute(
                ToolCall("h1", "remote_double", {"x": 4}), mode=Mode.NATIVE
            )
            assert result.text == "8"
            await runtime.aclose()
    finally:
        process.terminate()
        await process.wait()
        await process.aclose()


async def test_a_server_on_the_cpython_interpreter_runs_numpy_scripts_for_a_client() -> None:
    parameters = serve_mcp(
        "--mode", "code", "--tools", "tests.cli_tools:TOOLS", "--interpreter", "cpython",
        "--package", "numpy",
    )  # fmt: skip
    with anyio.fail_after(120):
        async with Client(parameters) as client:
            result = await client.call_tool(
                "run_code",
                {"code": "import numpy as np\nkept = np.array([double(2), double(3)])\nkept"},
            )
            assert not result.is_error, result
            assert result.structured_content["result"] == [4, 6]  # type: ignore[index]
            again = await client.call_tool("run_code", {"code": "int(kept.sum())"})
            assert again.structured_content["result"] == 10  # type: ignore[index]


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone
        return False


def _processes_with(marker: bytes) -> set[int]:
    """Living processes whose environment holds ``marker``."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return {pid for pid in found if _alive(pid)}


def _children_of(pids: set[int]) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if any(f"\nPPid:\t{pid}\n" in status for pid in pids):
            found.add(int(entry.name))
    return {pid for pid in found if _alive(pid)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28, and the handshake
async def test_a_stdio_server_with_the_early_template_serves_from_workers_and_leaves_nothing(
    mode: str,
) -> None:
    tag = f"{os.getpid()}-{mode}"
    environment = {k: v for k, v in os.environ.items() if k != "CODEACT_EARLY_TEMPLATE"}
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "codeact", "serve-mcp", "--mode", "code", "--tools", "tests.cli_tools:TOOLS"],
        env={**environment, "PYTHONPATH": str(REPO), "CODEACT_TEST_SERVER": tag},
    )
    marker = f"CODEACT_TEST_SERVER={tag}".encode()
    with anyio.fail_after(120):
        async with Client(parameters, mode=mode) as client:
            result = await client.call_tool("run_code", {"code": "double(21)"})
            assert not result.is_error, result
            assert result.structured_content is not None
            assert result.structured_content["result"] == 42
            servers = _processes_with(marker)
            assert len(servers) == 1  # the server: its template and workers have their own env
            spawned = _children_of(servers)
            # one template: the one started at import, taken over (a second would leave it)
            assert [_is_template(pid) for pid in spawned] == [True]
            forked = _children_of(spawned)
            assert forked  # the session's worker, forked from it
        # the client closed the server: nothing it started outlives it
        while _processes_with(marker) or any(_alive(pid) for pid in spawned | forked):
            await anyio.sleep(0.05)


def _is_template(pid: int) -> bool:
    try:
        return b"codeact.executors._template" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28, and the handshake
async def test_an_http_server_with_the_early_template_counts_its_workers_and_leaves_nothing(
    mode: str,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {k: v for k, v in os.environ.items() if k != "CODEACT_EARLY_TEMPLATE"}
    command = [sys.executable, "-m", "codeact", "serve-mcp", "--mode", "code", "--tools"]
    command += ["tests.cli_tools:TOOLS", "--http", f"127.0.0.1:{port}"]
    process = await anyio.open_process(command, env={**environment, "PYTHONPATH": str(REPO)})
    try:
        await wait_until_listening(port)
        before = _children_of({process.pid})
        # before any client: the template started at import, taken over and prepared
        assert [_is_template(pid) for pid in before] == [True]
        with anyio.fail_after(120):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
                result = await client.call_tool("run_code", {"code": "double(21)"})
                assert not result.is_error, result
                assert result.structured_content is not None
                assert result.structured_content["result"] == 42
                assert _children_of({process.pid}) == before  # no second template
                workers = _children_of(before)
                assert workers  # the session's worker (and the warm spare), forked from it
    finally:
        process.terminate()
        await process.wait()
        await process.aclose()
    with anyio.fail_after(60):  # the server stopped: its template and workers with it
        while any(_alive(pid) for pid in before | workers):
            await anyio.sleep(0.05)
