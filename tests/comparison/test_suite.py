"""The offline comparison: every planned task succeeds in every style, and a broken runtime fails."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from codeact.comparison._behaviour import STYLES, script
from codeact.comparison._m3tooleval import EXCLUDED, check, load_tasks
from codeact.comparison._plans import PLANS
from codeact.comparison._suite import planned_tasks, run_suite, table
from codeact.sandbox import _interpreter


def test_the_data_loads_with_its_exclusions() -> None:
    tasks = load_tasks()
    assert len(tasks) == 81
    assert not EXCLUDED & {t.name for t in tasks}
    assert set(PLANS) == {t.name for t in tasks}  # every task has a plan


def test_every_planned_task_succeeds_offline_in_every_style() -> None:
    _, results = anyio.run(run_suite, planned_tasks())
    assert len(results) == len(planned_tasks()) * len(STYLES)
    failures = [(r.task, r.style) for r in results if not r.success]
    assert failures == []
    by_style = {style: [r for r in results if r.style == style] for style in STYLES}
    assert sum(r.round_trips for r in by_style["code"]) < sum(
        r.round_trips for r in by_style["native"]
    )
    assert {sum(r.tool_calls for r in rows) for rows in by_style.values()} == {
        sum(r.tool_calls for r in by_style["native"])
    }
    assert "native-parallel" in table(results)


def test_plans_never_carry_the_expected_answer() -> None:
    for task in planned_tasks():
        expected = task.expected
        if isinstance(expected, str) and len(expected) > 3 and expected not in task.instruction:
            assert expected not in script(PLANS[task.name]), task.name


def test_a_runtime_that_drops_an_argument_fails_the_comparison(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = _interpreter._bind

    def drop_last(
        name: str, parameters: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        bound = original(name, parameters, args, kwargs)
        if len(bound) > 1:
            bound.pop(sorted(bound)[-1])
        return bound

    monkeypatch.setattr(_interpreter, "_bind", drop_last)
    _, results = anyio.run(lambda: run_suite(planned_tasks(), ("code",)))
    assert sum(r.success for r in results) < len(results)


def test_check_compares_values_not_text() -> None:
    assert check(161.25, 161.25000000001)
    assert check(("A", 3), ["A", 3])
    assert not check(3, "3")
    assert check({"T": 1, "A": 2}, {"A": 2, "T": 1})


def test_every_injected_fault_is_handled_with_its_code() -> None:
    from codeact.comparison._faults import FAULTS, run_faults

    results = anyio.run(run_faults)
    assert len(results) == sum(2 if f.native else 1 for f in FAULTS)
    assert [r for r in results if not r.handled] == []
    assert {r.code for r in results} >= {
        "INVALID_ARGUMENTS",
        "UNKNOWN_TOOL",
        "CODE_RESOURCE_LIMIT",
        "CODE_SECURITY_VIOLATION",
    }
