"""The sandbox: one session's restricted interpreter, whose names persist across runs."""

from __future__ import annotations

import asyncio
import decimal
import difflib
import gc
import inspect
import logging
import math
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..contract._exceptions import ErrorCode, ToolError
from ..contract._json import JsonValue, NotJsonError, detach
from ._async import (
    NOT_AWAITABLE,
    BatchCaller,
    run_coroutine,
    running_script_loop,
    tool_failure,
)
from ._brief import BRIEF_BUILTINS, BRIEF_VALUE_TYPES
from ._builtins import check_count, safe_builtins
from ._compiler import SCRIPT_FILENAME, SCRIPT_FILES, compile_script
from ._errors import (
    LimitExceeded,
    LimitInterrupt,
    SandboxStop,
    SecurityViolation,
    raised_by_script,
    stop_in_flight,
    unwatch_stops,
    watch_stops,
)
from ._guards import (
    Builtin,
    Guards,
    match_class_guard,
    operator_guards,
    reraise_limits,
    script_class_factory,
)
from ._library import NO_LIBRARY, ScriptLibrary
from ._limits import (
    ABORTED,
    HANDED_BACK,
    WATCHDOG,
    Limits,
    RunMonitor,
    StopFlag,
    quiet_late_interrupts,
    release_free_memory,
)
from ._outcome import (
    MAX_RESULT_CHARS,
    MAX_RESULT_DEPTH,
    SCALAR_CHARS,
    ScriptError,
    ScriptOutcome,
    ToolCallRecord,
)
from ._ownership import SCOPE_KEY, SCOPE_MARK, is_internal_name
from ._pending import CALLS, Pending, PreviewStop, marked, refuse_forged_mark
from ._printed import Printed
from ._script_classes import swap_class_builder
from ._sealed import seal_module_classes
from ._string_code import given_namespace, string_code_builtins
from ._transformer import RESULT_NAME

ToolCaller = Callable[[str, dict[str, JsonValue]], JsonValue]
# Many calls at once (a script's asyncio.gather): one answer per call, a value or a ToolError.
ToolBatchCaller = BatchCaller
_BINDING_KEY = object()
_UNBOUND = object()  # a name a brief run bound that was not bound before it
# How long a brief run may take where its caller is before it is handed back; the
# watchdog looks every POLL_SECONDS, so it is stopped within one look after.
BRIEF_MOMENT_SECONDS = 0.002
# What a script sees as its module's name: it runs as the main program does.
SCRIPT_MODULE_NAME = "__main__"
MAX_REPR_CHARS = 2_000
MAX_ERROR_CHARS = 4_000
OUT_OF_MEMORY = "memory limit: the script ran out of memory"
MAX_KIND_CHARS = 200


@dataclass(kw_only=True)
class _Run:
    """Per-run state the guards and bound tools update."""

    limits: Limits
    call_tool: ToolCaller | None
    call_tools: ToolBatchCaller | None = None
    output: Printed
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    # A succeeded call's record, by tool name: records are immutable, so each is made once.
    succeeded: dict[str, ToolCallRecord] = field(default_factory=dict)
    monitor: RunMonitor | None = None
    on_output: Callable[[str], None] | None = None


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

    def _awaitable(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call as a coroutine: what ``await tool(...)`` and ``gather(tool(...))`` run."""
        return self._dispatch(self._name, self._parameters, args, kwargs, True)

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


_SEALED: set[int] = set()  # the libraries whose classes are sealed (0: the sandbox's own)
_SEALING = threading.Lock()


def _seal_shared_classes(library: ScriptLibrary) -> None:
    """Every class of the interpreter and of a library's facades is one object for all
    sessions: sealed once, before the first script runs, so no write to it lands (see
    _sealed)."""
    if id(library) in _SEALED:
        return
    with _SEALING:
        if 0 not in _SEALED:
            own = [
                module
                for name, module in list(sys.modules.items())
                if name.startswith("codeact.sandbox.") or name == "codeact.contract._exceptions"
            ]
            seal_module_classes(own)
            _SEALED.add(0)
        seal_module_classes(library.shared_modules())
        _SEALED.add(id(library))


class _RunScope:
    """What holds for the length of one run, in its thread: the first stop made dooms the
    run (see ``stop_in_flight``), and the decimal context is the session's (the thread's
    own restored after: a script's precision never reaches the host's arithmetic, nor
    another session's, and its exponents stay within what scripts may make), and the
    classes a module's functional form makes are this session's."""

    __slots__ = ("_builder", "_sandbox", "_saved")

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    def __enter__(self) -> None:
        sandbox = self._sandbox
        self._saved = decimal.getcontext()
        if sandbox.decimal_context is None:
            sandbox.decimal_context = sandbox.library.decimal_context()
        decimal.setcontext(sandbox.decimal_context)
        # a module's functional forms (Enum('Color', 'RED GREEN')) make this session's classes
        self._builder = swap_class_builder(sandbox.guards.new_class)
        run = sandbox._run
        watch_stops(None if run is None else run.monitor)

    def __exit__(self, *details: object) -> None:
        unwatch_stops()
        swap_class_builder(self._builder)
        sandbox = self._sandbox
        current = decimal.getcontext()
        if current is not sandbox.decimal_context:  # the script set one of its own
            sandbox.decimal_context = sandbox.library.decimal_context(
                current, sandbox.decimal_context
            )
        decimal.setcontext(self._saved)


class Sandbox:
    """A restricted interpreter for one session.

    ``run`` executes in the calling thread, under the watchdog; names a script
    defines stay for the next run until ``reset``. ``library`` makes the modules scripts
    may import (``codeact.stdlib``'s facades, handed over by the executors); without one
    scripts import nothing.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        library: ScriptLibrary = NO_LIBRARY,
        modules: frozenset[str] | None = None,
        seed: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.library = library
        self.modules = frozenset(library.default_modules if modules is None else modules)
        self._seed = seed
        self.environ = dict(environ or {})  # what os.environ shows scripts: nothing by default
        self.memory_baseline: int | None = None
        # The garbage generation teardown collects, watched: all of it in a worker (its
        # heap is the session's), the young ones in a host (a full pass costs the host).
        self.teardown_generation = 1
        self._run: _Run | None = None
        self._out_of_memory = False  # the last run ended at the memory limit
        self._lock = threading.Lock()
        self.globals: dict[str, Any] = {}
        quiet_late_interrupts()  # an interrupt landing in a host finalizer is not a fault
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
        self.decimal_context: Any = None  # the session's, made in its first run
        self._facades = {
            name: facade
            for name, facade in self.library.session_facades(
                self.guards, seed=self._seed, environ=self.environ
            ).items()
            if name in self.modules
        }
        _seal_shared_classes(self.library)  # after the first facades named their classes
        self._builtins = safe_builtins(self.guards, self._import)
        self._builtins["globals"] = Builtin(self._globals_snapshot, "globals")
        self._builtins["locals"] = Builtin(self._locals_snapshot, "locals")
        # vars() and dir() with no argument read the calling frame's names, as locals() does
        self._builtins["vars"] = Builtin(self._vars, "vars")
        self._builtins["dir"] = Builtin(self._dir, "dir")
        self._builtins["input"] = Builtin(self._input, "input")
        self._builtins.update(string_code_builtins(self.limits))
        # print() finds the run it prints into: a function exec made keeps a copy of the
        # scope's guards, which must still print into the run that calls it later
        self._print_builtin = Builtin(self._print_in_run, "print")
        self._operator_guards = operator_guards(self.guards)
        self._stable_run_globals: dict[str, Any] | None = None
        self.guards.run_coroutine = self._run_coroutine
        self.guards.emit = self._emit
        self.guards.emit_error = self._emit_error
        self.globals = {
            "__builtins__": self._builtins,
            "__name__": SCRIPT_MODULE_NAME,
            "__doc__": None,  # a script that opens with a docstring binds it, as a module does
            SCOPE_KEY: SCOPE_MARK,
        }

    def close(self) -> None:
        """Tear the session down for good."""
        if self.globals:
            self._teardown(self.globals)
        self.globals = {}

    def _teardown(self, scope: dict[str, Any]) -> None:
        with self._lock:
            monitor = RunMonitor(self.limits)
            try:
                try:
                    WATCHDOG.watch(monitor)  # see _execute: watched from inside the handler
                    for value in list(scope.values()):
                        if type(value) in (types.GeneratorType, types.CoroutineType):
                            value.close()
                    scope.clear()
                    gc.collect(self.teardown_generation)
                except BaseException:
                    scope.clear()
            finally:
                while True:  # see _execute: an interrupt due now lands as unwatch begins
                    try:
                        WATCHDOG.unwatch(monitor)
                        break
                    except LimitInterrupt:
                        continue

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
        call_tools: ToolBatchCaller | None = None,
        on_output: Callable[[str], None] | None = None,
        stop: StopFlag | threading.Event | None = None,
    ) -> ScriptOutcome:
        """Run ``source``; ``tools`` maps each bound tool's name to its parameter order.

        ``call_tools`` answers the calls async code makes together in one crossing;
        without it they are answered one by one through ``call_tool``. ``on_output`` is
        given the text of each print as the script prints it (in the script's thread).
        ``stop``, once set, aborts the run, even one that had not begun when it was set
        (a caller cancelled while the run waited its turn).
        """
        limits = self.limits
        if len(source) > limits.max_source_chars:
            message = (
                f"the script has {len(source):,} characters (limit {limits.max_source_chars:,})"
            )
            return ScriptOutcome(
                error=ScriptError(code=ErrorCode.CODE_RESOURCE_LIMIT, message=message)
            )
        compiled = compile_script(source)
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
            outcome = self._execute(
                compiled.code, source, tools or {}, call_tool, call_tools, on_output, stop
            )
        finally:
            self._lock.release()
        assert outcome is not None  # without a moment, nothing is handed back
        if self.memory_baseline is None and self._out_of_memory:
            return self._freed(outcome)
        return outcome

    def run_brief(
        self,
        source: str,
        *,
        tools: Mapping[str, tuple[str, ...]],
        on_output: Callable[[str], None] | None = None,
        moment: float | None = None,
    ) -> ScriptOutcome | None:
        """Run ``source`` in the calling thread if it is brief (see _brief); None, with
        nothing done, when it is not, or when it outlasted ``moment`` (the watchdog stops
        it within a poll after; ``BRIEF_MOMENT_SECONDS`` unless given): its names are then
        put back, its prints never shown, and ``run`` runs it from the start. Its prints
        reach ``on_output`` once it has ended."""
        if len(source) > self.limits.max_source_chars:
            return None
        compiled = compile_script(source)
        shape = compiled.brief
        if shape is None or compiled.code is None:
            return None
        scope, builtins = self.globals, self._builtins
        for name in shape.reads:
            if name in tools:
                return None  # a tool call: the host sees it before the run ends
            if name in scope:
                kind = type(scope[name])
                # by identity: no type's own __eq__ runs here
                if not any(kind is allowed for allowed in BRIEF_VALUE_TYPES):
                    return None  # a session object the run could change halfway
            elif name in builtins and name not in BRIEF_BUILTINS:
                return None
        kept = {name: scope.get(name, _UNBOUND) for name in shape.binds}
        printed: list[str] = []
        if not self._lock.acquire(blocking=False):
            return None
        try:
            outcome = self._execute(
                compiled.code,
                source,
                tools,
                None,
                on_output=printed.append if on_output is not None else None,
                moment=BRIEF_MOMENT_SECONDS if moment is None else moment,
            )
        finally:
            self._lock.release()
        if outcome is None:  # outlasted its moment: as if it had never run
            for name, value in kept.items():
                if value is _UNBOUND:
                    scope.pop(name, None)
                else:
                    scope[name] = value
            return None
        for text in printed:
            self._tell(on_output, text)
        if self.memory_baseline is None and self._out_of_memory:
            return self._freed(outcome)
        return outcome

    def _freed(self, outcome: ScriptOutcome) -> ScriptOutcome:
        """In a host process, a run that hit the memory limit leaves the session empty.

        The limit there is what a run adds to the process, so what a failed run kept in
        its names would count against no later run: retried, a script that keeps a partial
        allocation would hold the limit again and again. A worker counts its whole
        memory instead, and keeps its names. The memory goes back to the system too, so
        the host does not stay at its high-water mark."""
        self.reset()
        release_free_memory()
        error = outcome.error
        assert error is not None
        note = "; the session's names were cleared to give its memory back"
        return replace(outcome, error=replace(error, message=error.message + note))

    def abort(self) -> None:
        """Stop the running script, if any, from another thread."""
        run = self._run
        if run is not None and run.monitor is not None and not run.monitor.finished:
            run.monitor.request_stop()  # delivered by the watchdog, where a run takes it

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
        call_tools: ToolBatchCaller | None = None,
        on_output: Callable[[str], None] | None = None,
        stop: StopFlag | threading.Event | None = None,
        moment: float | None = None,
    ) -> ScriptOutcome | None:
        """The run; None when it was given a ``moment`` and outlasted it."""
        run = _Run(
            limits=self.limits,
            call_tool=call_tool,
            call_tools=call_tools,
            on_output=on_output,
            output=Printed(self.limits.max_output_chars),
        )
        scope = self.globals
        self._put_run_globals(scope)
        # a redirect a script left open does not take the next run's output with it
        self.guards.stdout_targets.clear()
        self.guards.stderr_targets.clear()
        for name, parameters in tools.items():
            scope[name] = BoundTool(name, parameters, self._call_tool, _BINDING_KEY)
        self._run = run
        value: JsonValue = None
        failure: ScriptError | None = None
        run.monitor = monitor = RunMonitor(self.limits, self.memory_baseline, stop, moment)
        # A host loop running in this thread is hidden for the run: the only loop a
        # script can ever schedule on is its own (asyncio's futures and callbacks would
        # otherwise run script code on the host's loop, unwatched).
        host_loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        depth = _ScriptDepth(brief=moment is not None)
        depth.raise_limit()
        try:
            # Setting the run's scope up and putting it away is host code: done unwatched,
            # so no interrupt (a limit, an abort, a brief run's moment) can land in it and
            # leave it half done, or escape the run.
            with _RunScope(self):
                try:
                    # Everything the script defined runs in here, watched: the script
                    # itself, the conversion of its result, the text of its error, and
                    # dropping its result. A stop due at the watchdog's first look may land
                    # as watch returns: watching starts inside the handler, so it ends the
                    # run as any stop does.
                    try:
                        try:
                            WATCHDOG.watch(monitor)
                            started = eval(code, scope)  # a coroutine if it awaits at top level
                            if code.co_flags & inspect.CO_COROUTINE:
                                self._run_coroutine(started)
                            value = self._result(scope)
                            doom = stop_in_flight()
                            if doom is not None:  # swallowed on the way out: it ends the run
                                raise doom
                        except BaseException as caught:  # everything a script raises ends here
                            # what a finally raised in front of a stop is not the run's fate
                            fate = stop_in_flight() or caught
                            failure = self._describe(fate, monitor.tripped, source, scope, tools)
                        finally:
                            scope.pop(RESULT_NAME, None)
                            _collect_young_garbage()
                    except BaseException as late:  # a limit delivered while wrapping up
                        failure = self._describe_late(late, monitor.tripped)
                finally:
                    # An interrupt due now is delivered as unwatch begins, at its first
                    # instruction, before any handler of its own: taken here, and unwatch
                    # (which consumes any still pending) is called again.
                    while True:
                        try:
                            WATCHDOG.unwatch(monitor)
                            break
                        except LimitInterrupt:
                            continue
        finally:
            depth.put_back()
            asyncio.events._set_running_loop(host_loop)
            self._run = None
        if monitor.tripped == HANDED_BACK:
            return None
        if failure is None and monitor.tripped is not None:
            failure = self._describe_late(None, monitor.tripped)
        self._out_of_memory = failure is not None and (
            (monitor.tripped or "").startswith("memory") or failure.message == OUT_OF_MEMORY
        )
        return ScriptOutcome(
            value=None if failure else value,
            output=self._output(run),
            tool_calls=tuple(run.tool_calls),
            error=failure,
        )

    def _put_run_globals(self, scope: dict[str, Any]) -> None:
        """The guards a run's scope holds, put back before every run. The same objects each
        time, made once; only the class-pattern guard is new per run (its stand-ins, made
        for the script's classes, are kept no longer than the run)."""
        stable = self._stable_run_globals
        if stable is None:
            guards = self.guards
            stable = self._stable_run_globals = {
                "_getattr_": guards.getattr,
                "_inplacevar_": guards.inplace,
                "_method_": guards.method,
                "_pow_": guards.power,
                "_lshift_": guards.lshift,
                "_format_spec_": guards.format_spec,
                "_reraise_limits_": reraise_limits,
                # a builtin as CPython shows it; a call error names it "print()"
                "_print_": self._print_builtin,
                "__metaclass__": script_class_factory(guards),
                "_int_": int,
                "_type_": type,
                "_super_": guards.super_of,
                "_raw_": guards.raw,
                "_acall_": self._async_call,
                **self._operator_guards,
            }
        scope.update(stable)
        scope["_match_class_"] = match_class_guard(self.guards)

    def _result(self, scope: dict[str, Any]) -> JsonValue:
        if RESULT_NAME not in scope:
            return None
        return plain_result(scope[RESULT_NAME])

    def _print_in_run(self, *args: Any, **kwargs: Any) -> None:
        run = self._run
        if run is not None:  # between runs (a generator's finally at teardown) no one reads
            self._print(run, args, kwargs)

    def _input(self, *prompt: Any) -> str:
        """``input()``: a script has no standard input, so it reads end-of-file, as CPython
        does with standard input closed (after printing the prompt, as CPython does)."""
        check_count("input", prompt, 0, 1)
        if prompt:
            self._print_in_run(prompt[0], end="")
        raise EOFError("EOF when reading a line")

    def _print(self, run: _Run, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        unknown = set(kwargs) - {"sep", "end", "file", "flush"}
        if unknown:
            raise TypeError(f"'{next(iter(unknown))}' is an invalid keyword argument for print()")
        sep, end = kwargs.get("sep"), kwargs.get("end")
        for name, given in (("sep", sep), ("end", end)):
            if given is not None and type(given) is not str:
                raise TypeError(f"{name} must be None or a string, not {type(given).__name__}")
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        target = kwargs.get("file")
        if target is None and self.guards.stdout_targets:  # in contextlib.redirect_stdout
            target = self.guards.stdout_targets[-1][0]
            if target is None:  # redirect_stdout(None): nothing is printed, as in CPython
                return None
        if target is not None:
            return self._print_to(target, args, sep, end)
        self._print_here(run, args, sep, end)

    def _print_here(self, run: _Run, args: tuple[Any, ...], sep: str, end: str) -> None:
        """Printed text into the run's output."""
        parts = [str(a) for a in args]
        room = run.limits.max_printed_chars - run.output.total
        if sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0) > room:  # before joining
            text = sep.join(p[: room + 1] for p in parts)[: room + 1]
        else:
            text = sep.join(parts)
        text += end
        if len(text) > room:  # a print loop's flood: the run ends, with what it kept
            run.output.add(text[: max(room, 0)])
            self._forward(run, text[: max(room, 0)])
            limit = run.limits.max_printed_chars
            raise LimitExceeded("output", f"the script printed more than {limit:,} characters")
        run.output.add(text)
        self._forward(run, text)

    @staticmethod
    def _tell(listener: Callable[[str], None] | None, text: str) -> None:
        """Printed text to the host's listener; its failure is logged, never the run's."""
        if listener is None or not text:
            return
        try:
            listener(text)
        except Exception:
            logging.getLogger("codeact").exception("an output listener failed")

    @staticmethod
    def _forward(run: _Run, text: str) -> None:
        """Printed text to the host's listener, as it is printed. Host code runs here, so
        the run is paused (no interrupt lands in it), and its failure is never raised into
        the script (a host exception, frames and all, is what an escape starts from)."""
        listener = run.on_output
        if listener is None or not text:
            return
        monitor = run.monitor
        if monitor is not None:
            monitor.pause()
        try:
            Sandbox._tell(listener, text)
        finally:
            if monitor is not None:
                monitor.resume()

    def _emit(self, text: str) -> None:
        """Text a facade prints (pprint.pprint, sys.stdout), where the script's print goes."""
        run = self._run
        if run is None:
            raise RuntimeError("not inside a script run")
        self._print(run, (text,), {"end": ""})

    def _emit_error(self, text: str) -> None:
        """Text written to ``sys.stderr`` (logging's, a traceback's): to redirect_stderr's
        target while one runs, else beside what the script prints."""
        targets = self.guards.stderr_targets
        if targets:
            target = targets[-1][0]
            if target is not None:  # redirect_stderr(None) silences the stream
                self.guards.getattr(target, "write")(text)
            return
        run = self._run
        if run is None:
            raise RuntimeError("not inside a script run")
        self._print_here(run, (text,), " ", "")

    def _print_to(self, target: Any, args: tuple[Any, ...], sep: str, end: str) -> None:
        """``print(..., file=f)``: written through ``f.write``, read like any attribute, a
        piece at a time as CPython's print writes (each value, each separator, the end)."""
        write = self.guards.getattr(target, "write")
        for index, value in enumerate(args):
            if index:
                write(sep)
            write(str(value))
        write(end)

    def _output(self, run: _Run) -> str:
        return run.output.text()

    # Tools -------------------------------------------------------------------------------

    def _call_tool(
        self,
        name: str,
        parameters: tuple[str, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        asynchronous: bool = False,
    ) -> Any:
        run = self._run
        if run is None or run.call_tool is None:
            raise ToolError(f"tool {name!r} is not callable outside a run", ErrorCode.ABORTED)
        if len(run.tool_calls) >= run.limits.max_tool_calls:
            raise LimitExceeded(
                "tool calls", f"the script made more than {run.limits.max_tool_calls:,} tool calls"
            )
        arguments = _bind(name, parameters, args, kwargs)
        if asynchronous:
            return _awaited_call(name, arguments)
        monitor = run.monitor
        if monitor is not None:
            monitor.pause()
        failed: ToolError | None = None
        answered = False
        try:
            value = run.call_tool(name, arguments)
            answered = True
        except ToolError as error:
            failed = error
        finally:
            # recorded before the clocks resume: a limit delivered then still lists the call
            if answered:
                record = run.succeeded.get(name)
                if record is None:
                    record = run.succeeded[name] = ToolCallRecord(name=name, ok=True)
                run.tool_calls.append(record)
            elif failed is not None:
                run.tool_calls.append(ToolCallRecord(name=name, ok=False, code=failed.code))
            if monitor is not None:
                monitor.resume()
        if failed is not None:
            raise ToolError(failed.message, failed.code) from None
        return value

    def _globals_snapshot(self) -> dict[str, Any]:
        """``globals()``: a copy of the calling script frame's module names (the session's, or
        those ``exec`` was given), without the guards (never the live dict, whose guard
        entries a script could rebind)."""
        frame = sys._getframe(2)  # past the Builtin that holds this method
        scope = frame.f_globals if frame.f_code.co_filename in SCRIPT_FILES else self.globals
        given = given_namespace(scope)  # code given a dict by exec: that dict, as CPython's
        if given is not None:
            return given
        return {k: v for k, v in scope.items() if not is_internal_name(k)}

    def _locals_snapshot(self) -> dict[str, Any]:
        """``locals()``: a copy of the calling script frame's names; no other frame's (the
        dict exec was given, where code runs in one)."""
        frame = sys._getframe(2)  # past the Builtin
        optimized = frame.f_code.co_flags & inspect.CO_OPTIMIZED  # a function: its names a copy
        if frame.f_code.co_filename in SCRIPT_FILES and not optimized:
            given = given_namespace(frame.f_locals)  # a module or class body's own dict
            if given is not None:
                return given
        return self._frame_names(frame, "locals()")

    def _vars(self, *obj: Any) -> dict[str, Any]:
        """``vars()`` is ``locals()``; ``vars(x)`` the guard's."""
        if not obj:
            return self._frame_names(sys._getframe(2), "vars()")
        check_count("vars", obj, 0, 1)
        return self.guards.vars(obj[0])

    def _dir(self, *obj: Any) -> list[str]:
        """``dir()`` lists the calling frame's names, sorted; ``dir(x)`` is the guard's."""
        if not obj:
            return sorted(self._frame_names(sys._getframe(2), "dir()"))
        check_count("dir", obj, 0, 1)
        return self.guards.dir(obj[0])

    @staticmethod
    def _frame_names(frame: Any, what: str) -> dict[str, Any]:
        """A copy of a script frame's names, without the guards' (never a host frame's)."""
        if frame.f_code.co_filename not in SCRIPT_FILES:  # called through a host function
            raise SecurityViolation(f"{what} is only available called from script code")
        return {k: v for k, v in frame.f_locals.items() if not is_internal_name(k)}

    def _async_call(self, function: Any, /, *args: Any, **kwargs: Any) -> Any:
        """A call written where async code waits for it: a tool's becomes awaitable."""
        if type(function) is BoundTool:
            return function._awaitable(args, kwargs)
        return function(*args, **kwargs)

    def _run_coroutine(self, coroutine: Any) -> Any:
        """Run a script's coroutine on a loop of its own (top-level await, ``asyncio.run``)."""
        if running_script_loop() is not None:
            coroutine.close()
            raise RuntimeError("asyncio.run() cannot be called from a running event loop")
        run = self._run
        monitor = run.monitor if run is not None else None
        return run_coroutine(
            coroutine,
            (lambda: monitor.tripped) if monitor is not None else (lambda: None),
            self._call_tools,
        )

    def _call_tools(self, batch: list[tuple[str, dict[str, JsonValue]]]) -> list[Any]:
        """The calls async code made together: one crossing to the host, answers in order."""
        run = self._run
        if run is None or run.call_tool is None:
            raise ToolError("tools are not callable outside a run", ErrorCode.ABORTED)
        if len(run.tool_calls) + len(batch) > run.limits.max_tool_calls:
            raise LimitExceeded(
                "tool calls", f"the script made more than {run.limits.max_tool_calls:,} tool calls"
            )
        monitor = run.monitor
        if monitor is not None:
            monitor.pause()
        results: list[Any] = []
        try:
            if run.call_tools is not None:
                answers = run.call_tools(batch)
            else:
                answers = [_answer_of(run.call_tool, name, arguments) for name, arguments in batch]
            for (name, _), answer in zip(batch, answers, strict=True):
                if isinstance(answer, ToolError):
                    run.tool_calls.append(ToolCallRecord(name=name, ok=False, code=answer.code))
                    results.append(tool_failure(ToolError(answer.message, answer.code)))
                else:
                    run.tool_calls.append(ToolCallRecord(name=name, ok=True))
                    results.append(answer)
        finally:
            if monitor is not None:
                monitor.resume()
        return results

    def _import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if type(fromlist) is list:  # an import made by C code itself (datetime.strptime)
            return __import__(name, None, None, fromlist, level)
        if type(name) is not str:
            raise TypeError("module name must be a string")
        facade = self._facades.get(name)
        if facade is not None and "." in name and not fromlist:
            facade = self._facades.get(name.partition(".")[0])  # import a.b binds a
        if level != 0:  # as CPython says of code run from a string: a script has no package
            raise ImportError("attempted relative import with no known parent package")
        if facade is None:
            # An ImportError in CPython's words: a script may fall back when it catches one;
            # uncaught, its hint lists what scripts may import
            top = name.partition(".")[0]  # a package is looked up before its modules
            missing = name if top in self._facades else top
            raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
        for wanted in fromlist or ():
            # from typing import get_type_hints: said here, naming the module (CPython's
            # own words would name none: a facade has no __name__, on purpose)
            if type(wanted) is str and wanted != "*" and not hasattr(facade, wanted):
                # "not offered" where the module has the name; where it has none, CPython's
                # words for a module with no file to name (a host path is never shown)
                real = sys.modules.get(name)
                withheld = real is None or wanted in vars(real)
                where = "not offered to scripts" if withheld else "unknown location"
                raise ImportError(
                    f"cannot import name {wanted!r} from {name!r} ({where})", name=name
                )
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
        known = described(error)
        if isinstance(error, LimitExceeded):
            code, message = ErrorCode.CODE_RESOURCE_LIMIT, error.message
        elif known is not None:
            code, message = known
        elif isinstance(error, SecurityViolation):
            code, message = ErrorCode.CODE_SECURITY_VIOLATION, error.message
        elif isinstance(error, PreviewStop):
            code, message = ErrorCode.PREVIEW_STOPPED, error.message
        elif isinstance(error, ModuleNotFoundError) and error.name not in self._facades:
            # an import the script did not catch: a module outside the allowlist
            code, message = ErrorCode.CODE_SECURITY_VIOLATION, _exception_text(error)
        elif isinstance(error, SandboxStop):
            code, message = ErrorCode.CODE_RUNTIME_ERROR, error.message
        else:
            code, message = ErrorCode.CODE_RUNTIME_ERROR, _exception_text(error)
        hint = _hint(error, scope, tools, self.modules)
        return ScriptError(
            code=code,
            message=_bounded(message),
            kind=_bounded(str(type(error).__name__), MAX_KIND_CHARS),
            line=line,
            source_line=source_line,
            hint=hint,
            cause=_cause(error) if code == ErrorCode.CODE_RUNTIME_ERROR else None,
        )


def described(error: BaseException) -> tuple[ErrorCode, str] | None:
    """The code and message of an error every interpreter describes alike: the recursion
    and memory limits, and a tool's failure the script did not catch."""
    if isinstance(error, RecursionError):  # CPython's words; a limit still, by its code
        return ErrorCode.CODE_RESOURCE_LIMIT, _exception_text(error)
    if isinstance(error, MemoryError) and not raised_by_script(error, SCRIPT_FILES):
        return ErrorCode.CODE_RESOURCE_LIMIT, OUT_OF_MEMORY
    if isinstance(error, ToolError):
        return ErrorCode.CODE_RUNTIME_ERROR, f"ToolError [{error.code}]: {error.message}"
    return None


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
        _spend(budget, max(len(value), 1))
        if CALLS.noting:  # in a recorded run, only a pending value makes a mark
            refuse_forged_mark(value)
        return detach(value)
    if value is None or kind in (bool, int) or (kind is float and math.isfinite(value)):
        _spend(budget, SCALAR_CHARS)
        return detach(value)
    if kind is Pending:  # a planned write's result, returned: its mark (no repr runs)
        marked_value: str = value.marked
        _spend(budget, max(len(marked_value), SCALAR_CHARS))
        return marked_value
    if depth < MAX_RESULT_DEPTH:
        if kind in (list, tuple):
            _spend(budget, max(len(value), 1))
            return [plain_result(item, budget, depth + 1) for item in value]
        if kind is dict:
            _spend(budget, max(len(value), 1))
            made: dict[str, JsonValue] = {}
            for key, item in value.items():
                shown = key if type(key) is str else _short_repr(key)
                _spend(budget, len(shown))  # keys are characters the host receives too
                made[shown] = plain_result(item, budget, depth + 1)
            return made
    if depth < MAX_RESULT_DEPTH and not isinstance(value, type):
        # Subclasses of plain data as JSON sees them (a namedtuple is a list, an IntEnum
        # member a number), read through the builtin base: no script method runs here.
        if isinstance(value, str):
            return plain_result(str.__str__(value), budget, depth)
        if isinstance(value, int):
            return plain_result(int.__index__(value), budget, depth)
        if isinstance(value, float) and kind is not float:  # NaN itself: its repr, below
            return plain_result(float.__float__(value), budget, depth)
        if isinstance(value, list | tuple):
            items = (
                list.copy(value)
                if isinstance(value, list)
                else tuple.__getitem__(value, slice(None))
            )
            return plain_result(list(items), budget, depth)
        if isinstance(value, dict):
            return plain_result(dict(dict.items(value)), budget, depth)
    text = _short_repr(value)
    _spend(budget, max(len(text), 1))
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


def _bind(
    name: str, parameters: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, JsonValue]:
    if not kwargs and len(args) <= len(parameters) and not CALLS.noting:
        plain: dict[str, JsonValue] = {}
        for key, value in zip(parameters, args, strict=False):
            kind = type(value)
            # exact types only: a subclass (a rigged __eq__, __hash__ or __str__) is
            # rebuilt by detach below, as is anything else
            if kind is not str and kind is not int and kind is not bool and value is not None:
                break
            plain[key] = value  # an exact immutable scalar: already plain
        else:
            return plain  # most calls: a few strings and numbers, by position
    if len(args) > len(parameters):
        raise TypeError(
            f"{name}() takes {len(parameters)} positional arguments but {len(args)} were given"
        )
    arguments: dict[str, Any] = dict(zip(parameters, args, strict=False))
    for key, value in kwargs.items():
        if key in arguments:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        arguments[key] = value
    if CALLS.noting:  # a recorded run: planned writes' results travel as their marks
        arguments = marked(arguments)
    try:
        plain = detach(arguments)  # type: ignore[assignment]
    except NotJsonError as error:
        raise TypeError(
            f"{name}(): {error.reason} (at {error.path.replace('$', 'arguments', 1)})"
        ) from None
    assert isinstance(plain, dict)
    if CALLS.noting:
        CALLS.note(plain)  # the line that made the call, for the run's record
    return plain


async def _awaited_call(name: str, arguments: dict[str, JsonValue]) -> Any:
    """Waits for the run's loop to send this call to the host with the others made with it."""
    loop = running_script_loop()
    if loop is None:
        raise RuntimeError(f"{name}() was awaited outside the script's event loop")
    return await loop.submit_call(name, arguments)


def _answer_of(call_tool: ToolCaller, name: str, arguments: dict[str, JsonValue]) -> Any:
    try:
        return call_tool(name, arguments)
    except ToolError as error:
        return error


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


_DIRECT = "The above exception was the direct cause of the following exception:"
_DURING = "During handling of the above exception, another exception occurred:"


def _cause(error: BaseException) -> str | None:
    """What CPython prints above an error raised ``from`` another or while handling one;
    only an exception that passed through the script (never the interpreter's own)."""
    cause = error.__cause__
    link = _DIRECT
    if cause is None and not error.__suppress_context__:
        cause, link = error.__context__, _DURING
    if not isinstance(cause, Exception) or _script_line(cause) is None:
        return None
    return f"{_bounded(_exception_text(cause))}\n\n{link}"


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
    error: BaseException,
    scope: dict[str, Any],
    tools: Mapping[str, tuple[str, ...]],
    modules: frozenset[str] = frozenset(),
) -> str | None:
    missing = getattr(error, "name", None)
    if isinstance(error, NameError) and missing in modules:  # `asyncio.gather` before import
        return f"import {missing} first: it is importable"
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
    if isinstance(error, ModuleNotFoundError) and missing not in modules:
        return f"scripts may import: {', '.join(sorted(modules))}"
    arguments = error.args if type(error) is TypeError else ()
    # asyncio.gather(3): compared only as exact text (a script's object in args never runs)
    if len(arguments) == 1 and type(arguments[0]) is str and arguments[0] == NOT_AWAITABLE:
        return (
            "a tool call runs concurrently when written inside the gather call or after "
            "await, as in await asyncio.gather(*(tool(x) for x in xs))"
        )
    return None


# A script may nest as many frames as under ``python script.py``, whose own frame is the
# first of CPython's default 1,000: its top level is then this many frames below the limit.
SCRIPT_FRAMES = 999
# The frames the guards take where a script's statement calls them at its deepest frame
# (an except clause's match, an item's read or write): the script reaches CPython's depth.
_GUARD_FRAMES = 5
# A process limit this high (a worker's) leaves a script CPython's depth above any host's.
_ROOMY_LIMIT = 3 * SCRIPT_FRAMES


# The limit the runs under way need (see _ScriptDepth), by the id of each one's own.
_DEPTH_NEEDS: dict[int, int] = {}
# The host's own limit, from before the first of them raised it; and the limit they set last.
_DEPTH_LIMITS = {"host": 0, "set": 0}
_DEPTH_LOCK = threading.Lock()


class _ScriptDepth:
    """The recursion limit a run needs: ``SCRIPT_FRAMES`` above where the host runs it,
    however deep that is (a caller's frames are not the script's to pay for). The limit is
    the whole process's: raised for the runs under way that need it, and put back to the
    host's own when the last of them ends (unless the host set one of its own meanwhile)."""

    __slots__ = ("_needed", "_raised")

    def __init__(self, *, brief: bool) -> None:
        self._needed = 0
        self._raised = False
        # A brief script calls nothing of its own (no function, no loop): it nests nothing.
        # A limit far above CPython's (a worker's) leaves room for any host's depth.
        if brief or sys.getrecursionlimit() >= _ROOMY_LIMIT:
            return
        frame: types.FrameType | None = sys._getframe(1)  # each read makes a frame object:
        depth = 0  # measured only where it is needed
        while frame is not None:
            depth += 1
            frame = frame.f_back
        self._needed = depth + SCRIPT_FRAMES + _GUARD_FRAMES

    def raise_limit(self) -> None:
        if not self._needed:
            return
        with _DEPTH_LOCK:
            current = sys.getrecursionlimit()
            if not _DEPTH_NEEDS:
                if current >= self._needed:
                    return  # deep enough already: the host's own limit leaves room
                _DEPTH_LIMITS["host"] = current
            elif current != _DEPTH_LIMITS["set"]:
                _DEPTH_LIMITS["host"] = current  # the host set its own since: the floor now
            _DEPTH_NEEDS[id(self)] = self._needed
            self._raised = True
            _set_depth_limit()

    def put_back(self) -> None:
        if not self._raised:
            return
        with _DEPTH_LOCK:
            del _DEPTH_NEEDS[id(self)]
            if sys.getrecursionlimit() == _DEPTH_LIMITS["set"]:  # else the host set its own
                _set_depth_limit()


def _set_depth_limit() -> None:
    limit = max([_DEPTH_LIMITS["host"], *_DEPTH_NEEDS.values()])
    sys.setrecursionlimit(limit)
    _DEPTH_LIMITS["set"] = limit


sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))

__all__ = [
    "BoundTool",
    "Sandbox",
    "ScriptError",
    "ScriptOutcome",
    "ToolBatchCaller",
    "ToolCallRecord",
    "ToolCaller",
]
