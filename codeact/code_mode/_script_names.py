"""The Python name each tool has in scripts: its own, or an identifier alias.

MCP servers name tools ``get-sum`` and ``files.read``; a script can only call an
identifier. Every tool gets one: its own name when that already is an identifier (those
keep it, whatever else is registered), otherwise the name with every other character
made ``_`` (``get-sum`` -> ``get_sum``), ``_`` in front of a leading digit, ``_`` after a
keyword. When that alias is taken, by a tool of that very name or by another alias, a
short stable suffix from the original name tells them apart (``db_query_3f9a1c``). The
same tools always get the same names, whatever order they were registered in.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..contract._tool import Tool

_NOT_IDENTIFIER = re.compile(r"\W")


@dataclass(frozen=True)
class ScriptNames:
    """Tools by the name scripts call them, and the tools whose name had to change."""

    tools: dict[str, Tool] = field(default_factory=dict)  # script name -> tool
    renamed: dict[str, str] = field(default_factory=dict)  # tool name -> script name

    def tool_name(self, script_name: str) -> str:
        """The registered name behind a name a script called."""
        found = self.tools.get(script_name)
        return found.name if found is not None else script_name


def assign_script_names(tools: Iterable[Tool]) -> ScriptNames:
    """Assign every tool its script name (see the module docstring)."""
    listed = list(tools)
    taken = {tool.name for tool in listed if _usable(tool.name)}  # these keep their names
    renamed: dict[str, str] = {}
    for tool in sorted((t for t in listed if not _usable(t.name)), key=lambda t: t.name):
        alias = _identifier(tool.name)
        if alias in taken:
            alias = f"{alias}_{hashlib.sha256(tool.name.encode()).hexdigest()[:6]}"
        taken.add(alias)
        renamed[tool.name] = alias
    in_order = {renamed.get(tool.name, tool.name): tool for tool in listed}  # registry order
    return ScriptNames(tools=in_order, renamed=renamed)


def _usable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and name.isascii()


def _identifier(name: str) -> str:
    alias = _NOT_IDENTIFIER.sub("_", name.encode("ascii", "replace").decode().replace("?", "_"))
    if not alias or alias[0].isdigit():
        alias = f"_{alias}"
    if keyword.iskeyword(alias):
        alias = f"{alias}_"
    return alias


# Names providers accept ------------------------------------------------------------------

NATIVE_LIMIT = 64
_NOT_NATIVE = re.compile(r"[^a-zA-Z0-9_-]")


def native_names(names: Iterable[str], *, reserved: Iterable[str] = ()) -> dict[str, str]:
    """A name every provider accepts (``[a-zA-Z0-9_-]{1,64}``) for each of ``names``.

    A valid name keeps itself unless ``reserved`` holds it (``run_code``); any other gets
    its invalid characters made ``_`` and is cut to fit. Where that lands on a name
    already given (``db.query`` beside a real ``db_query``, two long names sharing 64
    characters), a short stable suffix from the original tells them apart.
    """
    listed = sorted(set(names))
    blocked = set(reserved)
    given = {name: name for name in listed if _native(name) and name not in blocked}
    taken = set(given.values()) | blocked
    for name in listed:
        if name in given:
            continue
        base = (_NOT_NATIVE.sub("_", name) or "tool")[:NATIVE_LIMIT]
        candidate, attempt = base, 0
        while candidate in taken:  # the same name twice (two servers): the next suffix
            seed = name if attempt == 0 else f"{name}#{attempt}"
            suffix = hashlib.sha256(seed.encode()).hexdigest()[:6]
            candidate, attempt = f"{base[: NATIVE_LIMIT - 7]}_{suffix}", attempt + 1
        taken.add(candidate)
        given[name] = candidate
    return given


def _native(name: str) -> bool:
    return 0 < len(name) <= NATIVE_LIMIT and not _NOT_NATIVE.search(name)


__all__ = ["NATIVE_LIMIT", "ScriptNames", "assign_script_names", "native_names"]
