"""The ``codeact`` command line: run a script through run_code, print schemas, compare modes."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..code_mode._run_code import RUN_CODE, run_code_tool
from ..contract._call import ToolCall
from ..contract._exceptions import CodeActError
from ..contract._registry import ToolRegistry
from ..contract._results import ToolExecutionResult
from ..executors._in_process import Executor, InProcessExecutor
from ..executors._process import ProcessExecutor
from ..mcp._http import IDLE_SECONDS, MAX_SESSIONS, MAX_SESSIONS_PER_CLIENT, TASK_AFTER_SECONDS
from ..sandbox import Limits
from ._parser import Parser, non_negative, positive, quiet_on_closed_pipe

if TYPE_CHECKING:
    from ..contract._policy import Policy
    from ..durable._record import Durable
    from ..mcp._stopping import Stopping
    from ..runtime._modes import Runtime

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
NO_TOOLS = " with no tools: run_code has nothing to call (give --tools MODULE:ATTR or --stdlib)"


class UsageFailure(Exception):
    """Bad command-line usage; exit code 2."""


def load_tools(spec: str, registry: ToolRegistry, *, app_dir: str = ".") -> Policy | None:
    """Register what ``MODULE:ATTR`` names: a registry, a tool, a function, or a list of them;
    a registry's own policy is returned, to keep.

    ``app_dir`` (the current folder unless told) is importable first, so a module beside
    the user's script loads as it would for ``python -m``.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageFailure(f"--tools takes MODULE:ATTR, not {spec!r}")
    folder = str(Path(app_dir).resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # a module that fails to import is the user's to fix
        raise UsageFailure(
            f"cannot import {module_name!r} for --tools {spec}: {type(error).__name__}: {error}"
        ) from None
    try:
        target: Any = getattr(module, attribute)
    except AttributeError:
        raise UsageFailure(
            f"module {module_name!r} has no {attribute!r} (--tools {spec})"
        ) from None
    items = target.tools() if isinstance(target, ToolRegistry) else target
    for item in items if isinstance(items, list | tuple) else [items]:
        try:
            registry.register(item)
        except (CodeActError, TypeError, ValueError) as error:
            raise UsageFailure(f"--tools {spec}: {error}") from None
    return target.own_policy if isinstance(target, ToolRegistry) else None


def build_registry(options: argparse.Namespace, *, later: bool = False) -> ToolRegistry:
    """The registry the options ask for: the standard tools and any ``--tools``, under one
    policy made of ``--deny`` and ``--ask`` first, then a loaded registry's own rules.

    ``later``: a call the policy asks about and ``--approve`` does not cover waits for a
    decision (a server asks its client) instead of being declined.
    """
    registry = ToolRegistry()
    allowed = list(options.allow_host or [])
    approved = set(options.approve or [])
    if getattr(options, "stdlib", False):
        import stdlib_bindings

        # A standard tool nothing could make usable is left out of the advertisement:
        # fetch without a host it may reach, shell without its approval.
        groups = [
            "files",
            *(["http"] if allowed else []),
            *(["shell"] if "shell" in approved else []),
        ]
        stdlib_bindings.register(registry, workspace=Path.cwd(), http_allow=allowed, include=groups)
    loaded = [load_tools(spec, registry, app_dir=options.app_dir) for spec in options.tools or []]
    known = set(registry.names())
    for flag, names in (("--approve", approved), ("--ask", options.ask), ("--deny", options.deny)):
        unknown = {name for name in names or () if not _pattern(name)} - known
        if unknown:
            raise UsageFailure(f"{flag} names no registered tool: {', '.join(sorted(unknown))}")
    registry.set_policy(_policy(options, registry.own_policy, loaded, later=later))
    return registry


def _pattern(name: str) -> bool:
    """A shell-style pattern (``write_*``): it may match no tool yet."""
    return any(mark in name for mark in "*?[")


def _policy(
    options: argparse.Namespace,
    standard: Policy | None,
    loaded: list[Policy | None],
    *,
    later: bool,
) -> Policy:
    """One policy for the command: the options' rules, then each loaded registry's, then the
    standard tools' (shell asks); an asked call is approved by ``--approve``."""
    from ..contract._policy import LATER, RulePolicy, ask, deny

    approved = set(options.approve or [])
    given = [deny(name) for name in options.deny or []] + [ask(name) for name in options.ask or []]
    own = [policy for policy in loaded if policy is not None]
    custom = [policy for policy in own if not isinstance(policy, RulePolicy)]
    if custom:
        if given or len(own) > 1:
            raise UsageFailure(
                "a --tools registry has a policy of its own kind, which --ask, --deny or "
                "another registry's policy cannot be combined with"
            )
        return custom[0]
    rules = [rule for policy in own if isinstance(policy, RulePolicy) for rule in policy.rules]
    if isinstance(standard, RulePolicy):
        rules.extend(standard.rules)
    default = own[0].default if own and isinstance(own[0], RulePolicy) else RulePolicy().default

    def approver(question: Any) -> Any:  # a call (an Invocation), or a previewed plan
        if getattr(question, "name", None) in approved:
            return True
        return LATER if later else False

    return RulePolicy([*given, *rules], default=default, approver=approver)


def make_limits(options: argparse.Namespace) -> Limits:
    """Limits from the command line, each left at its default unless given."""
    given: dict[str, Any] = {}
    if options.wall_seconds is not None:
        given["wall_seconds"] = options.wall_seconds
    if options.cpu_seconds is not None:
        given["cpu_seconds"] = options.cpu_seconds
    if options.memory_mb is not None:
        given["memory_bytes"] = options.memory_mb * 1024 * 1024
    try:
        return Limits(**given)
    except (TypeError, ValueError) as error:
        raise UsageFailure(str(error)) from None


def make_executor(options: argparse.Namespace, durable: Durable | None = None) -> Executor:
    """The executor the options name; a durable runtime's workers take its hash seed."""
    limits = make_limits(options)
    interpreter = getattr(options, "interpreter", "restricted")
    packages = tuple(getattr(options, "package", None) or ())
    if packages and interpreter != "cpython":
        raise UsageFailure("--package is for --interpreter cpython")
    if interpreter == "cpython" and options.executor != "process":
        raise UsageFailure("--interpreter cpython runs in worker processes (--executor process)")
    if options.executor == "inprocess":
        return InProcessExecutor(limits=limits)
    if options.executor == "process":
        sessions = getattr(options, "max_sessions", None)
        idle = getattr(options, "idle_seconds", None)
        return ProcessExecutor(
            limits=limits,
            interpreter=interpreter,
            packages=packages,
            hash_seed=None if durable is None else durable.hash_seed,
            **({"max_sessions": sessions} if sessions else {}),
            **({"idle_seconds": idle} if idle else {}),
        )
    raise UsageFailure(f"unknown executor {options.executor!r}")


def run_until_interrupted(
    work: Callable[[], Awaitable[ToolExecutionResult]],
) -> ToolExecutionResult:
    """``anyio.run(work)`` where Ctrl-C cancels the work instead of raising
    KeyboardInterrupt wherever the main thread stands (inside a channel read, a cleanup,
    code that turns a failure into a result): the work ends as any cancelled run ends,
    its workers closed, and then the interrupt is raised here."""
    interrupted = False
    done: list[ToolExecutionResult] = []

    async def watched() -> None:
        async def watch(scope: anyio.CancelScope) -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    interrupted = True
                    scope.cancel()
                    return

        async with anyio.create_task_group() as group:
            group.start_soon(watch, group.cancel_scope)
            done.append(await work())
            group.cancel_scope.cancel()

    anyio.run(watched)
    if interrupted or not done:
        raise KeyboardInterrupt
    return done[0]


async def run_script(
    source: str, *, registry: ToolRegistry, executor: Executor
) -> ToolExecutionResult:
    scope = registry.child()
    scope.register(run_code_tool(registry, executor=executor))
    try:
        return await scope.execute(ToolCall("cli", RUN_CODE, {"code": source}))
    finally:
        await executor.aclose()


async def run_previewed(
    source: str, *, registry: ToolRegistry, limits: Limits, folder: str
) -> ToolExecutionResult:
    """Run ``source`` previewed: its plan is shown on stderr and decided on stdin, once."""
    from ..contract._policy import RulePolicy
    from ..durable._record import Durable
    from ..runtime._modes import Runtime
    from ..session._stores import SqliteStore

    policy = registry.own_policy
    if isinstance(policy, RulePolicy):  # the person at the terminal decides the plan
        registry.set_policy(
            RulePolicy(policy.rules, default=policy.default, approver=ask_on_terminal)
        )
    elif policy is None:
        registry.set_policy(RulePolicy(approver=ask_on_terminal))
    record = os.path.join(folder, "runs.db")
    runtime = Runtime(registry, limits=limits, durable=Durable(lambda s: SqliteStore(record, s)))
    async with runtime:
        return await runtime.execute(
            ToolCall("cli", RUN_CODE, {"code": source, "preview": True}), mode="code"
        )


YES, NO = ("y", "yes"), ("n", "no", "")  # an empty answer is the default: no
MAX_ASKS = 5  # an answer that stays unclear this often is a no


def ask_on_terminal(question: Any) -> bool | dict[str, bool]:
    """The command line's approver: a plan (or a call) shown on stderr, answered on stdin
    with y, n, or per tool (``send=y,log=n``); an unclear answer is asked again."""
    from ..durable._plan import Plan

    plan = isinstance(question, Plan)
    if plan:
        SHOWN_PLANS.append(question.text())
        print(SHOWN_PLANS[-1], file=sys.stderr)
    prompt = (
        "Make these writes? [y/N, or per tool: TOOL=y,TOOL=n] "
        if plan
        else f"Allow {question.name}? [y/N] "
    )
    for _ in range(MAX_ASKS):
        print(prompt, end="", file=sys.stderr)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:  # the input ended: nobody said yes
            return False
        decided = _decision(line.strip().lower(), per_tool=plan)
        if decided is not None:
            return decided
        print("Please answer y or n (or TOOL=y,TOOL=n for each tool).", file=sys.stderr)
    return False


def _decision(answer: str, *, per_tool: bool) -> bool | dict[str, bool] | None:
    """What an answer decides; None when it is not clear."""
    if answer in YES or answer in NO:
        return answer in YES
    if not per_tool or "=" not in answer:
        return None
    decisions: dict[str, bool] = {}
    for part in answer.split(","):
        tool, _, decided = (piece.strip() for piece in part.partition("="))
        if not tool or decided not in YES + NO[:2]:
            return None
        decisions[tool] = decided in YES
    return decisions


# The plans shown on the terminal, so the result printed after them does not repeat them.
SHOWN_PLANS: list[str] = []


def command_run(options: argparse.Namespace) -> int:
    path = Path(options.script)
    if options.preview and (options.script == "-" or options.executor != "process"):
        raise UsageFailure(
            "--preview reads its decision from standard input and records the run in a "
            "worker process: give the script as a file, with --executor process"
        )
    try:
        source = sys.stdin.read() if options.script == "-" else path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageFailure(f"cannot read {options.script}: {error}") from None
    registry = build_registry(options)
    if options.preview:
        import tempfile

        limits = make_limits(options)
        with tempfile.TemporaryDirectory(prefix="codeact-preview-") as folder:
            result = run_until_interrupted(
                lambda: run_previewed(source, registry=registry, limits=limits, folder=folder)
            )
    else:
        executor = make_executor(options)
        result = run_until_interrupted(
            lambda: run_script(source, registry=registry, executor=executor)
        )
    if options.json:
        payload: dict[str, Any] = {"is_error": result.is_error, "content": result.text}
        if result.is_error:
            payload["error"] = {"message": result.error.message, "code": result.error.code}
        else:
            from ..contract._json import thaw

            payload["value"] = thaw(result.value)
        print(json.dumps(payload, ensure_ascii=False))
    else:
        text = result.text
        for shown in SHOWN_PLANS:  # the person read these already, on stderr
            text = text.replace(f"{shown}\n", "", 1)
        print(text)
    return EXIT_ERROR if result.is_error else EXIT_OK


def command_schemas(options: argparse.Namespace) -> int:
    from ..providers._formats import anthropic_tools, openai_chat_tools, openai_responses_tools
    from ..runtime._modes import Runtime

    registry = build_registry(options)
    runtime = Runtime(registry, executor=InProcessExecutor())
    schemas = runtime.schemas(options.mode)
    formats: dict[str, Callable[[], object]] = {
        "plain": lambda: schemas,
        "openai": lambda: openai_chat_tools(schemas, strict=options.strict),
        "openai-responses": lambda: openai_responses_tools(schemas, strict=options.strict),
        "anthropic": lambda: anthropic_tools(schemas),
    }
    print(json.dumps(formats[options.format](), indent=2, ensure_ascii=False))
    return EXIT_OK


def command_compare(options: argparse.Namespace) -> int:
    from ._compare import main as compare_main

    return compare_main(options.rest)  # the comparison parses its own options


def command_serve_mcp(options: argparse.Namespace) -> int:
    from ..mcp._server import mcp_server, serve_stdio
    from ..mcp._stopping import Stopping
    from ..runtime._modes import Runtime

    registry = build_registry(options, later=True)
    if options.executor == "inprocess":
        print(
            "codeact: warning: --executor inprocess runs scripts in this server's own process, "
            "behind the interpreter's guards alone; it is for trusted scripts. Untrusted "
            "clients belong in worker processes (--executor process, the default).",
            file=sys.stderr,
        )
    with _recorded(options, registry) as durable:
        runtime = Runtime(
            registry, mode=options.mode, executor=make_executor(options, durable), durable=durable
        )
        stopping = Stopping()
        server = mcp_server(
            runtime,
            stopping=stopping,
            mode=options.mode,
            json_text=options.json_text,
            idle_seconds=options.idle_seconds,
            max_handles=options.max_sessions,
            handles_per_client=options.max_sessions_per_client,
            task_after_seconds=options.task_after_seconds,
        )
        empty = "" if runtime.user_tools() else NO_TOOLS
        if empty and not options.http:
            print(f"codeact: serving MCP on stdio{empty}", file=sys.stderr, flush=True)
        if options.http:
            host, port = options.http
            try:
                import uvicorn  # noqa: F401 - only to say what is missing
            except ImportError:
                raise UsageFailure("--http needs uvicorn: pip install 'codeact[mcp]'") from None
            from ..mcp._http import serve_http

            anyio.run(
                lambda: serve_http(
                    runtime,
                    server,
                    host=host,
                    port=port,
                    max_sessions=options.max_sessions,
                    max_sessions_per_client=options.max_sessions_per_client,
                    idle_seconds=options.idle_seconds,
                    note=empty,
                    stopping=stopping,
                )
            )
        else:

            async def serve() -> None:
                # warm workers and the idle reaper while serving
                async with runtime, anyio.create_task_group() as tasks:
                    tasks.start_soon(_stop_on_signal, runtime, stopping)
                    await serve_stdio(server, stopping)
                    tasks.cancel_scope.cancel()

            anyio.run(serve)
    return EXIT_OK


@contextlib.contextmanager
def _recorded(options: argparse.Namespace, registry: ToolRegistry) -> Iterator[Durable | None]:
    """The durable record a server keeps: in ``--record``'s SQLite file, or, when a policy
    may ask (a run then waits for the client's answer), in a file of a folder of its own
    that goes with the server. None when nothing needs one."""
    from ..contract._policy import Action, RulePolicy
    from ..durable._record import Durable
    from ..session._stores import SqliteStore

    policy = registry.own_policy
    asks = not isinstance(policy, RulePolicy) or any(
        rule.action is Action.ASK for rule in policy.rules
    )
    if options.record is None and not asks:
        yield None
        return
    if options.executor != "process":
        raise UsageFailure(
            "a policy that asks, and --record, need recorded runs, which run in worker "
            "processes: use --executor process (the default)"
        )
    with contextlib.ExitStack() as stack:
        if options.record is not None:
            path = str(options.record)
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="codeact-runs-"))
            path = os.path.join(folder, "runs.db")
        yield Durable(lambda session: SqliteStore(path, session))


async def _stop_on_signal(runtime: Runtime, stopping: Stopping) -> None:
    """SIGTERM or SIGINT: answer the calls in flight, close every worker, then leave. The
    thread reading stdin cannot be cancelled (it may wait for ever), so the process exits
    rather than waiting on it."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _number in signals:
            with anyio.CancelScope(shield=True):
                await stopping.stop()
                await runtime.aclose()
            os._exit(EXIT_OK)


def command_doctor(options: argparse.Namespace) -> int:
    """Start one worker the way the process executor would and print what confines it."""
    from ..executors._confine import ConfinementReport
    from ..executors._cpython import refusal
    from ..executors._process import ProcessExecutor
    from ..executors._worker_process import Worker, WorkerLost, WorkerOptions
    from ..sandbox import Limits

    async def check() -> tuple[ConfinementReport, ConfinementReport | None]:
        worker = await Worker.start(Limits(), frozenset(), WorkerOptions())
        try:
            executor = ProcessExecutor(warm=0)
            try:  # the template workers are forked from, where this machine has one
                template = executor.template_confinement if await executor.prepare() else None
            finally:
                await executor.aclose()
            return worker.confinement, template
        finally:
            await worker.close()

    try:
        report, template = anyio.run(check)
    except (WorkerLost, OSError) as error:
        print(f"codeact: no worker could be started: {error}", file=sys.stderr)
        return EXIT_ERROR
    print("Kernel confinement of a worker process on this machine:")
    print(report.describe())
    if template is None:
        print("Workers are started afresh here (no template to fork them from).")
    else:
        print("The template workers are forked from (it runs no script):")
        print(template.describe())
    lacking = refusal(report, as_root=os.geteuid() == 0)
    if lacking:
        missing = "; ".join(f"{layer}: {why}" for layer, why in lacking.items())
        print(f"interpreter='cpython' would be refused here ({missing}).")
    else:
        print("interpreter='cpython' can run here: every layer it relies on is in force.")
    if report.complete and (template is None or template.complete):
        print("All layers are active.")
        return EXIT_OK
    print("Missing layers leave a worker with fewer boundaries; confinement='require' refuses it.")
    return EXIT_ERROR


def _add_tool_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdlib", action="store_true", help="bind the standard tools")
    parser.add_argument(
        "--tools", action="append", metavar="MODULE:ATTR", help="register these tools"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="a host the standard fetch tool may reach (repeatable; without one, no fetch)",
    )
    parser.add_argument(
        "--approve",
        action="append",
        metavar="TOOL",
        help="approve every call of TOOL its policy asks about (repeatable; shell needs it)",
    )
    parser.add_argument(
        "--ask",
        action="append",
        metavar="TOOL",
        help="ask before every call of TOOL (repeatable; a pattern such as 'write_*' too); "
        "serve-mcp asks the client, run declines what --approve does not cover",
    )
    parser.add_argument(
        "--deny",
        action="append",
        metavar="TOOL",
        help="refuse every call of TOOL (repeatable; a pattern too)",
    )
    parser.add_argument(
        "--app-dir",
        default=".",
        metavar="DIR",
        help="the folder --tools modules are imported from (default: the current one)",
    )


def host_and_port(text: str) -> tuple[str, int]:
    """``--http HOST:PORT`` (``:PORT`` is 127.0.0.1): a port from 0 to 65535."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"takes HOST:PORT with a port up to 65535, not {text!r}")
    return host or "127.0.0.1", int(port)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--executor", choices=("process", "inprocess"), default="process")
    parser.add_argument(
        "--interpreter",
        choices=("restricted", "cpython"),
        default="restricted",
        help="cpython: plain CPython in the confined worker, refused where a kernel layer "
        "is missing (default: restricted)",
    )
    parser.add_argument(
        "--package",
        action="append",
        metavar="NAME",
        help="an installed package a cpython script may import (repeatable)",
    )
    parser.add_argument(
        "--wall-seconds", type=positive(float), help="wall-clock limit of one script"
    )
    parser.add_argument("--cpu-seconds", type=positive(float), help="CPU limit of one script")
    parser.add_argument("--memory-mb", type=positive(int), help="memory limit of one script")


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = Parser(prog="codeact", description="Let agents act through code.")
    parser.add_argument("--version", action="version", version=f"codeact {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run an action script through run_code",
        description="Run an action script through run_code.",
    )
    run.add_argument("script", help="a Python file, or - for standard input")
    _add_tool_options(run)
    _add_run_options(run)
    run.add_argument("--json", action="store_true", help="print the whole result as JSON")
    run.add_argument(
        "--preview",
        action="store_true",
        help="plan the script's writes first, show the plan and make them only once approved",
    )
    run.set_defaults(parser=run, handler=command_run)
    schemas = commands.add_parser(
        "schemas",
        help="print the advertisement for a mode and format",
        description="Print the advertisement for a mode and format.",
    )
    _add_mode_option(schemas, "both", "as a Runtime offers them")
    schemas.add_argument(
        "--format",
        choices=("openai", "openai-responses", "anthropic", "plain"),
        default="plain",
        help="whose wire format (default: plain, codeact's own)",
    )
    schemas.add_argument(
        "--strict", action="store_true", help="OpenAI strict schemas where possible"
    )
    _add_tool_options(schemas)
    schemas.set_defaults(parser=schemas, handler=command_schemas)
    serve = commands.add_parser(
        "serve-mcp",
        help="serve the tools over MCP (stdio, or streamable HTTP with --http)",
        description="Serve the tools over MCP (stdio, or streamable HTTP with --http).",
    )
    _add_mode_option(serve, "code", "one run_code tool")
    _add_tool_options(serve)
    _add_run_options(serve)
    serve.add_argument(
        "--http", metavar="HOST:PORT", type=host_and_port, help="serve streamable HTTP, not stdio"
    )
    serve.add_argument(
        "--json-text",
        action="store_true",
        help="also send a structured result as JSON text (for clients that read only text)",
    )
    serve.add_argument(
        "--max-sessions",
        type=positive(int),
        default=MAX_SESSIONS,
        help=f"live client sessions (each a worker) at once (default {MAX_SESSIONS})",
    )
    serve.add_argument(
        "--max-sessions-per-client",
        type=positive(int),
        default=MAX_SESSIONS_PER_CLIENT,
        help=f"open MCP sessions per client address, over HTTP (default {MAX_SESSIONS_PER_CLIENT})",
    )
    serve.add_argument(
        "--idle-seconds",
        type=positive(float),
        default=IDLE_SECONDS,
        help=f"a session idle this long is closed (default {IDLE_SECONDS:g})",
    )
    serve.add_argument(
        "--task-after-seconds",
        type=non_negative(float),
        default=TASK_AFTER_SECONDS,
        help="a call from a client that takes tasks becomes one when it runs longer "
        f"(default {TASK_AFTER_SECONDS:g}; 0: always)",
    )
    serve.add_argument(
        "--record",
        metavar="PATH",
        help="the SQLite file that records runs (default: where a policy asks, a file that "
        "goes with the server)",
    )
    serve.set_defaults(parser=serve, handler=command_serve_mcp)
    doctor = commands.add_parser(
        "doctor",
        help="show which kernel layers confine a worker here",
        description="Show which kernel layers confine a worker here.",
    )
    doctor.set_defaults(parser=doctor, handler=command_doctor)
    compare = commands.add_parser(
        "compare",
        help="run the task suite in each mode",
        description="Run the task suite in each mode.",
        add_help=False,
    )
    compare.set_defaults(parser=compare, handler=command_compare, rest=[])
    return parser


def _add_mode_option(parser: argparse.ArgumentParser, default: str, why: str) -> None:
    parser.add_argument(
        "--mode",
        choices=("native", "code", "both"),
        default=default,
        help=f"how the tools are offered (default: {default}, {why})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        options, unknown = parser.parse_known_args(argv)
        if unknown and options.command != "compare":  # that command's usage, not the top's
            options.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exit_:  # argparse exits 2 on bad usage, 0 on --help
        return int(exit_.code or 0)
    if options.command == "compare":
        options.rest = unknown

    def command() -> int:
        try:
            code: int = options.handler(options)
        except UsageFailure as failure:
            print(f"codeact: {failure}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:  # Ctrl-C: one line, not the stack it came through
            print("codeact: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        return code

    return quiet_on_closed_pipe(command)


if __name__ == "__main__":
    sys.exit(main())
