"""Offline model behaviour, generated mechanically from a task's plan, for every style.

The generated model reads only what the runtime returned (the tool results in the
request it receives), so a runtime that loses an argument or a value fails the task.
Offline results measure the runtime's mechanics, not a model's ability.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from ..contract._call import ToolCall
from ..contract._tool import Tool
from ..providers._models import FunctionModel, ModelReply, ModelRequest
from ..sandbox._parsing import parse_expression
from ._compare import MODE_OF_STYLE, STYLES
from ._plans import Plan, Step


def dependencies(step: Step, names: set[str]) -> set[str]:
    used: set[str] = set()
    for expression in step.arguments.values():
        used |= {n.id for n in ast.walk(parse_expression(expression)) if isinstance(n, ast.Name)}
    return used & names


def script(plan: Plan) -> str:
    """The plan as one action script: a line per step, the answer as the last expression."""
    expressions = [plan.answer, *(v for step in plan.steps for v in step.arguments.values())]
    imports = ["import re"] if any("re." in e for e in expressions) else []
    lines = imports + [
        f"{step.name} = {step.tool}({', '.join(f'{k}={v}' for k, v in step.arguments.items())})"
        for step in plan.steps
    ]
    return "\n".join([*lines, plan.answer])


def plan_model(plan: Plan, style: str, tools: Mapping[str, Tool]) -> FunctionModel:
    """A model that carries out ``plan`` in ``style``, reading values from tool results."""
    names = {step.name for step in plan.steps}
    use_code = style == "code" or (style == "both" and len(plan.steps) > 1)

    def respond(request: ModelRequest) -> ModelReply:
        failed = _failures(request)
        if failed:  # a generated model does not recover: the task simply fails
            return ModelReply(text=f"gave up after an error: {failed[0]}")
        results = _results(request, tools, plan)
        if use_code:
            if "plan" not in results:
                return ModelReply(
                    tool_calls=(ToolCall("plan", "run_code", {"code": script(plan)}),)
                )
            return ModelReply(text=json.dumps(results["plan"]))
        done = set(results)
        ready = [s for s in plan.steps if s.name not in done and dependencies(s, names) <= done]
        if not ready:
            return ModelReply(text=json.dumps(_evaluate(plan.answer, results)))
        chosen = ready if style in ("native-parallel", "both") else ready[:1]
        return ModelReply(
            tool_calls=tuple(
                ToolCall(s.name, s.tool, {k: _evaluate(v, results) for k, v in s.arguments.items()})
                for s in chosen
            )
        )

    return FunctionModel(respond, name=f"plan:{style}")


def _results(request: ModelRequest, tools: Mapping[str, Tool], plan: Plan) -> dict[str, Any]:
    """Values by call id, parsed from the tool messages as a model would read them."""
    kinds = {s.name: tools[s.tool] for s in plan.steps if s.tool in tools}
    values: dict[str, Any] = {}
    for message in request.messages:
        if message["role"] != "tool" or message.get("is_error"):
            continue
        call_id, text = message["call_id"], message["content"]
        if call_id == "plan":
            values[call_id] = _script_result(text)
            continue
        schema = kinds[call_id].output_schema if call_id in kinds else None
        values[call_id] = (
            text if schema is not None and schema.get("type") == "string" else json.loads(text)
        )
    return values


def _failures(request: ModelRequest) -> list[str]:
    return [
        str(m["content"]) for m in request.messages if m["role"] == "tool" and m.get("is_error")
    ]


def _script_result(text: str) -> Any:
    last = [line for line in text.splitlines() if line.startswith("Result: ")]
    return json.loads(last[-1][len("Result: ") :]) if last else None


def _evaluate(expression: str, values: Mapping[str, Any]) -> Any:
    return eval(compile(expression, "<plan>", "eval"), {"__builtins__": _SAFE}, dict(values))


_SAFE = {
    "re": re,
    "int": int,
    "len": len,
    "max": max,
    "min": min,
    "str": str,
    "float": float,
    "None": None,
    "sum": sum,
}

__all__ = ["MODE_OF_STYLE", "STYLES", "plan_model", "script"]
