"""``codeact serve-mcp`` under the stateless protocol (2026-07-28), as the SDK's default
``Client`` speaks it, beside the handshake era's client: where names persist, what a
client costs in workers, approvals asked through elicitation, long runs as tasks."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters

from codeact.mcp import TaskClient
from tests.hosts import REPO, stopped, wait_until_listening
from tests.mcp.test_mcp_sessions import descendants_of, settle

pytestmark = pytest.mark.anyio
TOOLS = "tests.mcp.approval_tools:REGISTRY"


class Served:
    """A serve-mcp process and the file its tools write their effects to."""

    def __init__(self, effects: Path, url: str, pid: int) -> None:
        self.effects = effects
        self.url = url
        self.pid = pid

    def made(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []


def stdio(effects: Path, *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "codeact", "serve-mcp", "--tools", TOOLS, *options],
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEACT_TEST_EFFECTS": str(effects)},
    )


@contextlib.asynccontextmanager
async def http(tmp_path: Path, *options: str) -> AsyncIterator[Served]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    effects = tmp_path / "effects.txt"
    process = await anyio.open_process(
        [
            sys.executable,
            *["-m", "codeact", "serve-mcp", "--tools", TOOLS],
            *["--http", f"127.0.0.1:{port}", *options],
        ],
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEACT_TEST_EFFECTS": str(effects)},
    )
    try:
        await wait_until_listening(port)
        yield Served(effects, f"http://127.0.0.1:{port}/mcp", process.pid)
    finally:
        await stopped(process)


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def handle_of(result: types.CallToolResult) -> str:
    assert result.meta is not None, text(result)
    return str(result.meta["codeact/session"])


def say(answer: bool) -> Any:
    """An elicitation callback that answers every question ``answer``."""

    async def elicited(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": answer})

    return elicited


# Names -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_names_persist_per_stdio_client_and_never_reach_another(
    tmp_path: Path, mode: str
) -> None:
    server = stdio(tmp_path / "effects.txt")
    async with Client(server, mode=mode) as first, Client(server, mode=mode) as second:
        assert (first.protocol_version == "2026-07-28") == (mode == "auto")
        await first.call_tool("run_code", {"code": "mine = note('first')"})
        await second.call_tool("run_code", {"code": "mine = note('second')"})
        assert "noted first" in text(await first.call_tool("run_code", {"code": "mine"}))
        assert "noted second" in text(await second.call_tool("run_code", {"code": "mine"}))


async def test_over_http_a_handle_keeps_names_and_nothing_else_does(tmp_path: Path) -> None:
    async with http(tmp_path) as served, Client(served.url) as client:
        assert client.protocol_version == "2026-07-28"
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        run_code = listed["run_code"]
        assert "session" in run_code.input_schema["properties"]
        assert "session='new'" in (run_code.description or "")
        assert "Names you define persist to the next run_code call" not in (
            run_code.description or ""
        )
        one_off = await client.call_tool("run_code", {"code": "lost = 1"})
        assert one_off.meta is None or "codeact/session" not in one_off.meta
        gone = await client.call_tool("run_code", {"code": "lost"})
        assert gone.is_error
        assert "NameError" in text(gone)
        started = await client.call_tool("run_code", {"code": "kept = 41", "session": "new"})
        handle = handle_of(started)
        assert handle in text(started)  # the model reads the handle it must pass
        again = await client.call_tool("run_code", {"code": "kept + 1", "session": handle})
        assert "Result: 42" in text(again)
        async with Client(served.url) as other:  # another client, its own handle
            theirs = handle_of(
                await other.call_tool("run_code", {"code": "kept = 'theirs'", "session": "new"})
            )
            assert theirs != handle
            assert "Result: 42" in text(
                await client.call_tool("run_code", {"code": "kept + 1", "session": handle})
            )
            unseen = await other.call_tool("run_code", {"code": "kept"})
            assert unseen.is_error
            assert "NameError" in text(unseen)
        forged = await client.call_tool("run_code", {"code": "kept", "session": handle + "x"})
        assert forged.is_error
        assert "no session has the handle" in text(forged)
        assert "session='new'" in text(forged)


async def test_a_clients_handles_are_capped_and_expire_when_idle(tmp_path: Path) -> None:
    options = ("--max-sessions-per-client", "2", "--idle-seconds", "3")
    async with http(tmp_path, *options) as served, Client(served.url) as client:
        handles = []
        for number in range(3):
            started = await client.call_tool(
                "run_code", {"code": f"n = {number}", "session": "new"}
            )
            handles.append(handle_of(started))
        evicted = await client.call_tool("run_code", {"code": "n", "session": handles[0]})
        assert evicted.is_error
        assert "no session has the handle" in text(evicted)
        kept = await client.call_tool("run_code", {"code": "n", "session": handles[2]})
        assert "Result: 2" in text(kept)
        with anyio.fail_after(60):  # unused past the idle limit, the handle is gone
            while True:
                await anyio.sleep(0.5)
                probe = await client.call_tool("run_code", {"code": "1", "session": "new"})
                if not probe.is_error:
                    expired = await client.call_tool(
                        "run_code", {"code": "n", "session": handles[1]}
                    )
                    if expired.is_error:
                        break
        assert "expired" in text(expired) or "never existed" in text(expired)


# Workers -----------------------------------------------------------------------------------


async def test_a_default_clients_calls_cost_at_most_two_workers_over_stdio(
    tmp_path: Path,
) -> None:
    server = stdio(tmp_path / "effects.txt")
    async with Client(server) as client:
        await client.call_tool("run_code", {"code": "1"})
        pid = await _server_pid(client)
        start = await settle(lambda: len(descendants_of(pid)))
        for number in range(12):
            result = await client.call_tool("run_code", {"code": f"x{number} = {number}"})
            assert not result.is_error, text(result)
        after = await settle(lambda: len(descendants_of(pid)))
        assert after <= start + 2, (start, after)
        assert "Result: 11" in text(await client.call_tool("run_code", {"code": "x11"}))


async def test_one_off_calls_over_http_leave_no_worker_behind(tmp_path: Path) -> None:
    async with http(tmp_path) as served:
        async with Client(served.url) as client:
            await client.call_tool("run_code", {"code": "1"})
        start = await settle(lambda: len(descendants_of(served.pid)))
        async with Client(served.url) as client:
            for number in range(12):
                result = await client.call_tool("run_code", {"code": f"note('{number}')"})
                assert not result.is_error, text(result)
        after = await settle(lambda: len(descendants_of(served.pid)), want=start)
        assert after == start
        assert len(served.made()) == 12


async def _server_pid(client: Client) -> int:
    """The stdio server's pid: the one child of this test process running serve-mcp."""
    for pid in descendants_of(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"serve-mcp" in command:
            return pid
    raise AssertionError("no serve-mcp process found")


# Approvals ---------------------------------------------------------------------------------

SCRIPT = "note('before')\nreceipt = charge(90)\nnote('after')\nreceipt"
GUARDED = (
    "note('before')\ntry:\n    receipt = charge(90)\nexcept ToolError as error:\n"
    "    receipt = 'declined: ' + error.message\nnote('after')\nreceipt"
)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_approved_charge_runs_once_over_stdio(tmp_path: Path, mode: str) -> None:
    effects = tmp_path / "effects.txt"
    async with Client(stdio(effects), mode=mode, elicitation_callback=say(True)) as client:
        result = await client.call_tool("run_code", {"code": SCRIPT})
    assert not result.is_error, text(result)
    assert "charged 90" in text(result)
    assert effects.read_text().splitlines() == ["note before", "charge 90", "note after"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_approval_over_http_accepted_declined_and_unanswerable(
    tmp_path: Path, mode: str
) -> None:
    keep = {"session": "new"} if mode == "auto" else {}  # a handle, where names need one
    async with http(tmp_path) as served:
        async with Client(served.url, mode=mode, elicitation_callback=say(True)) as client:
            approved = await client.call_tool("run_code", {"code": SCRIPT, **keep})
            assert "charged 90" in text(approved)
            if keep:
                assert handle_of(approved)  # the resumed call answers with its handle
        assert served.made() == ["note before", "charge 90", "note after"]
        async with Client(served.url, mode=mode, elicitation_callback=say(False)) as client:
            declined = await client.call_tool("run_code", {"code": GUARDED})
            assert "declined: a person declined this call" in text(declined)
        assert served.made()[3:] == ["note before", "note after"]
        async with Client(served.url, mode=mode) as client:  # no elicitation: cannot be asked
            waiting = await client.call_tool("run_code", {"code": SCRIPT})
        assert waiting.is_error
        assert "waits for approval" in text(waiting)
        assert "cannot be asked" in text(waiting)
        assert served.made()[5:] == ["note before"]


async def test_serve_mcp_asks_and_denies_what_its_options_say(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    server = stdio(effects, "--ask", "note", "--deny", "tick")
    async with Client(server, elicitation_callback=say(False)) as client:
        asked = await client.call_tool("run_code", {"code": "note('x')"})
        denied = await client.call_tool("run_code", {"code": "tick(1)"})
    assert "declined" in text(asked)
    assert "POLICY_DENIED" in text(denied)
    assert not effects.exists()


async def test_a_forged_or_replayed_request_state_is_refused(tmp_path: Path) -> None:
    async with (
        http(tmp_path) as served,
        Client(served.url, elicitation_callback=say(True)) as client,
    ):
        asked = await client.session.call_tool(
            "run_code", {"code": SCRIPT}, allow_input_required=True
        )
        assert isinstance(asked, types.InputRequiredResult)
        assert asked.request_state
        assert asked.input_requests
        (key,) = asked.input_requests
        request = asked.input_requests[key]
        assert isinstance(request, types.ElicitRequest)
        assert '"amount":90' in request.params.message  # the whole arguments are shown
        yes = {key: types.ElicitResult(action="accept", content={"approve": True})}
        tampered = asked.request_state[:-4] + (
            "AAAA" if asked.request_state[-4:] != "AAAA" else "BBBB"
        )
        with pytest.raises(MCPError, match="requestState"):
            await client.session.call_tool(
                "run_code",
                {"code": SCRIPT},
                input_responses=yes,
                request_state=tampered,
                allow_input_required=True,
            )
        with pytest.raises(MCPError, match="requestState"):  # bound to its own arguments
            await client.session.call_tool(
                "run_code",
                {"code": SCRIPT + "\n"},
                input_responses=yes,
                request_state=asked.request_state,
                allow_input_required=True,
            )
        assert served.made() == ["note before"]
        done = await client.session.call_tool(
            "run_code",
            {"code": SCRIPT},
            input_responses=yes,
            request_state=asked.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        assert "charged 90" in text(done)
        with pytest.raises(MCPError, match="already answered"):
            await client.session.call_tool(
                "run_code",
                {"code": SCRIPT},
                input_responses=yes,
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert served.made() == ["note before", "charge 90", "note after"]


# Tasks -------------------------------------------------------------------------------------

LONG = "[tick(i) for i in range(400)][-1]"


async def test_a_long_run_is_a_task_the_client_polls_to_its_result(tmp_path: Path) -> None:
    async with (
        http(tmp_path, "--task-after-seconds", "0") as served,
        Client(served.url, extensions=[TaskClient()]) as client,
    ):
        created = await client.session.call_tool(
            "run_code", {"code": "[tick(i) for i in range(5)][-1]"}, allow_claimed=True
        )
        assert getattr(created, "result_type", None) == "task"
        task_id = created.task_id  # type: ignore[union-attr]
        with anyio.fail_after(60):
            while True:
                state = await _task(served.url, "tasks/get", task_id)
                if state["status"] != "working":
                    break
                await anyio.sleep(0.1)
        assert state["status"] == "completed", state
        assert "Result: 4" in state["result"]["content"][0]["text"]
        awaited = await client.call_tool("run_code", {"code": "tick(7)"})  # TaskClient waits
        assert "Result: 7" in text(awaited)
    assert served.made() == [f"tick {n}" for n in range(5)] + ["tick 7"]


async def test_cancelling_a_task_stops_its_script(tmp_path: Path) -> None:
    async with (
        http(tmp_path, "--task-after-seconds", "0") as served,
        Client(served.url, extensions=[TaskClient()]) as client,
    ):
        created = await client.session.call_tool("run_code", {"code": LONG}, allow_claimed=True)
        task_id = created.task_id  # type: ignore[union-attr]
        with anyio.fail_after(60):
            while len(served.made()) < 3:
                await anyio.sleep(0.05)
        await _task(served.url, "tasks/cancel", task_id)
        with anyio.fail_after(60):
            while (await _task(served.url, "tasks/get", task_id))["status"] == "working":
                await anyio.sleep(0.05)
        assert (await _task(served.url, "tasks/get", task_id))["status"] == "cancelled"
        stopped = await settle(lambda: len(served.made()))
        assert 3 <= stopped < 400
        unknown = await _task(served.url, "tasks/get", "task_nonsense", expect_error=True)
        assert "no task" in unknown["message"]


async def test_a_task_that_needs_approval_asks_through_tasks_update(tmp_path: Path) -> None:
    async with (
        http(tmp_path, "--task-after-seconds", "0") as served,
        Client(served.url, extensions=[TaskClient()], elicitation_callback=say(True)) as client,
    ):
        result = await client.call_tool("run_code", {"code": SCRIPT})
    assert "charged 90" in text(result)
    assert served.made() == ["note before", "charge 90", "note after"]


async def _task(url: str, method: str, task_id: str, *, expect_error: bool = False) -> Any:
    """A raw tasks/* request, as the extension's wire defines it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "taskId": task_id,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": {"io.modelcontextprotocol/tasks": {}}
                },
            },
        },
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": task_id,
    }
    async with httpx.AsyncClient(timeout=60) as client:
        answer = await client.post(url, json=body, headers=headers)
    reply = _json_of(answer)
    if expect_error:
        assert "error" in reply, reply
        return reply["error"]
    assert "result" in reply, reply
    return reply["result"]


def _json_of(answer: httpx.Response) -> Any:
    import json

    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return answer.json()


# Bad input ---------------------------------------------------------------------------------


async def test_a_body_nested_too_deep_is_a_400_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    async with http(tmp_path) as served:
        deep = b"[" * 100_000 + b"]" * 100_000
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        async with httpx.AsyncClient(timeout=60) as raw:
            answer = await raw.post(served.url, content=deep, headers=headers)
        assert answer.status_code == 400
        assert "nested too deeply" in answer.text
        async with Client(served.url) as client:
            assert "Result: 2" in text(await client.call_tool("run_code", {"code": "1 + 1"}))
