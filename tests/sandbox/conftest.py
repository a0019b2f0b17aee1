"""A sandbox wired to a small registry, for the interpreter suites."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from codeact import ToolCall, ToolRegistry, tool
from codeact._code_mode import bindable_tools
from codeact._sandbox import Limits, Sandbox, ScriptOutcome

SECRET = "host-secret-7f3a9c"
HOST_LOG: list[Any] = []
SHARED_RESULT = [1, 2, 3]


def make_registry() -> ToolRegistry:
    api_key = SECRET  # a secret the tool's closure holds; scripts must never see it

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b + (0 if api_key else 1)

    @tool
    def record(text: str) -> str:
        """Record a text and say what type arrived."""
        HOST_LOG.append(text)
        return type(text).__name__

    @tool
    def shared() -> list[int]:
        """Return a list the host keeps."""
        return SHARED_RESULT

    @tool
    def fail(message: str) -> None:
        """Always fail."""
        raise RuntimeError(message)

    registry = ToolRegistry()
    for definition in (add, record, shared, fail):
        registry.register(definition)
    return registry


class Runner:
    """Runs scripts in a sandbox whose tools dispatch through a real registry."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.registry = make_registry()
        self.sandbox = Sandbox(limits=limits or Limits(wall_seconds=2.0, cpu_seconds=2.0))
        self.tools = {t.name: t.parameter_names for t in bindable_tools(self.registry)}

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        from codeact import ToolError
        from codeact._json import thaw

        result = anyio.run(self.registry.execute, ToolCall("script", name, arguments))
        if result.is_error:
            raise ToolError(result.error.message, result.error.code)
        return thaw(result.value)

    def __call__(self, source: str) -> ScriptOutcome:
        return self.sandbox.run(source, tools=self.tools, call_tool=self.call_tool)


@pytest.fixture
def run() -> Iterator[Callable[[str], ScriptOutcome]]:
    HOST_LOG.clear()
    return Runner()


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "escaped"
