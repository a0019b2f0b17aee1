"""The worker as a boundary of its own: what escaped code can do inside it.

Every test runs unrestricted Python inside a worker through the test-only hook of
``tests/executors/escape_worker.py``, as a complete interpreter escape would, once in a
confined worker (each attempt must fail with the kernel's error, and the host lives
on) and once in an unconfined one (the same attempt succeeds, so the test proves the
confinement and not the hook).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from codeact.executors._confine import REQUIRED_LAYERS
from codeact.executors._process import ProcessExecutor
from codeact.executors._worker_process import Worker, WorkerLost, WorkerOptions
from codeact.sandbox import Limits
from tests.hosts import REPO, machine_lock, start_host

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kernel confinement is Linux"),
]
ESCAPE_MODULE = "tests.executors.escape_worker"


async def start(confinement: str) -> Worker:
    options = WorkerOptions(confinement=confinement, module=ESCAPE_MODULE)  # type: ignore[arg-type]
    return await Worker.start(Limits(), frozenset({"json"}), options)


async def escape(worker: Worker, code: str) -> dict[str, Any]:
    await worker.send({"op": "escape", "code": code})
    with anyio.fail_after(30):
        return await worker.receive()


@pytest.fixture
async def confined() -> AsyncIterator[Worker]:
    worker = await start("best-effort")
    yield worker
    await worker.close()


@pytest.fixture
async def unconfined() -> AsyncIterator[Worker]:
    worker = await start("off")
    yield worker
    await worker.close()


def attempts(secret: Path, port: int) -> dict[str, str]:
    """What an escaped script tries, each as code that sets ``result`` when it works."""
    host = os.getpid()
    return {
        "read a secret outside its folder": f"result = open({str(secret)!r}).read()",
        "list the host's home": f"import os\nresult = os.listdir({os.path.expanduser('~')!r})",
        "list the project checkout": f"import os\nresult = os.listdir({str(REPO)!r})",
        "write outside its folder": (
            f"open({str(secret.parent / 'planted.txt')!r}, 'w').close()\nresult = 'written'"
        ),
        "connect to 127.0.0.1": (
            f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "s.close()\nresult = 'connected'"
        ),
        "start /bin/sh": (
            "import subprocess\n"
            "result = subprocess.run(['/bin/sh', '-c', 'echo started'], capture_output=True).stdout"
        ),
        "read the host's environment": f"result = open('/proc/{host}/environ').read()[:20]",
        "list the host's /proc entry": f"import os\nresult = os.listdir('/proc/{host}')[:3]",
        "signal the host": f"import os\nos.kill({host}, 0)\nresult = 'may signal'",
        "trace the host": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"if libc.ptrace(0x4206, {host}, 0, 0) != 0:\n"  # PTRACE_SEIZE: does not stop it
            "    raise OSError(ctypes.get_errno(), 'ptrace refused')\n"
            f"libc.ptrace(17, {host}, 0, 0)\n"  # PTRACE_DETACH
            "result = 'traced'"
        ),
    }


ATTEMPTS = list(attempts(Path("/x"), 1))


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_escaped_code_in_a_confined_worker_reaches_nothing(
    confined: Worker, secret: Path, tcp_server: tuple[int, threading.Event], attempt: str
) -> None:
    port, connected = tcp_server
    answer = await escape(confined, attempts(secret, port)[attempt])
    assert answer["ok"] is False, f"{attempt} worked: {answer.get('value')}"
    assert answer["errno"] is not None, answer["error"]  # the kernel said no, with an errno
    assert "host-secret" not in answer["error"]
    assert not (secret.parent / "planted.txt").exists()
    assert not connected.is_set()


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_the_same_code_in_an_unconfined_worker_succeeds(
    unconfined: Worker, secret: Path, tcp_server: tuple[int, threading.Event], attempt: str
) -> None:
    if os.geteuid() != 0 and attempt == "trace the host":
        pytest.skip("tracing the host needs the privileges of the user that runs it")
    port, connected = tcp_server
    answer = await escape(unconfined, attempts(secret, port)[attempt])
    assert answer["ok"] is True, answer["error"]
    if attempt == "connect to 127.0.0.1":
        assert connected.wait(10)


async def test_the_host_survives_a_kill_from_escaped_code(confined: Worker) -> None:
    answer = await escape(confined, f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)")
    assert answer["ok"] is False
    assert answer["errno"] == 1  # EPERM
    answer = await escape(confined, "import os\nos.kill(os.getppid(), 9)")
    assert answer["ok"] is False  # and here we still are


async def test_a_confined_worker_reports_every_required_layer(confined: Worker) -> None:
    report = confined.confinement
    assert set(REQUIRED_LAYERS) <= set(report.active), report.describe()
    if os.geteuid() == 0:
        assert "user" in report.active
        answer = await escape(confined, "import os\nresult = (os.getuid(), os.getgroups())")
        assert answer["value"] == "(65534, [])"


async def test_require_starts_a_worker_where_every_layer_is_there() -> None:
    worker = await start("require")
    try:
        answer = await escape(worker, "result = 6 * 7")
        assert answer["value"] == "42"
    finally:
        await worker.close()


async def test_scripts_still_run_and_import_what_they_need_once_confined() -> None:
    executor = ProcessExecutor(limits=Limits(wall_seconds=10), warm=0, confinement="require")

    async def no_tools(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("no tool is bound")

    try:
        outcome = await executor.run(
            "import datetime, json, decimal, re\n"
            "d = datetime.datetime.strptime('2024-03-01', '%Y-%m-%d')\n"
            "[d.month, json.dumps({'a': 'é'}), str(decimal.Decimal('1.5') * 2),"
            " 'é'.encode('latin-1').decode('latin-1'), re.sub('a', 'b', 'aa')]",
            session="s",
            tools={},
            call_tool=no_tools,
        )
        assert outcome.error is None, outcome.error
        assert outcome.value == [3, '{"a": "\\u00e9"}', "3.0", "é", "bb"]
    finally:
        await executor.aclose()


def test_a_worker_dies_with_its_host(tmp_path: Path) -> None:
    """A host killed outright: its worker gets SIGKILL from the kernel, not an orphan's life."""
    body = (
        "import anyio\n"
        "from codeact.executors._worker_process import Worker\n"
        "from codeact.sandbox import Limits\n"
        "async def main():\n"
        "    worker = await Worker.start(Limits(), frozenset())\n"
        "    print(worker.pid, flush=True)\n"
        "    await anyio.sleep(120)\n"
        "anyio.run(main)\n"
    )
    with start_host(tmp_path, body) as host:
        assert host.stdout is not None
        worker_pid = int(host.stdout.readline())
        assert _alive(worker_pid)
        host.send_signal(signal.SIGKILL)
        host.wait(30)
    gone = threading.Event()
    for _ in range(600):  # bounded wait for the kernel to deliver the parent-death signal
        if not _alive(worker_pid):
            gone.set()
            break
        gone.wait(0.05)
    assert gone.is_set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def bwrap() -> str:
    """bubblewrap, installed from the distribution's packages when missing."""
    with machine_lock("apt"):  # one test process installs; the others wait, then find it
        found = shutil.which("bwrap")
        if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "bubblewrap"],
            ):
                try:
                    subprocess.run(command, check=False, capture_output=True, timeout=300, env=env)
                except subprocess.TimeoutExpired:
                    break
            found = shutil.which("bwrap")
    if found is None:
        pytest.skip("bubblewrap is not installed and could not be installed here")
    probe = subprocess.run(
        [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot run here: {probe.stderr.strip()}")
    return found


async def test_workers_run_under_an_isolator_given_as_a_command_prefix(
    bwrap: str, secret: Path
) -> None:
    prefix = (
        bwrap,
        "--ro-bind", "/", "/",
        "--tmpfs", "/tmp",
        "--ro-bind", str(REPO), str(REPO),  # the checkout may itself live under /tmp
        "--ro-bind", sys.prefix, sys.prefix,
        "--bind", "{workdir}", "{workdir}",
        "--dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid",
        "--die-with-parent",
        "--",
    )  # fmt: skip
    options = WorkerOptions(module=ESCAPE_MODULE, prefix=prefix)
    worker = await Worker.start(Limits(), frozenset({"json"}), options)
    try:
        answer = await escape(worker, f"import os\nresult = os.path.exists({str(secret)!r})")
        assert answer["ok"] is False or answer["value"] == "False"
        answer = await escape(worker, "result = 2 + 3")
        assert answer["value"] == "5"
    finally:
        await worker.close()
    executor = ProcessExecutor(warm=0, worker_prefix=prefix)

    async def no_tools(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("no tool is bound")

    try:
        outcome = await executor.run("sum(range(10))", session="s", tools={}, call_tool=no_tools)
        assert outcome.value == 45
    finally:
        await executor.aclose()


async def test_a_worker_that_cannot_start_under_its_prefix_is_reported() -> None:
    options = WorkerOptions(prefix=("/nonexistent/isolator", "--"))
    with pytest.raises((WorkerLost, OSError)):
        await Worker.start(Limits(), frozenset(), options)


def test_landlock_abi_is_what_this_machine_offers() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), 1)
    if abi < 0:
        pytest.skip("this kernel has no Landlock")
    assert abi >= 1


def test_seccomp_bindings_load_without_running_ldconfig() -> None:
    # A fresh interpreter, as a template is: pyseccomp's library lookups are answered by
    # the loader's sonames, no ldconfig runs, and ctypes' own lookup is left as it was.
    program = (
        "import ctypes.util, subprocess\n"
        "started = []\n"
        "class Counted(subprocess.Popen):\n"
        "    def __init__(self, command, *rest, **options):\n"
        "        started.append(command)\n"
        "        super().__init__(command, *rest, **options)\n"
        "subprocess.Popen = Counted\n"
        "look_up = ctypes.util.find_library\n"
        "from codeact.executors._confine import load_seccomp\n"
        "bindings = load_seccomp()\n"
        "print(bindings.__name__, bindings._libseccomp_path, started,"
        " ctypes.util.find_library is look_up)\n"
    )
    assert printed_by_fresh_interpreter(program) == [
        "pyseccomp",
        "libseccomp.so.2",
        "[]",
        "True",
    ]


def test_seccomp_bindings_load_without_importing_ctypes_lookup_module() -> None:
    # A template has not imported ctypes.util, which brings shutil, tempfile and
    # subprocess: the bindings load without it, and it is the real module once imported.
    program = (
        "import sys\n"
        "from codeact.executors._confine import load_seccomp\n"
        "bindings = load_seccomp()\n"
        "held = [m for m in ('ctypes.util', 'shutil', 'tempfile') if m in sys.modules]\n"
        "import ctypes, ctypes.util\n"
        "real = ctypes.util.__file__.endswith('util.py') and ctypes.util is sys.modules['ctypes.util']\n"
        "print(bindings.__name__, bindings._libseccomp_path, held, real)\n"
    )
    assert printed_by_fresh_interpreter(program) == ["pyseccomp", "libseccomp.so.2", "[]", "True"]


def test_a_worker_adds_to_the_templates_readable_paths_what_it_loaded_after(
    tmp_path: Path,
) -> None:
    # Resolved once in the template, the paths are kept: a forked worker looks again only
    # at modules and mappings that are new to it, and loses none of the template's.
    (tmp_path / "loaded_late.py").write_text("VALUE = 1\n")
    program = (
        "import sys\n"
        "from codeact.executors._confine import _interpreter_paths\n"
        "before = _interpreter_paths(())\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import loaded_late\n"
        "after = _interpreter_paths(())\n"
        "print(set(before) <= set(after), loaded_late.__file__ in before,"
        " loaded_late.__file__ in after)\n"
    )
    assert printed_by_fresh_interpreter(program) == ["True", "False", "True"]


def printed_by_fresh_interpreter(program: str) -> list[str]:
    """The words ``program`` prints, run by a fresh interpreter of this environment."""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no pressure record")
async def test_a_confined_worker_reads_the_pressure_record_only_through_its_own_descriptor(
    confined: Worker,
) -> None:
    """Its spinners tell a busy machine from one at rest after confinement, through the
    descriptor opened before it; opening the record by name is refused like any path."""
    code = (
        "import gc\n"
        "from codeact.executors._spin import Spinner, stalled_seconds\n"
        "spinners = [o for o in gc.get_objects() if type(o) is Spinner]\n"
        "result = (len(spinners), [stalled_seconds(s._pressure) is not None for s in spinners],"
        " stalled_seconds())"
    )
    answer = await escape(confined, code)
    assert answer["ok"] is True, answer["error"]
    assert answer["value"] == "(2, [True, True], None)"
