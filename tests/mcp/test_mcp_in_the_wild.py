"""Third-party MCP servers as they are: hyphenated names, media, resources, bad schemas."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from codeact import (
    ContentBlock,
    DispatchEvent,
    ImageBlock,
    Mode,
    ResourceBlock,
    Runtime,
    TextBlock,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolProgress,
    ToolRegistry,
    anthropic_results,
    openai_chat_results,
    openai_responses_results,
)
from codeact.contract._json import thaw
from codeact.executors._in_process import InProcessExecutor
from codeact.mcp import MCPConnection, mcp_server
from tests.hosts import REPO
from tests.mcp.npm_servers import installed, npm_server
from tests.mcp.test_mcp import bound

pytestmark = pytest.mark.anyio
EVERYTHING = "@modelcontextprotocol/server-everything"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
# Arguments for the tools that need some; the rest take none.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "echo": {"message": "hello from codeact"},
    "get-sum": {"a": 2, "b": 3},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-structured-content": {"location": "Chicago"},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "trigger-long-running-operation": {"duration": 1, "steps": 2},
}
# Reaching the internet (gzip-file-as-resource fetches a URL), the 2025-11-25 protocol's
# core tasks (simulate-research-query requires them; codeact's client takes the tasks
# extension of 2026-07-28), or a person (the elicitations, tested on their own).
NOT_COMPARED = {
    "gzip-file-as-resource",
    "simulate-research-query",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
}
TOGGLES = {"toggle-simulated-logging", "toggle-subscriber-updates"}


CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?")


def untimed(value: Any) -> str:
    """``value`` as JSON with clock times blanked: a resource made for each call says when
    ("created at 7:03:14 PM"), and two calls may fall in different seconds."""
    return CLOCK.sub("<time>", json.dumps(value, sort_keys=True))


async def test_every_tool_of_server_everything_works_natively_and_from_a_script() -> None:
    async with MCPConnection(npm_server(EVERYTHING, "stdio")) as connection:
        runtime = await bound(connection)
        async with runtime:
            names = runtime.registry.names()
            assert len(names) == 15
            assert connection.refused == {}
            assert "get-sum" in names  # valid for every provider: kept as it is
            description = str(runtime.schemas(Mode.CODE)[0]["description"])
            assert "get-sum as get_sum" in description
            assert "def get_tiny_image(" in description
            for name in names:
                if name in NOT_COMPARED:
                    continue
                arguments = ARGUMENTS.get(name, {})
                native = await runtime.execute(ToolCall("n", name, arguments), mode=Mode.NATIVE)
                alias = name.replace("-", "_")
                script = f"{alias}(**{arguments!r})"
                coded = await runtime.execute(
                    ToolCall("c", "run_code", {"code": script}), mode=Mode.CODE
                )
                assert not native.is_error, (name, native.text)
                assert not coded.is_error, (name, coded.text)
                if name not in TOGGLES:  # a toggle answers "started" then "stopped"
                    from_script = thaw(coded.value)["result"]  # type: ignore[index]
                    assert untimed(from_script) == untimed(thaw(native.value)), name


async def test_media_and_resources_reach_scripts_as_plain_data_and_models_as_a_line() -> None:
    async with MCPConnection(npm_server(EVERYTHING, "stdio")) as connection:
        runtime = await bound(connection)
        async with runtime:
            image = await runtime.execute(ToolCall("i", "get-tiny-image", {}), mode=Mode.NATIVE)
            value = thaw(image.value)
            assert isinstance(value, dict)
            (block,) = [b for b in value["content"] if b["type"] == "image"]
            assert block["mimeType"] == "image/png"
            assert base64.b64decode(block["data"]).startswith(b"\x89PNG")
            assert "[image image/png," in image.text  # the model is told what is there
            assert block["data"] not in image.text  # not pages of base64
            (picture,) = [b for b in image.content if isinstance(b, ImageBlock)]
            assert picture.data == block["data"]
            # providers that take images in tool results get the image itself
            (anthropic,) = anthropic_results([image])["content"]
            sent = [part for part in anthropic["content"] if part["type"] == "image"]
            assert sent == [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": picture.data},
                }
            ]
            (responses,) = openai_responses_results([image])
            images = [part for part in responses["output"] if part["type"] == "input_image"]
            assert images == [
                {"type": "input_image", "image_url": f"data:image/png;base64,{picture.data}"}
            ]
            (chat,) = openai_chat_results([image])  # Chat Completions takes text only
            assert "[image image/png," in chat["content"]
            assert picture.data not in chat["content"]
            script = (
                "import base64\n"
                "found = get_tiny_image()\n"
                "[b['mimeType'] for b in found['content'] if b['type'] == 'image']"
            )
            coded = await runtime.execute(ToolCall("s", "run_code", {"code": script}))
            assert list(thaw(coded.value)["result"]) == ["image/png"]  # type: ignore[index]
            reference = await runtime.execute(
                ToolCall("r", "get-resource-reference", ARGUMENTS["get-resource-reference"]),
                mode=Mode.NATIVE,
            )
            blocks = thaw(reference.value)["content"]  # type: ignore[index]
            resources = [b for b in blocks if b["type"] == "resource"]
            assert resources[0]["resource"]["uri"].startswith("demo://resource/")
            assert "[resource demo://resource/" in reference.text
            links = await runtime.execute(
                ToolCall("l", "get-resource-links", {"count": 2}), mode=Mode.NATIVE
            )
            linked = [b for b in thaw(links.value)["content"] if b["type"] == "resource_link"]  # type: ignore[index]
            assert len(linked) == 2
            assert links.text.count("[resource link demo://") == 2


async def test_annotations_make_read_only_tools_concurrency_safe() -> None:
    async with MCPConnection(npm_server(EVERYTHING, "stdio")) as connection:
        tools = {tool.name: tool for tool in await connection.tools()}
    assert tools["get-sum"].concurrency_safe  # readOnlyHint
    assert not tools["toggle-simulated-logging"].concurrency_safe  # neither hint


def _broken_server(tag: str = "") -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("broken_mcp_server.py"))],
        env={**os.environ, "SERVER_TAG": tag},
    )


async def test_a_tool_with_an_invalid_schema_is_reported_and_the_others_still_bind() -> None:
    async with MCPConnection(_broken_server()) as connection:
        bound = {tool.name for tool in await connection.tools()}
        assert set(connection.refused) == {"bad-schema"}
        assert "not a valid JSON Schema" in connection.refused["bad-schema"]
        # a dotted name beside a real db_query, and a tool named like codeact's run_code
        assert connection.renamed["db.query"] != "db_query"
        assert connection.renamed["db.query"].startswith("db_query_")
        assert connection.renamed["run_code"].startswith("run_code_")
        assert len(bound) == 5
    async with MCPConnection(_broken_server(), strict=True) as connection:
        with pytest.raises(ToolDefinitionError, match="bad-schema"):
            await connection.tools()


async def test_a_renamed_tool_still_calls_the_servers_own() -> None:
    async with MCPConnection(_broken_server()) as connection:
        runtime = await bound(connection)
        async with runtime:
            dotted = connection.renamed["db.query"]
            result = await runtime.execute(ToolCall("d", dotted, {"q": "x"}), mode=Mode.NATIVE)
            assert json.loads(result.text) == {"tool": "db.query", "q": "x"}
            real = await runtime.execute(ToolCall("r", "db_query", {"q": "y"}), mode=Mode.NATIVE)
            assert json.loads(real.text) == {"tool": "db_query", "q": "y"}


async def test_server_filesystem_from_a_script_with_its_output_shape_in_the_stub(
    tmp_path: Path,
) -> None:
    (tmp_path / "note.txt").write_text("hello from a file\n")
    (tmp_path / "dot.png").write_bytes(PNG)
    filesystem = npm_server("@modelcontextprotocol/server-filesystem", str(tmp_path))
    async with MCPConnection(filesystem) as connection:
        runtime = await bound(connection)
        async with runtime:
            description = str(runtime.schemas(Mode.CODE)[0]["description"])
            assert "class ReadTextFileResult(TypedDict):\n    content: str" in description
            assert "-> ReadTextFileResult:" in description
            script = f"read_text_file(path={str(tmp_path / 'note.txt')!r})['content'].upper()"
            coded = await runtime.execute(ToolCall("s", "run_code", {"code": script}))
            assert not coded.is_error, coded.text
            assert thaw(coded.value)["result"] == "HELLO FROM A FILE\n"  # type: ignore[index]
            listed = await runtime.execute(
                ToolCall("l", "list_directory", {"path": str(tmp_path)}), mode=Mode.NATIVE
            )
            assert "note.txt" in listed.text
            media = await runtime.execute(
                ToolCall("m", "read_media_file", {"path": str(tmp_path / "dot.png")}),
                mode=Mode.NATIVE,
            )
            assert not media.is_error, media.text
            (picture,) = [b for b in media.content if isinstance(b, ImageBlock)]
            assert base64.b64decode(picture.data) == PNG
            assert picture.data not in media.text  # a line for the model, not JSON of base64


async def test_registered_tools_follow_the_servers_list_when_it_changes() -> None:
    registry = ToolRegistry()
    # the initialize-handshake era, where a server notifies tools/list_changed unasked
    async with MCPConnection(_broken_server(), mode="legacy") as connection:
        await connection.register(registry)
        before = set(registry.names())
        assert "grow" in before
        result = await registry.execute(ToolCall("g", "grow", {}))
        assert not result.is_error, result.text
        with anyio.fail_after(20):  # the notification arrives, the list is read again
            while set(registry.names()) == before:
                await anyio.sleep(0.02)
        assert set(registry.names()) - before == {"grown-6"}
        assert (await registry.execute(ToolCall("n", "grown-6", {}))).is_error is False


async def test_progress_notifications_become_events_of_the_running_call() -> None:
    events: list[ToolProgress] = []
    async with MCPConnection(npm_server(EVERYTHING, "stdio")) as connection:

        def listen(event: DispatchEvent) -> None:
            if isinstance(event, ToolProgress):
                events.append(event)

        registry = ToolRegistry(listeners=[listen])
        await connection.register(registry)
        call = ToolCall("p", "trigger-long-running-operation", {"duration": 1, "steps": 3})
        result = await registry.execute(call)
    assert not result.is_error, result.text
    assert [e.call_id for e in events] == ["p"] * len(events)
    assert [e.progress for e in events] == [1.0, 2.0, 3.0]
    assert {e.total for e in events} == {3.0}


async def test_destructive_tools_can_be_put_behind_an_approver() -> None:
    asked: list[str] = []

    def approver(invocation: Any) -> bool:
        asked.append(invocation.name)
        return False

    async with MCPConnection(npm_server(EVERYTHING, "stdio")) as connection:
        await connection.tools()
        # every tool of server-everything says it destroys nothing (destructiveHint: false)
        assert connection.destructive() == []
    async with MCPConnection(_broken_server()) as connection:
        registry = ToolRegistry()
        await connection.register(registry)
        # no annotations at all: destructive, by the spec's defaults
        assert set(connection.destructive()) == set(registry.names())
        registry.set_policy(connection.ask_before_destructive(approver))
        refused = await registry.execute(ToolCall("t", "db_query", {"q": "drop"}))
    assert refused.is_error
    assert refused.error.code == "POLICY_DENIED"
    assert asked == ["db_query"]


async def test_our_server_sends_images_and_resources_as_mcp_content() -> None:
    pixel = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()

    def render(arguments: Any, value: Any) -> list[ContentBlock]:
        return [
            TextBlock(text="a picture:"),
            ImageBlock(data=pixel, mime_type="image/png"),
            ResourceBlock(uri="memo://1", mime_type="text/plain", body="the memo"),
        ]

    picture = Tool.from_schema(
        name="picture",
        description="A picture and a memo.",
        parameters={"type": "object", "properties": {}},
        function=lambda: "drawn",
        render=render,
    )
    registry = ToolRegistry()
    registry.register(picture)
    runtime = Runtime(registry, mode="native", executor=InProcessExecutor())
    async with runtime, Client(mcp_server(runtime)) as client:
        result = await client.call_tool("picture", {})
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image", "resource"]
    assert result.content[1].data == pixel  # type: ignore[union-attr]
    assert result.content[2].resource.text == "the memo"  # type: ignore[union-attr]


async def test_two_servers_whose_names_collide_are_both_callable() -> None:
    registry = ToolRegistry()
    async with (
        MCPConnection(_broken_server("first")) as first,
        MCPConnection(_broken_server("second")) as second,
    ):
        await first.register(registry)
        await second.register(registry)
        assert "db_query" in registry.names()
        moved = second.renamed["db_query"]  # the second server's: renamed away from the first's
        assert moved.startswith("db_query_")
        assert moved in registry.names()
        answers = {}
        for name in ("db_query", moved, first.renamed["db.query"], second.renamed["db.query"]):
            result = await registry.execute(ToolCall("c", name, {"q": "x"}))
            assert not result.is_error, result.text
            answers[name] = json.loads(result.text)
    assert answers["db_query"] == {"tool": "db_query", "q": "x", "server": "first"}
    assert answers[moved] == {"tool": "db_query", "q": "x", "server": "second"}
    assert answers[first.renamed["db.query"]]["server"] == "first"
    assert answers[second.renamed["db.query"]]["server"] == "second"


def test_the_mcp_inspector_sees_output_schemas_annotations_and_structured_content() -> None:
    node, inspector = installed("@modelcontextprotocol/inspector")
    serve = [
        sys.executable, "-m", "codeact", "serve-mcp", "--mode", "both",
        "--tools", "tests.cli_tools:TOOLS", "--executor", "inprocess",
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPO)}

    def inspect(*method: str) -> Any:
        done = subprocess.run(
            [node, str(inspector / "cli" / "build" / "cli.js"), "--cli", *serve, *method],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
            check=True,
        )
        return json.loads(done.stdout)

    listed = {tool["name"]: tool for tool in inspect("--method", "tools/list")["tools"]}
    run_code = listed["run_code"]
    assert run_code["outputSchema"]["required"] == ["result", "output", "tool_calls"]
    assert run_code["annotations"]["openWorldHint"] is True
    assert run_code["title"] == "Run Python code"
    called = inspect(
        "--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code=double(21)"
    )
    assert called["structuredContent"]["result"] == 42
    assert called["isError"] is False
