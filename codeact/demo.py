"""An offline, end-to-end walk through the tool-calling contract (``make demo``)."""

from __future__ import annotations

import json

import anyio

from codeact import ProcessExecutor, RulePolicy, ToolCall, ToolRegistry, deny, run_code_tool, tool


@tool
def convert(amount: float, rate: float = 1.1) -> float:
    """Convert an amount of euros to dollars at a given rate."""
    return round(amount * rate, 2)


@tool(concurrency_safe=True)
async def lookup_rate(currency: str) -> float:
    """Look up today's rate from euros to a currency."""
    return {"USD": 1.1, "GBP": 0.85}.get(currency.upper(), 1.0)


@tool
def delete_account(user: str) -> None:
    """Delete a user's account."""


async def main() -> None:
    registry = ToolRegistry(policy=RulePolicy([deny("delete_*", reason="deletions need a human")]))
    for definition in (convert, lookup_rate, delete_account):
        registry.register(definition)
    print("Advertised to the model:")
    print(json.dumps(registry.schemas(), indent=2))
    calls = [
        ToolCall("call_1", "lookup_rate", '{"currency": "GBP"}'),
        ToolCall("call_2", "convert", '{"amount": 100, "rate": 0.85}'),
        ToolCall("call_3", "convert", '{"amount": "a lot"}'),
        ToolCall("call_4", "delete_acount", '{"user": "bob"}'),
        ToolCall("call_5", "delete_account", '{"user": "bob"}'),
        ToolCall("call_6", "convert", "{not json"),
    ]
    print("\nOne result per call, in order:")
    for call, result in zip(calls, await registry.execute_many(calls), strict=True):
        status = f"error {result.error.code}" if result.is_error else "ok"
        print(f"  {call.id} {call.name}({call.arguments}) -> {status}: {result.content[0].text}")
    await code_mode(registry)


SCRIPT = """\
rates = {c: lookup_rate(c) for c in ["USD", "GBP"]}
best = max(rates, key=rates.get)
print("best rate:", best, rates[best])
try:
    delete_account("bob")
except ToolError as error:
    print("refused:", error.code)
convert(250, rate=rates[best])
"""


async def code_mode(registry: ToolRegistry) -> None:
    """The same tools, called from one script in a worker process through run_code."""
    executor = ProcessExecutor()
    scope = registry.child()
    scope.register(run_code_tool(registry, executor=executor))
    try:
        result = await scope.execute(ToolCall("call_7", "run_code", {"code": SCRIPT}))
    finally:
        await executor.aclose()
    print("\nCode mode, one run_code call:")
    print("  " + result.content[0].text.replace("\n", "\n  "))


if __name__ == "__main__":
    anyio.run(main)
