"""A workspace directory that no path given to a tool can leave."""

from __future__ import annotations

import os
from pathlib import Path

from codeact import ToolError


class Workspace:
    """Resolves tool-supplied paths inside ``root``; everything else is refused.

    Refused: absolute paths, NUL bytes, and anything whose real path (after ``..`` and
    every symlink) lies outside the root. Other odd spellings (``%2e%2e``, ``..\\``,
    full-width dots) are ordinary file names on POSIX and stay inside.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(root))
        if not self.root.is_dir():
            raise ValueError(f"workspace {self.root} is not a directory")

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the workspace; ToolError if it would leave it."""
        if "\x00" in path:
            raise ToolError("paths may not contain NUL bytes", "INVALID_ARGUMENTS")
        if os.path.isabs(path):
            raise ToolError(
                f"{path!r} is absolute; give a path relative to the workspace", "POLICY_DENIED"
            )
        candidate = os.path.realpath(os.path.join(self.root, path or "."))
        if os.path.commonpath([candidate, self.root]) != str(self.root):
            raise ToolError(f"{path!r} leads outside the workspace", "POLICY_DENIED")
        return Path(candidate)

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root)) or "."


__all__ = ["Workspace"]
