"""The worker template started as codeact is imported: taken over by the first executor
that can use it, never started where it must not be, closed when nobody takes it.

Each host is a real Python process started here with the early template on (the suite
itself turns it off: its tests count this process's children), which prints what it saw
as JSON: its children and grandchildren read from /proc.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from codeact.executors._early_template import _Early, available
from codeact.executors._worker_environment import (
    DEFAULT_WORKER_MODULE,
    EARLY_TEMPLATE_VARIABLE,
    WORKER_ENVIRONMENT,
    template_command,
)
from tests.executors.test_process import children

pytestmark = pytest.mark.skipif(
    not available(), reason="forking from a template needs pidfds (Linux)"
)

ROOT = Path(__file__).resolve().parents[2]

# Read from /proc by every host below: the living (not zombie) children of a process.
PROCESSES = """
import json, os, time
from pathlib import Path

def status(pid):
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""

def children_of(parent):
    found = []
    for entry in Path("/proc").iterdir():
        text = status(entry.name) if entry.name.isdigit() else ""
        if f"\\nPPid:\\t{parent}\\n" in text and "\\nState:\\tZ" not in text:
            found.append(int(entry.name))
    return sorted(found)

def command_of(pid):
    # empty for a moment while the process execs: read again until it has one
    for _ in range(2000):
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        if command:
            return command.replace(b"\\0", b" ").decode()
        time.sleep(0.005)
    return ""

def tree():
    return {pid: children_of(pid) for pid in children_of(os.getpid())}
"""


def host(program: str, *, early: str | None = None, cwd: Path = ROOT) -> dict[str, Any]:
    """Run ``program`` in a fresh interpreter (early template on unless ``early``) in
    ``cwd``; the JSON object it prints last."""
    environment = {k: v for k, v in os.environ.items() if k != EARLY_TEMPLATE_VARIABLE}
    if early is not None:
        environment[EARLY_TEMPLATE_VARIABLE] = early
    done = subprocess.run(
        [sys.executable, "-c", PROCESSES + textwrap.dedent(program)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_executor_takes_over_the_template_started_at_import() -> None:
    seen = host(
        """
        import codeact
        at_import = tree()
        commands = {pid: command_of(pid) for pid in at_import}
        from codeact import Runtime, ToolCall, ToolRegistry
        runtime = Runtime(ToolRegistry(), mode="code")
        result = runtime.execute_sync(ToolCall("c", "run_code", {"code": "6 * 7"}))
        executor = runtime.executor
        during = tree()
        template = executor.template_pid
        runtime.close()
        print(json.dumps({
            "at_import": at_import,
            "commands": commands,
            "template": template,
            "during": during,
            "after": tree(),
            "text": result.text,
        }))
        """
    )
    at_import = seen["at_import"]
    assert len(at_import) == 1  # one process: the template
    (early,) = at_import
    assert "codeact.executors._template" in seen["commands"][early]
    assert at_import[early] == []  # importing codeact in the template started nothing
    assert str(seen["template"]) == early  # taken over, not started again
    during = seen["during"]
    assert list(during) == [early]
    assert len(during[early]) >= 1  # the session's worker, forked from it
    assert "42" in str(seen["text"])
    assert seen["after"] == {}  # closing the runtime closed the template and its workers


def test_an_executor_with_another_worker_environment_starts_its_own_template() -> None:
    seen = host(
        """
        import codeact
        (early,) = tree()
        import anyio
        from codeact.executors._process import ProcessExecutor
        from codeact.sandbox import Limits

        async def main():
            async with ProcessExecutor(limits=Limits(), warm=0, hash_seed=7) as executor:
                outcome = await executor.run(
                    "1 + 1", session="s", tools={}, call_tool=None
                )
                return executor.template_pid, outcome.value, tree()

        template, value, during = anyio.run(main)
        print(json.dumps({"early": early, "template": template, "value": value,
                          "during": during}))
        """
    )
    assert seen["value"] == 2
    assert seen["template"] != seen["early"]
    # the early one waits, untouched, for an executor that can take it over
    assert seen["during"][str(seen["early"])] == []


@pytest.mark.parametrize(
    ("case", "program", "early"),
    [
        ("turned off", "import codeact", "0"),
        (
            "an embedding host's executable is not python",
            "import sys\nsys.executable = '/usr/bin/env'\nimport codeact",
            None,
        ),
        (
            "imported off the main thread",
            """
            import threading
            importer = threading.Thread(target=lambda: __import__("codeact"))
            importer.start()
            importer.join()
            """,
            None,
        ),
    ],
)
def test_no_template_is_started(case: str, program: str, early: str | None) -> None:
    seen = host(textwrap.dedent(program) + "\nprint(json.dumps({'tree': tree()}))", early=early)
    assert seen == {"tree": {}}, case


def test_a_forked_copy_of_the_host_never_takes_its_parents_template() -> None:
    seen = host(
        """
        import codeact
        from codeact.executors._early_template import take_early_template
        from codeact.executors._worker_environment import (
            DEFAULT_WORKER_MODULE, WORKER_ENVIRONMENT, template_command,
        )
        command = template_command(DEFAULT_WORKER_MODULE)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            taken = take_early_template(command, WORKER_ENVIRONMENT)
            os.write(write_end, b"none" if taken is None else b"taken")
            os._exit(0)
        os.waitpid(pid, 0)
        in_child = os.read(read_end, 10).decode()
        in_parent = take_early_template(command, WORKER_ENVIRONMENT)
        print(json.dumps({"child": in_child, "parent": in_parent is not None}))
        """
    )
    assert seen == {"child": "none", "parent": True}


def test_a_template_nobody_takes_over_is_closed_and_reaped() -> None:
    before = children()
    command = template_command(DEFAULT_WORKER_MODULE)
    early = _Early(command, WORKER_ENVIRONMENT, unclaimed_seconds=0.5)
    (started,) = children() - before
    deadline = time.monotonic() + 60
    while started in children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started not in children()  # closed and reaped: no zombie left
    assert children() == before
    assert early.take(command, WORKER_ENVIRONMENT) is None  # and nobody can take it now


def test_a_template_is_taken_over_once() -> None:
    command = template_command(DEFAULT_WORKER_MODULE)
    early = _Early(command, WORKER_ENVIRONMENT)
    try:
        taken = early.take(command, WORKER_ENVIRONMENT)
        assert taken is not None
        assert early.take(command, WORKER_ENVIRONMENT) is None
    finally:
        early.close()
    process, control = taken
    control.close()
    process.kill()
    process.wait()


def test_the_template_holds_no_descriptor_the_host_let_it_inherit() -> None:
    seen = host(
        """
        import resource
        read_end, write_end = os.pipe()
        os.set_inheritable(read_end, True)  # what a careless host leaves open to children
        os.set_inheritable(write_end, True)
        high = os.dup2(read_end, 900)  # above the limit the host lowers next
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        import codeact
        (early,) = tree()
        from codeact import Runtime, ToolCall, ToolRegistry
        runtime = Runtime(ToolRegistry(), mode="code")
        result = runtime.execute_sync(ToolCall("c", "run_code", {"code": "6 * 7"}))
        held = sorted(os.readlink(f"/proc/{early}/fd/{fd}") for fd in os.listdir(f"/proc/{early}/fd"))
        pipe = os.readlink(f"/proc/self/fd/{read_end}")
        template = runtime.executor.template_pid
        runtime.close()
        print(json.dumps({"early": early, "template": template, "held": held, "pipe": pipe,
                          "text": result.text}))
        """
    )
    assert seen["template"] == seen["early"]  # the template that served the run
    assert "42" in seen["text"]
    assert seen["pipe"].startswith("pipe:")
    assert seen["pipe"] not in seen["held"]
    # its standard streams (/dev/null), its control socket, its wake-up pipe's two ends,
    # the file it reads its own memory from: nothing else
    assert len(seen["held"]) <= 7, seen["held"]


def test_a_codeact_folder_where_the_host_runs_is_not_what_the_template_imports(
    tmp_path: Path,
) -> None:
    impostor = tmp_path / "codeact"
    impostor.mkdir()
    (impostor / "__init__.py").write_text("raise SystemExit(3)\n")
    seen = host(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})  # this host imports the real one on purpose
        import codeact
        (early,) = tree()
        from codeact import Runtime, ToolCall, ToolRegistry
        runtime = Runtime(ToolRegistry(), mode="code")
        result = runtime.execute_sync(ToolCall("c", "run_code", {{"code": "6 * 7"}}))
        template = runtime.executor.template_pid
        runtime.close()
        print(json.dumps({{"early": early, "template": template, "text": result.text}}))
        """,
        cwd=tmp_path,
    )
    assert "42" in seen["text"]
    assert seen["template"] == seen["early"]  # it started: it never ran the impostor


def test_a_template_handle_kills_and_reaps_once_and_keeps_no_descriptor() -> None:
    before = set(os.listdir("/proc/self/fd"))
    command = template_command(DEFAULT_WORKER_MODULE)
    taken = _Early(command, WORKER_ENVIRONMENT).take(command, WORKER_ENVIRONMENT)
    assert taken is not None
    process, control = taken
    assert process.pid in children()
    assert process.poll() is None
    process.kill()
    assert process.wait() == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL
    process.kill()  # reaped: its pidfd is closed, so no other process can be signalled
    control.close()
    assert process.pid not in children()
    assert set(os.listdir("/proc/self/fd")) == before
