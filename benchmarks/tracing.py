"""What tracing costs per tool call, through ``Runtime``.

Run: ``python -m benchmarks.tracing``. A native call and a call from a script (both
executors), each measured three ways in the same run: with no tracer provider (the
default: one check per hook), with the OpenTelemetry SDK exporting to memory (spans
made, nothing recorded of content), and the same with content recorded. Medians per
call; ratios against the untraced run of the same row.
"""

from __future__ import annotations

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from codeact import (
    Executor,
    InProcessExecutor,
    Limits,
    ProcessExecutor,
    Runtime,
    ToolCall,
    ToolRegistry,
    configure_tracing,
    tool,
)
from codeact.contract._tracing import tracer

from ._timing import header, per_call, per_call_async

LIMITS = Limits(wall_seconds=60, max_tool_calls=100_000)
SCRIPT_CALLS = 500


@tool
def lookup(key: int) -> int:
    """A trivial host tool: what is left is the call's own cost."""
    return key


def runtime_with(executor: Executor) -> Runtime:
    registry = ToolRegistry()
    registry.register(lookup)
    return Runtime(registry, mode="both", executor=executor, limits=LIMITS)


async def native(runtime: Runtime) -> float:
    async def batch(size: int) -> None:
        for number in range(size):
            await runtime.execute(ToolCall(f"n{number}", "lookup", {"key": number}), mode="native")

    return await per_call_async(batch, batch=2_000, rounds=7)


async def scripted(runtime: Runtime) -> float:
    script = f"total = 0\nfor i in range({SCRIPT_CALLS}):\n    total += lookup(i)\ntotal"

    async def batch(size: int) -> None:
        for number in range(max(1, size // SCRIPT_CALLS)):
            result = await runtime.execute(ToolCall(f"s{number}", "run_code", {"code": script}))
            assert not result.is_error, result.text

    return await per_call_async(batch, batch=SCRIPT_CALLS * 4, rounds=7)


def measure(make: type[InProcessExecutor] | type[ProcessExecutor], traced: str) -> dict[str, float]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if traced != "off":
        configure_tracing(provider, record_content=traced == "content")

    async def go() -> dict[str, float]:
        async with runtime_with(make(limits=LIMITS)) as runtime:
            await runtime.execute(ToolCall("warm", "run_code", {"code": "1"}))
            return {
                "native call": await native(runtime),
                "call from a script": await scripted(runtime),
            }

    try:
        return anyio.run(go)
    finally:
        configure_tracing(None)
        provider.shutdown()


def main() -> None:
    print(header("Tracing overhead per tool call, through Runtime"))
    for label, make in (("in-process", InProcessExecutor), ("process", ProcessExecutor)):
        runs = {traced: measure(make, traced) for traced in ("off", "spans", "content")}
        for row in runs["off"]:
            base = runs["off"][row]
            cells = "  ".join(
                f"{name} {runs[name][row] * 1e6:7.1f} us ({runs[name][row] / base:4.2f}x)"
                for name in ("off", "spans", "content")
            )
            print(f"  {label:<10} {row:<19} {cells}")
    print("  off: no tracer provider; spans: SDK, in-memory exporter; content: and content kept")
    check = per_call(lambda size: [tracer() for _ in range(size)], batch=100_000, rounds=7)
    print(f"  with no provider, a call's whole cost is one check: {check * 1e9:.0f} ns")


if __name__ == "__main__":
    main()
