"""The public comparison API: your own tools, tasks and model, every run recorded, failures
kept, summaries with bootstrap intervals, and a cassette recorded from an OpenAI-compatible
server on 127.0.0.1 that replays offline and refuses a changed prompt or schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact import (
    Cassette,
    CassetteModel,
    Comparison,
    ComparisonTask,
    ModelReply,
    OpenAIChatModel,
    ScriptedModel,
    ToolCall,
    ToolRegistry,
    compare,
    tool,
)
from codeact.comparison._compare import bootstrap, same_answer
from tests.hosts import REPO

NOTEBOOKS = REPO / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))
from shop import TASKS, shop_tools  # noqa: E402  (the notebook's example, as a user wrote it)
from standin import StandIn, serving  # noqa: E402


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


def registry() -> ToolRegistry:
    made = ToolRegistry()
    made.register(add)
    return made


ADD_TASKS = [
    ComparisonTask(name="two", prompt="1 + 1?", expected=2),
    ComparisonTask(name="ten", prompt="4 + 6?", check=lambda answer: "10" in answer, tags=("x",)),
]


def scripted(task: ComparisonTask, style: str) -> ScriptedModel:
    """Native: one call then the answer; code: one script then the answer."""
    a, b = (1, 1) if task.name == "two" else (4, 6)
    if style == "code":
        call = ToolCall("r", "run_code", {"code": f"add(a={a}, b={b})"})
    else:
        call = ToolCall("c", "add", {"a": a, "b": b})
    return ScriptedModel([ModelReply(tool_calls=(call,)), ModelReply(text=f"Answer: {a + b}")])


def test_every_task_runs_in_every_style_and_repeat_with_its_figures() -> None:
    comparison = anyio.run(
        lambda: compare(
            ADD_TASKS, tools=registry(), model=scripted, styles=("native", "code"), repeats=2
        )
    )
    assert [(r.task, r.style, r.repeat) for r in comparison.records] == [
        (task, style, repeat)
        for task in ("two", "ten")
        for style in ("native", "code")
        for repeat in (0, 1)
    ]
    assert all(r.success for r in comparison.records)
    assert {r.round_trips for r in comparison.records} == {2}
    assert {r.tool_calls for r in comparison.records} == {1}  # run_code itself not counted
    assert all(r.tokenizer and r.prompt_tokens > 0 for r in comparison.records)
    assert comparison.records[-1].tags == ("x",)
    summary = comparison.summary()
    assert summary["code"]["success"].mean == 1.0
    assert summary["native"]["round_trips"].n == 4


def test_a_failing_run_is_recorded_and_the_others_still_run() -> None:
    def model(task: ComparisonTask, style: str) -> ScriptedModel:
        if task.name == "two" and style == "code":
            return ScriptedModel([])  # raises on the first request
        if task.name == "ten" and style == "native":
            return ScriptedModel(
                [ModelReply(tool_calls=(ToolCall("c", "add", {"a": "x"}),)), ModelReply(text="no")]
            )
        return scripted(task, style)

    comparison = anyio.run(
        lambda: compare(ADD_TASKS, tools=registry(), model=model, progress=False)
    )
    by_run = {(r.task, r.style): r for r in comparison.records}
    assert len(by_run) == 4
    broken = by_run["two", "code"]
    assert broken.success is False
    assert broken.failure is not None
    assert "ScriptMismatch" in broken.failure
    wrong = by_run["ten", "native"]
    assert wrong.success is False
    assert wrong.failure is None
    assert wrong.errors_by_code == {"INVALID_ARGUMENTS": 1}
    assert by_run["two", "native"].success
    assert by_run["ten", "code"].success


def test_paired_differences_come_from_the_same_tasks() -> None:
    comparison = anyio.run(shipped_replay)
    difference = comparison.paired("native", "code", "round_trips")
    per_native, per_code = (
        comparison.per_task("native", "round_trips"),
        comparison.per_task("code", "round_trips"),
    )
    assert difference.mean == pytest.approx(
        sum(per_native[t] - per_code[t] for t in per_native) / 5
    )
    assert difference.low > 0  # code needs fewer round trips on every search task
    assert comparison.differences("round_trips") == {"native - code": difference}


def test_records_are_json_and_a_dataframe() -> None:
    comparison = anyio.run(
        lambda: compare(ADD_TASKS, tools=registry(), model=scripted, progress=False)
    )
    data = json.loads(comparison.to_json())
    assert [r["task"] for r in data["records"]] == [r.task for r in comparison.records]
    assert data["records"][0]["runtime_seconds"] >= 0
    frame = comparison.to_dataframe()
    assert list(frame["style"]) == [r.style for r in comparison.records]
    assert frame["success"].all()


@settings(deadline=None)  # a busy machine's timing is not the property
@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=40), st.integers(0, 5)
)
def test_bootstrap_intervals_hold_their_mean_and_repeat_for_a_seed(
    values: list[float], seed: int
) -> None:
    interval = bootstrap(values, seed=seed)
    assert interval.n == len(values)
    assert interval.low <= interval.mean + 1e-6 * max(1.0, abs(interval.mean))
    assert interval.mean <= interval.high + 1e-6 * max(1.0, abs(interval.mean))
    assert min(values) - 1e-6 <= interval.low
    assert interval.high <= max(values) + 1e-6
    assert bootstrap(values, seed=seed) == interval


def test_answers_compare_as_values() -> None:
    assert same_answer(30.0, "The value is: Answer: 30")
    assert same_answer(["PO-1"], 'Answer: ["PO-1"]')
    assert same_answer("A1", "Answer: 'A1'")
    assert not same_answer(True, "Answer: 1")
    assert not same_answer(15, "Answer: 16")


# A cassette recorded from an OpenAI-compatible server on 127.0.0.1 ----------------------


async def shipped_replay() -> Comparison:
    """The shop's tasks replayed from the cassette that ships with the notebooks."""
    return await compare(
        TASKS, tools=shop_tools, model=standin_replay(), styles=("native", "code"), progress=False
    )


def standin_replay() -> CassetteModel:
    return CassetteModel(
        Cassette(NOTEBOOKS / "data" / "shop.cassette.jsonl"), None, name="stand-in"
    )


def test_a_cassette_recorded_from_a_server_replays_offline_with_the_same_figures(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shop.cassette.jsonl"
    StandIn.requests = []

    async def record(base_url: str) -> Comparison:
        async with OpenAIChatModel(model="stand-in", base_url=base_url, api_key="none") as endpoint:
            model = CassetteModel(Cassette(path), endpoint, name="stand-in")
            return await compare(
                TASKS, tools=shop_tools, model=model, styles=("native", "code"), progress=False
            )

    with serving() as url:
        recorded = anyio.run(record, url)
    assert StandIn.requests  # the server answered every request
    assert all(r.success for r in recorded.records)
    replay = CassetteModel(Cassette(path), None, name="stand-in")
    replayed = anyio.run(
        lambda: compare(
            TASKS, tools=shop_tools, model=replay, styles=("native", "code"), progress=False
        )
    )
    figures = ("task", "style", "success", "round_trips", "tool_calls", "prompt_tokens", "answer")
    assert [[getattr(r, f) for f in figures] for r in replayed.records] == [
        [getattr(r, f) for f in figures] for r in recorded.records
    ]
    # the cassette shipped with the notebooks replays just as well
    shipped = anyio.run(shipped_replay)
    assert [r.answer for r in shipped.records] == [r.answer for r in recorded.records]


def test_replay_refuses_a_changed_prompt_or_schema_as_a_failed_run() -> None:
    changed_prompt = [
        ComparisonTask(name="stock-a1", prompt="How many units of A1 are there?", expected=12)
    ]

    @tool
    def stock(sku: str, warehouse: str = "main") -> int:
        """Units of a product in stock."""
        return 12

    def changed_tools(task: ComparisonTask) -> ToolRegistry:
        other = ToolRegistry()
        for made in shop_tools(task).tools():
            if made.name != "stock":
                other.register(made)
        other.register(stock)  # one more parameter: the advertisement changed
        return other

    async def replay(tasks: list[ComparisonTask], tools: Any) -> Comparison:
        return await compare(
            tasks, tools=tools, model=standin_replay(), styles=("native",), progress=False
        )

    for tasks, tools in ((changed_prompt, shop_tools), (TASKS[:1], changed_tools)):
        (record,) = anyio.run(replay, tasks, tools).records
        assert record.success is False
        assert record.failure is not None
        assert "never recorded" in record.failure
