"""A previewed run's plan as its record has it, and the check that it is still true.

The record of a preview holds every call it asked for: its reads with their answers,
its writes planned (suspended with ``PLANNED_REASON``) and, once decided and made,
answered. ``plan_of`` reads the writes still to be made into a ``Plan``; ``stale_read``
runs the plan's reads again before a commit makes anything, and names the first whose
answer is not the one the preview saw.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..contract._call import ToolCall
from ..contract._registry import ToolRegistry
from ._plan import Plan, PlannedWrite, PreviewEnd, loops_by_line, pending_refs
from ._record import RecordedRun, answer_json, shown_arguments


def plan_of(run: RecordedRun, session: str) -> Plan:
    """The writes of ``run``'s plan not made yet, with where its preview stopped."""
    source = run.started.source
    lines = source.splitlines()
    loops = loops_by_line(source)
    planned = run.planned()
    waiting = [p for p in planned if p not in run.answers and p not in run.decisions]
    at_line = Counter(run.calls[p].line for p in waiting if run.calls[p].line is not None)
    writes = []
    for position in waiting:
        call = run.calls[position]
        line = call.line
        loop = loops.get(line) if line is not None else None
        if loop is None and line is not None and at_line[line] > 1:
            loop = line  # the same line wrote more than once: a loop through a function
        arguments = json.loads(call.arguments)
        writes.append(
            PlannedWrite(
                call_id=f"{run.run}.{position}",
                position=position,
                tool=call.name,
                arguments=arguments,
                line=line,
                source_line=lines[line - 1].strip() if line and 0 < line <= len(lines) else None,
                loop=loop,
                uses=tuple(f"{run.run}.{p}" for p in pending_refs(arguments)),
            )
        )
    made = Counter(run.calls[p].name for p in planned if p in run.answers and _succeeded(run, p))
    stop, value, output = _previewed(run)
    return Plan(
        session=session,
        run=run.run,
        writes=tuple(writes),
        reads=len(_plan_reads(run)),
        made_by_tool=dict(made),
        stopped=stop,
        value=value,
        output=output,
    )


async def stale_read(
    run: RecordedRun, registry: ToolRegistry, real: Callable[[str], str], **execution: Any
) -> str | None:
    """Run the reads the plan was made from again; the first whose answer changed, as a
    sentence (None: the world is as the preview saw it)."""
    reads = _plan_reads(run)
    if not reads:
        return None
    calls = [
        ToolCall(f"{run.run}.{p}", real(run.calls[p].name), run.calls[p].arguments) for p in reads
    ]
    results = await registry.execute_many(calls, **execution)
    for position, result in zip(reads, results, strict=True):
        now, then = answer_json(result), run.answers[position].answer
        if now != then:
            call = run.calls[position]
            return (
                f"{call.name}({shown_arguments(call.arguments)}) answered "
                f"{_answer_shown(then)} in the preview and {_answer_shown(now)} now"
            )
    return None


def _plan_reads(run: RecordedRun) -> list[int]:
    """The plan's reads: those answered after the last write the run made."""
    planned = run.planned()
    after = max((p for p in planned if p in run.answers), default=0)
    return [p for p in sorted(run.answers) if p > after and p not in planned]


def _succeeded(run: RecordedRun, position: int) -> bool:
    return bool(json.loads(run.answers[position].answer).get("ok"))


def _previewed(run: RecordedRun) -> tuple[PreviewEnd | None, Any, str]:
    if run.previewed is None:
        return None, None, ""
    stop = None
    if run.previewed.stop:
        fields = json.loads(run.previewed.stop)
        stop = PreviewEnd(
            message=fields["message"],
            line=fields.get("line"),
            source_line=fields.get("source_line"),
        )
    outcome = json.loads(run.previewed.outcome or "{}")
    return stop, outcome.get("value"), outcome.get("output") or ""


def _answer_shown(answer: str, limit: int = 120) -> str:
    recorded = json.loads(answer)
    text = (
        json.dumps(recorded.get("value"), ensure_ascii=False)
        if recorded.get("ok")
        else f"an error ({recorded.get('code')})"
    )
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["plan_of", "stale_read"]
