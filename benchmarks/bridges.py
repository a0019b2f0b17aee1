"""What a framework bridge adds to a run_code call, through real worker processes.

Run: ``python -m benchmarks.bridges``. The same one-call script (``add(1, 2)``) run
through ``Runtime.execute_sync`` (the baseline: the same background loop the bridges
use) and through each bridge's own entry point: LangChain's ``invoke`` and
``ainvoke``, an Agents SDK ``FunctionTool``, a smolagents tool, a pydantic-ai toolset.
Every session's worker is started first; then each entry runs a batch in turn, round
after round, and the medians per call are given as ratios to the baseline.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import anyio

from codeact import Runtime, ToolCall, ToolRegistry, tool

from ._timing import ROUNDS, header

BATCH = 20
CODE = {"code": "add(1, 2)"}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main() -> None:
    from agents import Usage
    from agents.tool_context import ToolContext
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from codeact.bridges import langchain, openai_agents, pydantic_ai, smolagents

    registry = ToolRegistry()
    registry.register(add)
    runtime = Runtime(registry)

    def baseline(n: int) -> None:
        for i in range(n):
            call = ToolCall(f"b{i}", "run_code", CODE)
            runtime.execute_sync(call, mode="code", session="bench")

    (lc,) = langchain.tools(runtime)
    config = {"configurable": {"thread_id": "bench"}}
    call = {"name": "run_code", "args": CODE, "id": "x", "type": "tool_call"}

    def lc_sync(n: int) -> None:
        for _ in range(n):
            lc.invoke(call, config)

    async def lc_async(n: int) -> None:
        for _ in range(n):
            await lc.ainvoke(call, config)

    (agents_tool,) = openai_agents.tools(runtime)
    arguments = '{"code": "add(1, 2)"}'
    usage = Usage()  # one run's: the calls of a run share its script session

    async def agents_async(n: int) -> None:
        for i in range(n):
            context = ToolContext(
                usage=usage,
                context=None,
                tool_name="run_code",
                tool_call_id=f"a{i}",
                tool_arguments=arguments,
            )
            await agents_tool.on_invoke_tool(context, arguments)

    (smol,) = smolagents.tools(runtime)

    def smol_sync(n: int) -> None:
        for _ in range(n):
            smol(code=CODE["code"])

    toolset = pydantic_ai.toolset(runtime)
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id="bench")

    async def pydantic_async(n: int) -> None:
        found = (await toolset.get_tools(context))["run_code"]
        for i in range(n):
            context.tool_call_id = f"p{i}"
            await toolset.call_tool("run_code", dict(CODE), context, found)

    entries: list[tuple[str, Callable[[int], None]]] = [
        ("Runtime.execute_sync (baseline)", baseline),
        ("LangChain invoke", lc_sync),
        ("LangChain ainvoke", lambda n: anyio.run(lc_async, n)),
        ("Agents SDK FunctionTool", lambda n: anyio.run(agents_async, n)),
        ("smolagents tool", smol_sync),
        ("pydantic-ai toolset", lambda n: anyio.run(pydantic_async, n)),
    ]
    for _, run in entries:  # every session's worker started before anything is timed
        run(2)
    samples: dict[str, list[float]] = {name: [] for name, _ in entries}
    for _ in range(ROUNDS):  # round-robin: each entry sees the same machine, turn by turn
        for name, run in entries:
            started = time.perf_counter()
            run(BATCH)
            samples[name].append((time.perf_counter() - started) / BATCH)
    runtime.close()

    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians[entries[0][0]]
    print(header("A run_code call through each bridge (process executor, one worker per session)"))
    for name, seconds in medians.items():
        print(f"  {name:<34} {seconds * 1e3:8.2f} ms  ({seconds / base:.2f}x)")


if __name__ == "__main__":
    main()
