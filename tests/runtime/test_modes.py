"""Modes over one registry: what each advertises, what each lets run, lazy discovery."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator

import pytest

from codeact import Limits, ToolCall, ToolRegistry, UsageError, tool
from codeact.executors._in_process import InProcessExecutor
from codeact.runtime._modes import Mode, Runtime


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
def forecast(city: str, days: int = 3) -> dict[str, list[float]]:
    """Weather forecast for a city.

    Args:
        city: City name.
        days: How many days ahead.
    """
    return {"highs": [20.0 + d for d in range(days)]}


def many_tools(count: int) -> list[object]:
    made = []
    for number in range(count):

        def body(item: str) -> str:
            return item

        body.__doc__ = f"Look up record {number} in catalog section {number % 7}."
        made.append(tool(name=f"catalog_lookup_{number}")(body))
    return made


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    registry = ToolRegistry()
    registry.register(add)
    registry.register(forecast)
    made = Runtime(registry, executor=InProcessExecutor())
    yield made
    made.close()


def test_each_mode_advertises_what_it_should(runtime: Runtime) -> None:
    names = {mode: [s["name"] for s in runtime.schemas(mode)] for mode in Mode}
    assert names == {
        Mode.NATIVE: ["add", "forecast"],
        Mode.CODE: ["run_code"],
        Mode.BOTH: ["add", "forecast", "run_code"],
    }
    for schema in runtime.schemas(Mode.BOTH):
        assert set(schema) == {"name", "description", "parameters"}


def test_the_mode_switches_per_request_without_registering_again(runtime: Runtime) -> None:
    native = runtime.execute_sync(ToolCall("1", "add", {"a": 2, "b": 3}), mode="native")
    assert native.value == 5
    refused = runtime.execute_sync(ToolCall("2", "add", {"a": 2}), mode="code")
    assert refused.is_error
    assert refused.error.code == "UNKNOWN_TOOL"
    coded = runtime.execute_sync(ToolCall("3", "run_code", {"code": "add(2, 3)"}), mode="code")
    assert coded.value["result"] == 5  # type: ignore[index]
    refused_code = runtime.execute_sync(ToolCall("4", "run_code", {"code": "1"}), mode="native")
    assert refused_code.is_error


def test_stubs_are_python_with_types_returns_and_docstrings(runtime: Runtime) -> None:
    (schema,) = runtime.schemas(Mode.CODE)
    description = str(schema["description"])
    stubs = description[description.index("def add") :]
    tree = ast.parse("from typing import Any, Literal, NotRequired, TypedDict\n" + stubs)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(functions) == {"add", "forecast"}
    assert ast.unparse(functions["forecast"].returns) == "dict[str, list[float]]"  # type: ignore[arg-type]
    assert ast.get_docstring(functions["forecast"]) == (
        "Weather forecast for a city.\n\nArgs:\n    city: City name.\n    days: How many days ahead."
    )
    assert "Importable modules:" in description
    assert "Limits:" in description
    assert runtime.schemas(Mode.CODE) == runtime.schemas(Mode.CODE)


def test_static_checks_advise_on_unknown_tools_and_keywords_in_the_error(runtime: Runtime) -> None:
    result = runtime.execute_sync(
        ToolCall(
            "1",
            "run_code",
            {"code": "side_effect = add(1, 1)\nforecst('Oslo')\nforecast(town='Oslo')"},
        ),
        mode="code",
    )
    assert result.is_error
    assert result.error.code == "UNKNOWN_TOOL"
    assert "Did you mean: forecast" in result.text
    assert "no parameter 'town'" in result.text
    assert "add (ok)" in result.text  # it ran up to the unknown name, as CPython would
    later = runtime.execute_sync(ToolCall("2", "run_code", {"code": "side_effect"}), mode="code")
    assert later.value["result"] == 2  # type: ignore[union-attr]


def test_names_from_earlier_runs_pass_the_static_check(runtime: Runtime) -> None:
    runtime.execute_sync(
        ToolCall("1", "run_code", {"code": "def helper(x):\n    return add(x, 1)"}), mode="code"
    )
    result = runtime.execute_sync(ToolCall("2", "run_code", {"code": "helper(41)"}), mode="code")
    assert result.value["result"] == 42  # type: ignore[index]


def test_large_catalogs_switch_to_lazy_discovery_with_a_bounded_stable_prefix() -> None:
    registry = ToolRegistry()
    for made in many_tools(100):
        registry.register(made)  # type: ignore[arg-type]
    runtime = Runtime(registry, executor=InProcessExecutor(), lazy_threshold=40)
    try:
        (before,) = runtime.schemas(Mode.CODE)
        for made in many_tools(1000)[100:]:
            registry.register(made)  # type: ignore[arg-type]
        (after,) = runtime.schemas(Mode.CODE)
        text_before, text_after = str(before["description"]), str(after["description"])
        assert len(text_after) < 3_500
        assert text_after.startswith(text_before.removesuffix(", ...")[:-200])
        assert "search_tools(query)" in text_after
        both = [s["name"] for s in runtime.schemas(Mode.BOTH)]
        assert both[-3:] == ["run_code", "search_tools", "describe"]
        script = "found = search_tools('record 512')\nsig = describe(found[0]['name'])\n(found[0]['name'], sig['signature'][:30])"
        result = runtime.execute_sync(ToolCall("1", "run_code", {"code": script}), mode="code")
        assert result.value["result"][0] == "catalog_lookup_512"  # type: ignore[index]
        assert result.value["result"][1].startswith("def catalog_lookup_512(")  # type: ignore[index]
        native = runtime.execute_sync(
            ToolCall("2", "describe", {"name": "catalog_lookup_3"}), mode="both"
        )
        assert json.loads(native.text)["name"] == "catalog_lookup_3"
    finally:
        runtime.close()


def test_the_runtime_states_the_limits_its_executor_enforces() -> None:
    registry = ToolRegistry()
    one_second = Limits(wall_seconds=1)
    with pytest.raises(UsageError, match="same Limits"):  # told 1 s, run under 10 s: refused
        Runtime(registry, limits=one_second, executor=InProcessExecutor())
    adopted = Runtime(registry, mode="code", executor=InProcessExecutor(limits=one_second))
    assert adopted.limits == one_second
    assert "Limits: 1 s of script time" in str(adopted.schemas()[0]["description"])
    agreed = Runtime(registry, limits=one_second, executor=InProcessExecutor(limits=one_second))
    assert agreed.limits == one_second
    started = Runtime(registry, limits=one_second)  # the default executor gets them
    assert started.executor.limits == one_second  # type: ignore[attr-defined]


def test_a_limits_mismatch_names_only_the_fields_that_differ() -> None:
    from codeact import InProcessExecutor, Limits, ToolRegistry, UsageError

    executor = InProcessExecutor(limits=Limits(wall_seconds=5.0, max_tool_calls=10))
    with pytest.raises(UsageError) as raised:
        Runtime(
            ToolRegistry(), executor=executor, limits=Limits(wall_seconds=7.0, max_tool_calls=10)
        )
    message = str(raised.value)
    assert "wall_seconds (5.0 in the executor, 7.0 in the runtime)" in message
    assert "max_tool_calls" not in message
    assert "memory_bytes" not in message


def test_switching_to_lazy_discovery_is_logged_with_the_count_and_the_threshold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from codeact import InProcessExecutor, Runtime

    registry = ToolRegistry()
    runtime = Runtime(registry, executor=InProcessExecutor(), lazy_threshold=3)

    def step() -> int:
        return 1

    for number in range(4):
        registry.register(tool(name=f"step_{number}")(step))
    with caplog.at_level("INFO", logger="codeact"):
        names = runtime.advertised("both")
    assert "search_tools" in names
    assert any(
        "lazy discovery: 4 tools are past lazy_threshold=3" in record.getMessage()
        and "search_tools and describe" in record.getMessage()
        for record in caplog.records
    )


# A user's first hour --------------------------------------------------------------------


def test_a_tool_is_still_the_function_it_was_written_as() -> None:
    assert add(2, b=3) == 5
    assert forecast("Oslo", days=1) == {"highs": [20.0]}


def test_a_runtime_takes_a_list_of_tools_or_functions_and_refuses_a_bare_one() -> None:
    def double(n: int) -> int:
        """Twice ``n``."""
        return 2 * n

    with Runtime([add, double], mode="code", executor=InProcessExecutor()) as made:
        result = made.execute_sync(ToolCall("c1", "run_code", {"code": "double(add(1, 2))"}))
    assert not result.is_error, result.text
    assert result.value["result"] == 6  # type: ignore[index]
    with pytest.raises(UsageError, match=r"Runtime\(\[price\]\) rather than Runtime\(price\)"):
        Runtime(add)  # type: ignore[arg-type]


def test_a_mode_is_read_whatever_its_case_and_a_wrong_one_names_the_choices() -> None:
    assert Mode("Code") is Mode.CODE
    assert Mode(" NATIVE ") is Mode.NATIVE
    with pytest.raises(ValueError, match="'fast' is not a mode: choose 'native', 'code', 'both'"):
        Mode("fast")


def test_execute_many_sync_runs_in_the_session_it_is_given(runtime: Runtime) -> None:
    first = [ToolCall("c1", "run_code", {"code": "kept = 41"})]
    runtime.execute_many_sync(first, mode="code", session="mine")
    again = [ToolCall("c2", "run_code", {"code": "kept + 1"})]
    (mine,) = runtime.execute_many_sync(again, mode="code", session="mine")
    (other,) = runtime.execute_many_sync(again, mode="code", session="other")
    assert mine.value["result"] == 42  # type: ignore[index]
    assert other.is_error  # another session has no such name


@pytest.mark.parametrize("kind", ["inprocess", "process"])
@pytest.mark.parametrize("leave", ["with", "close", "async with", "aclose"])
def test_a_closed_runtime_refuses_every_call_saying_so(kind: str, leave: str) -> None:
    import anyio

    from codeact.executors._process import ProcessExecutor

    executor = InProcessExecutor() if kind == "inprocess" else ProcessExecutor(warm=0)
    made = Runtime([add], mode="code", executor=executor)
    call = ToolCall("c1", "run_code", {"code": "add(1, 2)"})
    if leave == "with":
        with made:
            assert made.execute_sync(call).value["result"] == 3  # type: ignore[index]
    elif leave == "close":
        assert made.execute_sync(call).value["result"] == 3  # type: ignore[index]
        made.close()
    else:

        async def use() -> None:
            if leave == "async with":
                async with made:
                    assert (await made.execute(call)).value["result"] == 3  # type: ignore[index]
            else:
                assert (await made.execute(call)).value["result"] == 3  # type: ignore[index]
                await made.aclose()

        anyio.run(use)
    with pytest.raises(UsageError, match="this Runtime is closed"):
        made.execute_sync(call)
    with pytest.raises(UsageError, match="this Runtime is closed"):
        made.execute_many_sync([call])
