"""The built-in suite: M3ToolEval's tasks, their tools and planned models, run in each style
and tabled (round trips, calls, tokens, time, success)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from ..contract._registry import ToolRegistry
from ..providers._models import Model
from ._behaviour import plan_model
from ._compare import (
    STYLES,
    ComparisonTask,
    RunRecord,
    compare,
    default_tokenizer,
)
from ._m3tooleval import Task, domain_tools, load_tasks
from ._plans import PLANS

Metrics = RunRecord  # the suite's name for one run's figures


def as_comparison_task(task: Task) -> ComparisonTask:
    """An M3ToolEval task as the comparison API takes it: its domain as a tag."""
    return ComparisonTask(
        name=task.name, prompt=task.instruction, expected=task.expected, tags=(task.domain,)
    )


def planned_tasks() -> list[Task]:
    return [t for t in load_tasks() if t.name in PLANS]


def suite_tasks() -> list[ComparisonTask]:
    """The built-in tasks that have a plan, for :func:`codeact.compare`."""
    return [as_comparison_task(t) for t in planned_tasks()]


def suite_tools(task: ComparisonTask) -> ToolRegistry:
    """A fresh registry of the tools of the task's domain."""
    registry = ToolRegistry()
    for made in domain_tools(task.tags[0]):
        registry.register(made)
    return registry


def planned_model(task: ComparisonTask, style: str) -> Model:
    """The model generated from the task's plan, for one run in ``style``: offline, it
    measures the runtime's mechanics, not a model's ability."""
    tools = {t.name: t for t in suite_tools(task).tools()}
    return plan_model(PLANS[task.name], style, tools)


async def run_suite(
    tasks: Iterable[Task],
    styles: Iterable[str] = STYLES,
    *,
    model: Model | None = None,
    repeats: int = 1,
) -> tuple[str, list[Metrics]]:
    """The built-in suite; with no ``model``, each run's model comes from its plan."""
    name, _ = default_tokenizer()
    chosen = compare(
        [as_comparison_task(t) for t in tasks],
        tools=suite_tools,
        model=model if model is not None else planned_model,
        styles=tuple(styles),
        repeats=repeats,
        max_steps=60,
    )
    return name, list((await chosen).records)


def table(results: list[Metrics]) -> str:
    """Per style: success, errors, and totals of the costs; times are medians per task."""
    columns = (
        ("success", 8), ("round trips", 11), ("tool calls", 10), ("errors", 6), ("prompt tok", 10),
        ("peak prompt", 11), ("completion", 10), ("tools ad", 8), ("tool output", 11),
        ("ms model/tool/runtime", 21),
    )  # fmt: skip
    header = f"{'style':<16}" + "".join(f" {name:>{width}}" for name, width in columns)
    lines = [header, "-" * len(header)]
    for style in dict.fromkeys(r.style for r in results):
        rows = [r for r in results if r.style == style]

        def median_ms(values: Iterable[float]) -> str:
            return f"{1000 * statistics.median(values):.1f}"

        split = "/".join(
            median_ms(getattr(r, field) for r in rows)
            for field in ("model_seconds", "tool_seconds", "runtime_seconds")
        )
        cells = (
            f"{sum(bool(r.success) for r in rows)}/{len(rows)}",
            f"{sum(r.round_trips for r in rows)}",
            f"{sum(r.tool_calls for r in rows)}",
            f"{sum(r.errors for r in rows)}",
            f"{sum(r.prompt_tokens for r in rows):,}",
            f"{max(r.peak_prompt_tokens for r in rows):,}",
            f"{sum(r.completion_tokens for r in rows):,}",
            f"{statistics.median(r.advertisement_tokens for r in rows):,.0f}",
            f"{sum(r.tool_output_tokens for r in rows):,}",
            split,
        )
        lines.append(
            f"{style:<16}" + "".join(f" {c:>{w}}" for c, (_, w) in zip(cells, columns, strict=True))
        )
    return "\n".join(lines)


__all__ = [
    "Metrics",
    "planned_model",
    "planned_tasks",
    "run_suite",
    "suite_tasks",
    "suite_tools",
    "table",
]
