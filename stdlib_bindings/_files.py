"""File tools rooted at a workspace: read, write, edit, list, glob, grep."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from typing_extensions import TypedDict

from codeact import FrozenJson, Tool, ToolError, tool

from ._workspace import Workspace

MAX_READ_BYTES = 1_000_000
DEFAULT_READ_LINES = 2_000
MAX_MATCHES = 200
MAX_LISTED = 1_000


class ReadResult(TypedDict):
    path: str
    offset: int
    lines: list[str]
    total_lines: int
    truncated: bool


class WriteResult(TypedDict):
    path: str
    bytes: int
    created: bool


class EditResult(TypedDict):
    path: str
    replacements: int


class Match(TypedDict):
    path: str
    line: int
    text: str


class GrepResult(TypedDict):
    matches: list[Match]
    truncated: bool


def _render_read(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    first = int(value["offset"])  # type: ignore[arg-type]
    lines = value["lines"]
    assert isinstance(lines, tuple)
    body = "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))
    shown = (
        f"lines {first}-{first + len(lines) - 1} of {value['total_lines']}" if lines else "no lines"
    )
    note = "; more lines follow, read on with a larger offset" if value["truncated"] else ""
    return f"{value['path']} ({shown}{note})\n{body}"


def _render_grep(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    matches = value["matches"]
    assert isinstance(matches, tuple)
    lines = [f"{m['path']}:{m['line']}: {m['text']}" for m in matches]  # type: ignore[index, call-overload]
    if value["truncated"]:
        lines.append(f"[... stopped at {MAX_MATCHES} matches]")
    return "\n".join(lines) if lines else "no matches"


def _render_write(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    verb = "Created" if value["created"] else "Overwrote"
    return f"{verb} {value['path']} ({value['bytes']:,} bytes)"


def _render_edit(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, Mapping)
    return f"Edited {value['path']}: replaced 1 occurrence"


def _render_list(arguments: Mapping[str, FrozenJson], value: FrozenJson) -> str:
    assert isinstance(value, tuple)
    if not value:
        return "no files match"
    more = f"\n[... listing stopped at {MAX_LISTED:,} entries]" if len(value) >= MAX_LISTED else ""
    return "\n".join(str(name) for name in value) + more


def file_tools(workspace: Workspace) -> list[Tool]:
    """The file tools for one workspace."""

    @tool(render=_render_read, concurrency_safe=True)
    def read(path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES) -> ReadResult:
        """Read a UTF-8 text file from the workspace, as numbered lines.

        Args:
            path: File path relative to the workspace.
            offset: First line to return (1-based).
            limit: How many lines to return at most.
        """
        target = workspace.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file in the workspace", "INVALID_ARGUMENTS")
        size = target.stat().st_size
        if size > MAX_READ_BYTES:
            raise ToolError(f"{path!r} has {size:,} bytes; the limit is {MAX_READ_BYTES:,}")
        data = _read_bytes(target)
        if b"\x00" in data[:8192]:
            raise ToolError(f"{path!r} looks binary; only text files can be read")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ToolError(
                f"{path!r} is not valid UTF-8 ({error.reason} at byte {error.start})"
            ) from None
        every = text.splitlines()
        start = max(offset, 1)
        chosen = every[start - 1 : start - 1 + max(limit, 0)]
        return {
            "path": workspace.relative(target),
            "offset": start,
            "lines": chosen,
            "total_lines": len(every),
            "truncated": start - 1 + len(chosen) < len(every),
        }

    @tool(render=_render_write)
    def write(path: str, content: str) -> WriteResult:
        """Write a UTF-8 text file in the workspace, creating folders as needed.

        Args:
            path: File path relative to the workspace.
            content: The whole new content.
        """
        target = workspace.resolve(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory", "INVALID_ARGUMENTS")
        created = not target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        workspace.resolve(workspace.relative(target.parent))  # still inside after mkdir
        data = content.encode("utf-8")
        _write_bytes(target, data)
        return {"path": workspace.relative(target), "bytes": len(data), "created": created}

    @tool(render=_render_edit)
    def edit(path: str, old: str, new: str) -> EditResult:
        """Replace one exact occurrence of ``old`` with ``new`` in a workspace file.

        Args:
            path: File path relative to the workspace.
            old: The exact text to replace; it must occur exactly once.
            new: The replacement text.
        """
        target = workspace.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file in the workspace", "INVALID_ARGUMENTS")
        text = _read_bytes(target).decode("utf-8")
        count = text.count(old) if old else 0
        if count == 0:
            raise ToolError(f"the text to replace was not found in {path!r}", "INVALID_ARGUMENTS")
        if count > 1:
            raise ToolError(
                f"the text to replace occurs {count} times in {path!r}; "
                "include more context so it is unique",
                "INVALID_ARGUMENTS",
            )
        _write_bytes(target, text.replace(old, new, 1).encode("utf-8"))
        return {"path": workspace.relative(target), "replacements": 1}

    @tool(render=_render_list, concurrency_safe=True)
    def list_files(path: str = ".", pattern: str = "*") -> list[str]:
        """List files under a workspace folder matching a glob pattern (``**`` recurses).

        Args:
            path: Folder relative to the workspace.
            pattern: Glob pattern, such as "*.py" or "**/*.md".
        """
        base = workspace.resolve(path)
        found = []
        for item in sorted(base.glob(pattern)):
            real = os.path.realpath(item)
            if os.path.commonpath([real, workspace.root]) != str(workspace.root):
                continue  # a symlink pointing out is not listed
            found.append(workspace.relative(item) + ("/" if item.is_dir() else ""))
            if len(found) >= MAX_LISTED:
                break
        return found

    @tool(render=_render_grep, concurrency_safe=True)
    def grep(pattern: str, path: str = ".", glob: str = "**/*") -> GrepResult:
        """Search workspace files for a regular expression; returns matching lines.

        Args:
            pattern: A Python regular expression.
            path: Folder relative to the workspace.
            glob: Which files to search.
        """
        try:
            expression = re.compile(pattern)
        except re.error as error:
            raise ToolError(f"invalid regular expression: {error}", "INVALID_ARGUMENTS") from None
        matches: list[Match] = []
        for name in list_files.function(path=path, pattern=glob):
            target = workspace.resolve(name)
            if not target.is_file() or target.stat().st_size > MAX_READ_BYTES:
                continue
            data = _read_bytes(target)
            if b"\x00" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if expression.search(line):
                    matches.append({"path": name, "line": number, "text": line[:500]})
                    if len(matches) >= MAX_MATCHES:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}

    return [read, write, edit, list_files, grep]


def _read_bytes(path: os.PathLike[str]) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read(MAX_READ_BYTES + 1)


def _write_bytes(path: os.PathLike[str], data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


__all__ = ["file_tools"]
