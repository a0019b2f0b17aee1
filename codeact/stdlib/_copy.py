"""``copy`` for scripts: copies of plain data and of the script's own objects, made here.

The real module is driven by ``__reduce_ex__`` (it would ``setattr`` onto whatever
a script's factory returns, a host class included) and its ``deepcopy`` memo
collects every original it visits (the real ``__dict__`` of host objects) and
receives a module-global sentinel list: a channel between sessions.

Every function here builds new objects or fills the script's memo, nothing of the host's:
a RecursionError raised halfway through a copy leaves only a partial copy, dropped with
the error, so the script may catch it as CPython lets it (``recursion_safe``).
"""

from __future__ import annotations

import array
import collections
import enum
import functools
import types
from collections.abc import Callable
from typing import Any

from ..sandbox._errors import recursion_safe
from ..sandbox._ownership import (
    PLAIN_TYPES,
    SCRIPT_CLASSES,
    is_script_class,
    is_script_function,
)
from ._facade import Facade

_MISSING = object()
# Mutable facade objects (a buffer, a generator, a calendar, a zlib stream, a lexer), by how
# each copies itself, shallow and deep: from plain state of the host's, never a script's.
OWN_COPIES: dict[type, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}


def register_copies(
    kind: type, shallow: Callable[[Any], Any], deep: Callable[[Any], Any] | None = None
) -> None:
    """How ``copy.copy`` and ``copy.deepcopy`` copy ``kind``'s objects in scripts."""
    OWN_COPIES[kind] = (shallow, deep or shallow)


# Values that are their own copies: immutable, or opaque stand-ins.
_ATOMIC = frozenset(PLAIN_TYPES - {list, dict, set, bytearray})
_CONTAINERS = (collections.deque, collections.OrderedDict, collections.defaultdict)


@recursion_safe  # builds only its own copy
def copy(x: Any) -> Any:
    """A shallow copy (``x``: copy's own parameter name, which a call may give)."""
    kind = type(x)
    if kind in _ATOMIC:
        return x
    if kind in (list, dict, set, bytearray):
        return kind(x)
    if kind is array.array:
        return array.array(x.typecode, x)
    if kind is types.SimpleNamespace:  # a new namespace of the same values
        return types.SimpleNamespace(**vars(x))
    if kind in _CONTAINERS or isinstance(x, collections.Counter):
        return _rebuild(x, list(x) if kind is collections.deque else list(_pairs(x)))
    if is_script_class(kind):
        own = _own_method(kind, "__copy__")
        return own(x) if own is not None else _copy_object(x, lambda item: item)
    if kind is functools.partial:  # a new partial of the same parts, as its reduce makes it
        return _partial(x, lambda item: item)
    if kind is types.MethodType and is_script_function(x.__func__):
        return types.MethodType(x.__func__, x.__self__)  # bound to the same receiver
    if kind in OWN_COPIES:
        return OWN_COPIES[kind][0](x)
    return _opaque(x)


@recursion_safe  # builds only its own copies and fills the script's memo
def deepcopy(x: Any, memo: dict[int, Any] | None = None) -> Any:
    """A deep copy of ``x``; ``memo`` may only be a plain dict the script made."""
    if memo is None:
        memo = {}
    elif type(memo) is not dict:
        raise TypeError("deepcopy() memo must be a dict")
    return _deep(x, memo)


@recursion_safe  # builds only its own copies and fills the script's memo
def _deep(value: Any, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _ATOMIC and kind is not tuple:
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    result: Any
    if kind is list:
        result = memo[key] = []
        result.extend(_deep(item, memo) for item in value)
    elif kind is tuple:
        items = [_deep(item, memo) for item in value]
        if key in memo:  # an item's copy reached this tuple again: that copy closes the cycle
            return memo[key]
        # a tuple whose items all copy to themselves is its own copy, as in CPython
        same = all(new is old for new, old in zip(items, value, strict=True))
        result = value if same else tuple(items)
    elif kind is dict:
        result = memo[key] = {}
        for k, v in value.items():
            result[_deep(k, memo)] = _deep(v, memo)
    elif kind in (set, frozenset):
        result = kind(_deep(item, memo) for item in value)
    elif kind is bytearray:
        result = bytearray(value)
    elif kind is array.array:  # numbers only: its own copy is deep
        result = array.array(value.typecode, value)
    elif kind is types.SimpleNamespace:
        result = memo[key] = types.SimpleNamespace()
        for name, item in vars(value).items():
            setattr(result, name, _deep(item, memo))
    elif kind in _CONTAINERS or isinstance(value, collections.Counter):
        # a defaultdict's factory is copied too (its reduce hands it over as an argument)
        factory = (
            _deep(value.default_factory, memo) if kind is collections.defaultdict else _MISSING
        )
        if kind is collections.deque:
            copied = [_deep(item, memo) for item in value]
        else:
            copied = [(_deep(k, memo), _deep(v, memo)) for k, v in _pairs(value)]
        result = _rebuild(value, copied, factory)
    elif kind is functools.partial:  # its parts copied, as copy reconstructs from its reduce
        return _partial(value, lambda item: _deep(item, memo), memo)
    elif kind is types.MethodType and is_script_function(value.__func__):
        # the script's bound method: its function shared, its receiver copied
        result = types.MethodType(value.__func__, _deep(value.__self__, memo))
    elif is_script_class(kind):
        own = _own_method(kind, "__deepcopy__")
        if own is not None:  # the script's own: it is handed the memo, a dict of its values
            result = own(value, memo)
        else:
            result = _copy_object(value, lambda item: _deep(item, memo), memo, key)
    elif kind in OWN_COPIES:
        result = OWN_COPIES[kind][1](value)
    else:
        return _opaque(value)
    memo[key] = result
    return result


@recursion_safe  # reads only
def _own_method(kind: type, name: str) -> Any:
    """``name`` as ``kind`` defines it, if the script wrote it (never a host's, nor one a
    factory such as namedtuple put on a script's class)."""
    for klass in kind.__mro__:
        if name in vars(klass):
            found = vars(klass)[name]
            if isinstance(found, staticmethod):  # __new__, as the class statement keeps it
                found = found.__func__
            return found if klass in SCRIPT_CLASSES and is_script_function(found) else None
    return None


@recursion_safe  # reads only
def _pairs(value: Any) -> Any:
    """A mapping collection's items: its own method on the exact classes (an OrderedDict's
    order is its own), dict's on a script's Counter (never a method the script wrote)."""
    return value.items() if type(value) in _CONTAINERS else dict.items(value)


@recursion_safe  # builds only its own copy
def _rebuild(value: Any, items: list[Any], factory: Any = _MISSING) -> Any:
    """A copy of a collection made as its reduce makes one (a Counter from a dict of its
    counts, never from its pairs, which it would count); ``factory``: a defaultdict's."""
    kind = type(value)
    if isinstance(value, collections.defaultdict):
        return kind(value.default_factory if factory is _MISSING else factory, items)
    if isinstance(value, collections.deque):
        return kind(items, value.maxlen)
    if isinstance(value, collections.Counter):
        return kind(dict(items))
    return kind(items)


@recursion_safe  # builds only its own copy and fills the script's memo
def _partial(
    value: functools.partial[Any], copy_item: Any, memo: dict[int, Any] | None = None
) -> Any:
    """A partial made as copy reconstructs one: from its function's copy, then its state's
    copy set (a function that copied to something uncallable is refused in CPython's words)."""
    made = functools.partial(copy_item(value.func))
    if memo is not None:
        memo[id(value)] = made  # a part that holds the partial finds its copy
    state = copy_item((value.func, value.args, value.keywords or None, None))
    made.__setstate__(state)  # type: ignore[attr-defined]  # partial's own, untyped
    return made


@recursion_safe  # writes only to the copy it makes and the script's memo
def _copy_object(
    value: Any, copy_item: Any, memo: dict[int, Any] | None = None, key: int = 0
) -> Any:
    """A new instance of the script's class, its state copied item by item (no ``__init__``).

    As CPython's ``copy`` does through ``__reduce_ex__``: the class's own ``__getnewargs__``
    gives what it is made from, its own ``__getstate__`` and ``__setstate__`` what it keeps
    (each the script's function, run as script code; a host class's are never called).
    """
    kind = type(value)
    if isinstance(value, enum.Enum):
        return value
    base: Any = next(b for b in kind.__mro__ if b not in SCRIPT_CLASSES)
    # the class's own __new__ makes the copy, as copy's __reduce_ex__ path calls it (a
    # singleton's copy is itself); else its builtin base's
    make = _own_method(kind, "__new__") or base.__new__
    new_args = _own_method(kind, "__getnewargs__")
    if new_args is not None:
        arguments = new_args(value)
        if type(arguments) is not tuple:
            raise TypeError(
                f"__getnewargs__ should return a tuple, not '{type(arguments).__name__}'"
            )
        new = make(kind, *copy_item(arguments))
    elif base in _IMMUTABLE_BASES:
        content = tuple(copy_item(i) for i in value) if base is tuple else base(value)
        new = make(kind, content)
    else:
        new = make(kind)
    if memo is not None:
        memo[key] = new
    if isinstance(value, BaseException):
        new.args = tuple(copy_item(a) for a in value.args)
    get_state, set_state = _own_method(kind, "__getstate__"), _own_method(kind, "__setstate__")
    if get_state is not None or set_state is not None:
        state = get_state(value) if get_state is not None else _default_state(value)
        if state is not None:
            state = copy_item(state)
            if set_state is not None:
                set_state(new, state)
            else:
                _set_state(new, state)
        _copy_contents(value, new, copy_item)
        return new
    state = getattr(value, "__dict__", None)
    if state is not None:
        for name, item in state.items():
            object.__setattr__(new, name, copy_item(item))
    for name in _slot_names(kind):
        if hasattr(value, name):
            object.__setattr__(new, name, copy_item(getattr(value, name)))
    _copy_contents(value, new, copy_item)
    return new


@recursion_safe  # writes only to the copy its caller made
def _copy_contents(value: Any, new: Any, copy_item: Any) -> None:
    """The items of a script class built on a list, dict or set."""
    if isinstance(value, list):
        list.extend(new, [copy_item(item) for item in value])
    elif isinstance(value, dict):
        for k, v in list(dict.items(value)):
            dict.__setitem__(new, copy_item(k), copy_item(v))
    elif isinstance(value, set):
        set.update(new, [copy_item(item) for item in value])


@recursion_safe  # reads only
def _slot_names(kind: type) -> list[str]:
    """The ``__slots__`` the script's classes declared, along the class's MRO."""
    names: list[str] = []
    for klass in kind.__mro__:
        if klass in SCRIPT_CLASSES:
            slots = vars(klass).get("__slots__", ())
            names.extend([slots] if isinstance(slots, str) else slots)
    return names


@recursion_safe  # reads only
def _default_state(value: Any) -> Any:
    """What ``object.__getstate__`` gives for the script's object: its attributes, with its
    slots' values beside them when it has slots (None when it has neither)."""
    attributes = getattr(value, "__dict__", None) or None
    slots = {
        name: getattr(value, name) for name in _slot_names(type(value)) if hasattr(value, name)
    }
    if slots:
        return (attributes, slots)
    return attributes


@recursion_safe  # writes only to the copy its caller made
def _set_state(new: Any, state: Any) -> None:
    """A state applied as ``copy`` applies one to a class without ``__setstate__``: a dict of
    attributes, or a pair of it and the slots' values. Names go straight into the new
    object's ``__dict__`` or its declared slots, never through a descriptor of another name."""
    slot_state = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slot_state = state
    if state:
        if type(state) is not dict:
            raise TypeError(f"a copied state must be a dict, not '{type(state).__name__}'")
        attributes = getattr(new, "__dict__", None)
        if attributes is None:
            raise AttributeError(f"'{type(new).__name__}' object has no attribute '__dict__'")
        attributes.update(state)
    if slot_state:
        if type(slot_state) is not dict:
            raise TypeError(
                f"a copied slot state must be a dict, not '{type(slot_state).__name__}'"
            )
        declared = _slot_names(type(new))
        for name, item in slot_state.items():
            if name in declared:
                object.__setattr__(new, name, item)
            elif type(name) is str and getattr(new, "__dict__", None) is not None:
                new.__dict__[name] = item
            else:
                raise AttributeError(f"'{type(new).__name__}' object has no attribute {name!r}")


_IMMUTABLE_BASES = (int, float, complex, str, bytes, tuple, frozenset)


@recursion_safe  # reads only
def _opaque(value: Any) -> Any:
    """Facade values (dates, decimals, patterns, tools, functions) are immutable: shared;
    a module is refused, as pickling refuses it."""
    if type(value) is Facade:
        raise TypeError("cannot pickle 'module' object")
    if callable(value) or hash_or_none(value) is not None:
        return value
    raise TypeError(f"cannot copy {type(value).__name__} objects in scripts")


@recursion_safe  # reads only
def hash_or_none(value: Any) -> int | None:
    try:
        return hash(value)
    except TypeError:
        return None


__all__ = ["copy", "deepcopy"]
