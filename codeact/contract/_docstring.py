"""Reading a tool's docstring: the description, each parameter's text, the return's.

Google, reST (``:param x:``), NumPy and Epydoc styles are all read, by ``docstring_parser``
(the style is detected). A docstring it cannot read is the description, whole. One line
with no ``:`` or ``@`` has no section in any style: it is the description as it stands,
read without the parser (whose import and first parse were 5 ms of a cold start).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Docstring:
    """The parts of a docstring a model needs."""

    description: str
    params: dict[str, str]
    returns: str | None = None


def parse_docstring(doc: str | None) -> Docstring:
    """Split ``doc`` into the free text, the parameters' entries and the return's."""
    text = inspect.cleandoc(doc or "")
    if "\n" not in text and ":" not in text and "@" not in text:
        return Docstring(description=text.strip(), params={})
    import docstring_parser

    try:
        parsed = docstring_parser.parse(text)
    except docstring_parser.ParseError:
        return Docstring(description=text, params={})
    parts = (parsed.short_description, parsed.long_description)
    returns = parsed.returns.description if parsed.returns is not None else None
    return Docstring(
        description="\n\n".join(part.strip() for part in parts if part and part.strip()),
        params={p.arg_name: _one_line(p.description) for p in parsed.params if p.description},
        returns=_one_line(returns) if returns else None,
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


__all__ = ["Docstring", "parse_docstring"]
