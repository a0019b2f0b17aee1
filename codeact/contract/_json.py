"""Plain JSON values: detaching untrusted data, freezing it, and thawing fresh copies.

Arguments and tool values cross trust boundaries (model to host, script to host,
host to script). Each crossing rebuilds the value from the exact builtin JSON types,
so a subclass with a rigged ``__eq__`` or ``__hash__`` never survives, and nobody
keeps a reference into somebody else's object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from math import isfinite
from typing import TypeAlias, cast

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
    try:
        return _detach(value, depth)
    except _Misfit as misfit:
        raise NotJsonError(path + misfit.where, misfit.reason) from None


class _Misfit(Exception):
    """Where (below the root) and why a value is not JSON; the path is built on the way out,
    so a value that is JSON (every call's arguments) never pays for one."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.where = ""


def _detach(value: object, depth: int) -> JsonValue:
    kind = type(value)
    # Exact immutable scalars are already plain: returned as they are.
    if kind is str or kind is int or kind is bool or value is None:
        return value  # type: ignore[return-value]
    if kind is float:
        if not isfinite(value):  # type: ignore[arg-type]
            raise _Misfit("NaN and infinity have no JSON form")
        return value  # type: ignore[return-value]
    if depth > MAX_DEPTH:
        raise _Misfit(f"nested deeper than {MAX_DEPTH} levels")
    if kind is dict:
        return _detach_mapping(dict.items(value), depth)  # type: ignore[arg-type]
    if kind is list or kind is tuple:
        return _detach_items(value, depth)  # type: ignore[arg-type]
    return _detach_subclass(value, depth)


def _detach_subclass(value: object, depth: int) -> JsonValue:
    """Subclasses of the JSON types (and other mappings), read through the base type only."""
    if isinstance(value, bool):  # a bool subclass cannot exist, but be exact
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return _detach(float.__float__(value), depth)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return _detach_mapping(dict.items(value), depth)
    if isinstance(value, Mapping) and not isinstance(value, type):
        return _detach_mapping(list(value.items()), depth)
    if isinstance(value, list):
        return _detach_items(list.__iter__(value), depth)
    if isinstance(value, tuple):
        return _detach_items(tuple.__iter__(value), depth)
    raise _Misfit(f"a value of type {type(value).__name__} is not JSON")


# The two loops below take exact scalars (most of any value: the leaves) in line rather
# than through a call of _detach each: a search result of 200 rows was a thousand calls.
_LEAVES = frozenset({str, int, bool, type(None)})  # exact and immutable: kept as they are


def _detach_items(items: Iterable[object], depth: int) -> list[JsonValue]:
    plain: list[JsonValue] = []
    keep = plain.append
    try:
        for item in items:
            kind = type(item)
            if kind in _LEAVES or (kind is float and isfinite(item)):  # type: ignore[arg-type]
                keep(item)  # type: ignore[arg-type]
            else:
                keep(_detach(item, depth + 1))
    except _Misfit as misfit:
        misfit.where = f"[{len(plain)}]{misfit.where}"  # the items before it were kept
        raise
    return plain


def _detach_mapping(items: Iterable[tuple[object, object]], depth: int) -> JsonValue:
    plain: dict[str, JsonValue] = {}
    key: object = None
    try:
        for key, item in items:
            if type(key) is not str:
                if not isinstance(key, str):
                    break  # refused below, at this object's own path
                key = str.__str__(key)
            kind = type(item)
            if kind in _LEAVES or (kind is float and isfinite(item)):  # type: ignore[arg-type]
                plain[key] = item  # type: ignore[assignment]
            else:
                plain[key] = _detach(item, depth + 1)
        else:
            return plain
    except _Misfit as misfit:
        misfit.where = f".{key}{misfit.where}"
        raise
    raise _Misfit(f"object keys must be strings, not {type(key).__name__}")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A JSON object nobody changes by accident, that is still a ``dict`` to the programs
    that read it: ``json.dumps``, ``dataclasses.asdict`` and ``copy`` take it as it is."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a frozen JSON object cannot be changed; thaw() gives a copy that can")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> FrozenDict:
        return self  # nothing in it can change

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, object]]]:
        return (FrozenDict, (dict(self),))


def freeze(value: JsonValue) -> FrozenJson:
    """An immutable view of a detached value: read-only objects and tuples.

    A container of scalars alone (a run's list of calls is thousands of them) is copied
    whole, its items' types read in C; only one holding containers is rebuilt item by item.
    """
    kind = type(value)
    if kind is dict:
        mapping = cast("dict[str, JsonValue]", value)
        if _ALL_IMMUTABLE(map(type, mapping.values())):
            return FrozenDict(mapping)
        return FrozenDict(
            {
                key: item if type(item) in _IMMUTABLE else freeze(item)
                for key, item in mapping.items()
            }
        )
    if kind is list:
        items = cast("list[JsonValue]", value)
        if _ALL_IMMUTABLE(map(type, items)):
            return tuple(cast("list[FrozenJson]", items))
        return tuple([freeze(item) for item in items])
    return cast("FrozenJson", value)


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
_ALL_IMMUTABLE = _IMMUTABLE.issuperset


def thaw(value: FrozenJson) -> JsonValue:
    """A fresh mutable copy of a frozen value, for code that owns what it gets."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value  # type: ignore[return-value]
    if kind is FrozenDict or isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}  # type: ignore[union-attr]
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def dumps(value: object) -> str:
    """Compact, key-sorted JSON: the same value always gives the same bytes."""
    if _C_ENCODE is None:
        return _ENCODER.encode(value)
    try:
        return "".join(_C_ENCODE(value, 0))
    except RecursionError:  # a value that holds itself (or nests deeper than the stack)
        return _ENCODER.encode(value)  # which names a cycle as json.dumps does


def _frozen(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"a value of type {type(value).__name__} is not JSON")


# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_frozen
)
# The same options in C, made once (JSONEncoder makes its C encoder again for every value).
# It keeps no record of the containers it is inside (markers=None), so it holds no state
# between calls and threads may share it; a cycle ends as RecursionError, retried above.
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(
        None, _frozen, json.encoder.encode_basestring, None, ":", ",", True, False, True
    )
)


__all__ = [
    "FrozenDict",
    "FrozenJson",
    "JsonValue",
    "NotJsonError",
    "detach",
    "dumps",
    "freeze",
    "thaw",
]
