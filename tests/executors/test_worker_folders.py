"""Worker folders never outlive their use: not after close, descriptor exhaustion, a folder
replaced by a file, or a host killed outright (the next start sweeps)."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from codeact.executors._process import ProcessExecutor
from codeact.executors._worker_folders import (
    FOLDER_PREFIX,
    new_folder,
    remove_folder,
    sweep_stale_folders,
)
from codeact.sandbox import Limits
from tests.executors.test_process import run
from tests.hosts import start_host

pytestmark = pytest.mark.anyio


def folders_of(pid: int) -> set[str]:
    mine = f"{FOLDER_PREFIX}{pid}-"
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(mine)}


def test_a_folder_replaced_by_a_file_is_removed() -> None:
    folder = new_folder()
    os.rmdir(folder)
    Path(folder).write_text("not a folder any more")
    assert remove_folder(folder)
    assert not os.path.lexists(folder)


def test_this_hosts_orphans_are_swept_and_live_folders_kept() -> None:
    orphan = Path(tempfile.gettempdir()) / f"{FOLDER_PREFIX}{os.getpid()}-orphan"
    orphan.mkdir()
    (orphan / "left.txt").write_text("by a worker")
    live = new_folder()
    try:
        removed = sweep_stale_folders()
        assert orphan.name in removed
        assert not orphan.exists()
        assert os.path.isdir(live)  # a live worker's folder is never taken
    finally:
        remove_folder(live)


def test_a_removal_that_fails_for_want_of_descriptors_is_retried(tmp_path: Path) -> None:
    body = """
import os, resource
from codeact.executors._worker_folders import new_folder, remove_folder, sweep_stale_folders
folder = new_folder()
for n in range(20):
    with open(os.path.join(folder, f"file{n}"), "w") as f:
        f.write("x")
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
hogs = []
try:
    while True:
        hogs.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print(remove_folder(folder), os.path.isdir(folder), flush=True)
for fd in hogs:
    os.close(fd)
print(os.path.basename(folder) in sweep_stale_folders(), os.path.lexists(folder), flush=True)
"""
    host = start_host(tmp_path, body)
    output, _ = host.communicate(timeout=60)
    assert output.split() == ["False", "True", "True", "False"]


def test_no_folder_is_left_after_descriptor_exhaustion(tmp_path: Path) -> None:
    body = """
import os, resource, anyio
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
async def no_tools(name, arguments):
    raise AssertionError(name)
async def main():
    failed = []
    async with ProcessExecutor(limits=Limits(wall_seconds=60), max_sessions=100) as executor:
        await executor.prepare()  # workers forked from the template, and spares kept warm
        async def one(number):
            outcome = await executor.run("1", session=f"s{number}", tools={}, call_tool=no_tools)
            if outcome.error is not None:
                failed.append(outcome.error.message)
        async with anyio.create_task_group() as tasks:
            for number in range(40):
                tasks.start_soon(one, number)
    print(os.getpid(), len(failed), flush=True)
anyio.run(main)
"""
    host = start_host(tmp_path, body)
    output, _ = host.communicate(timeout=300)
    pid, failed = (int(word) for word in output.split())
    assert failed > 0  # descriptors did run out
    assert folders_of(pid) == set()


async def test_a_killed_hosts_folders_are_swept_by_the_next_start(tmp_path: Path) -> None:
    body = """
import os, anyio
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits
async def no_tools(name, arguments):
    raise AssertionError(name)
async def main():
    executor = ProcessExecutor(limits=Limits(), warm=0)
    for number in range(3):
        await executor.run("1", session=f"s{number}", tools={}, call_tool=no_tools)
    print(os.getpid(), flush=True)
    await anyio.sleep(120)
anyio.run(main)
"""
    host = start_host(tmp_path, body)
    assert host.stdout is not None
    pid = int(host.stdout.readline())
    assert len(folders_of(pid)) == 3
    host.send_signal(signal.SIGKILL)
    host.wait(30)
    host.stdout.close()
    assert len(folders_of(pid)) == 3  # nobody cleaned up
    executor = ProcessExecutor(limits=Limits(), warm=0)
    try:
        assert (await run(executor, "1 + 1")).value == 2  # the first start sweeps
        assert folders_of(pid) == set()
    finally:
        await executor.aclose()
    assert folders_of(os.getpid()) == set()
