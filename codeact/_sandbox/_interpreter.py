"""The sandbox: one session's restricted interpreter, whose names persist across runs."""

from __future__ import annotations

import difflib
import gc
import math
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ErrorCode, ToolError
from .._json import JsonValue, NotJsonError, detach
from ._builtins import safe_builtins
from ._compiler import SCRIPT_FILENAME, compile_script
from ._errors import LimitExceeded, SandboxStop, SecurityViolation
from ._guards import (
    Guards,
    match_class_guard,
    operator_guards,
    reraise_limits,
    script_class_factory,
)
from ._limits import WATCHDOG, Limits, RunMonitor
from ._transformer import RESULT_NAME

ToolCaller = Callable[[str, dict[str, JsonValue]], JsonValue]
ABORTED = "aborted"
_BINDING_KEY = object()
# The module script classes say they belong to: empty, so code that looks a class's
# module up (dataclasses resolving a string annotation) finds nothing of the host.
SCRIPT_MODULE = sys.modules.setdefault("__script__", types.ModuleType("__script__"))
MAX_REPR_CHARS = 2_000
MAX_RESULT_DEPTH = 50
MAX_ERROR_CHARS = 4_000
MAX_KIND_CHARS = 200
MAX_RESULT_CHARS = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """A call a script made: what a failed script already did is shown to the model."""

    name: str
    ok: bool
    code: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptError:
    """Why a run failed, in terms the model can act on."""

    code: str
    message: str
    kind: str = ""
    line: int | None = None
    source_line: str | None = None
    hint: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptOutcome:
    """What one run produced: the last expression's value, output, tool calls, or an error."""

    value: JsonValue = None
    output: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    error: ScriptError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(kw_only=True)
class _Run:
    """Per-run state the guards and bound tools update."""

    limits: Limits
    call_tool: ToolCaller | None
    output: list[str] = field(default_factory=list)
    output_chars: int = 0
    output_truncated: bool = False
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    monitor: RunMonitor | None = None


class BoundTool:
    """A registered tool as a script sees it: a plain function and nothing else."""

    __slots__ = ("_dispatch", "_name", "_parameters")

    def __init__(
        self,
        name: str,
        parameters: tuple[str, ...],
        dispatch: Callable[..., Any],
        key: object = None,
    ) -> None:
        if key is not _BINDING_KEY:
            raise SecurityViolation("tools cannot be constructed from scripts")
        self._name = name
        self._parameters = parameters
        self._dispatch = dispatch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatch(self._name, self._parameters, args, kwargs)

    def __repr__(self) -> str:
        return f"<tool {self._name}({', '.join(self._parameters)})>"

    def __copy__(self) -> BoundTool:
        return self

    def __deepcopy__(self, memo: Any) -> BoundTool:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a tool cannot be pickled")


class Sandbox:
    """A restricted interpreter for one session.

    ``run`` executes in the calling thread, under the watchdog; names a script
    defines stay for the next run until ``reset``.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        modules: frozenset[str] | None = None,
        seed: int | None = None,
    ) -> None:
        from stdlib_bindings._modules import DEFAULT_MODULES

        self.limits = limits or Limits()
        self.modules = frozenset(DEFAULT_MODULES if modules is None else modules)
        self._seed = seed
        self.memory_baseline: int | None = None
        # The garbage generation teardown collects, watched: all of it in a worker (its
        # heap is the session's), the young ones in a host (a full pass costs the host).
        self.teardown_generation = 1
        self._run: _Run | None = None
        self._lock = threading.Lock()
        self.globals: dict[str, Any] = {}
        self.reset()

    # Public ----------------------------------------------------------------------------

    def reset(self) -> None:
        """Tear the session down and start afresh: names, classes, guards and facades.

        What the script left behind (a suspended generator's ``finally``) runs here,
        under the watchdog, not later in whatever thread the garbage collector picks.
        """
        old = getattr(self, "globals", None)
        if old:
            self._teardown(old)
        self.guards = Guards(self.limits)
        from stdlib_bindings._modules import session_facades

        self._facades = {
            name: facade
            for name, facade in session_facades(self.guards, seed=self._seed).items()
            if name in self.modules
        }
        self._builtins = safe_builtins(self.guards, self._import)
        self._operator_guards = operator_guards(self.guards)
        self.globals = {"__builtins__": self._builtins, "__name__": SCRIPT_MODULE.__name__}

    def close(self) -> None:
        """Tear the session down for good."""
        if self.globals:
            self._teardown(self.globals)
        self.globals = {}

    def _teardown(self, scope: dict[str, Any]) -> None:
        with self._lock:
            monitor = RunMonitor(self.limits)
            WATCHDOG.watch(monitor)
            try:
                try:
                    for value in list(scope.values()):
                        if type(value) is types.GeneratorType:
                            value.close()
                    scope.clear()
                    gc.collect(self.teardown_generation)
                except BaseException:
                    scope.clear()
            finally:
                WATCHDOG.unwatch(monitor)

    def user_names(self) -> list[str]:
        """Names scripts have defined, in definition order."""
        return [
            n
            for n, v in self.globals.items()
            if not n.startswith("_") and not isinstance(v, BoundTool)
        ]

    def run(
        self,
        source: str,
        *,
        tools: Mapping[str, tuple[str, ...]] | None = None,
        call_tool: ToolCaller | None = None,
    ) -> ScriptOutcome:
        """Run ``source``; ``tools`` maps each bound tool's name to its parameter order."""
        limits = self.limits
        if len(source) > limits.max_source_chars:
            message = (
                f"the script has {len(source):,} characters (limit {limits.max_source_chars:,})"
            )
            return ScriptOutcome(
                error=ScriptError(code=ErrorCode.CODE_RESOURCE_LIMIT, message=message)
            )
        compiled = compile_script(source, self.modules)
        if compiled.syntax_error is not None:
            return ScriptOutcome(
                error=ScriptError(
                    code=ErrorCode.CODE_SYNTAX_ERROR,
                    message=compiled.syntax_error,
                    kind="SyntaxError",
                )
            )
        if compiled.code is None:
            message = "the script uses what scripts may not:\n" + "\n".join(
                f"  {v}" for v in compiled.violations
            )
            return ScriptOutcome(
                error=ScriptError(code=ErrorCode.CODE_SECURITY_VIOLATION, message=message)
            )
        if not self._lock.acquire(blocking=False):
            message = "another script is still running in this session"
            return ScriptOutcome(
                error=ScriptError(code=ErrorCode.CODE_RUNTIME_ERROR, message=message)
            )
        try:
            return self._execute(compiled.code, source, tools or {}, call_tool)
        finally:
            self._lock.release()

    def abort(self) -> None:
        """Stop the running script, if any, from another thread."""
        run = self._run
        if run is not None and run.monitor is not None and not run.monitor.finished:
            run.monitor.trip(ABORTED)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no script runs here (True), or ``timeout`` passes (False)."""
        if not self._lock.acquire(timeout=timeout):
            return False
        self._lock.release()
        return True

    # Running ----------------------------------------------------------------------------

    def _execute(
        self,
        code: Any,
        source: str,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: ToolCaller | None,
    ) -> ScriptOutcome:
        run = _Run(limits=self.limits, call_tool=call_tool)
        scope = self.globals
        scope.update(self._run_globals(run))
        for name, parameters in tools.items():
            scope[name] = BoundTool(name, parameters, self._call_tool, _BINDING_KEY)
        self._run = run
        value: JsonValue = None
        failure: ScriptError | None = None
        run.monitor = monitor = RunMonitor(self.limits, self.memory_baseline)
        WATCHDOG.watch(monitor)
        try:
            # Everything the script defined runs in here, watched: the script itself, the
            # conversion of its result, the text of its error, and dropping its result.
            try:
                try:
                    exec(code, scope)
                    value = self._result(scope)
                except BaseException as caught:  # everything a script raises ends here
                    failure = self._describe(caught, monitor.tripped, source, scope, tools)
                finally:
                    scope.pop(RESULT_NAME, None)
                    _collect_young_garbage()
            except BaseException as late:  # a limit delivered while wrapping up
                failure = self._describe_late(late, monitor.tripped)
        finally:
            WATCHDOG.unwatch(monitor)
            self._run = None
        if failure is None and monitor.tripped is not None:
            failure = self._describe_late(None, monitor.tripped)
        return ScriptOutcome(
            value=None if failure else value,
            output=self._output(run),
            tool_calls=tuple(run.tool_calls),
            error=failure,
        )

    def _run_globals(self, run: _Run) -> dict[str, Any]:
        guards = self.guards
        return {
            "_getattr_": guards.getattr,
            "_apply_": _apply,
            "_inplacevar_": guards.inplace,
            "_method_": guards.method,
            "_pow_": guards.power,
            "_lshift_": guards.lshift,
            "_format_spec_": guards.format_spec,
            "_reraise_limits_": reraise_limits,
            "_print_": lambda *args, **kwargs: self._print(run, args, kwargs),
            "__metaclass__": script_class_factory(guards),
            "_int_": int,
            "_type_": type,
            "_raw_": guards.raw,
            "_match_class_": match_class_guard(guards),
            **self._operator_guards,
        }

    def _result(self, scope: dict[str, Any]) -> JsonValue:
        if RESULT_NAME not in scope:
            return None
        return plain_result(scope[RESULT_NAME])

    def _print(self, run: _Run, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        unknown = set(kwargs) - {"sep", "end", "file", "flush"}
        if unknown:
            raise TypeError(f"{next(iter(unknown))!r} is an invalid keyword argument for print()")
        if kwargs.get("file") is not None:
            raise SecurityViolation("print(file=...) is not available in scripts")
        sep, end = kwargs.get("sep"), kwargs.get("end")
        for name, given in (("sep", sep), ("end", end)):
            if given is not None and type(given) is not str:
                raise TypeError(f"{name} must be None or a string, not {type(given).__name__}")
        sep = " " if sep is None else sep
        parts = [str(a) for a in args]
        room = run.limits.max_output_chars - run.output_chars
        if sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0) > room:  # before joining
            text = sep.join(p[: room + 1] for p in parts)[: room + 1]
        else:
            text = sep.join(parts)
        text += "\n" if end is None else end
        room = run.limits.max_output_chars - run.output_chars
        if len(text) > room:
            run.output.append(text[: max(room, 0)])
            run.output_chars += max(room, 0)
            run.output_truncated = True
            raise LimitExceeded(
                "output", f"the script printed more than {run.limits.max_output_chars:,} characters"
            )
        run.output.append(text)
        run.output_chars += len(text)

    def _output(self, run: _Run) -> str:
        text = "".join(run.output)
        if run.output_truncated:
            text += f"\n[... output truncated at {run.limits.max_output_chars:,} characters]"
        return text

    # Tools -------------------------------------------------------------------------------

    def _call_tool(
        self, name: str, parameters: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        run = self._run
        if run is None or run.call_tool is None:
            raise ToolError(f"tool {name!r} is not callable outside a run", ErrorCode.ABORTED)
        if len(run.tool_calls) >= run.limits.max_tool_calls:
            raise LimitExceeded(
                "tool calls", f"the script made more than {run.limits.max_tool_calls:,} tool calls"
            )
        arguments = _bind(name, parameters, args, kwargs)
        monitor = run.monitor
        if monitor is not None:
            monitor.pause()
        try:
            value = run.call_tool(name, arguments)
        except ToolError as error:
            run.tool_calls.append(ToolCallRecord(name=name, ok=False, code=error.code))
            raise ToolError(error.message, error.code) from None
        finally:
            if monitor is not None:
                monitor.resume()
        run.tool_calls.append(ToolCallRecord(name=name, ok=True))
        return value

    def _import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if type(fromlist) is list:  # an import made by C code itself (datetime.strptime)
            return __import__(name, None, None, fromlist, level)
        facade = self._facades.get(name)
        if facade is None or level != 0:
            raise SecurityViolation(f"module {name!r} is not available in scripts")
        return facade

    # Errors --------------------------------------------------------------------------------

    def _describe_late(self, error: BaseException | None, tripped: str | None) -> ScriptError:
        """A limit that arrived after the script's own error handling: no script code runs."""
        if tripped == ABORTED:
            return ScriptError(code=ErrorCode.ABORTED, message="the script was aborted")
        if tripped is not None:
            message = f"the script exceeded its {tripped} limit"
        elif isinstance(error, LimitExceeded):
            message = error.message
        else:
            message = f"the script failed while its result was prepared ({type(error).__name__})"
        return ScriptError(code=ErrorCode.CODE_RESOURCE_LIMIT, message=message)

    def _describe(
        self,
        error: BaseException | None,
        tripped: str | None,
        source: str,
        scope: dict[str, Any],
        tools: Mapping[str, tuple[str, ...]],
    ) -> ScriptError:
        line = _script_line(error) if error is not None else None
        source_line = _source_line(source, line)
        if tripped == ABORTED:
            return ScriptError(
                code=ErrorCode.ABORTED,
                message="the script was aborted",
                line=line,
                source_line=source_line,
            )
        if tripped is not None:
            message = f"the script exceeded its {tripped} limit"
            waited = self._run.monitor.waited if self._run and self._run.monitor else 0.0
            if waited >= 0.001 and tripped.startswith("wall"):
                message += f" (its {waited:.1f} s waiting for tools did not count)"
            return ScriptError(
                code=ErrorCode.CODE_RESOURCE_LIMIT,
                message=message,
                line=line,
                source_line=source_line,
            )
        assert error is not None
        if isinstance(error, LimitExceeded):
            code, message = ErrorCode.CODE_RESOURCE_LIMIT, error.message
        elif isinstance(error, RecursionError):
            code, message = (
                ErrorCode.CODE_RESOURCE_LIMIT,
                "recursion depth limit: maximum recursion depth exceeded",
            )
        elif isinstance(error, MemoryError):
            code, message = (
                ErrorCode.CODE_RESOURCE_LIMIT,
                "memory limit: the script ran out of memory",
            )
        elif isinstance(error, SecurityViolation):
            code, message = ErrorCode.CODE_SECURITY_VIOLATION, error.message
        elif isinstance(error, SandboxStop):
            code, message = ErrorCode.CODE_RUNTIME_ERROR, error.message
        elif isinstance(error, ToolError):
            code, message = (
                ErrorCode.CODE_RUNTIME_ERROR,
                f"ToolError [{error.code}]: {error.message}",
            )
        else:
            code, message = ErrorCode.CODE_RUNTIME_ERROR, _exception_text(error)
        hint = _hint(error, scope, tools)
        return ScriptError(
            code=code,
            message=_bounded(message),
            kind=_bounded(str(type(error).__name__), MAX_KIND_CHARS),
            line=line,
            source_line=source_line,
            hint=hint,
        )


def plain_result(value: Any, budget: list[int] | None = None, depth: int = 0) -> JsonValue:
    """A script's value as plain JSON, leaf by leaf; what has no JSON form becomes its repr.

    Runs inside the sandbox, under the run's limits, so a script's ``__repr__``
    never runs in the host; ``budget`` bounds the characters of the whole result, so
    one string referenced a thousand times cannot cost the host a thousand copies.
    """
    if budget is None:
        budget = [MAX_RESULT_CHARS]
    kind = type(value)
    if kind is str:
        _spend(budget, len(value))
        return detach(value)
    if value is None or kind in (bool, int) or (kind is float and math.isfinite(value)):
        _spend(budget, 8)
        return detach(value)
    if depth < MAX_RESULT_DEPTH:
        if kind in (list, tuple):
            _spend(budget, len(value))
            return [plain_result(item, budget, depth + 1) for item in value]
        if kind is dict:
            _spend(budget, len(value))
            return {
                key if type(key) is str else _short_repr(key): plain_result(item, budget, depth + 1)
                for key, item in value.items()
            }
    text = _short_repr(value)
    _spend(budget, len(text))
    return text


def _spend(budget: list[int], chars: int) -> None:
    budget[0] -= chars
    if budget[0] < 0:
        raise LimitExceeded(
            "result size", f"the result is larger than {MAX_RESULT_CHARS:,} characters"
        )


def _short_repr(value: Any) -> str:
    text = repr(value)
    if type(text) is not str:
        text = str.__str__(text)
    return text if len(text) <= MAX_REPR_CHARS else text[:MAX_REPR_CHARS] + "..."


def _apply(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


def _bind(
    name: str, parameters: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, JsonValue]:
    if len(args) > len(parameters):
        raise TypeError(
            f"{name}() takes {len(parameters)} positional arguments but {len(args)} were given"
        )
    arguments: dict[str, Any] = dict(zip(parameters, args, strict=False))
    for key, value in kwargs.items():
        if key in arguments:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        arguments[key] = value
    try:
        plain = detach(arguments)
    except NotJsonError as error:
        raise TypeError(
            f"{name}(): {error.reason} (at {error.path.replace('$', 'arguments', 1)})"
        ) from None
    assert isinstance(plain, dict)
    return plain


def _script_line(error: BaseException) -> int | None:
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _source_line(source: str, line: int | None) -> str | None:
    if line is None:
        return None
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else None


def _exception_text(error: BaseException) -> str:
    """The error as CPython prints it; a script's ``__str__`` runs here, watched."""
    text = str(error)
    if type(text) is not str:
        text = str.__str__(text)
    name = str(type(error).__name__)
    return f"{name}: {_bounded(text)}" if text else name


def _bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit:,} more characters]"


def _collect_young_garbage() -> None:
    """Cycles the run made are collected while it is still watched (young generations only)."""
    gc.collect(1)


def _hint(
    error: BaseException, scope: dict[str, Any], tools: Mapping[str, tuple[str, ...]]
) -> str | None:
    missing = getattr(error, "name", None)
    if isinstance(error, NameError) and isinstance(missing, str):
        known = [n for n in scope if not n.startswith("_")] + list(tools)
        known += [n for n in scope["__builtins__"] if not n.startswith("_")]
        close = difflib.get_close_matches(missing, known, n=3, cutoff=0.6)
        if close:
            return f"did you mean: {', '.join(close)}?"
        if tools:
            return f"bound tools: {', '.join(sorted(tools))}"
    if isinstance(error, ToolError):
        return "catch ToolError in the script to handle a failed tool call"
    return None


sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))

__all__ = ["BoundTool", "Sandbox", "ScriptError", "ScriptOutcome", "ToolCallRecord", "ToolCaller"]
