"""The standard bindings: ready-made tools, and the safe modules scripts may import.

``register(registry, workspace=..., http_allow=[...])`` adds file tools rooted at the
workspace, ``fetch`` for the allowed hosts, and ``shell``, which the policy asks
about first (denied unless an approver says yes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeact import Approver, Disposer, ToolRegistry

    from ._workspace import Workspace

GROUPS = ("files", "http", "shell")


def register(
    registry: ToolRegistry,
    *,
    workspace: str | os.PathLike[str],
    http_allow: Iterable[str] = (),
    include: Sequence[str] = GROUPS,
    approver: Approver | None = None,
) -> list[Disposer]:
    """Register the chosen groups of standard tools; returns their disposers.

    When the registry has no policy of its own, it gets one that asks before every
    ``shell`` call (through ``approver``; without one, shell calls are denied).
    """
    # imported here: the host reads this package's module names without these
    from codeact import RulePolicy, Tool, ask

    from ._files import file_tools
    from ._http import http_tools
    from ._shell import shell_tools
    from ._workspace import Workspace

    unknown = set(include) - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown tool groups: {', '.join(sorted(unknown))}")
    root = Workspace(workspace)
    tools: list[Tool] = []
    if "files" in include:
        tools += file_tools(root)
    if "http" in include:
        tools += http_tools(http_allow)
    if "shell" in include:
        tools += shell_tools(root)
        if registry.own_policy is None:
            registry.set_policy(RulePolicy([ask("shell")], approver=approver))
    return [registry.register(t) for t in tools]


def __getattr__(name: str) -> Any:
    if name == "Workspace":
        from ._workspace import Workspace

        return Workspace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GROUPS", "Workspace", "register"]
