"""What a framework bridge adds to a run_code call, through real worker processes.

Run: ``python -m benchmarks.bridges``. The same one-call script (``add(1, 2)``) run
through ``Runtime.execute_sync`` (the baseline: the same background loop the bridges
use) and through each bridge's own entry point: LangChain's ``invoke`` and
``ainvoke``, an Agents SDK ``FunctionTool``, a smolagents tool, a pydantic-ai toolset.
Medians per call, as ratios to the baseline measured in the same run.
"""

from __future__ import annotations

import anyio

from codeact import Runtime, ToolCall, ToolRegistry, tool

from ._timing import header, per_call, per_call_async

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
    session = "bench"
    baseline = per_call(
        lambda n: [
            runtime.execute_sync(ToolCall(f"b{i}", "run_code", CODE), mode="code", session=session)
            for i in range(n)
        ],
        batch=BATCH,
    )
    rows = [("Runtime.execute_sync (baseline)", baseline)]

    (lc,) = langchain.tools(runtime)
    config = {"configurable": {"thread_id": "bench"}}
    call = {"name": "run_code", "args": CODE, "id": "x", "type": "tool_call"}
    rows.append(
        (
            "LangChain invoke",
            per_call(lambda n: [lc.invoke(call, config) for _ in range(n)], batch=BATCH),
        )
    )

    async def lc_async(n: int) -> None:
        for _ in range(n):
            await lc.ainvoke(call, config)

    rows.append(("LangChain ainvoke", anyio.run(lambda: per_call_async(lc_async, batch=BATCH))))

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

    rows.append(
        ("Agents SDK FunctionTool", anyio.run(lambda: per_call_async(agents_async, batch=BATCH)))
    )

    (smol,) = smolagents.tools(runtime)
    rows.append(
        (
            "smolagents tool",
            per_call(lambda n: [smol(code=CODE["code"]) for _ in range(n)], batch=BATCH),
        )
    )

    toolset = pydantic_ai.toolset(runtime)

    async def pydantic_async(n: int) -> None:
        context = RunContext(
            deps=None, model=TestModel(), usage=RunUsage(), conversation_id="bench"
        )
        found = (await toolset.get_tools(context))["run_code"]
        for i in range(n):
            context.tool_call_id = f"p{i}"
            await toolset.call_tool("run_code", dict(CODE), context, found)

    rows.append(
        ("pydantic-ai toolset", anyio.run(lambda: per_call_async(pydantic_async, batch=BATCH)))
    )
    runtime.close()

    print(header("A run_code call through each bridge (process executor, one worker per session)"))
    for name, seconds in rows:
        print(f"  {name:<34} {seconds * 1e3:8.2f} ms  ({seconds / baseline:.2f}x)")


if __name__ == "__main__":
    main()
