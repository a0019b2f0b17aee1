"""Plain JSON values: detaching untrusted data, freezing it, and thawing fresh copies.

Arguments and tool values cross trust boundaries (model to host, script to host,
host to script). Each crossing rebuilds the value from the exact builtin JSON types,
so a subclass with a rigged ``__eq__`` or ``__hash__`` never survives, and nobody
keeps a reference into somebody else's object.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TypeAlias

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
FrozenJson: TypeAlias = (
    "bool | int | float | str | tuple[FrozenJson, ...] | Mapping[str, FrozenJson] | None"
)

MAX_DEPTH = 200


class NotJsonError(ValueError):
    """A value holds something that has no plain JSON form."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def detach(value: object, *, path: str = "$", depth: int = 0) -> JsonValue:
    """Rebuild ``value`` from exact builtin JSON types, sharing nothing with it."""
    if depth > MAX_DEPTH:
        raise NotJsonError(path, f"nested deeper than {MAX_DEPTH} levels")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, bool):  # a bool subclass cannot exist, but be exact
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        if not math.isfinite(number):
            raise NotJsonError(path, "NaN and infinity have no JSON form")
        return number
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Mapping) and not isinstance(value, type):
        return _detach_mapping(value, path, depth)
    if isinstance(value, list | tuple):
        return [detach(item, path=f"{path}[{i}]", depth=depth + 1) for i, item in enumerate(value)]
    raise NotJsonError(path, f"a value of type {type(value).__name__} is not JSON")


def _detach_mapping(value: Mapping[object, object], path: str, depth: int) -> JsonValue:
    plain: dict[str, JsonValue] = {}
    items = dict.items(value) if isinstance(value, dict) else list(value.items())
    for key, item in items:
        if not isinstance(key, str):
            raise NotJsonError(path, f"object keys must be strings, not {type(key).__name__}")
        name = str.__str__(key)
        plain[name] = detach(item, path=f"{path}.{name}", depth=depth + 1)
    return plain


def freeze(value: JsonValue) -> FrozenJson:
    """An immutable view of a detached value: read-only mappings and tuples."""
    if isinstance(value, dict):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: FrozenJson) -> JsonValue:
    """A fresh mutable copy of a frozen value, for code that owns what it gets."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def dumps(value: object) -> str:
    """Compact, key-sorted JSON: the same value always gives the same bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_frozen
    )


def _frozen(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"a value of type {type(value).__name__} is not JSON")


__all__ = ["FrozenJson", "JsonValue", "NotJsonError", "detach", "dumps", "freeze", "thaw"]
