"""Tools for the command-line tests, loaded with ``--tools cli_tools:TOOLS``."""

from __future__ import annotations

from codeact import tool


@tool
def double(x: int) -> int:
    """Double a number."""
    return x * 2


TOOLS = [double]
