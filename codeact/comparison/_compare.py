"""Compare tool-calling styles on your own tools, tasks and model.

``await compare(tasks, tools=..., model=..., styles=...)`` runs every task in every
style (``repeats`` times), each run in a fresh runtime and session, and returns a
:class:`Comparison`: one :class:`RunRecord` per run (success, round trips, tool calls,
errors by code, tokens with the way they were counted, time split into the model's, the
tools' and the runtime's), a per-style summary with bootstrap confidence intervals,
and paired differences between styles over the same tasks. A run that fails (the
model's fault, a step limit, anything raised) is recorded as failed with its reason;
it never stops the comparison.

What the figures mean depends on the model: a scripted or generated model measures the
runtime's mechanics, a recorded cassette replays a model, and only a live endpoint
measures one.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeAlias

from ..agent._loop import Agent
from ..code_mode._run_code import RUN_CODE
from ..contract._events import DispatchEvent, ToolCallFinished
from ..contract._registry import ToolRegistry
from ..executors._in_process import Executor, InProcessExecutor
from ..providers._models import Model, ModelReply, ModelRequest
from ..runtime._modes import Runtime
from ..session._session import ModelExchange, ToolCallRecorded, ToolResultRecorded
from ._progress import Progress

STYLES = ("native", "native-parallel", "code", "both")
MODE_OF_STYLE = {"native": "native", "native-parallel": "native", "code": "code", "both": "both"}
STYLE_NOTES = {
    "native": "Call one tool at a time.",
    "native-parallel": "Call independent tools together, in one reply.",
}
BOOTSTRAP_RESAMPLES = 2_000
METRICS = (
    "success",
    "round_trips",
    "tool_calls",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
)

_MISSING: Any = object()


@dataclass(frozen=True, kw_only=True)
class ComparisonTask:
    """One task: the prompt, and how to tell success (a ``check`` of the final answer's
    text, or an ``expected`` answer; with neither, success is not judged)."""

    name: str
    prompt: str
    expected: Any = _MISSING
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    tags: tuple[str, ...] = ()

    def judge(self, answer: str) -> bool | None:
        if self.check is not None:
            return bool(self.check(answer))
        if self.expected is not _MISSING:
            return same_answer(self.expected, answer)
        return None


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One task run once in one style."""

    task: str
    style: str
    repeat: int
    tags: tuple[str, ...]
    success: bool | None
    answer: str
    failure: str | None  # why the run ended without an answer, if it did
    round_trips: int
    tool_calls: int  # calls of the tools themselves (a script's included, run_code not)
    errors: int
    errors_by_code: Mapping[str, int]
    prompt_tokens: int
    peak_prompt_tokens: int
    completion_tokens: int
    advertisement_tokens: int
    tool_output_tokens: int
    tokenizer: str  # how tokens were counted: "reported by the model", or a tokenizer
    seconds: float
    model_seconds: float
    tool_seconds: float

    @property
    def runtime_seconds(self) -> float:
        """Time that was neither the model's nor the tools': the runtime's own."""
        return max(self.seconds - self.model_seconds - self.tool_seconds, 0.0)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["errors_by_code"] = dict(self.errors_by_code)
        data["runtime_seconds"] = self.runtime_seconds
        return data


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A mean and its bootstrap confidence interval (95% unless said otherwise)."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{_number(self.mean)} [{_number(self.low)}, {_number(self.high)}]"


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Every run's record, with summaries computed from them."""

    records: tuple[RunRecord, ...]
    styles: tuple[str, ...]
    model: str
    seed: int = 0

    def summary(self) -> dict[str, dict[str, Interval]]:
        """Per style, per metric: the mean over runs with its bootstrap interval."""
        result: dict[str, dict[str, Interval]] = {}
        for offset, style in enumerate(self.styles):
            rows = [r for r in self.records if r.style == style]
            result[style] = {
                metric: bootstrap(_values(rows, metric), seed=self.seed + offset * 101 + index)
                for index, metric in enumerate(METRICS)
            }
        return result

    def paired(self, left: str, right: str, metric: str) -> Interval:
        """The per-task mean of ``left - right`` over tasks run in both styles, with a
        bootstrap interval over tasks (repeats are averaged within a task first)."""
        a, b = self.per_task(left, metric), self.per_task(right, metric)
        differences = [a[task] - b[task] for task in a if task in b]
        return bootstrap(differences, seed=self.seed + 7)

    def differences(self, metric: str) -> dict[str, Interval]:
        """The first style against each other one, paired by task."""
        first = self.styles[0]
        return {
            f"{first} - {other}": self.paired(first, other, metric) for other in self.styles[1:]
        }

    def to_json(self) -> str:
        return json.dumps(
            {
                "model": self.model,
                "styles": list(self.styles),
                "records": [r.to_dict() for r in self.records],
            },
            indent=1,
        )

    def to_dataframe(self) -> Any:
        """The records as a pandas DataFrame (pandas is needed for this, and only this)."""
        try:
            import pandas  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise ImportError(
                "to_dataframe needs pandas: pip install 'codeact[notebook]'"
            ) from None
        return pandas.DataFrame([r.to_dict() for r in self.records])

    def table(self) -> str:
        """Per style: each metric's mean and interval, as plain text."""
        names = ("success", "round_trips", "tool_calls", "errors", "prompt_tokens", "seconds")
        header = f"{'style':<16}" + "".join(f" {name:>24}" for name in names)
        lines = [header, "-" * len(header)]
        for style, metrics in self.summary().items():
            lines.append(f"{style:<16}" + "".join(f" {metrics[n]!s:>24}" for n in names))
        return "\n".join(lines)

    def per_task(self, style: str, metric: str) -> dict[str, float]:
        """Each task's mean of ``metric`` in ``style`` (over its repeats)."""
        values: dict[str, list[float]] = {}
        for record in self.records:
            if record.style == style:
                value = _value(record, metric)
                if value is not None:
                    values.setdefault(record.task, []).append(value)
        return {task: statistics.fmean(v) for task, v in values.items()}


ToolSource: TypeAlias = ToolRegistry | Callable[[ComparisonTask], ToolRegistry]
ModelSource: TypeAlias = Model | Callable[[ComparisonTask, str], Model]


async def compare(
    tasks: Iterable[ComparisonTask],
    *,
    tools: ToolSource,
    model: ModelSource,
    styles: Sequence[str] = ("native", "code"),
    repeats: int = 1,
    executor: Callable[[], Executor] = InProcessExecutor,
    max_steps: int = 20,
    system: str = "",
    count_tokens: tuple[str, Callable[[str], int]] | None = None,
    progress: bool = True,
    seed: int = 0,
) -> Comparison:
    """Run every task in every style; see the module's text.

    ``tools``: a registry, or a function of the task that gives one. ``model``: one model
    for every run (an HTTP adapter, a cassette), or a function of the task and the style
    that gives a fresh one (a scripted model per run). ``count_tokens``: a tokenizer's
    name and counting function for when the model reports no usage (by default a real
    BPE if ``bpe-openai`` is installed, else characters / 4, named as such).
    """
    unknown = [s for s in styles if s not in MODE_OF_STYLE]
    if unknown:
        raise ValueError(f"unknown styles {unknown}; choose from {list(MODE_OF_STYLE)}")
    chosen = list(tasks)
    counting = count_tokens or default_tokenizer()
    shown = Progress(len(chosen), styles) if progress else None
    records: list[RunRecord] = []
    try:
        for task in chosen:
            for style in styles:
                for repeat in range(repeats):
                    record = await run_one(
                        task,
                        style,
                        registry=tools(task) if callable(tools) else tools,
                        model=_model_for(model, task, style),
                        executor=executor(),
                        max_steps=max_steps,
                        system=system,
                        count_tokens=counting,
                        repeat=repeat,
                    )
                    records.append(record)
                    if shown is not None:
                        shown.record(style, bool(record.success))
            if shown is not None:
                shown.task_done()
    finally:
        if shown is not None:
            shown.close()
    name = str(getattr(model, "name", "")) if hasattr(model, "respond") else "per-run models"
    return Comparison(records=tuple(records), styles=tuple(styles), model=name, seed=seed)


async def run_one(
    task: ComparisonTask,
    style: str,
    *,
    registry: ToolRegistry,
    model: Model,
    executor: Executor,
    max_steps: int = 20,
    system: str = "",
    count_tokens: tuple[str, Callable[[str], int]] | None = None,
    repeat: int = 0,
) -> RunRecord:
    """One task in one style, in a fresh scope of ``registry`` and a fresh runtime."""
    counter_name, count = count_tokens or default_tokenizer()
    scope = registry.child()  # our listener on this run's scope alone
    recorder = _Recorder(model)
    tool_seconds = 0.0

    def on_dispatch(event: DispatchEvent) -> None:
        nonlocal tool_seconds
        if isinstance(event, ToolCallFinished) and event.parent is None:
            tool_seconds += event.seconds

    scope.add_listener(on_dispatch)
    runtime = Runtime(scope, mode=MODE_OF_STYLE[style], executor=executor)
    note = STYLE_NOTES.get(style, "")
    agent = Agent(
        runtime, recorder, max_steps=max_steps, system="\n".join(filter(None, [system, note]))
    )
    started = time.perf_counter()
    failure: str | None = None
    answer = ""
    try:
        answer = await agent.run(task.prompt)
    except Exception as error:  # a failed run is a result, never the end of the comparison
        failure = f"{type(error).__name__}: {error}"
    finally:
        seconds = time.perf_counter() - started
        await runtime.aclose()
    events = agent.session.events
    history = agent.session.history()
    exchanges = [e for e in events if isinstance(e, ModelExchange)]
    reported = bool(exchanges) and all(
        e.input_tokens is not None and e.output_tokens is not None for e in exchanges
    )
    prompts = (
        [int(e.input_tokens or 0) for e in exchanges]
        if reported
        else [
            count(json.dumps([r.system, list(r.messages), list(r.tools)]))
            for r in recorder.requests
        ]
    )
    completion = (
        sum(int(e.output_tokens or 0) for e in exchanges)
        if reported
        else sum(count(json.dumps(m)) for m in history if m["role"] == "assistant")
    )
    results = [e for e in events if isinstance(e, ToolResultRecorded)]
    return RunRecord(
        task=task.name,
        style=style,
        repeat=repeat,
        tags=task.tags,
        success=False if failure is not None else task.judge(answer),
        answer=answer,
        failure=failure,
        round_trips=len(exchanges),
        tool_calls=sum(isinstance(e, ToolCallRecorded) and e.name != RUN_CODE for e in events),
        errors=sum(e.is_error for e in results),
        errors_by_code=dict(Counter(e.code or "ERROR" for e in results if e.is_error)),
        prompt_tokens=sum(prompts),
        peak_prompt_tokens=max(prompts, default=0),
        completion_tokens=completion,
        advertisement_tokens=count(json.dumps(list(recorder.requests[0].tools)))
        if recorder.requests
        else 0,
        tool_output_tokens=sum(count(m["content"]) for m in history if m["role"] == "tool"),
        tokenizer="reported by the model" if reported else counter_name,
        seconds=seconds,
        model_seconds=recorder.seconds,
        tool_seconds=tool_seconds,
    )


def default_tokenizer() -> tuple[str, Callable[[str], int]]:
    """A real BPE tokenizer when bpe-openai is installed; otherwise characters / 4."""
    try:
        import bpe_openai  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return "approximate (characters / 4)", lambda text: (len(text) + 3) // 4
    encoding = bpe_openai.get_encoding("o200k_base")
    return "o200k_base", lambda text: len(encoding.encode(text))


def bootstrap(values: Sequence[float], *, seed: int = 0, level: float = 0.95) -> Interval:
    """The mean of ``values`` and a percentile bootstrap interval for it (resampled with
    a seeded generator, so the same data give the same interval)."""
    if not values:
        return Interval(mean=math.nan, low=math.nan, high=math.nan, n=0)
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Interval(mean=mean, low=mean, high=mean, n=1)
    generator = random.Random(seed)
    means = sorted(
        statistics.fmean(generator.choices(values, k=len(values)))
        for _ in range(BOOTSTRAP_RESAMPLES)
    )
    tail = (1 - level) / 2
    low = means[int(tail * (len(means) - 1))]
    high = means[math.ceil((1 - tail) * (len(means) - 1))]
    return Interval(mean=mean, low=low, high=high, n=len(values))


def same_answer(expected: Any, answer: str) -> bool:
    """Does the answer's text say ``expected``? Compared as values when the text (or what
    follows its last ``Answer:``) is JSON, numbers within 1e-6; else as text."""
    candidate = answer.split("Answer:")[-1].strip()
    try:
        value: Any = json.loads(candidate)
    except ValueError:
        value = candidate.strip("'\"")
    return values_equal(expected, value)


def values_equal(expected: Any, answer: Any) -> bool:
    """Equal as values: numbers within 1e-6 (booleans only as booleans), tuples as lists."""
    if isinstance(expected, bool) or isinstance(answer, bool):
        return expected is answer
    if isinstance(expected, int | float) and isinstance(answer, int | float):
        return abs(float(expected) - float(answer)) <= 1e-6 * max(1.0, abs(float(expected)))
    if isinstance(expected, list | tuple) and isinstance(answer, list | tuple):
        return len(expected) == len(answer) and all(
            values_equal(e, a) for e, a in zip(expected, answer, strict=True)
        )
    if isinstance(expected, dict) and isinstance(answer, dict):
        return expected.keys() == answer.keys() and all(
            values_equal(expected[k], answer[k]) for k in expected
        )
    return bool(expected == answer)


def _model_for(source: ModelSource, task: ComparisonTask, style: str) -> Model:
    if not callable(source) or hasattr(source, "respond"):
        return source  # type: ignore[return-value]  # a model (it has respond)
    made = source(task, style)
    if not hasattr(made, "respond"):
        raise TypeError(f"the model factory gave {type(made).__name__}, not a model")
    return made


def _values(rows: Sequence[RunRecord], metric: str) -> list[float]:
    return [value for row in rows if (value := _value(row, metric)) is not None]


def _value(record: RunRecord, metric: str) -> float | None:
    raw = record.runtime_seconds if metric == "runtime_seconds" else getattr(record, metric)
    return None if raw is None else float(raw)


class _Recorder:
    """A model wrapped to keep every request and the time spent waiting for it."""

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


__all__ = [
    "STYLES",
    "Comparison",
    "ComparisonTask",
    "Interval",
    "RunRecord",
    "bootstrap",
    "compare",
    "default_tokenizer",
    "run_one",
    "same_answer",
    "values_equal",
]
