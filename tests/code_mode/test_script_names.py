"""Tools whose names are not Python identifiers (MCP's get-sum, files.read) in scripts."""

from __future__ import annotations

import keyword
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact import Runtime, Tool, ToolCall, ToolRegistry
from codeact.code_mode._run_code import RUN_CODE
from codeact.code_mode._script_names import assign_script_names
from codeact.contract._tool import NAME_PATTERN
from codeact.executors._in_process import InProcessExecutor

pytestmark = pytest.mark.anyio


def named(name: str, result: Any = None) -> Tool:
    async def function(**arguments: Any) -> Any:
        return {"tool": name, "arguments": arguments} if result is None else result

    return Tool.from_schema(
        name=name,
        description=f"The tool {name}.",
        parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
        function=function,
    )


tool_names = st.from_regex(NAME_PATTERN, fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(tool_names, unique=True, max_size=12))
def test_every_tool_gets_one_distinct_identifier_and_identifiers_keep_theirs(
    names: list[str],
) -> None:
    tools = [named(name) for name in names]
    assigned = assign_script_names(tools)
    assert len(assigned.tools) == len(tools)  # nobody lost, nobody merged
    assert sorted(t.name for t in assigned.tools.values()) == sorted(names)
    for script_name, tool in assigned.tools.items():
        assert script_name.isidentifier()
        assert not keyword.iskeyword(script_name)
        assert assigned.tool_name(script_name) == tool.name
        if tool.name.isidentifier() and not keyword.iskeyword(tool.name) and tool.name.isascii():
            assert script_name == tool.name
    shuffled = assign_script_names(list(reversed(tools)))
    assert {t.name: n for n, t in shuffled.tools.items()} == {
        t.name: n for n, t in assigned.tools.items()
    }  # the same names whatever the order


def test_a_hyphenated_name_never_takes_a_real_tools_name_and_collisions_get_a_suffix() -> None:
    assigned = assign_script_names([named("db-query"), named("db_query"), named("db--query")])
    assert assigned.tools["db_query"].name == "db_query"
    assert assigned.renamed["db-query"].startswith("db_query_")
    assert assigned.renamed["db--query"] == "db__query"
    suffixed = assigned.renamed["db-query"]
    assert len(suffixed) == len("db_query_") + 6
    again = assign_script_names([named("db--query"), named("db_query"), named("db-query")])
    assert again.renamed == assigned.renamed  # stable: the suffix comes from the name


def test_keywords_and_leading_digits_become_identifiers() -> None:
    assigned = assign_script_names([named("class"), named("3d-render"), named("import")])
    assert assigned.renamed == {"3d-render": "_3d_render", "class": "class_", "import": "import_"}


async def test_a_script_calls_hyphenated_and_dotted_tools_by_their_aliases() -> None:
    registry = ToolRegistry()
    for name in ("get-sum", "files-read", "get_sum_total"):
        registry.register(named(name))
    runtime = Runtime(registry, mode="code", executor=InProcessExecutor())
    async with runtime:
        description = str(runtime.schemas()[0]["description"])
        assert "get-sum as get_sum" in description
        assert "def get_sum(" in description
        assert "def files_read(" in description
        assert "(The tool 'get-sum', by the name scripts call it.)" in description
        script = "[get_sum(1), files_read(a=2), get_sum_total(3)]"
        result = await runtime.execute(ToolCall("c", RUN_CODE, {"code": script}))
        assert not result.is_error, result.text
        value = result.value["result"]  # type: ignore[index]
        assert [item["tool"] for item in value] == ["get-sum", "files-read", "get_sum_total"]
        assert [item["arguments"] for item in value] == [{"a": 1}, {"a": 2}, {"a": 3}]
        gathered = await runtime.execute(
            ToolCall(
                "g",
                RUN_CODE,
                {
                    "code": "import asyncio\n[r['tool'] for r in await asyncio.gather(get_sum(1), files_read(2))]"
                },
            )
        )
        assert list(gathered.value["result"]) == ["get-sum", "files-read"]  # type: ignore[index]
        # the pre-run check knows the alias, and suggests it for the original spelling
        unknown = await runtime.execute(ToolCall("u", RUN_CODE, {"code": "get_summ(1)"}))
        assert unknown.is_error
        assert "get_sum" in unknown.text
