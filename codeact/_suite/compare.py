"""Run the task suite in each style and compare round trips, calls, tokens, time and success."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio

from .._cli_parser import Parser, positive
from .._compare import (
    STYLES,
    ComparisonTask,
    RunRecord,
    compare,
    default_tokenizer,
)
from .._http_models import OpenAIChatModel
from .._models import Model
from .._registry import ToolRegistry
from .behaviour import plan_model
from .faults import fault_table, run_faults
from .m3tooleval import Task, domain_tools, load_tasks
from .plans import PLANS
from .real import Cassette, CassetteModel, paired, probe

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


def main(argv: Sequence[str] | None = None) -> int:
    """``codeact compare``: offline by default; ``--model`` runs against a real endpoint."""
    parser = Parser(prog="codeact compare")
    parser.add_argument(
        "--model", default=os.environ.get("CODEACT_MODEL"), help="run against this model"
    )
    parser.add_argument(
        "--base-url", default=None, help="OpenAI-compatible base URL (or OPENAI_BASE_URL)"
    )
    parser.add_argument("--api-key", default=None, help="API key (or OPENAI_API_KEY)")
    parser.add_argument("--repeats", type=positive(int), default=1)
    parser.add_argument("--tasks", type=positive(int), default=None, help="only the first N tasks")
    parser.add_argument(
        "--styles", type=_styles, default=list(STYLES), help=f"of {', '.join(STYLES)}"
    )
    parser.add_argument(
        "--cassette", default=None, help="record to (or, with --replay, replay from) this file"
    )
    parser.add_argument(
        "--replay", action="store_true", help="replay the cassette offline, no endpoint"
    )
    options = parser.parse_args(argv)
    if options.replay and not options.cassette:
        parser.error("--replay needs --cassette FILE")
    if options.replay and not Path(options.cassette).is_file():
        parser.error(f"--cassette {options.cassette}: no such file to replay")
    tasks = planned_tasks()[: options.tasks]
    styles = options.styles
    model = _real_model(options)
    if model is None:
        print(
            f"Offline comparison on {len(tasks)} M3ToolEval tasks: the model's behaviour is "
            "generated from each task's plan, so this measures the runtime's mechanics, "
            "not a model's ability."
        )
    else:
        problem = None if options.replay else anyio.run(probe, model)
        if problem is not None:
            print(f"codeact compare: {problem}", file=sys.stderr)
            return 2
        print(
            f"Comparison on {len(tasks)} tasks with {model.name}, "
            f"{options.repeats} run(s) each, temperature 0."
        )
    name, results = anyio.run(
        lambda: run_suite(tasks, styles, model=model, repeats=options.repeats)
    )
    print(
        f"tokens: {name}; totals over all tasks, peak and time per task (median for time, tools ad)"
    )
    print(table(results))
    if model is not None and len(styles) > 1:
        print(f"\nPaired differences per task ({styles[0]} minus others):")
        for other in styles[1:]:
            for field in ("round_trips", "prompt_tokens", "success"):
                p = paired(results, styles[0], other, field)
                print(
                    f"  {styles[0]} - {other:<16} {field:<14} mean {p['mean']:+.2f} "
                    f"(se {p['stderr']:.2f}, "
                    f"{p['right_lower']}/{p['tasks']} tasks lower in {other})"
                )
    else:
        print("\nFault injection (one bad action, then the model gives up):")
        print(fault_table(anyio.run(run_faults)))
    return 0


def _styles(text: str) -> list[str]:
    """``--styles a,b``: each one of STYLES."""
    styles = [style for style in text.split(",") if style]
    unknown = [style for style in styles if style not in STYLES]
    if unknown or not styles:
        raise argparse.ArgumentTypeError(
            f"unknown style {', '.join(unknown) or '(none)'}: choose from {', '.join(STYLES)}"
        )
    return styles


def _real_model(options: argparse.Namespace) -> Model | None:
    if not options.model and not options.replay:
        return None
    name = options.model or "replay"
    cassette = Cassette(options.cassette) if options.cassette else None
    if options.replay:
        assert cassette is not None  # main refused --replay without one
        return CassetteModel(cassette, None, name=name)
    endpoint = OpenAIChatModel(
        model=name, base_url=options.base_url, api_key=options.api_key, temperature=0
    )
    return CassetteModel(cassette, endpoint, name=name) if cassette else endpoint


__all__ = [
    "Metrics",
    "main",
    "planned_model",
    "planned_tasks",
    "run_suite",
    "suite_tasks",
    "suite_tools",
    "table",
]
