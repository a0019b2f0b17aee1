"""An invocation: a resolved call whose identity is fixed once dispatch starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._json import FrozenJson
from ._tool import Tool


@dataclass(frozen=True, kw_only=True, slots=True)
class Invocation:
    """The call id, name and frozen arguments every layer and listener agrees on.

    ``arguments`` is a read-only view of detached JSON (or the raw text, when the
    model sent something that is not a JSON object); nobody can rewrite it.
    """

    call_id: str
    name: str
    arguments: Mapping[str, FrozenJson] | FrozenJson
    raw_arguments: str
    parent: str | None
    tool: Tool


__all__ = ["Invocation"]
