"""A shell command in the workspace, with a timeout, bounded output and a scrubbed environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

import anyio
from typing_extensions import TypedDict

from codeact import FrozenJson, Tool, tool

from ._workspace import Workspace

MAX_OUTPUT_BYTES = 50_000
DEFAULT_TIMEOUT = 30.0


class CommandResult(TypedDict):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool


def _render(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    status = "timed out" if value["timed_out"] else f"exit code {value['exit_code']}"
    parts = [f"$ {arguments.get('command')}  ({status})"]
    if value["stdout"]:
        parts.append(str(value["stdout"]).rstrip())
    if value["stderr"]:
        parts.append("stderr:\n" + str(value["stderr"]).rstrip())
    if value["truncated"]:
        parts.append(f"[... output truncated at {MAX_OUTPUT_BYTES:,} bytes]")
    return "\n".join(parts)


def shell_tools(workspace: Workspace) -> list[Tool]:
    """``shell``: runs in the workspace; registered behind an ``ask`` policy by default."""

    @tool(render=_render, timeout=None)
    async def shell(command: str, timeout: float = DEFAULT_TIMEOUT) -> CommandResult:  # noqa: ASYNC109
        """Run a shell command in the workspace folder and return its exit code and output.

        Args:
            command: The command line, run by /bin/sh.
            timeout: Seconds before the command is killed.
        """
        environment = {"PATH": os.defpath, "HOME": str(workspace.root), "LANG": "C.UTF-8"}
        process = await anyio.open_process(
            ["/bin/sh", "-c", command], cwd=workspace.root, env=environment, start_new_session=True
        )
        outputs: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        truncated = False

        async def drain(name: str, stream: anyio.abc.ByteReceiveStream | None) -> None:
            nonlocal truncated
            if stream is None:
                return
            async for chunk in stream:
                room = MAX_OUTPUT_BYTES - len(outputs[name])
                if len(chunk) > room:
                    truncated = True
                outputs[name] += chunk[: max(room, 0)]

        timed_out = False
        try:
            with anyio.move_on_after(max(timeout, 0.0)) as scope:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(drain, "stdout", process.stdout)
                    tasks.start_soon(drain, "stderr", process.stderr)
                await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            if process.returncode is None:
                process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
                await process.aclose()
        return {
            "exit_code": None if timed_out else process.returncode,
            "stdout": outputs["stdout"].decode("utf-8", "replace"),
            "stderr": outputs["stderr"].decode("utf-8", "replace"),
            "timed_out": timed_out,
            "truncated": truncated,
        }

    return [shell]


__all__ = ["shell_tools"]
