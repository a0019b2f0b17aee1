"""smolagents: code mode as a tool for its ``ToolCallingAgent``, and codeact's confined
workers as the executor its ``CodeAgent`` runs code with.

``ToolCallingAgent(tools=smolagents.tools(runtime), model=m)`` gives the agent
``run_code`` (``mode="both"`` adds every tool natively). ``CodeAgent(tools=[...],
model=m, executor=smolagents.CodeactExecutor())`` runs the agent's code in codeact's
interpreter, in a worker process, instead of smolagents' local executor: the agent's
tools (``final_answer`` among them) are bound as functions and run in this process.

smolagents does not hand a tool the model's call id: calls are numbered here. A
conversation is one agent: each set of tools and each executor has a script session.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import keyword
import sys
import uuid
from collections.abc import Mapping
from types import FrameType
from typing import Any

from smolagents import AgentImage, Tool
from smolagents.local_python_executor import CodeOutput, PythonExecutor

from ..code_mode._run_code import RUN_CODE
from ..contract._call import ToolCall
from ..contract._exceptions import ToolError
from ..contract._json import thaw
from ..contract._registry import ToolRegistry
from ..contract._results import ImageBlock, ToolExecutionResult
from ..contract._tool import Tool as CodeactTool
from ..runtime._modes import Mode, Runtime
from ..sandbox import Limits
from ._common import Dispatcher, Sessions, ToolSource, images, text_of

_SMOLAGENTS_TYPES = frozenset({"string", "boolean", "integer", "number", "array", "object", "null"})


class RunCodeTool(Tool):
    """One advertised codeact tool as a smolagents tool (``run_code``, or a native one)."""

    skip_forward_signature_validation = True

    def __init__(self, schema: Mapping[str, Any], dispatcher: Dispatcher, session: str) -> None:
        self.name = str(schema["name"])
        self.description = str(schema["description"])
        self.inputs = _inputs(schema["parameters"])
        self.output_type = "any"
        self._dispatcher = dispatcher
        self._session = session
        super().__init__()

    def forward(self, **arguments: Any) -> Any:
        result = self._dispatcher.call(self.name, arguments, call_id=None, session=self._session)
        return _output(result, value=self.name != RUN_CODE)


def tools(source: ToolSource, *, mode: Mode | str | None = None) -> list[Tool]:
    """``source``'s advertisement in ``mode`` as smolagents tools, one script session for
    the set (give each agent a set of its own)."""
    dispatcher = Dispatcher(source, mode=mode)
    session = Sessions(dispatcher.runtime, "smolagents").named("tools")
    return [RunCodeTool(schema, dispatcher, session) for schema in dispatcher.schemas()]


def _inputs(parameters: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A JSON schema's properties in smolagents' ``inputs`` form."""
    required = set(parameters.get("required") or ())
    found: dict[str, dict[str, Any]] = {}
    for name, schema in (parameters.get("properties") or {}).items():
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        entry: dict[str, Any] = {
            "type": kind if kind in _SMOLAGENTS_TYPES else "any",
            "description": str(schema.get("description", name))
            if isinstance(schema, Mapping)
            else name,
        }
        if name not in required:
            entry["nullable"] = True
        found[name] = entry
    return found


def _output(result: ToolExecutionResult, *, value: bool = False) -> Any:
    """The result's text (run_code's, which a model reads) or, for a native tool, its
    value (a CodeAgent's code computes with ``price('tea')``, not with the text "3.5");
    with an image, smolagents' own image type (its agent stores it and tells the model so)."""
    if result.is_error:
        raise ToolError(result.text)
    pictures = images(result)
    if pictures:
        return AgentImage(base64.b64decode(pictures[0].data))
    if value:
        return thaw(result.value)
    return text_of(result)


class CodeactExecutor(PythonExecutor):
    """A ``CodeAgent`` executor: the agent's code runs in codeact's restricted interpreter
    (a worker process by default), its tools bound as functions, its names kept from one
    step to the next. ``limits`` and ``executor`` are those of a codeact ``Runtime``."""

    def __init__(self, *, limits: Limits | None = None, executor: Any = None) -> None:
        self._limits = limits
        self._executor = executor
        self._runtime: Runtime | None = None
        self._session = f"smolagents-code-{uuid.uuid4().hex[:12]}"
        self._numbers = itertools.count(1)
        self._answers: list[Any] = []  # what final_answer was given in the current run
        self._prelude = ""
        self._sent: tuple[tuple[str, int], ...] = ()

    def send_tools(self, tools: dict[str, Tool]) -> None:
        """Bind the agent's tools; the same tools again (every run sends them) keep the
        runtime, so a run that continues a conversation (``reset=False``) keeps the
        script's names, and a run that starts one (``reset=True``) starts without them."""
        if _run_resets(sys._getframe(1)):
            self._new_session()
        sent = tuple((name, id(found)) for name, found in tools.items())
        if self._runtime is not None and sent == self._sent:
            return
        registry = ToolRegistry()
        for name, found in tools.items():
            registry.register(self._bound(name, found))
        if self._runtime is not None:
            self._runtime.close()
        self._runtime = Runtime(
            registry, mode=Mode.CODE, limits=self._limits, executor=self._executor
        )
        self._sent = sent

    def send_variables(self, variables: dict[str, Any]) -> None:
        """Plain JSON variables become names of the next script; others are not sent."""
        lines = []
        for name, value in variables.items():
            if name.isidentifier() and not keyword.iskeyword(name) and _is_json(value):
                lines.append(f"{name} = json.loads({json.dumps(json.dumps(value))})")
        self._prelude = ("import json\n" + "\n".join(lines) + "\n") if lines else ""

    def __call__(self, code_action: str) -> CodeOutput:
        if self._runtime is None:
            self.send_tools({})
        assert self._runtime is not None
        self._answers.clear()
        code, self._prelude = self._prelude + code_action, ""
        call = ToolCall(f"smolagents-{next(self._numbers)}", RUN_CODE, {"code": code})
        result = self._runtime.execute_sync(call, mode=Mode.CODE, session=self._session)
        answers = list(self._answers)
        value = result.value if not result.is_error else None
        logs = str(value.get("output", "")) if isinstance(value, Mapping) else ""
        if answers:
            return CodeOutput(output=answers[0], logs=logs, is_final_answer=True)
        if result.is_error:
            raise RuntimeError(result.text)  # the agent shows the model this message
        assert isinstance(value, Mapping)
        return CodeOutput(output=thaw(value.get("result")), logs=logs, is_final_answer=False)

    def _new_session(self) -> None:
        """The next script starts without names; the previous session's worker goes."""
        previous, self._session = self._session, f"smolagents-code-{uuid.uuid4().hex[:12]}"
        if self._runtime is not None:
            runtime = self._runtime
            runtime._blocking().call(lambda: runtime.close_session(previous))

    def cleanup(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None

    def _bound(self, name: str, found: Tool) -> CodeactTool:
        """A smolagents tool as a codeact tool (``final_answer`` keeps the answer)."""
        answers = self._answers

        def call(**arguments: Any) -> Any:
            value = found(**arguments, sanitize_inputs_outputs=True)
            if name == "final_answer":
                answers.append(value)
            return _plain(value)

        parameters = {
            "type": "object",
            "properties": {
                key: {"description": spec.get("description", key)}
                | ({"type": spec["type"]} if spec.get("type") in _SMOLAGENTS_TYPES else {})
                for key, spec in found.inputs.items()
            },
            "required": [key for key, spec in found.inputs.items() if not spec.get("nullable")],
        }
        return CodeactTool.from_schema(
            name=name, description=found.description, parameters=parameters, function=call
        )


def _run_resets(caller: FrameType | None) -> bool:
    """Does the agent run sending the tools start a new conversation? smolagents tells an
    executor nothing of it, but ``MultiStepAgent.run`` sends the tools itself with its
    ``reset`` argument in scope; any other caller resets nothing."""
    if caller is None or caller.f_code.co_name != "run":
        return False
    found = caller.f_locals.get("reset")
    return found is True


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _plain(value: Any) -> Any:
    """What a smolagents tool returned, as JSON a script receives (an image as its block)."""
    raw = value.to_raw() if isinstance(value, AgentImage) else value
    save = getattr(raw, "save", None)
    if callable(save) and hasattr(raw, "size"):  # a PIL image
        buffer = io.BytesIO()
        save(buffer, format="PNG")
        return ImageBlock(data=base64.b64encode(buffer.getvalue()).decode(), mime_type="image/png")
    return value


__all__ = ["CodeactExecutor", "RunCodeTool", "tools"]
