"""Dispatch: the one pipeline every tool call passes through.

``execute`` reads top to bottom as the contract: freeze, validate, policy, pre-hooks,
invoke under a timeout and the abort signal, check the output, render, post-hooks. Each
step either passes or raises :class:`Rejection`, and the one boundary in ``execute``
turns a rejection into the failure result the model reads. Whatever happens, the call
gets exactly one result citing its id.

The pipeline is handed what a call meets (:class:`Resolved`: the tool, the policy, the
hooks; and where events go); it never looks anything up. The registry resolves names.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import difflib
import functools
import inspect
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

import anyio

from ._abort import AbortSignal
from ._call import ToolCall, parse_arguments
from ._events import DispatchEvent, EventRelay, ToolCallFinished, ToolCallStarted, ToolProgress
from ._exceptions import ErrorCode, ToolError
from ._invocation import Invocation
from ._json import MAX_DEPTH, FrozenJson, JsonValue, NotJsonError, detach, freeze, thaw
from ._media import render_value
from ._results import (
    ContentBlock,
    TextBlock,
    ToolExecutionResult,
    ToolExecutionSuccess,
    failure,
)
from ._schema import describe_errors, drop_optional_nulls
from ._tracing import end_tool_span, start_tool_span, tool_context

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from pydantic import ValidationError

    from ._policy import Policy, Verdict
    from ._tool import Tool

PreHook = Callable[[Invocation], "Awaitable[str | None] | str | None"]
PostHook = Callable[[Invocation, ToolExecutionResult], "Awaitable[None] | None"]
Emit = Callable[[DispatchEvent], None]

MAX_LISTED_TOOLS = 20


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolved:
    """What a call of one tool meets on its way, as its registry and every parent say."""

    tool: Tool
    policy: Policy
    pre_hooks: tuple[PreHook, ...]
    post_hooks: tuple[PostHook, ...]
    listened: bool  # would an event reach a listener (a call that emits none builds none)


_CURRENT: contextvars.ContextVar[Invocation | None] = contextvars.ContextVar(
    "codeact_invocation", default=None
)


# Where a running call's own events go (its progress): the loop's listeners, reached safely.
_EMIT: contextvars.ContextVar[Callable[[DispatchEvent], None] | None] = contextvars.ContextVar(
    "codeact_emit", default=None
)


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """From inside a tool: tell listeners how far the call has got (a ``ToolProgress``
    event). Does nothing outside a tool call."""
    progress_reporter()(progress, total, message)


def progress_reporter() -> Callable[[float, float | None, str | None], None]:
    """``report_progress`` for the current call, usable later from another task (a
    client's notification handler, say), where the call's context is not current."""
    invocation, emit = _CURRENT.get(), _EMIT.get()

    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        if invocation is None or emit is None:
            return
        emit(
            ToolProgress(
                call_id=invocation.call_id,
                name=invocation.name,
                parent=invocation.parent,
                progress=float(progress),
                total=None if total is None else float(total),
                message=message,
            )
        )

    return report


def current_invocation() -> Invocation | None:
    """The invocation whose tool body is running (inherited by worker threads), if any."""
    return _CURRENT.get()


class Rejection(Exception):
    """A step refused the call; becomes a failure result at the boundary."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = str(code)
        self.message = message


async def execute(
    resolved: Resolved,
    call: ToolCall,
    *,
    emit: Emit,
    parent: str | None = None,
    abort: AbortSignal | None = None,
) -> ToolExecutionResult:
    """Run ``call`` through the pipeline and return its one result; ``emit`` reaches the
    listeners (called only when ``resolved`` says someone listens)."""
    started = time.perf_counter()
    span = start_tool_span(call.id, call.name, resolved.tool.description, call.arguments)
    invocation = _invocation(call, resolved.tool, parent)
    listening = emit if resolved.listened else None
    if listening is not None:
        listening(
            ToolCallStarted(
                call_id=call.id, name=call.name, arguments=call.arguments, parent=parent
            )
        )
    emitting = _EMIT.set(listening)
    try:
        with tool_context(span):
            result: ToolExecutionResult = await _run(resolved, invocation, abort)
    except Rejection as rejection:
        result = failure(call.id, call.name, rejection.code, rejection.message)
    except anyio.get_cancelled_exc_class():
        aborted = failure(call.id, call.name, ErrorCode.ABORTED, "the call was cancelled")
        _finish(listening, call.id, call.name, parent, aborted, started, span=span)
        raise
    finally:
        _EMIT.reset(emitting)
    if resolved.post_hooks:
        result = await _run_post_hooks(resolved, invocation, result)
    _finish(listening, call.id, call.name, parent, result, started, span=span)
    return result


def unknown_tool(
    call: ToolCall, known: Sequence[str], *, emit: Emit, parent: str | None = None
) -> ToolExecutionResult:
    """The one result of a call whose name resolves to no tool: the names it may have
    meant, and the ones there are (``known``)."""
    span = start_tool_span(call.id, call.name, "", call.arguments)
    result = failure(call.id, call.name, ErrorCode.UNKNOWN_TOOL, _unknown(known, call.name))
    _finish(emit, call.id, call.name, parent, result, time.perf_counter(), span=span)
    return result


def runs_now(resolved: Resolved | None) -> bool:
    """Can ``execute_now`` take calls of this tool (unless a rule asks an approver)?"""
    return _in_thread(resolved) is not None


def _in_thread(
    resolved: Resolved | None,
) -> tuple[Resolved, Callable[[Invocation], Verdict | None]] | None:
    """The resolved tool and its policy's ``decide_now`` when a call of it can run in the
    calling thread (a sync tool, no hooks, a policy that can decide without an
    approver)."""
    if (
        resolved is None
        or resolved.tool.is_async
        or resolved.pre_hooks
        or resolved.post_hooks
        or not hasattr(resolved.policy, "decide_now")
    ):
        return None
    return resolved, resolved.policy.decide_now


def decides_now(
    resolved: Resolved | None,
    call: ToolCall,
    parent: str | None = None,
    plain: dict[str, JsonValue] | None = None,
) -> bool:
    """Would ``execute_now`` take this call (rather than return None)? Pure: it runs nothing.
    ``plain`` as in ``execute_now``."""
    found = _in_thread(resolved)
    if found is None:
        return False
    resolved, decide_now = found
    return decide_now(_invocation(call, resolved.tool, parent, plain)) is not None


def execute_now(
    resolved: Resolved | None,
    call: ToolCall,
    *,
    parent: str | None = None,
    abort: AbortSignal | None = None,
    emit: Emit,
    plain: dict[str, JsonValue] | None = None,
    unread: bool = False,
) -> ToolExecutionResult | None:
    """The same pipeline, run in the calling thread, for a call no step of which needs the
    event loop; None (nothing done, nothing emitted) for any other, which ``execute`` runs.

    A script in a worker thread calling a sync tool uses it: the tool runs in the script's
    thread, as it would in one of the loop's worker threads, and no thread is handed the
    call twice. It applies when the tool is sync, no hooks apply and the policy decides
    without an approver (``decide_now``). A timeout or an abort is reported when
    the tool returns (its thread is the script's: it cannot be abandoned), with the same
    code as on the loop. ``emit`` delivers events where listeners expect them (the loop).
    ``plain``: the call's arguments already parsed, detached and owned by this call.
    Events are made only when a listener hears them. ``unread``: the caller reads only the
    value (a script's call); when no listener, span or renderer of the tool's own would
    see the result either, it is a ``PlainSuccess``.
    """
    called = call.name
    found = _in_thread(resolved)
    if found is None:
        return None
    resolved, decide_now = found
    registered = resolved.tool
    started = time.perf_counter()
    invocation = _invocation(call, registered, parent, plain)  # plain: frozen without a parse
    verdict = decide_now(invocation)  # rules only: pure, and the same answer decide gives
    if verdict is None:
        return None
    call_id = call.id
    listened = resolved.listened
    span = start_tool_span(call_id, called, registered.description, call.arguments)
    if listened:
        emit(ToolCallStarted(call_id=call_id, name=called, arguments=call.arguments, parent=parent))
    try:
        if plain is None:
            arguments = _validate_arguments(invocation)
        else:
            arguments = _checked_arguments(invocation, plain)
        if not verdict.allowed:
            raise Rejection(ErrorCode.POLICY_DENIED, verdict.reason or "denied by policy")
        emitting = _EMIT.set(emit if listened else None)
        try:
            with tool_context(span):  # no span: a shared do-nothing context
                raw = _invoke_now(invocation, arguments, abort)
        finally:
            _EMIT.reset(emitting)
        if unread and not listened and span is None and registered.render is None:
            plain_value = _checked_output(invocation, raw)
            # plain, not frozen: the one reader owns it (see PlainSuccess)
            owned = cast(FrozenJson, plain_value)
            result: ToolExecutionResult = PlainSuccess(
                call_id=call_id, name=called, value=owned, content=()
            )
        else:
            result = _render(invocation, _check_output(invocation, raw))
    except Rejection as rejection:
        result = failure(call_id, called, rejection.code, rejection.message)
    if listened or span is not None:
        _finish(emit if listened else None, call_id, called, parent, result, started, span=span)
    return result


def _invoke_now(
    invocation: Invocation, arguments: dict[str, Any], abort: AbortSignal | None
) -> Any:
    if abort is not None and abort.aborted:
        raise Rejection(ErrorCode.ABORTED, f"{invocation.name!r} was aborted ({abort.reason})")
    timeout = invocation.tool.timeout
    began = time.monotonic()
    with _ToolBody(invocation):
        raw = invocation.tool.function(**arguments)
    if (abort is not None and abort.aborted) or (
        timeout is not None and time.monotonic() - began > timeout
    ):
        _refuse_late(invocation, abort)
    return raw


class _ToolBody:
    """Where the tool's own code runs: the current invocation set, its failures mapped.

    A class, not a generator: every call from a script passes through it.
    """

    __slots__ = ("_invocation", "_token")

    def __init__(self, invocation: Invocation) -> None:
        self._invocation = invocation

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._invocation)

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        _CURRENT.reset(self._token)
        if isinstance(error, Exception):  # the tool body's failure, reported to the model
            raise _rejection_of(error) from None


def _rejection_of(error: Exception) -> Rejection:
    if isinstance(error, ToolError):
        return Rejection(error.code, error.message)
    return Rejection(ErrorCode.TOOL_ERROR, _describe_exception(error))


def _refuse_late(invocation: Invocation, abort: AbortSignal | None) -> NoReturn:
    """A call that ended without its result: aborted, or past its timeout."""
    if abort is not None and abort.aborted:
        raise Rejection(ErrorCode.ABORTED, f"{invocation.name!r} was aborted ({abort.reason})")
    timeout = invocation.tool.timeout or 0.0
    raise Rejection(ErrorCode.TIMEOUT, f"{invocation.name!r} did not finish within {timeout:g} s")


async def _run(
    resolved: Resolved, invocation: Invocation, abort: AbortSignal | None
) -> ToolExecutionResult:
    """The steps between resolution and the result, in contract order."""
    arguments = _validate_arguments(invocation)
    await _apply_policy(resolved.policy, invocation)
    if resolved.pre_hooks:
        await _run_pre_hooks(resolved.pre_hooks, invocation)
    raw = await _invoke(invocation, arguments, abort)
    value = _check_output(invocation, raw)
    return _render(invocation, value)


# Steps ---------------------------------------------------------------------------


def _invocation(
    call: ToolCall,
    registered: Tool,
    parent: str | None,
    plain: dict[str, JsonValue] | None = None,
) -> Invocation:
    """The call's invocation; ``plain``: its arguments already parsed and detached."""
    return Invocation(
        call_id=call.id,
        name=call.name,
        arguments=_freeze_arguments(call.arguments) if plain is None else freeze(plain),
        raw_arguments=call.arguments,
        parent=parent,
        tool=registered,
    )


def _freeze_arguments(raw: str) -> Mapping[str, FrozenJson] | FrozenJson:
    return freeze(parse_arguments(raw))


def _validate_arguments(invocation: Invocation) -> dict[str, Any]:
    arguments = invocation.arguments
    if isinstance(arguments, str):
        raise Rejection(
            ErrorCode.INVALID_ARGUMENTS,
            f"arguments are not valid JSON ({_snippet(arguments)}); send a JSON object "
            f"matching the parameters of {invocation.name!r}",
        )
    return _checked_arguments(invocation, thaw(arguments))


def _checked_arguments(invocation: Invocation, plain: JsonValue) -> dict[str, Any]:
    """``plain`` (a copy nobody else holds) against the schema, then bound to the signature.

    A null given for an optional parameter means "not given" (strict-mode models can say
    nothing else), so the default applies.
    """
    tool = invocation.tool
    problem = describe_errors(tool.parameter_validator, plain, plain=tool.parameter_check)
    if problem is not None and drop_optional_nulls(tool.parameter_validator, plain):
        problem = describe_errors(tool.parameter_validator, plain, plain=tool.parameter_check)
    if problem is not None:
        raise Rejection(
            ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for {invocation.name!r}: {problem}"
        )
    assert isinstance(plain, dict)
    try:
        return invocation.tool.bind_arguments(plain)
    except _validation_error() as error:  # evaluated only when a binder raised
        details = "; ".join(
            f"$.{'.'.join(map(str, e['loc']))}: {e['msg']}"
            for e in error.errors(include_url=False)[:3]
        )
        raise Rejection(
            ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for {invocation.name!r}: {details}"
        ) from None


async def _apply_policy(policy: Policy, invocation: Invocation) -> None:
    decide_now = getattr(policy, "decide_now", None)  # answers at once, or None: ask
    verdict = decide_now(invocation) if decide_now is not None else None
    if verdict is None:
        verdict = await policy.decide(invocation)
    if getattr(verdict, "later", False):  # deferred: a durable run suspends at this call
        raise Rejection(ErrorCode.SUSPENDED, verdict.reason or "waits for approval")
    if not verdict.allowed:
        raise Rejection(ErrorCode.POLICY_DENIED, verdict.reason or "denied by policy")


async def _run_pre_hooks(hooks: tuple[PreHook, ...], invocation: Invocation) -> None:
    for hook in hooks:
        veto = hook(invocation)
        if inspect.isawaitable(veto):
            veto = await veto
        if veto:
            raise Rejection(ErrorCode.POLICY_DENIED, str(veto))


async def _invoke(
    invocation: Invocation, arguments: dict[str, Any], abort: AbortSignal | None
) -> Any:
    """Run the tool body in one cancel scope: its deadline is the timeout, abort cancels it."""
    registered = invocation.tool
    timeout = registered.timeout
    if timeout is None and abort is None and registered.is_async:  # nothing to cancel it by
        with _ToolBody(invocation):
            return await registered.function(**arguments)
    deadline = anyio.current_time() + timeout if timeout is not None else math.inf
    with (
        anyio.CancelScope(deadline=deadline) as scope,
        _attached(abort, scope),
        _ToolBody(invocation),
    ):
        if registered.is_async:
            return await registered.function(**arguments)
        call = functools.partial(registered.function, **arguments)
        emit = _EMIT.get()
        if emit is not None:  # the tool's thread reaches listeners through the loop
            _EMIT.set(EventRelay(asyncio.get_running_loop(), emit))
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    _refuse_late(invocation, abort)


def _validation_error() -> type[ValidationError]:
    """pydantic's ValidationError, what a binder raises (pydantic is loaded by then)."""
    from pydantic import ValidationError

    return ValidationError


@dataclass(frozen=True, kw_only=True, slots=True)
class PlainSuccess(ToolExecutionSuccess):
    """A success only its caller reads (a script's call no one else observes): ``value`` is
    the checked output as plain JSON, a copy made for this call that the caller owns, and
    there is no content. Freezing the value, thawing it again for the script and rendering
    its JSON text are each a pass over the whole value, on every call, that nobody reads."""


def owned_value(result: ToolExecutionSuccess) -> JsonValue:
    """A success's value as plain JSON its receiver owns: a ``PlainSuccess``'s as it is (a
    copy made for that call alone), any other's thawed from its frozen value."""
    if type(result) is PlainSuccess:
        return cast(JsonValue, result.value)
    return thaw(result.value)


def _check_output(invocation: Invocation, raw: Any) -> FrozenJson:
    return freeze(_checked_output(invocation, raw))


def _checked_output(invocation: Invocation, raw: Any) -> JsonValue:
    """The tool's output as a plain copy of its own, checked against its output schema."""
    try:
        value = _plain_output(raw)
    except (NotJsonError, ValueError, TypeError) as error:
        raise Rejection(
            ErrorCode.INVALID_OUTPUT,
            f"{invocation.name!r} returned a value with no JSON form: {error}",
        ) from None
    validator = invocation.tool.output_validator
    if validator is not None:
        problem = describe_errors(validator, value, plain=invocation.tool.output_check)
        if problem is not None:
            raise Rejection(
                ErrorCode.INVALID_OUTPUT,
                f"{invocation.name!r} returned output that breaks its schema: {problem}",
            )
    return value


def _plain_output(raw: Any) -> JsonValue:
    """Plain JSON as it is (most tools return it), anything else through pydantic's encoder
    (bytes as base64 text, as a tool's stub says)."""
    try:
        return detach(raw)
    except NotJsonError:
        from pydantic_core import to_jsonable_python

        return detach(to_jsonable_python(_base64_bytes(raw), bytes_mode="base64"))


def _base64_bytes(value: Any, depth: int = 0) -> Any:
    """Bytes (in plain containers too) as standard base64 text, what base64.b64decode reads;
    no deeper than ``detach`` goes (a value nested past it is not JSON, not a crash)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict | list | tuple) and depth > MAX_DEPTH:
        raise NotJsonError("$", f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {key: _base64_bytes(inner, depth + 1) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [_base64_bytes(inner, depth + 1) for inner in value]
    return value


def _render(invocation: Invocation, value: FrozenJson) -> ToolExecutionSuccess:
    registered = invocation.tool
    arguments = invocation.arguments
    try:
        if registered.render is not None and isinstance(arguments, Mapping):
            rendered = registered.render(arguments, value)
        else:
            rendered = render_value(value)  # media in the value reach the model as blocks
    except Exception as error:  # a faulty renderer must not take the call down
        raise Rejection(
            ErrorCode.INVALID_OUTPUT, f"rendering the result failed: {_describe_exception(error)}"
        ) from None
    blocks = (TextBlock(text=rendered),) if isinstance(rendered, str) else tuple(rendered)
    return ToolExecutionSuccess(
        call_id=invocation.call_id,
        name=invocation.name,
        value=value,
        content=bound_content(blocks, registered.max_content_chars),
    )


async def _run_post_hooks(
    resolved: Resolved, invocation: Invocation, result: ToolExecutionResult
) -> ToolExecutionResult:
    for hook in resolved.post_hooks:
        try:
            outcome = hook(invocation, result)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as error:  # a post-hook fault is reported, the call is not lost
            return failure(
                invocation.call_id,
                invocation.name,
                ErrorCode.TOOL_ERROR,
                f"post-hook failed: {_describe_exception(error)}",
            )
    return result


# Helpers -------------------------------------------------------------------------


def bound_content(blocks: Sequence[ContentBlock], limit: int) -> tuple[ContentBlock, ...]:
    """Cut content past ``limit`` characters, saying visibly how much was cut."""
    if len(blocks) == 1 and type(blocks[0]) is TextBlock and len(blocks[0].text) <= limit:
        return tuple(blocks)  # one short text: most results
    total = sum(len(block.text) for block in blocks if isinstance(block, TextBlock))
    if total <= limit:
        return tuple(blocks)  # media are not text: they never count against the limit
    kept: list[ContentBlock] = []
    budget = limit
    for block in blocks:
        if not isinstance(block, TextBlock):
            kept.append(block)
            continue
        if budget <= 0:
            continue
        kept.append(TextBlock(text=block.text[:budget]))
        budget -= len(block.text)
    marker = f"\n[... truncated: showing {limit:,} of {total:,} characters]"
    kept.append(TextBlock(text=marker))
    return tuple(kept)


def _attached(abort: AbortSignal | None, scope: anyio.CancelScope) -> AbstractContextManager[None]:
    return abort.attached(scope) if abort is not None else contextlib.nullcontext()


def _unknown(names: Sequence[str], name: str) -> str:
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    message = f"unknown tool {name!r}."
    if close:
        message += f" Did you mean: {', '.join(close)}?"
    listed = ", ".join(names[:MAX_LISTED_TOOLS]) + (" ..." if len(names) > MAX_LISTED_TOOLS else "")
    return message + (f" Available tools: {listed}" if names else " No tools are registered.")


def _snippet(text: str, limit: int = 80) -> str:
    return json.dumps(text[:limit] + ("..." if len(text) > limit else ""))


def _describe_exception(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _finish(
    emit: Callable[[DispatchEvent], None] | None,
    call_id: str,
    name: str,
    parent: str | None,
    result: ToolExecutionResult,
    started: float,
    *,
    span: Span | None = None,
) -> None:
    """End the call's span and tell listeners (``emit``: None when none listen)."""
    seconds = time.perf_counter() - started
    end_tool_span(span, result)
    if emit is None:
        return
    emit(
        ToolCallFinished(
            call_id=call_id,
            name=name,
            parent=parent,
            is_error=result.is_error,
            code=result.error.code if result.is_error else None,
            seconds=seconds,
            result=result,
        )
    )


# Batches ---------------------------------------------------------------------------


async def execute_many(
    calls: Sequence[ToolCall],
    *,
    run: Callable[[ToolCall], Awaitable[ToolExecutionResult]],
    concurrency_safe: Callable[[ToolCall], bool],
    emit: Emit,
    parent: str | None = None,
    abort: AbortSignal | None = None,
    max_concurrent: int | None = None,
    wait_seconds: float | None = None,
    on_result: Callable[[int, ToolExecutionResult], None] | None = None,
) -> list[ToolExecutionResult]:
    """Concurrency-safe neighbours run together, the others alone, results in call order.

    ``run`` puts one call through the pipeline; ``concurrency_safe`` says whether a call
    may overlap its neighbours; ``emit`` hears the calls that never start.
    ``max_concurrent`` caps how many run at once; ``wait_seconds`` is how long the caller
    waits for each (a script's tool-wait limit): past it, that call ends as TIMEOUT.
    ``on_result(index, result)`` hears each result as it comes (in completion order).
    """
    results: list[ToolExecutionResult | None] = [None] * len(calls)
    slots = anyio.CapacityLimiter(max_concurrent) if max_concurrent else None
    for group in _groups(calls, concurrency_safe):
        if abort is not None and abort.aborted:
            break
        async with anyio.create_task_group() as tasks:
            for index in group:
                tasks.start_soon(
                    _execute_into, run, calls[index], results, index, slots, wait_seconds, on_result
                )
    return [
        result if result is not None else _never_dispatched(call, emit, parent, abort)
        for call, result in zip(calls, results, strict=True)
    ]


async def _execute_into(
    run: Callable[[ToolCall], Awaitable[ToolExecutionResult]],
    call: ToolCall,
    results: list[ToolExecutionResult | None],
    index: int,
    slots: anyio.CapacityLimiter | None = None,
    wait_seconds: float | None = None,
    on_result: Callable[[int, ToolExecutionResult], None] | None = None,
) -> None:
    async with slots if slots is not None else contextlib.nullcontext():
        with anyio.move_on_after(wait_seconds if wait_seconds is not None else math.inf):
            results[index] = await run(call)
    if results[index] is None:
        message = f"the script waited {wait_seconds:g} s for {call.name!r} (its tool-wait limit)"
        results[index] = failure(call.id, call.name, ErrorCode.TIMEOUT, message)
    if on_result is not None:
        result = results[index]
        assert result is not None
        on_result(index, result)


def _groups(
    calls: Sequence[ToolCall], concurrency_safe: Callable[[ToolCall], bool]
) -> list[list[int]]:
    groups: list[list[int]] = []
    for index, call in enumerate(calls):
        if groups and concurrency_safe(call) and concurrency_safe(calls[groups[-1][-1]]):
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _never_dispatched(
    call: ToolCall, emit: Emit, parent: str | None, abort: AbortSignal | None
) -> ToolExecutionResult:
    reason = abort.reason if abort is not None and abort.reason else "aborted"
    result = failure(
        call.id, call.name, ErrorCode.ABORTED, f"tool call aborted before dispatch ({reason})"
    )
    _finish(emit, call.id, call.name, parent, result, time.perf_counter())
    return result


__all__ = [
    "Emit",
    "PlainSuccess",
    "PostHook",
    "PreHook",
    "Rejection",
    "Resolved",
    "bound_content",
    "current_invocation",
    "execute",
    "execute_many",
    "execute_now",
    "owned_value",
    "progress_reporter",
    "report_progress",
    "runs_now",
    "unknown_tool",
]
