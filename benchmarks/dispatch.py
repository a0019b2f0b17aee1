"""Per-call cost of ``ToolRegistry.execute`` against a direct call of the same function.

Run: ``python -m benchmarks.dispatch``.
"""

from __future__ import annotations

import anyio

from codeact import ToolCall, ToolRegistry, tool

from ._timing import header, per_call, per_call_async, table

BATCH = 2_000


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def measure() -> list[tuple[str, float, float]]:
    registry = ToolRegistry()
    registry.register(tool(add))
    registry.register(tool(add_async))
    sync_call = ToolCall("c", "add", '{"a": 1, "b": 2}')
    async_call = ToolCall("c", "add_async", '{"a": 1, "b": 2}')

    def direct_sync(n: int) -> None:
        for _ in range(n):
            add(1, 2)

    async def direct_async(n: int) -> None:
        for _ in range(n):
            await add_async(1, 2)

    async def execute_sync(n: int) -> None:
        for _ in range(n):
            await registry.execute(sync_call)

    async def execute_async(n: int) -> None:
        for _ in range(n):
            await registry.execute(async_call)

    base_sync = per_call(direct_sync, batch=BATCH * 100)
    base_async = await per_call_async(direct_async, batch=BATCH * 100)
    return [
        ("direct sync call", base_sync, base_sync),
        (
            "execute, sync tool (worker thread)",
            await per_call_async(execute_sync, batch=BATCH),
            base_sync,
        ),
        ("direct await", base_async, base_async),
        ("execute, async tool", await per_call_async(execute_async, batch=BATCH), base_async),
    ]


def main() -> None:
    print(header("Dispatch: execute() against a direct call"))
    print(table(anyio.run(measure), baseline="the direct call"))


if __name__ == "__main__":
    main()
