"""Host Python functions offered to scripts take plain values only.

A standard-library function written in Python (``random.choice``, ``statistics.mean``,
``html.escape``, ``urllib.parse.urlencode``) calls methods on what it is given: a
script's object there would have host Python code run the script's ``__len__``,
``__float__``, ``replace`` or ``__str__``, and hand it whatever host values the
function passes along. The object model forbids it, so such a function is offered
through ``plain_arguments``: every argument is checked before the function runs.

- *data* (every parameter unless named otherwise): exact numbers, text, bytes, None,
  and lists, tuples, dicts and sets of them, at any depth, or values the host made
  (a ``Fraction``, a ``datetime``, an ``io.BytesIO``). A subclass of a builtin given
  directly is passed as its exact value, as CPython's C functions read it.
- *held*: the value itself is checked, its items are not (``random.choice(cards)``
  returns one of the script's cards without calling anything on it; a callback the
  function is reviewed to call is held too).
- *passed*: given as it is; the function only returns or stores it (``asyncio.sleep``'s
  ``result``).
- *drained*: an iterable that is not a plain container (a generator, the script's
  iterable class, a ``map``) is drained into a list here, as the function would iterate
  it, and the list is then checked as data.

The script's objects are refused with a TypeError that says what to pass instead.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections import ChainMap, deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ._ownership import exact_value, is_script_class

# Values a host function may take as they are: nothing of them runs the script's code.
SCALARS = frozenset(
    {str, int, float, complex, bool, type(None), bytes, bytearray, range, slice, type(...)}
)
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
# Objects that run the script's code when host code iterates or awaits them.
_RUNNING_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_ITERATOR_MODULES = frozenset({"builtins", "itertools"})

# Host containers walked item by item (isinstance against an ABC would be slow, and an
# ABC's caches would learn the script's classes).
_MAPPINGS = (dict, ChainMap, types.MappingProxyType)
_SEQUENCES = (list, tuple, set, frozenset, deque)

DATA, HELD, PASSED, DRAINED = "data", "held", "passed", "drained"


@dataclass(frozen=True)
class Checked:
    """What a wrapper checks: the host function and its parameters' roles (data unless
    named)."""

    function: Callable[..., Any]
    roles: Mapping[str, str]

    def role(self, parameter: str) -> str:
        return self.roles.get(parameter, DATA)


# wrapper -> what it checks (the tests call each with the script's objects)
WRAPPED: weakref.WeakKeyDictionary[Callable[..., Any], Checked] = weakref.WeakKeyDictionary()


def plain_arguments(
    function: Callable[..., Any],
    *,
    held: Collection[str] = (),
    drained: Collection[str] = (),
    passed: Collection[str] = (),
) -> Callable[..., Any]:
    """``function`` behind a check of its arguments (see the module's docstring).

    ``held``, ``drained`` and ``passed`` name parameters of ``function``; the rest are data."""
    roles = (
        dict.fromkeys(held, HELD) | dict.fromkeys(drained, DRAINED) | dict.fromkeys(passed, PASSED)
    )
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except ValueError:  # a C function with no signature (time.strptime): all data
        parameters = []
    unknown = set(roles) - {p.name for p in parameters}
    if unknown:  # a typo would leave a parameter checked as data, silently
        raise ValueError(f"{function.__name__} has no parameters {sorted(unknown)}")
    positional_kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    by_position = [roles.get(p.name, DATA) for p in parameters if p.kind in positional_kinds]
    star = next((p for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    beyond = roles.get(star.name, DATA) if star is not None else DATA
    name = getattr(function, "__name__", "function")

    def call(*args: Any, **keywords: Any) -> Any:
        checked = [
            _checked(name, value, by_position[i] if i < len(by_position) else beyond)
            for i, value in enumerate(args)
        ]
        for key, value in keywords.items():
            keywords[key] = _checked(name, value, roles.get(key, DATA))
        return function(*checked, **keywords)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = getattr(function, "__doc__", None)
    WRAPPED[call] = Checked(function, roles)
    return call


def _checked(name: str, value: Any, role: str) -> Any:
    """``value`` as ``function`` may take it in ``role``, or a TypeError."""
    kind = type(value)
    if kind in SCALARS or role == PASSED:  # the common case, answered first
        return value
    if role == DRAINED and kind not in CONTAINERS and kind not in SCALARS and _iterable(value):
        return _plain(name, list(value))  # the runtime drives the script's iteration
    value = exact_value(value)  # a subclass of str, int, float or bytes: its exact value
    if role == HELD:
        _refuse_script_made(name, value)
        return value
    return _plain(name, value)


def _iterable(value: Any) -> bool:
    return hasattr(type(value), "__iter__") or hasattr(type(value), "__getitem__")


def _plain(name: str, value: Any) -> Any:
    """``value`` when nothing in it, at any depth, is the script's; else a TypeError."""
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind in SCALARS:
            continue
        _refuse_script_made(name, item)
        if id(item) in seen:  # a container holding itself
            continue
        if isinstance(item, _MAPPINGS):
            seen.add(id(item))
            for key, entry in item.items():
                pending += (key, entry)
        elif isinstance(item, _SEQUENCES):
            seen.add(id(item))
            pending.extend(item)
        elif isinstance(item, types.SimpleNamespace):
            seen.add(id(item))
            pending.extend(vars(item).values())
    return value


def _refuse_script_made(name: str, value: Any) -> None:
    """A TypeError if host code acting on ``value`` would run the script's code."""
    kind = type(value)
    if is_script_class(kind):
        what = f"an object of the script's class {kind.__name__!r}"
    elif isinstance(value, _RUNNING_TYPES):
        what = f"a {kind.__name__}"
    elif hasattr(kind, "__next__") and kind.__module__ in _ITERATOR_MODULES:
        what = f"a {kind.__name__} iterator"  # map, filter, zip: they call what they hold
    else:
        return
    raise TypeError(
        f"{name}() takes plain values here, and {what} is not one: pass numbers, text, "
        "bytes, or lists, tuples, dicts and sets of them (convert it first, as with "
        "str(x), float(x) or list(x))"
    )


__all__ = ["DATA", "DRAINED", "HELD", "PASSED", "WRAPPED", "Checked", "plain_arguments"]
