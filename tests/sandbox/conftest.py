"""A sandbox wired to a small registry, for the interpreter suites."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from codeact import ToolCall, ToolExecutionResult, ToolRegistry, tool
from codeact.code_mode._run_code import bindable_tools
from codeact.executors._in_process import InProcessExecutor
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits, ScriptOutcome

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
    """Runs scripts through an executor whose tools dispatch through a real registry.

    One event loop (a blocking portal) serves every runner of a test session, so the
    process executor's workers and the registry live on the same loop, as in a host.
    A module's process runners share one executor per set of limits (its template forks
    each runner's worker): each runner is a session of its own, so a worker of its own.
    """

    portal: BlockingPortal
    shared: ClassVar[dict[tuple[Limits, str], ProcessExecutor]] = {}
    _numbers = itertools.count()

    def __init__(self, limits: Limits | None = None, *, kind: str = "inprocess") -> None:
        self.registry = make_registry()
        self.limits = limits or Limits(wall_seconds=2.0, cpu_seconds=2.0)
        self.kind = kind
        self.session = f"test-{next(self._numbers)}"
        self.executor: InProcessExecutor | ProcessExecutor
        if kind == "inprocess":
            self.executor = InProcessExecutor(limits=self.limits)
        else:
            interpreter = "cpython" if kind == "cpython" else "restricted"
            self.executor = self.shared.setdefault(
                (self.limits, interpreter),
                ProcessExecutor(limits=self.limits, interpreter=interpreter, warm=0),
            )
        self.tools = {t.name: t.parameter_names for t in bindable_tools(self.registry)}

    async def _call_tool(self, name: str, arguments: dict[str, Any]) -> ToolExecutionResult:
        return await self.registry.execute(ToolCall("script", name, arguments))

    def __call__(self, source: str) -> ScriptOutcome:
        return self.portal.call(
            lambda: self.executor.run(
                source, session=self.session, tools=self.tools, call_tool=self._call_tool
            )
        )

    def reset(self) -> None:
        self.portal.call(self.executor.reset, self.session)

    def renew(self) -> None:
        """A new session (a new worker, for the process kinds): what the last one's
        interpreter kept (a CPython worker's configured ``logging``) is gone."""
        self.close()
        self.session = f"test-{next(self._numbers)}"
        if self.kind == "inprocess":
            self.executor = InProcessExecutor(limits=self.limits)

    def close(self) -> None:
        if self.kind == "inprocess":
            self.portal.call(self.executor.aclose)
        else:  # its session's worker; the executor serves the next runners
            self.portal.call(self.executor.close_session, self.session)


EXECUTORS = ["inprocess", "process"]
# The same scripts as plain CPython in a confined worker (``interpreter="cpython"``).
CPYTHON_WORKER = "cpython"


@pytest.fixture(scope="session", autouse=True)
def _portal() -> Iterator[None]:
    with start_blocking_portal("asyncio") as portal:
        Runner.portal = portal
        yield


@pytest.fixture(scope="module", autouse=True)
def _shared_executors() -> Iterator[None]:
    """A module's process runners share executors; none outlives the module, so tests
    elsewhere that count the processes they leave behind count exactly."""
    yield
    for executor in Runner.shared.values():
        Runner.portal.call(executor.aclose)
    Runner.shared.clear()


@pytest.fixture(params=EXECUTORS)
def make_runner(request: pytest.FixtureRequest) -> Iterator[Callable[..., Runner]]:
    """Builds runners on the executor the test is parametrized with; closes them after."""
    made: list[Runner] = []

    def make(limits: Limits | None = None) -> Runner:
        runner = Runner(limits, kind=request.param)
        made.append(runner)
        return runner

    HOST_LOG.clear()
    yield make
    for runner in made:
        runner.close()


@pytest.fixture
def run(make_runner: Callable[..., Runner]) -> Runner:
    return make_runner()


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "escaped"
