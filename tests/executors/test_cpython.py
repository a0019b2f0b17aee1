"""Scripts as plain CPython in a confined worker (``ProcessExecutor(interpreter="cpython")``):
the whole language and the packages the host names, tools as functions, the run's limits,
and the kernel as the only boundary (every escape attempt refused, the host unaffected)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codeact import Limits, ProcessExecutor, Runtime, ToolCall, ToolExecutionResult, tool
from codeact.executors._confine import ConfinementReport
from codeact.executors._cpython import refusal
from tests.executors.test_confinement import attempts

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel layers this mode needs are Linux's"
)

LIMITS = Limits(wall_seconds=5, cpu_seconds=5, memory_bytes=256 * 1024 * 1024, max_tool_calls=50)
made: list[str] = []


@tool
def price(item: str) -> float:
    """Price of an item in euros."""
    made.append(item)
    return {"tea": 3.5, "cake": 4.25, "jam": 2.0}[item]


arrived: list[str] = []


@tool(concurrency_safe=True)  # calls made together run at once
async def meet(name: str) -> str:
    """Wait until a second caller has arrived: only calls made together both return."""
    arrived.append(name)
    with anyio.fail_after(30):
        while len(arrived) < 2:
            await anyio.sleep(0.01)
    return name


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


@pytest.fixture(scope="module")
def runtime() -> Iterator[Runtime]:
    executor = ProcessExecutor(
        interpreter="cpython", packages=("numpy", "pandas"), limits=LIMITS, warm=0
    )
    with Runtime([price, fail, meet], mode="code", executor=executor) as made_runtime:
        yield made_runtime


def run(runtime: Runtime, code: str, session: str) -> ToolExecutionResult:
    return runtime.execute_sync(ToolCall("c", "run_code", {"code": code}), session=session)


def test_numpy_and_pandas_scripts_call_tools_and_return_values(runtime: Runtime) -> None:
    numbers = run(
        runtime,
        "import numpy as np\n"
        "prices = np.array([price(i) for i in ('tea', 'cake', 'jam')])\n"
        "print('total', prices.sum())\n"
        "prices.round(1)",
        "numpy",
    )
    assert numbers.value["result"] == (3.5, 4.2, 2.0), numbers.text  # type: ignore[index]
    assert numbers.value["output"] == "total 9.75\n"  # type: ignore[index]
    frame = run(
        runtime,
        "import pandas as pd\n"
        "df = pd.DataFrame({'item': ['tea', 'cake']})\n"
        "df['price'] = df['item'].map(price)\n"
        "df.sort_values('price', ascending=False)['item'].tolist()",
        "pandas",
    )
    assert frame.value["result"] == ("cake", "tea"), frame.text  # type: ignore[index]


def test_the_whole_language_names_that_persist_and_concurrent_tool_calls(
    runtime: Runtime,
) -> None:
    # frames, which the restricted interpreter refuses, beside type() with three
    # arguments and dunders assigned in a class body
    first = run(
        runtime,
        "import sys\n"
        "Point = type('Point', (), {'__repr__': lambda self: 'P'})\n"
        "class Unhashable:\n    __hash__ = None\n"
        "kept = [repr(Point()), Unhashable.__hash__, sys._getframe().f_code.co_name]\n"
        "kept",
        "language",
    )
    assert first.value["result"] == ("P", None, "<module>"), first.text  # type: ignore[index]
    gathered = run(
        runtime,
        "import asyncio\n"
        "async def main():\n"
        "    return await asyncio.gather(*(price(i) for i in ('tea', 'jam')))\n"
        "both = asyncio.run(main())\n"
        "[kept[0], both]",
        "language",
    )
    assert gathered.value["result"] == ("P", (3.5, 2.0)), gathered.text  # type: ignore[index]
    met = run(
        runtime,
        "import asyncio\nawait asyncio.gather(meet('a'), meet('b'))",  # concurrent, at the top
        "language",
    )
    assert met.value["result"] == ("a", "b"), met.text  # type: ignore[index]
    awaited = run(runtime, "await price('cake')", "language")  # top-level await
    assert awaited.value["result"] == 4.25, awaited.text  # type: ignore[index]
    alone = run(runtime, "kept", "another session")
    assert alone.is_error
    assert "NameError" in alone.text


def test_a_tool_error_is_catchable_and_an_uncaught_one_names_its_code(runtime: Runtime) -> None:
    caught = run(
        runtime,
        "try:\n    fail('no stock')\nexcept Exception as error:\n    seen = type(error).__name__\n"
        "seen",
        "errors",
    )
    assert caught.value["result"] == "ToolError", caught.text  # type: ignore[index]
    uncaught = run(runtime, "x = 1\nfail('no stock')", "errors")
    assert uncaught.is_error
    assert uncaught.error.code == "CODE_RUNTIME_ERROR"
    assert "ToolError [TOOL_ERROR]" in uncaught.text
    assert "line 2" in uncaught.text


def test_only_the_standard_library_and_the_named_packages_are_importable(
    runtime: Runtime,
) -> None:
    refused = run(runtime, "import pytest", "imports")
    assert refused.is_error
    assert "No module named 'pytest'" in refused.text
    assert "numpy, pandas" in refused.text  # says what is allowed
    allowed = run(runtime, "import email.mime.text, xml.dom.minidom, statistics\n'ok'", "imports")
    assert allowed.value["result"] == "ok", allowed.text  # type: ignore[index]


LIMIT_SCRIPTS = {
    "a busy loop": "while True:\n    pass",
    "a busy loop in C (numpy)": (
        "import numpy as np\nm = np.ones((3000, 3000))\nwhile True:\n    m = m @ m / 3000"
    ),
    "a huge allocation": "import numpy as np\nhuge = np.ones(10**10)",
    "a list that grows": "grown = []\nwhile True:\n    grown.append('x' * 10**6)",
    "a print flood": "while True:\n    print('x' * 10_000)",
    "too many tool calls": "for _ in range(100):\n    price('tea')",
    "endless recursion": "def down(n):\n    return down(n + 1)\ndown(0)",
    "a limit caught by the script": (
        "while True:\n    try:\n        while True:\n            pass\n    except Exception:\n"
        "        pass"
    ),
}


@pytest.mark.parametrize("attack", LIMIT_SCRIPTS)
def test_each_resource_attack_ends_in_a_limit_and_the_next_run_works(
    runtime: Runtime, attack: str
) -> None:
    session = f"limits-{attack}"
    ended = run(runtime, LIMIT_SCRIPTS[attack], session)
    assert ended.is_error, ended.text
    assert ended.error.code == "CODE_RESOURCE_LIMIT", ended.text
    after = run(runtime, "price('tea') * 2", session)
    assert after.value["result"] == 7.0, after.text  # type: ignore[index]


def more_attempts(other_worker: str) -> dict[str, str]:
    """Beyond the worker escape probe's: kernel interfaces an exploit starts from."""
    syscall = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    return {
        "read another worker's folder": f"import os\nresult = os.listdir({other_worker!r})",
        "io_uring": (
            f"{syscall}params = ctypes.create_string_buffer(120)\n"
            "fd = libc.syscall(425, 8, params)\n"
            "if fd < 0:\n    raise OSError(ctypes.get_errno(), 'io_uring_setup refused')\n"
            "result = fd"
        ),
        "userfaultfd": (
            f"{syscall}fd = libc.syscall(323, 0)\n"
            "if fd < 0:\n    raise OSError(ctypes.get_errno(), 'userfaultfd refused')\n"
            "result = fd"
        ),
        "write to /dev/shm": "open('/dev/shm/codeact-planted', 'w').write('x')\nresult = 'written'",
        "raise its address-space limit": (
            "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
            "resource.setrlimit(resource.RLIMIT_AS, (hard, hard + 1 if hard >= 0 else -1))\n"
            "result = 'raised'"
        ),
        "exec a program": "import os\nos.execv('/bin/true', ['true'])",
        "fork": "import os\nresult = os.fork()",
        "a unix socket": "import socket\nresult = socket.socket(socket.AF_UNIX)",
    }


def test_escape_attempts_as_plain_code_are_all_refused_by_the_kernel(
    runtime: Runtime, secret: Path, tcp_server: tuple[int, threading.Event]
) -> None:
    port, connected = tcp_server
    other = run(runtime, "import os\nos.getcwd()", "the other worker")
    other_folder = str(other.value["result"])  # type: ignore[index]
    probes = {**attempts(secret, port), **more_attempts(other_folder)}
    worked = {}
    for name, code in probes.items():
        result = run(runtime, f"{code}\nresult", "escape")  # one worker tries them all
        if not result.is_error:
            worked[name] = result.text
        else:
            assert "Error" in result.text, (name, result.text)
    assert worked == {}, worked
    assert not connected.is_set()
    assert secret.read_text() == "host-secret-41d2"
    assert not (secret.parent / "planted.txt").exists()
    assert not Path("/dev/shm/codeact-planted").exists()
    assert run(runtime, "price('jam')", "the other worker").value["result"] == 2.0  # type: ignore[index]
    assert os.getpid() > 0  # and the host is alive to say so


def test_the_mode_refuses_a_worker_that_lacks_any_layer_it_relies_on() -> None:
    full = {
        "network_namespace": "no network interfaces",
        "no_new_privs": "set",
        "landlock": "ABI 7: filesystem, tcp, signals",
        "user": "uid 65534",
        "parent_death_signal": "SIGKILL when the host exits",
        "seccomp": "47 system calls filtered",
    }
    assert refusal(ConfinementReport(active=dict(full)), as_root=True) == {}
    for layer in ("no_new_privs", "landlock", "seccomp", "parent_death_signal", "user"):
        lacking = {k: v for k, v in full.items() if k != layer}
        report = ConfinementReport(active=lacking, missing={layer: "simulated: not applied"})
        assert refusal(report, as_root=True) == {layer: "simulated: not applied"}
    old = ConfinementReport(active={**full, "landlock": "ABI 4: filesystem, tcp"})
    assert "ABI 6 or later" in refusal(old, as_root=True)["landlock"]
    no_user = {k: v for k, v in full.items() if k != "user"}
    assert refusal(ConfinementReport(active=no_user), as_root=False) == {}  # not root: no drop


def test_a_worker_missing_a_layer_is_refused_through_the_whole_path() -> None:
    """A worker that could not apply seccomp (simulated by the worker module the test
    names) is refused, and the run says which layer: never a silent fallback."""
    from dataclasses import replace

    executor = ProcessExecutor(interpreter="cpython", limits=LIMITS, warm=0)
    executor.options = replace(executor.options, module="tests.executors.no_seccomp_worker")
    with Runtime([price], mode="code", executor=executor) as runtime:
        result = run(runtime, "1 + 1", "refused")
    assert result.is_error
    assert "seccomp" in result.text
    assert "simulated" in result.text


def test_confinement_off_an_unknown_interpreter_and_stray_packages_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="kernel as their only boundary"):
        ProcessExecutor(interpreter="cpython", confinement="off")
    with pytest.raises(ValueError, match="interpreter must be one of"):
        ProcessExecutor(interpreter="pypy")
    with pytest.raises(ValueError, match="packages are for interpreter='cpython'"):
        ProcessExecutor(packages=("numpy",))
