"""Scripts as plain CPython, in a confined worker: the kernel is the boundary.

``ProcessExecutor(interpreter="cpython")`` gives a script the whole language and the
packages the host names (numpy, pandas), with nothing of the restricted interpreter in
between. What holds it is what already held escaped code in every attack pass: the
worker's kernel layers (Landlock, seccomp, no_new_privs, the parent-death signal, an
unprivileged uid, rlimits), and a host that trusts nothing the worker sends. So this
runner refuses to serve unless every layer it relies on is in force (``refusal``), and
it keeps no secret: it runs inside the worker, and anything it does a script may undo.

What it keeps of the restricted interpreter's contract: tools are plain functions whose
calls cross to the host (concurrent ones, awaited together, in one batch); ``print`` is
captured; the last expression is the run's value; top-level ``await`` works; names
persist per session; and the run's limits end it with ``CODE_RESOURCE_LIMIT`` (wall and
CPU time by timer signals, memory by the address-space rlimit, output and tool calls
counted here; a busy loop in C that no signal interrupts meets the host's deadline).
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import importlib
import importlib.abc
import inspect
import io
import itertools
import os
import pkgutil
import signal
import stat
import sys
import sysconfig
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

from ..contract._exceptions import ErrorCode, ToolError
from ..contract._json import JsonValue
from ..sandbox import Limits, ScriptError, ScriptOutcome
from ..sandbox._compiler import SCRIPT_FILENAME
from ..sandbox._errors import LimitExceeded
from ..sandbox._interpreter import (
    _bounded,
    _exception_text,
    _script_line,
    _source_line,
    described,
    plain_result,
)
from ..sandbox._outcome import ToolCallRecord
from ..sandbox._pending import CALLS, PreviewStop, marked
from ..sandbox._printed import Printed
from ..sandbox._transformer import ASYNC_TAKERS, _awaitable_arguments, _callee_name
from ._confine import REQUIRED_LAYERS, ConfinementReport
from ._cpython_readings import reseed

MIN_LANDLOCK_ABI = 6  # signals and abstract sockets scoped to the worker's own domain
VALUE_NAME = "__codeact_value__"
ASYNC_CALL_NAME = "__codeact_acall__"
# A recursion limit like CPython's own default, above the frames the runner itself uses.
RECURSION_LIMIT = 1_000 + 50

CallTool = Callable[[str, dict[str, JsonValue]], Any]
CallTools = Callable[[list[tuple[str, dict[str, JsonValue]]]], list[Any]]


def refusal(report: ConfinementReport, *, as_root: bool) -> dict[str, str]:
    """The layers this mode relies on that the worker lacks, each with why (empty: none).

    Every layer the restricted interpreter may do without is required here: the kernel is
    all there is. The unprivileged uid only where the host runs as root (elsewhere the
    worker already runs as the host's own unprivileged user)."""
    wanted = [*REQUIRED_LAYERS, *(("user",) if as_root else ())]
    missing = {
        layer: report.missing.get(layer, "not applied")
        for layer in wanted
        if layer not in report.active
    }
    landlock = report.active.get("landlock", "")
    abi = _landlock_abi(landlock)
    if "landlock" in report.active and abi < MIN_LANDLOCK_ABI:
        missing["landlock"] = (
            f"ABI {abi} does not scope signals and sockets to the worker "
            f"(ABI {MIN_LANDLOCK_ABI} or later needed)"
        )
    return missing


def _landlock_abi(detail: str) -> int:
    """The ABI a Landlock report names (``"ABI 7: ..."``); 0 when it names none."""
    words = detail.replace(":", " ").split()
    for word, after in itertools.pairwise(words):
        if word == "ABI" and after.isdigit():
            return int(after)
    return 0


# Never imported ahead: modules that act on import, need a display, or are other
# platforms', and test suites.
NOT_PRELOADED = frozenset(
    {
        "antigravity", "this", "tkinter", "turtle", "turtledemo", "idlelib", "test", "tests",
        "lib2to3", "ensurepip", "venv", "pydoc_data", "curses", "dbm", "readline", "msilib",
        "winreg", "winsound", "msvcrt", "nt", "distutils", "webbrowser", "pydoc",
    }
)  # fmt: skip


def preload(packages: tuple[str, ...], *, dropping_user: bool) -> None:
    """Import what scripts may import before the worker confines itself: the packages
    named, and, where the worker's unprivileged uid could not read them afterwards (an
    interpreter under a private home folder), every module of them and of the standard
    library. A package that cannot be imported is named in the script's error, not here."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for name in packages:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        if not dropping_user:
            return
        stdlib = sysconfig.get_paths()["stdlib"]
        if not _reachable(stdlib):
            for name in sorted(sys.stdlib_module_names):
                if not name.startswith("_"):
                    _import_all(name)
        for name in packages:
            module = sys.modules.get(name)
            folder = os.path.dirname(getattr(module, "__file__", None) or stdlib)
            if module is not None and not _reachable(folder):
                _import_all(name)


def _reachable(folder: str) -> bool:
    """Can any user read beneath ``folder`` (every folder above it open to others)?"""
    path = os.path.realpath(folder)
    while True:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _import_all(name: str) -> None:
    """``name`` and every module beneath it, but for those never preloaded."""
    if name in NOT_PRELOADED:
        return
    try:
        module = importlib.import_module(name)
    except BaseException:  # a module of another platform, or one that needs what is absent
        return
    for found in pkgutil.walk_packages(getattr(module, "__path__", []), f"{name}."):
        if not NOT_PRELOADED.intersection(found.name.split(".")):
            with contextlib.suppress(BaseException):
                importlib.import_module(found.name)


class AllowedImports(importlib.abc.MetaPathFinder):
    """Only the standard library, the packages named, and what those imported when they
    were loaded: any other import fails as a missing module does. A policy, not a
    boundary: a script can remove it, and still reads only what Landlock lets it."""

    def __init__(self, packages: tuple[str, ...]) -> None:
        self.allowed = frozenset(
            {*sys.stdlib_module_names, *packages, *(n.partition(".")[0] for n in sys.modules)}
        )
        self.packages = packages

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        top = name.partition(".")[0]
        if top not in self.allowed:  # CPython's words; uncaught, the run's hint says why
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        return None  # the ordinary finders look it up


class _Limit(BaseException):
    """A run limit: not an ``Exception``, so ``except Exception`` in a script lets it by."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message


class _Aborted(BaseException):
    """The host asked the run to stop."""


class ScriptTool:
    """A registered tool as a CPython script sees it: a function whose call crosses to the
    host. Nothing here is secret: the script can reach the channel anyway."""

    __slots__ = ("_name", "_parameters", "_runner")

    def __init__(self, name: str, parameters: tuple[str, ...], runner: CPythonScripts) -> None:
        self._name = name
        self._parameters = parameters
        self._runner = runner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._runner.call(self._name, self._arguments(args, kwargs))

    def _awaitable(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Coroutine[Any, Any, Any]:
        return self._runner.call_soon(self._name, self._arguments(args, kwargs))

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(self._parameters):
            raise TypeError(
                f"{self._name}() takes {len(self._parameters)} positional arguments "
                f"but {len(args)} were given"
            )
        arguments = dict(zip(self._parameters, args, strict=False))
        for key, value in kwargs.items():
            if key in arguments:
                raise TypeError(f"{self._name}() got multiple values for argument {key!r}")
            arguments[key] = value
        if CALLS.noting:  # a recorded run: planned writes' results travel as their marks
            arguments = marked(arguments)
            CALLS.note(arguments)  # the line that made the call, for the run's record
        return arguments

    def __repr__(self) -> str:
        return f"<tool {self._name}({', '.join(self._parameters)})>"


def _async_call(function: Any, /, *args: Any, **kwargs: Any) -> Any:
    """A call written where async code waits for it: a tool's becomes awaitable."""
    if type(function) is ScriptTool:
        return function._awaitable(args, kwargs)
    return function(*args, **kwargs)


class _AwaitedCalls(ast.NodeTransformer):
    """``await tool(x)`` and ``gather(tool(x) for ...)``: the calls async code waits on go
    through ``__codeact_acall__``, as in the restricted interpreter (the only rewrite)."""

    def visit_Await(self, node: ast.Await) -> ast.AST:
        self.generic_visit(node)  # a gather's own arguments first (visit_Call)
        call = node.value
        if isinstance(call, ast.Call):
            name = ast.Name(ASYNC_CALL_NAME, ast.Load())
            awaited = ast.Call(func=name, args=[call.func, *call.args], keywords=call.keywords)
            node.value = ast.copy_location(awaited, call)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _callee_name(node.func) in ASYNC_TAKERS:
            node.args = [_renamed(_awaitable_arguments(a)) for a in node.args]
        return node


def _renamed(node: ast.expr) -> ast.expr:
    for found in ast.walk(node):
        if isinstance(found, ast.Name) and found.id == "_acall_":
            found.id = ASYNC_CALL_NAME
    return node


def compiled(source: str) -> Any:
    """The script as one code object whose last expression, if any, is kept in a name."""
    tree = ast.parse(source, SCRIPT_FILENAME)
    tree = _AwaitedCalls().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(VALUE_NAME, ast.Store())], value=last.value)
        ast.copy_location(assign, last)
        tree.body[-1] = assign
    ast.fix_missing_locations(tree)
    # dont_inherit: this module's own __future__ imports are not the script's (string
    # annotations would change what dataclasses and pydantic see)
    return compile(
        tree, SCRIPT_FILENAME, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )


class _Output(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` during a run: kept (start and end), forwarded as
    printed, and past ``max_printed_chars`` the run ends."""

    def __init__(self, runner: CPythonScripts) -> None:
        self._runner = runner

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._runner.printed(text)
        return len(text)


class _QuietLoop(asyncio.SelectorEventLoop):
    """asyncio's loop without its self-pipe: the worker may open no socket (asyncio makes
    a socket pair to wake a loop from other threads, which a script's loop never needs)."""

    def _make_self_pipe(self) -> None:
        pass

    def _close_self_pipe(self) -> None:
        pass

    def _write_to_self(self) -> None:
        pass


class _QuietPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return _QuietLoop()


class CPythonScripts:
    """One session's scripts as CPython: its names, and one run at a time. Made in the
    worker before it confines itself (after ``preload``)."""

    def __init__(self, limits: Limits, packages: tuple[str, ...]) -> None:
        self.limits = limits
        self.packages = packages
        self._imports: AllowedImports | None = None  # from the first run: confined by then
        asyncio.set_event_loop_policy(_QuietPolicy())
        self._names = self._fresh()
        self._call_tool: CallTool | None = None
        self._call_tools: CallTools | None = None
        self._on_output: Callable[[str], None] | None = None
        self._output = Printed(limits.max_output_chars)
        self._calls: list[ToolCallRecord] = []
        self._waiting: list[tuple[str, dict[str, Any], asyncio.Future[Any]]] = []
        self._running = False

    @staticmethod
    def _fresh() -> dict[str, Any]:
        return {
            "__name__": "__main__",
            "__doc__": None,  # a module's, until a script that opens with a docstring binds it
            "__builtins__": builtins,
            "ToolError": ToolError,  # what a failed tool raises, by the name both modes give it
            ASYNC_CALL_NAME: _async_call,
        }

    # What the worker asks of a session ----------------------------------------------

    def run(
        self,
        source: str,
        *,
        tools: Mapping[str, tuple[str, ...]],
        call_tool: CallTool,
        call_tools: CallTools | None = None,
        on_output: Callable[[str], None] | None = None,
    ) -> ScriptOutcome:
        if self._imports is None:  # what the worker itself needed is imported by now
            self._imports = AllowedImports(self.packages)
            sys.meta_path.insert(0, self._imports)
        self._call_tool, self._call_tools, self._on_output = call_tool, call_tools, on_output
        self._output = Printed(self.limits.max_output_chars)
        self._calls = []
        for name, parameters in tools.items():
            self._names[name] = ScriptTool(name, tuple(parameters), self)
        self._names.pop(VALUE_NAME, None)
        error: BaseException | None = None
        value: Any = None
        try:
            code = compiled(source)
        except SyntaxError as refused:
            return self._outcome(None, _syntax_error(refused))
        try:
            with self._watched():
                value = self._execute(code)
        except BaseException as raised:  # the script's own failure, or a limit
            error = raised
        if error is not None:
            return self._outcome(None, self._describe(error, source))
        try:
            with self._watched():
                plain = plain_result(_python_value(value))
        except BaseException as raised:
            return self._outcome(None, self._describe(raised, source))
        return self._outcome(plain, None)

    def reset(self) -> None:
        self._names = self._fresh()
        reseed()  # a recorded session's generators start from its record

    def close(self) -> None:
        self._names = {}

    def abort(self) -> None:
        """The host's stop (SIGUSR1): raised in the script where it runs."""
        if self._running:
            raise _Aborted()

    # Running ------------------------------------------------------------------------

    def _execute(self, code: Any) -> Any:
        result = eval(code, self._names)  # the script: plain CPython, in a confined worker
        if inspect.CO_COROUTINE & code.co_flags:
            asyncio.run(result)
        return self._names.pop(VALUE_NAME, None)

    @contextlib.contextmanager
    def _watched(self) -> Iterator[None]:
        """Timers for wall and CPU time, the output captured, recursion bounded: for the
        run's length, whatever it leaves behind."""
        saved = sys.stdout, sys.stderr, sys.getrecursionlimit()
        handlers = {
            signal.SIGALRM: signal.signal(signal.SIGALRM, self._timed_out("wall time")),
            signal.SIGPROF: signal.signal(signal.SIGPROF, self._timed_out("CPU time")),
        }
        sys.stdout, sys.stderr = _Output(self), _Output(self)  # two streams, as CPython's
        sys.setrecursionlimit(RECURSION_LIMIT)
        signal.setitimer(signal.ITIMER_REAL, self.limits.wall_seconds)
        signal.setitimer(signal.ITIMER_PROF, self.limits.cpu_seconds)
        self._running = True
        try:
            yield
        finally:
            self._running = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.setitimer(signal.ITIMER_PROF, 0)
            for number, handler in handlers.items():
                signal.signal(number, handler)
            sys.stdout, sys.stderr = saved[0], saved[1]
            sys.setrecursionlimit(saved[2])

    def _timed_out(self, limit: str) -> Callable[[int, Any], None]:
        def handler(number: int, frame: Any) -> None:
            raise _Limit(limit, f"the script exceeded its {limit} limit")

        return handler

    @contextlib.contextmanager
    def _host_time(self) -> Iterator[None]:
        """Waiting for the host is not the script's wall time: the timer stops meanwhile."""
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            yield
        finally:
            if self._running:
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))

    # Tools --------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """A tool's call made where the script waits for it: one crossing."""
        self._count(1)
        if self._call_tool is None:
            raise ToolError("tools are not callable outside a run", ErrorCode.ABORTED)
        with self._host_time():
            try:
                value = self._call_tool(name, arguments)
            except ToolError as error:
                self._calls.append(ToolCallRecord(name=name, ok=False, code=error.code))
                raise ToolError(error.message, error.code) from None
        self._calls.append(ToolCallRecord(name=name, ok=True))
        return value

    async def call_soon(self, name: str, arguments: dict[str, Any]) -> Any:
        """A call async code awaits: it waits for the others made in the same turn of the
        loop, and all cross together."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._flush)
        self._waiting.append((name, arguments, future))
        return await future

    def _flush(self) -> None:
        batch, self._waiting = [c for c in self._waiting if not c[2].cancelled()], []
        if not batch:
            return
        try:
            self._count(len(batch))
            answers = self._answers([(name, arguments) for name, arguments, _ in batch])
        except BaseException as error:  # a limit: every waiting call ends with it
            for *_, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for (name, _, future), answer in zip(batch, answers, strict=True):
            if isinstance(answer, ToolError):
                self._calls.append(ToolCallRecord(name=name, ok=False, code=answer.code))
                if not future.done():
                    future.set_exception(ToolError(answer.message, answer.code))
            else:
                self._calls.append(ToolCallRecord(name=name, ok=True))
                if not future.done():
                    future.set_result(answer)

    def _answers(self, batch: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        with self._host_time():
            if self._call_tools is not None:
                return self._call_tools(batch)
            answers: list[Any] = []
            for name, arguments in batch:
                assert self._call_tool is not None
                try:
                    answers.append(self._call_tool(name, arguments))
                except ToolError as error:
                    answers.append(error)
            return answers

    def _count(self, more: int) -> None:
        if len(self._calls) + more > self.limits.max_tool_calls:
            limit = self.limits.max_tool_calls
            raise _Limit("tool calls", f"the script made more than {limit:,} tool calls")

    # Output and outcome ---------------------------------------------------------------

    def printed(self, text: str) -> None:
        room = self.limits.max_printed_chars - self._output.total
        kept = text[: max(room, 0)]
        self._output.add(kept)
        if self._on_output is not None and kept:
            with contextlib.suppress(Exception), self._host_time():
                self._on_output(kept)
        if len(text) > room:
            limit = self.limits.max_printed_chars
            raise _Limit("output", f"the script printed more than {limit:,} characters")

    def _outcome(self, value: JsonValue, error: ScriptError | None) -> ScriptOutcome:
        return ScriptOutcome(
            value=value, output=self._output.text(), tool_calls=tuple(self._calls), error=error
        )

    def _describe(self, error: BaseException, source: str) -> ScriptError:
        line = _script_line(error)
        source_line = _source_line(source, line)
        known = described(error)
        if isinstance(error, _Aborted):
            code, message = ErrorCode.ABORTED, "the script was aborted"
        elif isinstance(error, _Limit | LimitExceeded):
            code, message = ErrorCode.CODE_RESOURCE_LIMIT, error.message
        elif isinstance(error, PreviewStop):  # a preview read a planned write's result
            code, message = ErrorCode.PREVIEW_STOPPED, error.message
        elif known is not None:
            code, message = known
        else:
            code, message = ErrorCode.CODE_RUNTIME_ERROR, _exception_text(error)
        hint = None
        if isinstance(error, ModuleNotFoundError):
            offered = ", ".join(self.packages) or "none"
            hint = (
                "scripts here import the standard library and the packages this executor "
                f"allows ({offered})"
            )
        return ScriptError(
            code=code,
            message=_bounded(message),
            kind=type(error).__name__ if code == ErrorCode.CODE_RUNTIME_ERROR else "",
            line=line,
            source_line=source_line,
            hint=hint,
        )


def _syntax_error(error: SyntaxError) -> ScriptError:
    return ScriptError(
        code=ErrorCode.CODE_SYNTAX_ERROR,
        message=_bounded(f"SyntaxError: {error.msg}"),
        kind="SyntaxError",
        line=error.lineno,
        source_line=(error.text or "").strip() or None,
    )


def _python_value(value: Any) -> Any:
    """numpy's arrays and scalars as the Python values they hold (their ``tolist``);
    anything else as it is (what has no JSON form becomes its repr)."""
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
        return value.tolist()
    return value


__all__ = ["CPythonScripts", "compiled", "preload", "refusal"]
