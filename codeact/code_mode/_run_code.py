"""Code mode: the reserved ``run_code`` tool, whose script calls every other tool as a function."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..contract._abort import AbortSignal
from ..contract._call import ToolCall
from ..contract._dispatch import current_invocation, execute_now, runs_now
from ..contract._events import EventRelay, PrintedLines
from ..contract._exceptions import ErrorCode, ToolError, UsageError
from ..contract._json import FrozenJson, JsonValue, dumps
from ..contract._media import render_value
from ..contract._registry import ToolRegistry
from ..contract._results import ContentBlock, TextBlock, ToolExecutionResult
from ..contract._tool import Tool
from ..contract._tracing import attached, current_context
from ..executors._in_process import Executor, SyncToolCaller
from ..sandbox import Limits, ScriptOutcome
from ._precheck import Finding, check_script, script_names
from ._script_names import ScriptNames, assign_script_names
from ._stubs import stubs

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from ..durable._plan import PlanPolicy
    from ..durable._record import Durable

RUN_CODE = "run_code"
DEFAULT_SESSION = "default"
# What run_code's description says of names; a server whose clients keep names another way
# (MCP's state handles) says that instead.
PERSIST_SENTENCE = "Names you define persist to the next run_code call. "
MAX_LISTED_CALLS = 20  # a failed run's calls as the model reads them; the log keeps them all

OUTPUT_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "result": {},
        "output": {"type": "string"},
        "plan": {"type": "string"},
        "tool_calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"}},
                "required": ["name", "ok"],
            },
        },
    },
    "required": ["result", "output", "tool_calls"],
}


def bindable_tools(registry: ToolRegistry) -> list[Tool]:
    """The tools a script can call: every visible tool but run_code itself."""
    return [t for t in registry.tools() if t.name != RUN_CODE]


def script_tools(registry: ToolRegistry) -> ScriptNames:
    """The bindable tools by the names scripts call them (aliases for non-identifiers)."""
    return assign_script_names(bindable_tools(registry))


def describe_run_code(
    registry: ToolRegistry,
    *,
    modules: frozenset[str],
    limits: Limits,
    lazy: str | None = None,
    name_budget: int = 2_000,
) -> str:
    """run_code's description: how to use it, then the bound tools.

    ``lazy=None`` lists every tool as a Python stub; ``"names"`` lists names only,
    within ``name_budget`` characters, in registration order (so adding a tool never
    changes what comes before it); ``"none"`` lists nothing. Both lazy forms point to
    ``search_tools`` and ``describe``. The fixed text comes first, so the prompt
    prefix stays byte-stable.
    """
    named = script_tools(registry)
    tools = list(named.tools)
    parts = [
        "Run a Python script. Every tool below is a plain function in the script; "
        "call it with positional or keyword arguments and use what it returns. "
        "A failed call raises ToolError (with .code and .message), which the script may catch. "
        "The value of the last expression is returned as the result, with everything printed. "
        + PERSIST_SENTENCE
        + "To run calls concurrently, await them together: "
        "import asyncio, then await asyncio.gather(*(tool(x) for x in xs)).",
        f"Importable modules: {', '.join(sorted(modules))}.",
        f"Limits: {limits.wall_seconds:g} s of script time (waiting for a tool does not "
        f"count; each call may wait {limits.tool_wait_seconds:g} s), {limits.max_tool_calls} "
        f"tool calls per run; printed output past {limits.max_output_chars:,} characters "
        "is shown by its start and its end.",
    ]
    if named.renamed:
        parts.append(
            "Tools whose names are not Python identifiers are called by these names: "
            + ", ".join(f"{original} as {alias}" for original, alias in named.renamed.items())
            + "."
        )
    if lazy is None:
        if tools:
            parts.append("Tools:\n\n" + stubs(named.tools))
        return "\n\n".join(parts)
    parts.append(
        "More tools are callable than are shown: call search_tools(query) to find them "
        "and describe(name) for a tool's signature, inside a script."
    )
    if lazy == "names":
        listed, used = [], 0
        for name in tools:
            if used + len(name) + 2 > name_budget:
                break
            listed.append(name)
            used += len(name) + 2
        parts.append(
            "Tool names: " + ", ".join(listed) + ("" if len(listed) == len(tools) else ", ...")
        )
    return "\n\n".join(parts)


# The script session a run_code call runs in, when its caller names one (a server
# with many clients); otherwise the tool's own.
SCRIPT_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "codeact_script_session", default=None
)


def run_code_tool(
    registry: ToolRegistry,
    *,
    executor: Executor | None = None,
    session: str = DEFAULT_SESSION,
    limits: Limits | None = None,
    modules: frozenset[str] | None = None,
    precheck: bool = True,
    durable: Durable | None = None,
    plans: PlanPolicy | None = None,
) -> Tool:
    """The reserved ``run_code`` tool for ``registry``: register it in a child registry.

    Scripts run in worker processes unless ``executor`` says otherwise; the caller
    owns the executor and closes it (``await executor.aclose()``).

    Calls made by the script go through ``registry.execute`` with the run_code call
    as their parent: the same validation, policy, hooks, timeouts and events.

    ``durable``: every run is recorded in its session's log, so it can suspend for a
    decision, survive a crash of its worker or host, and resume (``Runtime.resume``).
    It also gives run_code its ``preview`` option: the script's writes are planned, the
    policy's approver decides the plan once, and the commit makes the approved writes.
    ``plans`` bounds what a plan may hold (and may preview every run).
    """
    from ..stdlib import DEFAULT_MODULES

    limits = limits or Limits()
    modules = frozenset(DEFAULT_MODULES if modules is None else modules)
    if executor is None:
        from ..executors._process import ProcessExecutor  # loaded only by those who run workers

    runner = executor or ProcessExecutor(limits=limits, modules=modules)

    names_by_session: dict[str, set[str]] = {}
    # An executor written before batches and in-thread calls keeps working: it is only
    # offered the callers its run() accepts.
    accepted = _keywords_of(runner.run)
    if durable is not None and not {"tape", "call_tools"} <= accepted:
        raise UsageError("durable runs need an executor that tapes them: a ProcessExecutor")

    bound: list[tuple[int, Mapping[str, tuple[str, ...]], ScriptNames]] = []

    def tool_table() -> tuple[Mapping[str, tuple[str, ...]], ScriptNames]:
        """The names and parameters scripts can call, rebuilt when the registry changes
        (read-only: every run, and every executor, shares it)."""
        version = registry.version
        if not bound or bound[0][0] != version:
            named = script_tools(registry)
            table = {name: t.parameter_names for name, t in named.tools.items()}
            bound[:] = [(version, MappingProxyType(table), named)]
        return bound[0][1], bound[0][2]

    async def run_code(code: str, preview: bool = False) -> dict[str, Any]:
        tools, named = tool_table()
        real = named.tool_name  # a script calls get_sum; the registry knows get-sum
        this_session = SCRIPT_SESSION.get() or session
        if durable is not None and this_session not in names_by_session:
            names_by_session[this_session] = known_names(durable, this_session)
        session_names = names_by_session.setdefault(this_session, set())
        # advice, never a refusal: the script runs as CPython would run it (a print before
        # an undefined name prints), and a failure carries what the check foresaw
        findings = check_script(code, tools, known=session_names) if precheck else []
        invocation = current_invocation()
        parent = invocation.call_id if invocation else None
        numbers = itertools.count(1)
        abort = AbortSignal()
        traced = current_context()  # this run_code span: its calls are answered elsewhere

        async def call_tool(name: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult:
            call = ToolCall(f"{parent or RUN_CODE}.{next(numbers)}", real(name), arguments)
            with attached(traced):
                return await registry.execute(call, parent=parent, abort=abort)

        async def call_tools(
            batch: list[tuple[str, dict[str, JsonValue]]],
        ) -> list[ToolExecutionResult]:
            calls = [
                ToolCall(f"{parent or RUN_CODE}.{next(numbers)}", real(name), arguments)
                for name, arguments in batch
            ]
            with attached(traced):
                return await registry.execute_many(
                    calls,
                    parent=parent,
                    abort=abort,
                    max_concurrent=limits.max_concurrent_tool_calls,
                    wait_seconds=limits.tool_wait_seconds,
                )

        relay = _relay(registry)  # one for the run: its events keep the order they had
        call_tool_now = _caller_in_thread(registry, parent, numbers, abort, real, relay, traced)
        printed = (
            PrintedLines(parent or RUN_CODE, relay)
            if relay is not None and registry.has_listeners()
            else None
        )
        try:
            if durable is not None:
                from ..durable._commit import run_with_plans
                from ..durable._run import Surroundings

                around = Surroundings(
                    registry=registry,
                    parent=parent or RUN_CODE,
                    runner=runner,
                    tools=tools,
                    real=real,
                    limits=limits,
                    abort=abort,
                    traced=traced,
                    on_output=printed,
                    relay=relay,
                )
                committed = await run_with_plans(
                    durable,
                    this_session,
                    code,
                    parent or RUN_CODE,
                    around,
                    plans,
                    preview=preview or (plans is not None and plans.always),
                )
                value = _script_result(committed.outcome, session_names, code, findings)
                if committed.plans:
                    value["plan"] = "\n\n".join(committed.plans)
                return value
            if preview:
                raise ToolError(
                    "preview needs a durable runtime (Runtime(..., durable=Durable(...))): "
                    "the script was not run",
                    ErrorCode.INVALID_ARGUMENTS,
                )
            offered: dict[str, Any] = {
                "call_tools": call_tools,
                "call_tool_now": call_tool_now,
                "on_output": printed,
            }
            outcome = await runner.run(
                code,
                session=this_session,
                tools=tools,
                call_tool=call_tool,
                **{k: v for k, v in offered.items() if k in accepted},
            )
        finally:
            abort.abort("the script ended")
            if printed is not None:
                printed.flush()
            if relay is not None:  # every event of the run before its own end
                relay.flush()
        return _script_result(outcome, session_names, code, findings)

    return Tool(
        name=RUN_CODE,
        description=describe_run_code(registry, modules=modules, limits=limits),
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The Python script to run."},
                **({} if durable is None else {"preview": PREVIEW_PARAMETER}),
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        function=run_code,
        output_schema=OUTPUT_SCHEMA,
        # The executor bounds the script's own time and each wait on a tool; a deadline
        # here would count an approval that takes a minute against the script.
        timeout=None,
        render=render_success,
        max_content_chars=limits.max_output_chars + 5_000,
        # a script may call any tool: nothing is promised about what it touches
        annotations={"title": "Run Python code", "readOnlyHint": False, "openWorldHint": True},
    )


PREVIEW_PARAMETER: dict[str, JsonValue] = {
    "type": "boolean",
    "description": (
        "Preview first: tools that write are not called but planned (each returns a "
        "placeholder), and the whole plan is approved once before its writes are made."
    ),
}


def known_names(durable: Durable, session: str) -> set[str]:
    """The names the session's recorded runs define (for the pre-run check)."""
    names: set[str] = set()
    for run in durable.runs(session):
        names.update(script_names(run.started.source))
    return names


def _script_result(
    outcome: ScriptOutcome,
    session_names: set[str],
    code: str,
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """run_code's value: the script's result, output and calls; a failure is raised, with
    the pre-run check's findings as advice (the code of the one at the failing line)."""
    session_names.update(script_names(code))
    error = outcome.error
    if error is not None:
        text = render_failure(outcome)
        if findings:
            text += "\nThe pre-run check found:\n" + "\n".join(f"  {f.message}" for f in findings)
        foreseen = [f.code for f in findings if f.line == error.line]
        raise ToolError(text, foreseen[0] if foreseen else error.code)
    return {
        "result": outcome.value,
        "output": outcome.output,
        "tool_calls": [{"name": c.name, "ok": c.ok} for c in outcome.tool_calls],
    }


def _relay(registry: ToolRegistry) -> EventRelay | None:
    """Events emitted in a script's thread (or a worker's serving thread), delivered on the
    loop in order; None under another event loop library, where only the loop emits."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return EventRelay(loop, registry.emit)


def _keywords_of(function: Any) -> frozenset[str]:
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return frozenset({"call_tools", "call_tool_now", "on_output"})
    return frozenset(p.name for p in parameters)


def _caller_in_thread(
    registry: ToolRegistry,
    parent: str | None,
    numbers: Iterator[int],
    abort: AbortSignal,
    real: Callable[[str], str],
    emit: EventRelay | None,
    traced: Context | None = None,
) -> SyncToolCaller | None:
    """Calls a script's thread can answer itself (sync tools, nothing that needs the loop),
    with their events delivered on the loop, in order, as every other event is; none
    without a relay (every call then goes through the loop)."""
    if emit is None:
        return None

    prefix = f"{parent or RUN_CODE}."

    def call_tool_now(called: str, arguments: dict[str, JsonValue]) -> ToolExecutionResult | None:
        name = real(called)
        resolved = registry.resolve(name)
        if not runs_now(resolved):  # asked before a number is taken: no gaps
            return None
        # arguments: plain JSON the executor made for this call and hands over
        call = ToolCall(prefix + str(next(numbers)), name, dumps(arguments))
        if traced is None:
            return execute_now(
                resolved, call, parent=parent, abort=abort, emit=emit, plain=arguments, unread=True
            )
        with attached(traced):
            return execute_now(
                resolved, call, parent=parent, abort=abort, emit=emit, plain=arguments, unread=True
            )

    return call_tool_now


def render_success(
    arguments: Mapping[str, FrozenJson], value: FrozenJson
) -> str | list[ContentBlock]:
    """What the model reads after a script succeeded: its output, then its result; media
    the result holds (an image a tool gave the script) follow as blocks of their own."""
    assert isinstance(value, Mapping)
    parts = []
    plan = value.get("plan")
    if plan:
        parts.append(str(plan))
    output = value.get("output")
    if output:
        parts.append(f"Output:\n{output}".rstrip())
    result = render_value(value.get("result"), dumps(value.get("result")))
    shown = result if isinstance(result, str) else result[0].text
    parts.append(f"Result: {shown}")
    text = "\n".join(parts)
    return text if isinstance(result, str) else [TextBlock(text=text), *result[1:]]


def render_failure(outcome: ScriptOutcome) -> str:
    """What the model reads after a script failed: the error, where, and what already happened."""
    error = outcome.error
    assert error is not None
    lines = [f"{error.cause}\n\n{error.message}" if error.cause else error.message]
    if error.line is not None:
        lines.append(f"  at line {error.line}: {error.source_line or ''}".rstrip())
    if error.hint:
        lines.append(f"  hint: {error.hint}")
    calls = outcome.tool_calls
    last = calls[-1] if calls else None
    if last is not None and not last.ok and f"ToolError [{last.code}]" in error.message:
        calls = calls[:-1]  # the call that failed is the error itself: its code said once
    if calls:
        shown = calls[:MAX_LISTED_CALLS]
        done = ", ".join(f"{c.name} ({'ok' if c.ok else c.code})" for c in shown)
        if len(calls) > len(shown):
            done += f", ... and {len(calls) - len(shown):,} more"
        lines.append(f"Tool calls made before the error: {done}")
    if outcome.output:
        lines.append(f"Output before the error:\n{outcome.output}".rstrip())
    return "\n".join(lines)


__all__ = [
    "RUN_CODE",
    "SCRIPT_SESSION",
    "bindable_tools",
    "describe_run_code",
    "render_failure",
    "run_code_tool",
    "script_tools",
]
