"""Lazy discovery for large catalogs: ``search_tools`` and ``describe``, as tools themselves."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..contract._exceptions import ToolError
from ..contract._registry import ToolRegistry
from ..contract._tool import Tool, tool
from ._stubs import stub

SEARCH_TOOLS = "search_tools"
DESCRIBE = "describe"
DEFAULT_RESULTS = 8
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def discovery_tools(catalog: Callable[[], list[Tool]]) -> list[Tool]:
    """``search_tools(query)`` and ``describe(name)`` over the tools ``catalog`` returns."""

    @tool(name=SEARCH_TOOLS, concurrency_safe=True)
    def search_tools(query: str, limit: int = DEFAULT_RESULTS) -> list[dict[str, str]]:
        """Find tools by what they do; returns names with one-line summaries, best first.

        Args:
            query: Words describing the task, such as "weather forecast city".
            limit: How many tools to return at most.
        """
        wanted = _words(query)
        scored = []
        for position, candidate in enumerate(catalog()):
            name_words = _words(candidate.name)
            text_words = _words(candidate.description)
            score = 3 * len(wanted & name_words) + len(wanted & text_words)
            if score:
                scored.append((-score, position, candidate))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [
            {
                "name": t.name,
                "summary": t.description.strip().splitlines()[0] if t.description.strip() else "",
            }
            for _, _, t in scored[: max(1, min(limit, 50))]
        ]

    @tool(name=DESCRIBE, concurrency_safe=True)
    def describe(name: str) -> dict[str, object]:
        """A tool's Python signature with its docstring, and its JSON Schema parameters.

        Args:
            name: The tool's exact name, as search_tools returned it.
        """
        for candidate in catalog():
            if candidate.name == name:
                return {
                    "name": name,
                    "signature": stub(candidate),
                    "parameters": candidate.parameters,
                }
        raise ToolError(
            f"no tool named {name!r}; use search_tools(query) to find one", "UNKNOWN_TOOL"
        )

    return [search_tools, describe]


def user_tools(registry: ToolRegistry, reserved: frozenset[str]) -> list[Tool]:
    """The registry's tools without the runtime's own."""
    return [t for t in registry.tools() if t.name not in reserved]


__all__ = ["DESCRIBE", "SEARCH_TOOLS", "discovery_tools", "user_tools"]
