"""The ``codeact`` command line: run a script through run_code, print schemas, compare modes."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from ._call import ToolCall
from ._code_mode import RUN_CODE, run_code_tool
from ._executors import Executor, InProcessExecutor
from ._process import ProcessExecutor
from ._registry import ToolRegistry
from ._results import ToolExecutionResult

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class UsageFailure(Exception):
    """Bad command-line usage; exit code 2."""


def load_tools(spec: str, registry: ToolRegistry) -> None:
    """Register what ``MODULE:ATTR`` names: a registry, a tool, a function, or a list of them."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageFailure(f"--tools takes MODULE:ATTR, not {spec!r}")
    try:
        target: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise UsageFailure(f"cannot load {spec}: {error}") from None
    items = target.tools() if isinstance(target, ToolRegistry) else target
    for item in items if isinstance(items, list | tuple) else [items]:
        registry.register(item)


def build_registry(options: argparse.Namespace) -> ToolRegistry:
    """The registry the options ask for: the standard tools and any ``--tools``."""
    registry = ToolRegistry()
    if getattr(options, "stdlib", False):
        import stdlib_bindings

        stdlib_bindings.register(registry, workspace=Path.cwd())
    for spec in options.tools or []:
        load_tools(spec, registry)
    return registry


def make_executor(name: str) -> Executor:
    if name == "inprocess":
        return InProcessExecutor()
    if name == "process":
        return ProcessExecutor()
    raise UsageFailure(f"unknown executor {name!r}")


async def run_script(
    source: str, *, registry: ToolRegistry, executor: Executor
) -> ToolExecutionResult:
    scope = registry.child()
    scope.register(run_code_tool(registry, executor=executor))
    try:
        return await scope.execute(ToolCall("cli", RUN_CODE, {"code": source}))
    finally:
        await executor.aclose()


def command_run(options: argparse.Namespace) -> int:
    path = Path(options.script)
    try:
        source = sys.stdin.read() if options.script == "-" else path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageFailure(f"cannot read {options.script}: {error}") from None
    registry = build_registry(options)
    result = anyio.run(
        lambda: run_script(source, registry=registry, executor=make_executor(options.executor))
    )
    if options.json:
        payload: dict[str, Any] = {"is_error": result.is_error, "content": result.text}
        if result.is_error:
            payload["error"] = {"message": result.error.message, "code": result.error.code}
        else:
            from ._json import thaw

            payload["value"] = thaw(result.value)
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(result.text)
    return EXIT_ERROR if result.is_error else EXIT_OK


def command_schemas(options: argparse.Namespace) -> int:
    from ._modes import Runtime
    from ._providers import anthropic_tools, openai_chat_tools, openai_responses_tools

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
    from ._suite.compare import main as compare_main

    return compare_main(options.rest)  # the comparison parses its own options


def command_serve_mcp(options: argparse.Namespace) -> int:
    from .mcp import mcp_server, serve_stdio

    registry = build_registry(options)
    from ._modes import Runtime

    runtime = Runtime(registry, mode=options.mode, executor=make_executor(options.executor))
    server = mcp_server(runtime, mode=options.mode)
    if options.http:
        import uvicorn

        host, _, port = options.http.rpartition(":")
        uvicorn.run(
            server.streamable_http_app(host=host or "127.0.0.1"),
            host=host or "127.0.0.1",
            port=int(port),
            log_level="warning",
        )
    else:

        async def serve() -> None:
            async with runtime:  # warm workers and the idle reaper while serving
                await serve_stdio(server)

        anyio.run(serve)
    return EXIT_OK


def command_doctor(options: argparse.Namespace) -> int:
    """Start one worker the way the process executor would and print what confines it."""
    from ._confine import ConfinementReport
    from ._process import Worker, WorkerLost, WorkerOptions
    from ._sandbox import Limits

    async def check() -> ConfinementReport:
        worker = await Worker.start(Limits(), frozenset(), WorkerOptions())
        try:
            return worker.confinement
        finally:
            await worker.close()

    try:
        report = anyio.run(check)
    except (WorkerLost, OSError) as error:
        print(f"codeact: no worker could be started: {error}", file=sys.stderr)
        return EXIT_ERROR
    print("Kernel confinement of a worker process on this machine:")
    print(report.describe())
    if report.complete:
        print("All layers are active.")
        return EXIT_OK
    print("Missing layers leave a worker with fewer boundaries; confinement='require' refuses it.")
    return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codeact", description="Let agents act through code.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run an action script through run_code")
    run.add_argument("script", help="a Python file, or - for standard input")
    run.add_argument("--stdlib", action="store_true", help="bind the standard tools")
    run.add_argument("--tools", action="append", metavar="MODULE:ATTR", help="register these tools")
    run.add_argument("--executor", choices=("process", "inprocess"), default="process")
    run.add_argument("--json", action="store_true", help="print the whole result as JSON")
    run.set_defaults(handler=command_run)
    schemas = commands.add_parser("schemas", help="print the advertisement for a mode and format")
    schemas.add_argument("--mode", choices=("native", "code", "both"), default="both")
    schemas.add_argument(
        "--format", choices=("openai", "openai-responses", "anthropic", "plain"), default="plain"
    )
    schemas.add_argument(
        "--strict", action="store_true", help="OpenAI strict schemas where possible"
    )
    schemas.add_argument("--stdlib", action="store_true", help="include the standard tools")
    schemas.add_argument(
        "--tools", action="append", metavar="MODULE:ATTR", help="register these tools"
    )
    schemas.set_defaults(handler=command_schemas)
    serve = commands.add_parser("serve-mcp", help="serve the tools over MCP on stdin/stdout")
    serve.add_argument("--mode", choices=("native", "code", "both"), default="code")
    serve.add_argument(
        "--tools", action="append", metavar="MODULE:ATTR", help="register these tools"
    )
    serve.add_argument("--executor", choices=("process", "inprocess"), default="process")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    serve.set_defaults(handler=command_serve_mcp)
    doctor = commands.add_parser("doctor", help="show which kernel layers confine a worker here")
    doctor.set_defaults(handler=command_doctor)
    compare = commands.add_parser("compare", help="run the task suite in each mode", add_help=False)
    compare.set_defaults(handler=command_compare, rest=[])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        options, unknown = parser.parse_known_args(argv)
        if unknown and options.command != "compare":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exit_:  # argparse exits 2 on bad usage, 0 on --help
        return int(exit_.code or 0)
    if options.command == "compare":
        options.rest = unknown
    try:
        code: int = options.handler(options)
    except UsageFailure as failure:
        print(f"codeact: {failure}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
