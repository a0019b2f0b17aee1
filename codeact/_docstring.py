"""Reading a tool's docstring: the description, and per-parameter text from ``Args:``."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples?|Notes?):\s*$"
)
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)(?:\s*\(([^)]*)\))?\s*:\s*(.*)$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Docstring:
    """The parts of a Google-style docstring a model needs."""

    description: str
    params: dict[str, str]


def parse_docstring(doc: str | None) -> Docstring:
    """Split ``doc`` into the free text and the ``Args:`` entries."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent: int | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        indent = len(line) - len(line.lstrip())
        heading = _SECTION.match(line) if indent == 0 else None
        if heading:
            section, current, entry_indent = heading.group(1), None, None
        elif section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            match = _ARG_LINE.match(line)
            if match and (entry_indent is None or indent <= entry_indent):
                entry_indent = indent
                current = match.group(1)
                params[current] = match.group(3).strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return Docstring(description="\n".join(description).strip(), params=params)


__all__ = ["Docstring", "parse_docstring"]
