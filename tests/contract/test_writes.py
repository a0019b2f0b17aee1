"""Which calls write: a tool's MCP annotations (the same flags on ``@tool``), read as the
MCP specification reads them (no annotation: it may write), and a registry's override."""

from __future__ import annotations

from codeact import Tool, ToolRegistry, tool


@tool
def unannotated(x: int) -> int:
    """No hints at all."""
    return x


@tool(read_only=True)
def lookup(x: int) -> int:
    """Reads only."""
    return x


@tool(destructive=True, idempotent=True)
def delete(x: int) -> int:
    """Deletes, by key."""
    return x


def test_the_flags_on_tool_are_mcp_annotations() -> None:
    assert lookup.annotations == {"readOnlyHint": True}
    assert delete.annotations == {"destructiveHint": True, "idempotentHint": True}
    assert unannotated.annotations is None


def test_flags_and_explicit_annotations_merge_the_flags_winning() -> None:
    both = tool(annotations={"title": "T", "readOnlyHint": False}, read_only=True)(lookup.function)
    assert both.annotations == {"title": "T", "readOnlyHint": True}


def test_only_a_read_only_hint_says_a_tool_does_not_write() -> None:
    assert unannotated.writes
    assert not lookup.writes
    assert delete.writes
    served = Tool.from_schema(
        name="remote",
        description="A server's tool.",
        parameters={"type": "object", "properties": {}},
        function=lambda: None,
        annotations={"readOnlyHint": False, "destructiveHint": False},
    )
    assert served.writes


def test_repeatable_means_read_only_or_idempotent() -> None:
    assert lookup.repeatable
    assert delete.repeatable
    assert not unannotated.repeatable


def test_a_registry_overrides_what_a_tool_says_and_its_children_inherit_it() -> None:
    parent = ToolRegistry()
    for definition in (unannotated, lookup):
        parent.register(definition)
    child = parent.child()
    child.register(delete)
    assert [child.writes(n) for n in ("unannotated", "lookup", "delete")] == [True, False, True]
    parent.mark("unannotated", writes=False)
    child.mark("lookup", writes=True)
    assert [child.writes(n) for n in ("unannotated", "lookup", "delete")] == [False, True, True]
    assert parent.writes("lookup") is False  # the child's override stays the child's
    assert child.writes("missing") is True  # an unknown tool may write
