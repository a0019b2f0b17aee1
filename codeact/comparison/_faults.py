"""Fault-injection tasks: what each style does with bad arguments, unknown tools, crashes,
endless loops and forbidden imports. Handled means: one error result with the expected
code, a valid transcript, and a turn that still ends."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..agent._loop import Agent
from ..contract._call import ToolCall
from ..contract._registry import ToolRegistry
from ..executors._in_process import InProcessExecutor
from ..providers._models import FunctionModel, ModelReply, ModelRequest
from ..runtime._modes import Mode, Runtime
from ..sandbox import Limits
from ..session._session import ToolCallRecorded, ToolResultRecorded
from ._m3tooleval import DOMAIN_TOOLS

LIMITS = Limits(wall_seconds=1.0, cpu_seconds=1.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class Fault:
    name: str
    native: tuple[str, dict[str, object]] | None
    script: str
    native_code: str | None
    code_code: str


FAULTS = (
    Fault(
        name="bad arguments",
        native=("convert_currency", {"base_price": "a lot", "conversion_rate": 1.5}),
        script="convert_currency('a lot', 1.5)",
        native_code="INVALID_ARGUMENTS",
        code_code="CODE_RUNTIME_ERROR",
    ),
    Fault(
        name="unknown tool",
        native=("convert_currencies", {"base_price": 1, "conversion_rate": 1.5}),
        script="convert_currencies(1, 1.5)",
        native_code="UNKNOWN_TOOL",
        code_code="UNKNOWN_TOOL",
    ),
    Fault(
        name="exception in a tool",
        native=("calculator", {"expression": "1 / 0"}),
        script="calculator('1 / 0')",
        native_code="TOOL_ERROR",
        code_code="CODE_RUNTIME_ERROR",
    ),
    Fault(
        name="exception in code",
        native=None,
        script="rates = {}\nrates['missing'] * 2",
        native_code=None,
        code_code="CODE_RUNTIME_ERROR",
    ),
    Fault(
        name="endless loop",
        native=None,
        script="while True:\n    pass",
        native_code=None,
        code_code="CODE_RESOURCE_LIMIT",
    ),
    Fault(
        name="forbidden import",
        native=None,
        script="import subprocess\nsubprocess.run(['true'])",
        native_code=None,
        code_code="CODE_SECURITY_VIOLATION",
    ),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class FaultResult:
    fault: str
    style: str
    code: str | None
    handled: bool


async def run_fault(fault: Fault, style: str) -> FaultResult | None:
    """One fault in ``native`` or ``code`` style; None when the style has no such fault."""
    if style == "native" and fault.native is None:
        return None
    registry = ToolRegistry()
    for made in DOMAIN_TOOLS["trade_calculator"]:
        registry.register(made)
    runtime = Runtime(registry, executor=InProcessExecutor(limits=LIMITS), limits=LIMITS)

    def respond(request: ModelRequest) -> ModelReply:
        if any(m["role"] == "tool" for m in request.messages):
            return ModelReply(text="I could not do it: the tool reported an error.")
        if style == "native":
            assert fault.native is not None
            name, arguments = fault.native
            return ModelReply(tool_calls=(ToolCall("f1", name, json.dumps(arguments)),))
        return ModelReply(tool_calls=(ToolCall("f1", "run_code", {"code": fault.script}),))

    agent = Agent(
        runtime, FunctionModel(respond), mode=Mode.NATIVE if style == "native" else Mode.CODE
    )
    text = await agent.run(f"Inject: {fault.name}")
    await runtime.aclose()
    results = [
        e for e in agent.session.events if isinstance(e, ToolResultRecorded) and e.parent is None
    ]
    calls = [
        e for e in agent.session.events if isinstance(e, ToolCallRecorded) and e.parent is None
    ]
    expected = fault.native_code if style == "native" else fault.code_code
    code = results[0].code if results else None
    handled = len(results) == len(calls) == 1 and code == expected and bool(text)
    return FaultResult(fault=fault.name, style=style, code=code, handled=handled)


async def run_faults() -> list[FaultResult]:
    results = []
    for fault in FAULTS:
        for style in ("native", "code"):
            outcome = await run_fault(fault, style)
            if outcome is not None:
                results.append(outcome)
    return results


def fault_table(results: list[FaultResult]) -> str:
    lines = [f"{'fault':<22} {'style':<8} {'error code':<26} handled", "-" * 66]
    lines += [
        f"{r.fault:<22} {r.style:<8} {r.code or '-':<26} {'yes' if r.handled else 'NO'}"
        for r in results
    ]
    return "\n".join(lines)


__all__ = ["FAULTS", "FaultResult", "fault_table", "run_fault", "run_faults"]
