"""Run the task suite in each style and compare round trips, calls, tokens, time and success."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from .._code_mode import RUN_CODE
from .._events import DispatchEvent, ToolCallFinished
from .._executors import InProcessExecutor
from .._http_models import OpenAIChatModel
from .._loop import Agent, StepLimit
from .._models import Model, ModelError, ModelReply, ModelRequest
from .._modes import Runtime
from .._progress import Progress
from .._registry import ToolRegistry
from .._session import ModelExchange, ToolCallRecorded, ToolResultRecorded
from .behaviour import MODE_OF_STYLE, STYLES, plan_model
from .faults import fault_table, run_faults
from .m3tooleval import Task, check, domain_tools, load_tasks
from .plans import PLANS
from .real import Cassette, CassetteModel, paired, probe


@dataclass(frozen=True, kw_only=True, slots=True)
class Metrics:
    task: str
    style: str
    success: bool
    round_trips: int
    tool_calls: int
    errors: int
    prompt_tokens: int
    peak_prompt_tokens: int
    completion_tokens: int
    advertisement_tokens: int
    tool_output_tokens: int
    seconds: float
    model_seconds: float
    tool_seconds: float

    @property
    def runtime_seconds(self) -> float:
        """Time that was neither the model's nor the tools': the runtime's own."""
        return max(self.seconds - self.model_seconds - self.tool_seconds, 0.0)


class Recorder:
    """Wraps a model to keep every request and the time spent waiting for it."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.requests: list[ModelRequest] = []
        self.seconds = 0.0

    async def respond(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        started = time.perf_counter()
        try:
            return await self.model.respond(request)
        finally:
            self.seconds += time.perf_counter() - started


def tokenizer() -> tuple[str, Callable[[str], int]]:
    """A real BPE tokenizer when bpe-openai is installed; otherwise characters / 4."""
    try:
        import bpe_openai  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return "approximate (characters / 4)", lambda text: (len(text) + 3) // 4
    encoding = bpe_openai.get_encoding("o200k_base")
    return "o200k_base", lambda text: len(encoding.encode(text))


def planned_tasks() -> list[Task]:
    return [t for t in load_tasks() if t.name in PLANS]


async def run_task(
    task: Task, style: str, count: Callable[[str], int], *, model: Model | None = None
) -> Metrics:
    """One task in one style; ``model`` defaults to the behaviour generated from its plan."""
    registry = ToolRegistry()
    for made in domain_tools(task.domain):
        registry.register(made)
    runtime = Runtime(registry, mode=MODE_OF_STYLE[style], executor=InProcessExecutor())
    tools = {t.name: t for t in registry.tools()}
    recorder = Recorder(model or plan_model(PLANS[task.name], style, tools))
    tool_seconds = 0.0

    def on_dispatch(event: DispatchEvent) -> None:
        nonlocal tool_seconds
        if isinstance(event, ToolCallFinished) and event.parent is None:
            tool_seconds += event.seconds

    registry.add_listener(on_dispatch)
    agent = Agent(runtime, recorder, max_steps=60)
    started = time.perf_counter()
    try:
        text = await agent.run(task.instruction)
    except (StepLimit, ModelError) as error:
        text = f"(no answer: {error})"
    seconds = time.perf_counter() - started
    await runtime.aclose()
    events = agent.session.events
    prompts = [
        count(json.dumps([r.system, list(r.messages), list(r.tools)])) for r in recorder.requests
    ]
    history = agent.session.history()
    return Metrics(
        task=task.name,
        style=style,
        success=check(task.expected, _answer(text)),
        round_trips=sum(isinstance(e, ModelExchange) for e in events),
        tool_calls=sum(isinstance(e, ToolCallRecorded) and e.name != RUN_CODE for e in events),
        errors=sum(isinstance(e, ToolResultRecorded) and e.is_error for e in events),
        prompt_tokens=sum(prompts),
        peak_prompt_tokens=max(prompts, default=0),
        completion_tokens=sum(count(json.dumps(m)) for m in history if m["role"] == "assistant"),
        advertisement_tokens=count(json.dumps(list(recorder.requests[0].tools)))
        if recorder.requests
        else 0,
        tool_output_tokens=sum(count(m["content"]) for m in history if m["role"] == "tool"),
        seconds=seconds,
        model_seconds=recorder.seconds,
        tool_seconds=tool_seconds,
    )


def _answer(text: str) -> Any:
    """The final answer as a value: JSON if it parses, else the text after any 'Answer:'."""
    candidate = text.split("Answer:")[-1].strip()
    try:
        return json.loads(candidate)
    except ValueError:
        return candidate.strip("'\"")


async def run_suite(
    tasks: Iterable[Task],
    styles: Iterable[str] = STYLES,
    *,
    model: Model | None = None,
    repeats: int = 1,
) -> tuple[str, list[Metrics]]:
    name, count = tokenizer()
    results = []
    chosen = list(tasks)
    styles = list(styles)
    progress = Progress(len(chosen), styles)  # on a terminal only
    try:
        for task in chosen:
            for style in styles:
                for _ in range(repeats):
                    result = await run_task(task, style, count, model=model)
                    results.append(result)
                    progress.record(style, result.success)
            progress.task_done()
    finally:
        progress.close()
    return name, results


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
            f"{sum(r.success for r in rows)}/{len(rows)}",
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
    parser = argparse.ArgumentParser(prog="codeact compare")
    parser.add_argument(
        "--model", default=os.environ.get("CODEACT_MODEL"), help="run against this model"
    )
    parser.add_argument(
        "--base-url", default=None, help="OpenAI-compatible base URL (or OPENAI_BASE_URL)"
    )
    parser.add_argument("--api-key", default=None, help="API key (or OPENAI_API_KEY)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--styles", default=",".join(STYLES))
    parser.add_argument(
        "--cassette", default=None, help="record to (or, with --replay, replay from) this file"
    )
    parser.add_argument(
        "--replay", action="store_true", help="replay the cassette offline, no endpoint"
    )
    options = parser.parse_args(argv)
    tasks = planned_tasks()[: options.tasks or None]
    styles = [s for s in options.styles.split(",") if s]
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


def _real_model(options: argparse.Namespace) -> Model | None:
    if not options.model and not options.replay:
        return None
    name = options.model or "replay"
    cassette = Cassette(options.cassette) if options.cassette else None
    if options.replay:
        if cassette is None:
            raise SystemExit("codeact compare: --replay needs --cassette")
        return CassetteModel(cassette, None, name=name)
    endpoint = OpenAIChatModel(
        model=name, base_url=options.base_url, api_key=options.api_key, temperature=0
    )
    return CassetteModel(cassette, endpoint, name=name) if cassette else endpoint


__all__ = ["Metrics", "main", "planned_tasks", "run_suite", "run_task", "table"]
