"""Plans: the writes a previewed script would make, for one decision before any is made.

A preview runs a script with its reads executed and its writes recorded instead (each
returns a pending value). What it leaves is a ``Plan``: the writes in order, each with
its tool, arguments, line and the loop it sits in, and where the preview stopped if the
script needed a write's result to go on. One ``Approval`` decides it: ``True`` or
``False`` for the whole plan, or a mapping whose keys are write ids (``c1.3``) or tool
names. A ``PlanPolicy`` bounds what a plan may hold before anyone is asked.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contract._exceptions import UsageError
from ..contract._json import JsonValue
from ..contract._policy import Approval
from ..sandbox._pending import PENDING_MARK

PLANNED_REASON = "planned by a preview: it is made once the plan is approved"
# A plan's text lists at most this many lines of writes, then says how many it leaves out.
MAX_SHOWN_LINES = 40
# A write's arguments are shown up to this many characters, then how many more there are.
MAX_SHOWN_ARGUMENT_CHARS = 1_000


@dataclass(frozen=True, kw_only=True, slots=True)
class PlannedWrite:
    """One write of a plan. ``loop``: the line of the innermost loop around the call
    (None: not in one); ``uses``: the planned writes whose results it is given."""

    call_id: str
    position: int
    tool: str
    arguments: dict[str, JsonValue]
    line: int | None = None
    source_line: str | None = None
    loop: int | None = None
    uses: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The tool called (``tool``), as a ``PendingCall.name`` names it."""
        return self.tool

    def shown(self, limit: int | None = MAX_SHOWN_ARGUMENT_CHARS) -> str:
        """The call as a script writes it, a planned result shown as ``<result of c1.2>``;
        arguments past ``limit`` characters are cut, saying how many (None: never)."""
        run = self.call_id.rpartition(".")[0]
        return f"{self.tool}({shown_keywords(self.arguments, run, limit)})"


@dataclass(frozen=True, kw_only=True, slots=True)
class PreviewEnd:
    """Where a preview stopped short of the script's end, and why."""

    message: str
    line: int | None = None
    source_line: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """What a previewed run would write; nothing of it has been made."""

    session: str
    run: str
    writes: tuple[PlannedWrite, ...]
    reads: int = 0
    # writes this run already made (an earlier plan's, approved), by tool
    made_by_tool: Mapping[str, int] = field(default_factory=dict)
    stopped: PreviewEnd | None = None
    value: JsonValue = None
    output: str = ""
    violations: tuple[str, ...] = ()

    @property
    def made(self) -> int:
        """How many writes this run already made."""
        return sum(self.made_by_tool.values())

    @property
    def digest(self) -> str:
        """What an approval binds to: a hash of every write (its id, tool and full
        arguments) of this session's run. A commit whose record holds another plan by
        then makes nothing."""
        writes = [[w.call_id, w.tool, w.arguments] for w in self.writes]
        body = json.dumps(
            [self.session, self.run, writes],
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
        )
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()

    def text(self, *, every: bool = False) -> str:
        """The plan as a model (or a person) reads it: every write, or (past
        ``MAX_SHOWN_LINES`` lines, unless ``every``) exactly how many are not shown.

        A loop's writes are listed together, identical ones once with their count, so a
        different write in the middle of a loop is always its own line.
        """
        count = len(self.writes)
        lines = [
            f"Plan for run {self.run}: {count} write{'s' if count != 1 else ''} "
            f"(none made yet), after {self.reads} read{'s' if self.reads != 1 else ''}"
            f"{f'; {self.made} earlier write(s) of this run were made' if self.made else ''}."
        ]
        limit = None if every else MAX_SHOWN_ARGUMENT_CHARS
        budget = None if every else MAX_SHOWN_LINES
        shown = 0  # writes that a line of the text stands for
        shown_loops: set[int] = set()
        for write in self.writes:
            if budget is not None and budget <= 0:
                break
            if write.loop is None:
                where = f"  line {write.line}" if write.line is not None else ""
                lines.append(f"  {write.call_id}  {write.shown(limit)}{where}")
                shown += 1
                budget = None if budget is None else budget - 1
                continue
            if write.loop in shown_loops:
                continue
            shown_loops.add(write.loop)
            inside = [w for w in self.writes if w.loop == write.loop]
            tools = Counter(w.tool for w in inside)
            what = ", ".join(f"{n} x {tool}" for tool, n in tools.items())
            lines.append(
                f"  {inside[0].call_id}..{inside[-1].call_id}  {what}, in the loop at line "
                f"{write.loop}"
            )
            alike: dict[str, list[PlannedWrite]] = {}
            for each in inside:
                alike.setdefault(each.shown(limit), []).append(each)
            for call, same in alike.items():
                if budget is not None and budget <= 0:
                    break
                if len(same) == 1:
                    lines.append(f"      {same[0].call_id}  {call}")
                else:
                    ids = _id_ranges([w.position for w in same], self.run)
                    lines.append(f"      {len(same)} x {call}  ({ids})")
                shown += len(same)
                budget = None if budget is None else budget - 1
        if shown < count:
            lines.append(
                f"  ... and {count - shown} more write{'s' if count - shown != 1 else ''} not "
                f"shown here (Plan.text(every=True) and Plan.to_dict() list every one); an "
                f"approval decides all {count}."
            )
        if self.stopped is not None:
            where = f" at line {self.stopped.line}" if self.stopped.line is not None else ""
            code = f" ({self.stopped.source_line})" if self.stopped.source_line else ""
            lines.append(
                f"The preview stopped{where}{code}: {self.stopped.message}. What comes after "
                "runs once these writes are made, and its writes form the next plan."
            )
        else:
            lines.append(f"The script then ends, returning {_shown_value(self.value, self.run)}.")
        for violation in self.violations:
            lines.append(f"Refused by the plan policy: {violation}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, for logs and APIs."""
        return {
            "session": self.session,
            "run": self.run,
            "writes": [
                {
                    "id": w.call_id,
                    "tool": w.tool,
                    "arguments": w.arguments,
                    "line": w.line,
                    "loop": w.loop,
                    "uses": list(w.uses),
                }
                for w in self.writes
            ],
            "reads": self.reads,
            "digest": self.digest,
            "stopped": None
            if self.stopped is None
            else {"line": self.stopped.line, "message": self.stopped.message},
            "violations": list(self.violations),
        }

    def decisions(self, approval: Approval, policy: PlanPolicy | None = None) -> dict[str, bool]:
        """Every write's decision under ``approval``; a mapping must decide each write, by
        its id or its tool's name, and (under ``policy.loops_need_batch``) decide a loop's
        writes together."""
        if isinstance(approval, bool):
            return {write.call_id: approval for write in self.writes}
        if not isinstance(approval, Mapping):
            raise UsageError("an approval is True, False, or a mapping of write ids or tools")
        known = {w.call_id for w in self.writes} | {w.tool for w in self.writes}
        unknown = sorted(set(approval) - known)
        if unknown:
            raise UsageError(
                f"the plan of run {self.run} has no write or tool {', '.join(unknown)}"
            )
        decided: dict[str, bool] = {}
        undecided: list[str] = []
        for write in self.writes:
            if write.call_id in approval:
                if policy is not None and policy.loops_need_batch and write.loop is not None:
                    raise UsageError(
                        f"{write.call_id} is a write inside the loop at line {write.loop}: "
                        "writes inside loops are decided together (by the plan or the tool)"
                    )
                decided[write.call_id] = bool(approval[write.call_id])
            elif write.tool in approval:
                decided[write.call_id] = bool(approval[write.tool])
            else:
                undecided.append(write.call_id)
        if undecided:
            raise UsageError(f"the approval leaves writes undecided: {', '.join(undecided)}")
        return decided


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanPolicy:
    """What a plan may hold before anyone is asked: at most ``max_writes`` writes a run,
    at most ``quotas[tool]`` writes of a tool a run, and (``loops_need_batch``) writes
    inside loops only under one decision for them all. ``always``: every script run is
    previewed, whether or not its caller asked."""

    max_writes: int | None = None
    quotas: Mapping[str, int] = field(default_factory=dict)
    loops_need_batch: bool = False
    always: bool = False

    def violations(self, plan: Plan) -> tuple[str, ...]:
        """What in ``plan`` this policy refuses, counting the writes its run already made."""
        found: list[str] = []
        total = plan.made + len(plan.writes)
        if self.max_writes is not None and total > self.max_writes:
            found.append(f"the run would make {total} writes, more than {self.max_writes}")
        counts = Counter(plan.made_by_tool)
        counts.update(w.tool for w in plan.writes)
        for tool, quota in self.quotas.items():
            if counts[tool] > quota:
                found.append(f"the run would make {counts[tool]} {tool} writes, more than {quota}")
        return tuple(found)


def loops_by_line(source: str) -> dict[int, int]:
    """Each line that runs repeatedly, mapped to the line of the innermost loop around it
    (a for or while body, a while test, a comprehension)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    spans: list[tuple[int, int, int]] = []  # (first line, last line, loop's line)
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor):
            spans.append((node.body[0].lineno, _last(node.body), node.lineno))
        elif isinstance(node, ast.While):
            spans.append((node.lineno, _last(node.body), node.lineno))
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            spans.append((node.lineno, node.end_lineno or node.lineno, node.lineno))
    loops: dict[int, int] = {}
    # widest first, so an inner loop's lines end up naming the inner loop
    for first, last, header in sorted(spans, key=lambda span: span[0] - span[1]):
        for line in range(first, last + 1):
            loops[line] = header
    return loops


def _last(body: Sequence[ast.stmt]) -> int:
    return max(getattr(statement, "end_lineno", None) or statement.lineno for statement in body)


def pending_refs(value: Any) -> list[int]:
    """The planned writes (by position) whose results ``value`` (JSON) holds."""
    found: list[int] = []
    _collect(value, found)
    return found


def _collect(value: Any, found: list[int]) -> None:
    if isinstance(value, str):
        if value.startswith(PENDING_MARK):
            position = value[len(PENDING_MARK) :]
            if position.isdigit():
                found.append(int(position))
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect(item, found)


def resolved(value: Any, results: Mapping[int, JsonValue]) -> Any:
    """``value`` (JSON) with each planned write's mark replaced by that write's result."""
    if isinstance(value, str) and value.startswith(PENDING_MARK):
        position = value[len(PENDING_MARK) :]
        if position.isdigit() and int(position) in results:
            return results[int(position)]
        return value
    if isinstance(value, dict):
        return {key: resolved(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [resolved(item, results) for item in value]
    return value


def shown_keywords(arguments: Mapping[str, Any], run: str = "", limit: int | None = 200) -> str:
    """A call's arguments as a script writes them (``amount=5``), cut at ``limit``
    characters saying how many more there are (None: never cut)."""
    text = ", ".join(f"{key}={_shown_value(value, run)}" for key, value in arguments.items())
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters]"


def _id_ranges(positions: list[int], run: str) -> str:
    """Write ids as a person reads them: ``c1.2..c1.5, c1.9``."""
    spans: list[list[int]] = []
    for position in positions:
        if spans and position == spans[-1][1] + 1:
            spans[-1][1] = position
        else:
            spans.append([position, position])
    return ", ".join(
        f"{run}.{first}" if first == last else f"{run}.{first}..{run}.{last}"
        for first, last in spans
    )


def _shown_value(value: Any, run: str) -> str:
    """JSON as a script writes it; a planned write's result as ``<result of c1.2>``."""
    if isinstance(value, str) and value.startswith(PENDING_MARK):
        return f"<result of {run}.{value[len(PENDING_MARK) :]}>"
    if isinstance(value, dict):
        items = (
            f"{json.dumps(k, ensure_ascii=False)}: {_shown_value(v, run)}" for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shown_value(item, run) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


__all__ = [
    "PLANNED_REASON",
    "Approval",
    "Plan",
    "PlanPolicy",
    "PlannedWrite",
    "PreviewEnd",
    "loops_by_line",
    "pending_refs",
    "resolved",
    "shown_keywords",
]
