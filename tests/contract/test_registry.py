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


# What a registry resolves is kept, and given up at any change ---------------------------


@pytest.mark.anyio
async def test_every_change_along_the_chain_reaches_the_next_call() -> None:
    """Calls read the tool, policy, hooks and listeners resolved once; registering,
    shadowing, a new policy, a listener added or stopped, anywhere in the chain, is
    seen by the very next call, native or from a script's thread."""
    from codeact.contract._dispatch import execute_now

    parent = ToolRegistry()
    parent.register(read)
    child = parent.child()
    heard: list[str] = []

    async def call(number: int) -> tuple[str, str | None]:
        result = await child.execute(ToolCall(f"c{number}", "read", {"path": "p"}))
        return (
            result.value if not result.is_error else "",
            result.error.code if result.is_error else None,
        )

    def now(number: int) -> str | None:
        call = ToolCall(f"n{number}", "read", '{"path": "p"}')
        result = execute_now(
            child.resolve(call.name),
            call,
            emit=lambda event: heard.append(event.call_id),
            plain={"path": "p"},
        )
        assert result is not None
        return result.error.code if result.is_error else None

    assert await call(1) == ("", None)
    assert now(1) is None
    assert heard == []  # nobody listened: no event was made

    stop = parent.add_listener(lambda event: heard.append(event.call_id))
    await call(2)
    now(2)
    assert heard.count("c2") == 2  # started and finished
    assert heard.count("n2") == 2
    stop()
    await call(3)
    assert "c3" not in heard

    parent.set_policy(RulePolicy([deny("read", reason="closed")]))
    assert await call(4) == ("", "POLICY_DENIED")
    assert now(4) == "POLICY_DENIED"

    @tool(name="read")
    def shadow(path: str) -> str:
        """Read from elsewhere."""
        return "shadowed"

    dispose = child.register(shadow)
    parent.set_policy(None)
    assert await call(5) == ("shadowed", None)
    dispose()
    assert await call(6) == ("", None)


def test_a_rule_policy_remembers_verdicts_only_while_its_rules_stand() -> None:
    from codeact import allow
    from codeact.contract._invocation import Invocation
    from codeact.contract._policy import Action

    def invocation(name: str, arguments: dict[str, object]) -> Invocation:
        return Invocation(
            call_id="c", name=name, arguments=arguments, raw_arguments="", parent=None, tool=read
        )

    policy = RulePolicy(
        [
            deny("delete_*", reason="no deletions"),
            allow("send", when=lambda a: a.get("to") == "me"),
        ],
        default=Action.ALLOW,
    )
    for _ in range(2):  # the second time from what it remembered
        assert policy.decide_now(invocation("read", {})).allowed
        assert not policy.decide_now(invocation("delete_all", {})).allowed
        assert policy.decide_now(invocation("send", {"to": "me"})).allowed
    # a rule that reads arguments is asked every time: no default from the first answer
    assert policy.decide_now(invocation("send", {"to": "you"})).allowed  # default: allow
    policy.default = Action.DENY
    assert not policy.decide_now(invocation("send", {"to": "you"})).allowed
    assert not policy.decide_now(invocation("read", {})).allowed  # the new default applies
    policy.rules = (allow("read"),)
    assert policy.decide_now(invocation("read", {})).allowed
    assert not policy.decide_now(invocation("delete_all", {})).allowed


@pytest.mark.anyio
async def test_unknown_names_a_model_invents_are_not_remembered() -> None:
    registry = ToolRegistry()
    registry.register(read)
    for number in range(200):
        result = await registry.execute(ToolCall(f"c{number}", f"made_up_{number}", {}))
        assert result.error.code == "UNKNOWN_TOOL"
    await registry.execute(ToolCall("c", "read", {"path": "p"}))
    assert set(registry._resolved) == {"read"}
