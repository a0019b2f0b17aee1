"""The standard library as scripts see it: one curated facade per module, made per
session and handed to the sandbox by the executors. May import: contract, sandbox.

The names load on their own (the host describes run_code and starts workers with them);
the facades load when a sandbox first asks for them.
"""

from __future__ import annotations

import decimal
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._names import DEFAULT_MODULES

if TYPE_CHECKING:
    from ..sandbox import Limits, Sandbox
    from ..sandbox._guards import Guards


class StandardLibrary:
    """The facades of ``DEFAULT_MODULES``: what both executors give their sandboxes."""

    default_modules: frozenset[str] = DEFAULT_MODULES

    def shared_modules(self) -> Sequence[ModuleType]:
        from . import _modules  # noqa: F401  # every facade module, loaded

        return [
            module for name, module in list(sys.modules.items()) if name.startswith(__name__ + ".")
        ]

    def session_facades(
        self, guards: Guards, *, seed: int | None, environ: Mapping[str, str]
    ) -> Mapping[str, Any]:
        from ._modules import session_facades

        return session_facades(guards, seed=seed, environ=environ)

    def decimal_context(
        self, current: decimal.Context | None = None, kept: Any = None
    ) -> decimal.Context:
        from ._everyday import session_decimal_context

        return session_decimal_context(current, kept)


STANDARD_LIBRARY = StandardLibrary()


def standard_sandbox(
    *,
    limits: Limits | None = None,
    modules: frozenset[str] | None = None,
    seed: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Sandbox:
    """A restricted interpreter whose scripts may import the standard facades (those of
    ``modules``, by default all of ``DEFAULT_MODULES``)."""
    from ..sandbox import Sandbox

    return Sandbox(
        limits=limits, library=STANDARD_LIBRARY, modules=modules, seed=seed, environ=environ
    )


__all__ = ["DEFAULT_MODULES", "STANDARD_LIBRARY", "StandardLibrary", "standard_sandbox"]
