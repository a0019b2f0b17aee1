"""Who owns an object: the script, the safe standard library, or the host.

A script may read attributes of its own objects and of plain values, and may
change only its own objects and plain containers. Everything else (a bound tool,
a host object that slipped through) is opaque.
"""

from __future__ import annotations

import weakref
from typing import Any

SCRIPT_CLASSES: weakref.WeakSet[type] = weakref.WeakSet()

# Plain values whose public attributes are all safe to read.
READABLE_TYPES: set[type] = {
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
    bool,
    type(None),
    list,
    tuple,
    dict,
    set,
    frozenset,
    range,
    slice,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    object,
}

# Containers a script may change in place (a write is as safe as the container).
WRITABLE_TYPES: set[type] = {list, dict, set, bytearray}


def register_readable(*types: type, writable: bool = False) -> None:
    """Declare standard-library types whose public attributes scripts may read."""
    READABLE_TYPES.update(types)
    if writable:
        WRITABLE_TYPES.update(types)


def is_script_class(cls: type) -> bool:
    return any(base in SCRIPT_CLASSES for base in cls.__mro__)


def is_readable(obj: Any) -> bool:
    """May a script read public attributes of ``obj``?"""
    kind = type(obj)
    if kind in READABLE_TYPES:
        return True
    if isinstance(obj, type):
        return obj in READABLE_TYPES or is_script_class(obj)
    return isinstance(obj, BaseException) or is_script_class(kind)


def is_writable(obj: Any) -> bool:
    """May a script set attributes or items on ``obj``?"""
    kind = type(obj)
    if kind in WRITABLE_TYPES:
        return True
    if isinstance(obj, type):
        return obj in SCRIPT_CLASSES
    return is_script_class(kind)


__all__ = [
    "READABLE_TYPES",
    "SCRIPT_CLASSES",
    "WRITABLE_TYPES",
    "is_readable",
    "is_script_class",
    "is_writable",
    "register_readable",
]
