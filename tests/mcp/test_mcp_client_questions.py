"""codeact as an MCP client of servers that ask questions or run tools as tasks: a bound
tool's elicitation answered from a script, or suspending a durable run until a person
decides; a bound tool the server runs as a task, awaited to its result."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from codeact import Durable, Runtime, SqliteStore, ToolCall, ToolRegistry
from codeact.executors._in_process import InProcessExecutor
from codeact.mcp import MCPConnection
from tests.mcp.npm_servers import npm_server
from tests.mcp.test_mcp_stateless import http

pytestmark = pytest.mark.anyio
EVERYTHING = "@modelcontextprotocol/server-everything"


async def bound_runtime(connection: MCPConnection, *, durable: Durable | None = None) -> Runtime:
    """The connection's tools in a runtime: in-process, or in workers where runs are
    durable (recording needs them)."""
    registry = ToolRegistry()
    await connection.register(registry)
    if durable is not None:
        return Runtime(registry, durable=durable)
    return Runtime(registry, executor=InProcessExecutor())


async def test_a_third_party_servers_question_is_answered_for_a_script() -> None:
    asked: list[str] = []

    async def person(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada", "color": "teal"})

    server = npm_server(EVERYTHING, "stdio")
    async with MCPConnection(server, elicitation=person) as connection:
        runtime = await bound_runtime(connection)
        async with runtime:
            script = "answer = trigger_elicitation_request()\n'Ada' in str(answer)"
            result = await runtime.execute(ToolCall("c1", "run_code", {"code": script}))
    assert not result.is_error, result.text
    assert "Result: true" in result.text
    assert len(asked) == 1


async def test_a_codeact_servers_approval_is_answered_by_the_handler(tmp_path: Path) -> None:
    async def approve(context: Any, params: Any) -> types.ElicitResult:
        assert '"amount":12' in params.message
        return types.ElicitResult(action="accept", content={"approve": True})

    async with (
        http(tmp_path, "--mode", "native") as served,
        MCPConnection(served.url, elicitation=approve) as connection,
    ):
        runtime = await bound_runtime(connection)
        async with runtime:
            result = await runtime.execute(
                ToolCall("c1", "run_code", {"code": "charge(12)"}), session="s"
            )
    assert "charged 12" in result.text, result.text
    assert served.made() == ["charge 12"]


async def test_without_a_handler_the_question_suspends_the_durable_run_until_decided(
    tmp_path: Path,
) -> None:
    record = Path(tempfile.mkdtemp(dir=tmp_path)) / "runs.db"
    durable = Durable(lambda session: SqliteStore(record, session))
    script = "first = note('one')\npaid = charge(30)\n[first, paid]"
    async with (
        http(tmp_path, "--mode", "native") as served,
        MCPConnection(served.url) as connection,
    ):
        runtime = await bound_runtime(connection, durable=durable)
        async with runtime:
            waiting = await runtime.execute(
                ToolCall("c1", "run_code", {"code": script}), session="trip"
            )
            assert waiting.is_error
            assert waiting.error.code == "SUSPENDED", waiting.text
            [pending] = runtime.pending("trip")
            assert pending.name == "charge"
            assert "the MCP server asks" in pending.reason
            assert '"amount":30' in pending.reason  # the person sees what they approve
            assert served.made() == ["note one"]
            done = await runtime.resume("trip", {pending.call_id: True})
    assert not done.is_error, done.text
    assert "charged 30" in done.text
    assert served.made() == ["note one", "charge 30"]  # nothing ran twice


async def test_a_tool_the_server_runs_as_a_task_is_awaited_to_its_result(tmp_path: Path) -> None:
    async with (
        http(tmp_path, "--task-after-seconds", "0", "--mode", "native") as served,
        MCPConnection(served.url) as connection,
    ):
        runtime = await bound_runtime(connection)
        async with runtime:
            script = "[tick(n) for n in range(3)]"
            result = await runtime.execute(ToolCall("c1", "run_code", {"code": script}))
    assert 'Result: ["0","1","2"]' in result.text, result.text  # each tick's text, in order
    assert served.made() == ["tick 0", "tick 1", "tick 2"]
