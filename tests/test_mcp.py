"""MCP against the real reference servers, and our code-mode server used by the official client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from codeact import Mode, Runtime, ToolCall, ToolRegistry
from codeact._executors import InProcessExecutor
from codeact.mcp import MCPConnection

pytestmark = pytest.mark.anyio
BIN = Path(sys.executable).parent
TESTS = Path(__file__).resolve().parent


def server(command: str, *args: str) -> StdioServerParameters:
    path = shutil.which(command, path=str(BIN)) or command
    return StdioServerParameters(command=path, args=list(args))


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
        subprocess.run(command, cwd=repo, check=True, env=environment)
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
    parameters = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "codeact",
            "serve-mcp",
            "--mode",
            "code",
            "--tools",
            "cli_tools:TOOLS",
            "--executor",
            "inprocess",
        ],
        env={**os.environ, "PYTHONPATH": str(TESTS)},
    )
    with anyio.fail_after(60):
        async with Client(parameters) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["run_code"]
            assert "def double(x: int) -> int:" in (listed.tools[0].description or "")
            result = await client.call_tool("run_code", {"code": "print('doubling')\ndouble(21)"})
            assert not result.is_error
            assert result.structured_content == {
                "result": 42,
                "output": "doubling\n",
                "tool_calls": [{"name": "double", "ok": True}],
            }
            failed = await client.call_tool("run_code", {"code": "import os"})
            assert failed.is_error
            assert "CODE_SECURITY_VIOLATION" in json.dumps([c.model_dump() for c in failed.content])
