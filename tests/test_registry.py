"""Advertisement and scoping: an allowlisted, deterministic projection of the registry."""

from __future__ import annotations

import dataclasses
import json

import pytest

from codeact import RulePolicy, Tool, ToolCall, ToolDefinitionError, ToolRegistry, deny, tool


@tool(timeout=5, concurrency_safe=True, max_content_chars=10, render=lambda a, v: "x")
def search(query: str, limit: int = 10) -> list[str]:
    """Search the index."""
    return []


@tool
def read(path: str) -> str:
    """Read a file."""
    return ""


def test_schemas_carry_exactly_name_description_and_parameters() -> None:
    registry = ToolRegistry(pre_hooks=[lambda i: None])
    registry.register(search)
    (schema,) = registry.schemas()
    assert set(schema) == {"name", "description", "parameters"}
    text = json.dumps(schema)
    host_only = {f.name for f in dataclasses.fields(Tool)} - {"name", "description", "parameters"}
    for field_name in host_only:
        assert field_name not in schema
        assert f'"{field_name}"' not in text, field_name


def test_schemas_are_byte_identical_across_calls_and_registries() -> None:
    first, second = ToolRegistry(), ToolRegistry()
    for registry in (first, second):
        registry.register(search)
        registry.register(read)
    assert json.dumps(first.schemas()) == json.dumps(second.schemas())
    assert json.dumps(first.schemas()) == json.dumps(first.schemas())


def test_mutating_an_advertisement_does_not_change_the_tool() -> None:
    registry = ToolRegistry()
    registry.register(search)
    registry.schemas()[0]["parameters"]["properties"]["query"]["type"] = "integer"  # type: ignore[index, call-overload]
    assert registry.schemas()[0]["parameters"]["properties"]["query"]["type"] == "string"  # type: ignore[index, call-overload]


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry()
    registry.register(read)
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.register(read)


def test_register_accepts_a_plain_typed_function() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    registry = ToolRegistry()
    registry.register(ping)
    assert registry.names() == ["ping"]


def test_disposer_removes_exactly_its_registration() -> None:
    registry = ToolRegistry()
    dispose = registry.register(read)
    dispose()
    assert "read" not in registry
    registry.register(read)
    dispose()  # a second call of the old disposer must not remove the new one
    assert "read" in registry


def test_child_shadows_parent_and_disposing_reveals_it() -> None:
    parent = ToolRegistry()
    parent.register(read)
    parent.register(search)
    child = parent.child()

    @tool(name="read")
    def read_for_agent(path: str) -> str:
        """Read, for one agent only."""
        return path

    dispose = child.register(read_for_agent)
    assert child.get("read") is read_for_agent
    assert parent.get("read") is read
    assert child.names() == ["search", "read"]
    dispose()
    assert child.get("read") is read


@pytest.mark.anyio
async def test_a_parent_with_no_tools_still_hands_down_its_policy_and_hooks() -> None:
    seen: list[str] = []
    parent = ToolRegistry(
        policy=RulePolicy([deny("read", reason="no reading here")]),
        pre_hooks=[lambda invocation: seen.append(invocation.name)],
    )
    child = parent.child()
    child.register(read)
    child.register(search)
    refused = await child.execute(ToolCall("1", "read", {"path": "x"}))
    allowed = await child.execute(ToolCall("2", "search", {"query": "q"}))
    assert refused.is_error
    assert refused.error.code == "POLICY_DENIED"
    assert "no reading here" in refused.error.message
    assert not allowed.is_error
    assert seen == ["search"]


def test_disposing_an_owner_unregisters_what_it_registered() -> None:
    registry = ToolRegistry()
    registry.register(read)
    plugin = registry.owner()
    plugin.register(search)

    def extra() -> None:
        """Extra."""

    plugin.register(extra)
    assert registry.names() == ["read", "search", "extra"]
    plugin.dispose()
    assert registry.names() == ["read"]
