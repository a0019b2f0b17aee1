"""What a sandbox is handed: the modules its scripts may import.

The interpreter builds no module facade itself. The layer above it (``codeact.stdlib``)
makes them, and whoever creates a sandbox hands that library over, so nothing in the
sandbox imports upward; a sandbox given no library offers scripts no module at all.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._guards import Guards


class ScriptLibrary(Protocol):
    """The modules scripts may import, made per session from the session's guards."""

    @property
    def default_modules(self) -> frozenset[str]:
        """The names offered when the host names none."""
        ...

    def shared_modules(self) -> Sequence[ModuleType]:
        """The modules whose classes every session shares (sealed before a first run)."""
        ...

    def session_facades(
        self, guards: Guards, *, seed: int | None, environ: Mapping[str, str]
    ) -> Mapping[str, Any]:
        """One session's facades, by module name (state such as ``random``'s its own)."""
        ...

    def decimal_context(
        self, current: decimal.Context | None = None, kept: Any = None
    ) -> decimal.Context:
        """The session's decimal context: ``current`` if the script set its own, else
        ``kept``, else a fresh one (bounded as the library bounds every script context)."""
        ...


class NoLibrary:
    """No module at all: scripts have the builtins and the tools they are given."""

    default_modules: frozenset[str] = frozenset()

    def shared_modules(self) -> Sequence[ModuleType]:
        return ()

    def session_facades(
        self, guards: Guards, *, seed: int | None, environ: Mapping[str, str]
    ) -> Mapping[str, Any]:
        return {}

    def decimal_context(
        self, current: decimal.Context | None = None, kept: Any = None
    ) -> decimal.Context:
        # no script can reach decimal without the module: the context is never the script's
        return kept if isinstance(kept, decimal.Context) else decimal.Context()


NO_LIBRARY = NoLibrary()

__all__ = ["NO_LIBRARY", "NoLibrary", "ScriptLibrary"]
