"""``sys``, ``os``, ``pathlib`` and ``gc`` in scripts: true answers about Python, pure path
arithmetic, and only the environment the host chose to show, through ``Runtime`` with real
workers and in-process; nothing a script sets there reaches the host."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

from codeact import (
    Executor,
    InProcessExecutor,
    Limits,
    ProcessExecutor,
    Runtime,
    ToolCall,
    ToolExecutionFailure,
    ToolExecutionResult,
    ToolExecutionSuccess,
    ToolRegistry,
    UsageError,
    tool,
)

pytestmark = pytest.mark.anyio

LIMITS = Limits(wall_seconds=20, cpu_seconds=20)
SHOWN = {"REGION": "eu-west", "MODE": "test"}
EXECUTORS: dict[str, Callable[[], Executor]] = {
    "inprocess": lambda: InProcessExecutor(limits=LIMITS, environ=SHOWN),
    "process": lambda: ProcessExecutor(limits=LIMITS, warm=0, environ=SHOWN),
}


@tool
def echo(text: str) -> str:
    """Echo a text."""
    return text


def registry() -> ToolRegistry:
    made = ToolRegistry()
    made.register(echo)
    return made


async def attempt(runtime: Runtime, code: str) -> ToolExecutionResult:
    return await runtime.execute(ToolCall("c", "run_code", {"code": code}), mode="code")


async def run(runtime: Runtime, code: str) -> Any:
    result = await attempt(runtime, code)
    assert isinstance(result, ToolExecutionSuccess), result.text
    return result.value


async def run_alone(kind: str, code: str) -> Any:
    """One script on a runtime of its own."""
    async with Runtime(registry(), mode="code", executor=EXECUTORS[kind]()) as runtime:
        return await run(runtime, code)


@pytest.fixture(params=sorted(EXECUTORS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_scripts_read_the_environment_the_host_gave_and_no_other(kind: str) -> None:
    os.environ["CODEACT_HOST_ONLY_SECRET"] = "never-shown"
    try:
        async with Runtime(registry(), mode="code", executor=EXECUTORS[kind]()) as runtime:
            value = await run(
                runtime,
                "import os\n"
                "(os.getenv('REGION'), os.environ['MODE'], dict(os.environ), "
                "os.getenv('CODEACT_HOST_ONLY_SECRET', 'absent'), os.getenv('PATH'))",
            )
            refused = await attempt(runtime, "import os\nos.environ['MODE'] = 'prod'")
            after = await run(runtime, "import os\nos.environ['MODE']")
    finally:
        del os.environ["CODEACT_HOST_ONLY_SECRET"]
    assert value["result"] == ("eu-west", "test", SHOWN, "absent", None)
    assert isinstance(refused, ToolExecutionFailure)  # read-only, as the host gave it
    assert after["result"] == "test"


async def test_a_runtime_shows_its_environment_to_the_workers_it_makes() -> None:
    async with Runtime(registry(), mode="code", limits=LIMITS, environ={"A": "1"}) as runtime:
        value = await run(runtime, "import os\nos.getenv('A')")
    assert value["result"] == "1"
    with pytest.raises(UsageError):
        Runtime(registry(), executor=InProcessExecutor(), environ={"A": "1"})


async def test_what_a_script_sets_in_sys_and_gc_stays_in_its_session(kind: str) -> None:
    host_limit = sys.getrecursionlimit()
    value = await run_alone(
        kind,
        "import sys, gc\nsys.setrecursionlimit(50)\ngc.disable()\n"
        "(sys.getrecursionlimit(), gc.isenabled())",
    )
    assert value["result"] == (50, True)
    assert sys.getrecursionlimit() == host_limit
    assert gc.isenabled()


async def test_sys_stdout_and_stderr_write_where_print_goes(kind: str) -> None:
    value = await run_alone(
        kind,
        "import sys\nprint('one')\nsys.stdout.write('two ')\n"
        "print('three', file=sys.stderr)\nsys.stdout.writelines(['4', '\\n'])",
    )
    assert value["output"] == "one\ntwo three\n4\n"


NOT_THERE = {
    "the process's modules": "import sys\nsys.modules",
    "the import path": "import sys\nsys.path",
    "a shell": "import os\nos.system('true')",
    "a directory listing": "import os\nos.listdir('/')",
    "the working directory": "import os\nos.getcwd()",
    "an absolute path from the working directory": "import os\nos.path.abspath('x')",
    "a file read through a path": "from pathlib import Path\nPath('/etc/passwd').read_text()",
    "a path's existence": "from pathlib import Path\nPath('/').exists()",
    "the stream's guards": "import sys\nsys.stdout._guards",
    "a bound method's owner": "import sys\nsys.getrecursionlimit.__self__",
    "the environment's own table": "import os\nos.environ._values",
    "the real collector": "import gc\ngc.get_objects()",
}


@pytest.mark.parametrize("script", NOT_THERE.values(), ids=NOT_THERE.keys())
async def test_the_process_behind_the_facades_is_out_of_reach(kind: str, script: str) -> None:
    async with Runtime(registry(), mode="code", executor=EXECUTORS[kind]()) as runtime:
        result = await attempt(runtime, script)
    assert isinstance(result, ToolExecutionFailure), result.text
    assert result.error.code in ("CODE_RUNTIME_ERROR", "CODE_SECURITY_VIOLATION"), result.text


async def test_exc_info_never_hands_a_traceback_to_a_script(kind: str) -> None:
    value = await run_alone(
        kind,
        "import sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    info = sys.exc_info()\n"
        "(info[0].__name__, str(info[1]), info[2])",
    )
    assert value["result"] == ("ZeroDivisionError", "division by zero", None)


async def test_sys_exit_ends_the_script_with_its_status(kind: str) -> None:
    async with Runtime(registry(), mode="code", executor=EXECUTORS[kind]()) as runtime:
        result = await attempt(runtime, "import sys\nprint('bye')\nsys.exit(3)")
        after = await run(runtime, "1 + 1")
    assert isinstance(result, ToolExecutionFailure)
    assert "SystemExit: 3" in result.text
    assert "bye" in result.text
    assert after["result"] == 2  # the session goes on
