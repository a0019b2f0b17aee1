"""Run the task suite in each style and compare round trips, calls, tokens, time and success."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio

from .._executors import InProcessExecutor
from .._loop import Agent
from .._models import ModelRequest
from .._modes import Runtime
from .._registry import ToolRegistry
from .._session import ModelExchange, ToolCallRecorded
from .behaviour import MODE_OF_STYLE, STYLES, plan_model
from .m3tooleval import Task, check, domain_tools, load_tasks
from .plans import PLANS


@dataclass(frozen=True, kw_only=True, slots=True)
class Metrics:
    task: str
    style: str
    success: bool
    round_trips: int
    tool_calls: int
    prompt_tokens: int
    peak_prompt_tokens: int
    completion_tokens: int
    advertisement_tokens: int
    seconds: float


def tokenizer() -> tuple[str, Callable[[str], int]]:
    """A real BPE tokenizer when bpe-openai is installed; otherwise characters / 4."""
    try:
        import bpe_openai  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return "approximate (characters / 4)", lambda text: (len(text) + 3) // 4
    encoding = bpe_openai.get_encoding("o200k_base")
    return "o200k_base", lambda text: len(encoding.encode(text))


def planned_tasks() -> list[Task]:
    return [t for t in load_tasks() if t.name in PLANS]


async def run_task(task: Task, style: str, count: Callable[[str], int]) -> Metrics:
    registry = ToolRegistry()
    for made in domain_tools(task.domain):
        registry.register(made)
    runtime = Runtime(registry, mode=MODE_OF_STYLE[style], executor=InProcessExecutor())
    model = plan_model(PLANS[task.name], style, {t.name: t for t in registry.tools()})
    requests: list[ModelRequest] = []
    respond = model.function

    def recording(request: ModelRequest):  # type: ignore[no-untyped-def]
        requests.append(request)
        return respond(request)

    model.function = recording
    agent = Agent(runtime, model, max_steps=60)
    started = time.perf_counter()
    text = await agent.run(task.instruction)
    seconds = time.perf_counter() - started
    await runtime.aclose()
    prompts = [count(json.dumps([r.system, list(r.messages), list(r.tools)])) for r in requests]
    replies = [json.dumps(m) for m in agent.session.history() if m["role"] == "assistant"]
    try:
        answer = json.loads(text)
    except ValueError:
        answer = text
    return Metrics(
        task=task.name,
        style=style,
        success=check(task.expected, answer),
        round_trips=sum(isinstance(e, ModelExchange) for e in agent.session.events),
        tool_calls=sum(
            isinstance(e, ToolCallRecorded) and e.name != "run_code" for e in agent.session.events
        ),
        prompt_tokens=sum(prompts),
        peak_prompt_tokens=max(prompts, default=0),
        completion_tokens=sum(count(r) for r in replies),
        advertisement_tokens=count(json.dumps(list(requests[0].tools))) if requests else 0,
        seconds=seconds,
    )


async def run_suite(
    tasks: Iterable[Task], styles: Iterable[str] = STYLES
) -> tuple[str, list[Metrics]]:
    name, count = tokenizer()
    results = []
    chosen = list(tasks)
    for number, task in enumerate(chosen, 1):
        for style in styles:
            results.append(await run_task(task, style, count))
        if sys.stderr.isatty():
            print(f"\r  {number}/{len(chosen)} tasks", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return name, results


def table(results: list[Metrics]) -> str:
    """Per style: success, and medians and totals of the costs."""
    header = (
        f"{'style':<16} {'success':>8} {'round trips':>12} {'tool calls':>11} "
        f"{'prompt tokens':>14} {'peak prompt':>12} {'completion':>11} "
        f"{'tools ad':>9} {'time ms':>8}"
    )
    lines = [header, "-" * len(header)]
    for style in dict.fromkeys(r.style for r in results):
        rows = [r for r in results if r.style == style]
        ok = sum(r.success for r in rows)
        lines.append(
            f"{style:<16} {ok:>4}/{len(rows):<3} {sum(r.round_trips for r in rows):>12} "
            f"{sum(r.tool_calls for r in rows):>11} {sum(r.prompt_tokens for r in rows):>14,} "
            f"{max(r.peak_prompt_tokens for r in rows):>12,} "
            f"{sum(r.completion_tokens for r in rows):>11,} "
            f"{statistics.median(r.advertisement_tokens for r in rows):>9,.0f} "
            f"{1000 * statistics.median(r.seconds for r in rows):>8.1f}"
        )
    return "\n".join(lines)


def main() -> None:
    tasks = planned_tasks()
    print(
        f"Offline comparison on {len(tasks)} M3ToolEval tasks: the model's behaviour is generated "
        "from each task's plan, so this measures the runtime's mechanics, not a model's ability."
    )
    name, results = anyio.run(run_suite, tasks)
    print(
        f"tokens: {name}; totals over all tasks, peak and time per task (median for time, tools ad)"
    )
    print(table(results))


__all__ = ["Metrics", "main", "planned_tasks", "run_suite", "run_task", "table"]
