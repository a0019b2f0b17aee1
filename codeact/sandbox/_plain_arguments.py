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
import sys
import types
import weakref
from collections import ChainMap, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import recursion_safe
from ._ownership import SCOPE_KEY, SCOPE_MARK, exact_value, is_script_class

# Values a host function may take as they are: nothing of them runs the script's code.
SCALARS = frozenset(
    {str, int, float, complex, bool, type(None), bytes, bytearray, range, slice, type(...)}
)
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
# all_scalar(map(type, values)): are the values all scalars? (one C loop)
all_scalar = SCALARS.issuperset
# Objects that run the script's code when host code iterates or awaits them.
_RUNNING_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_ITERATOR_MODULES = frozenset({"builtins", "itertools"})

# Host containers walked item by item (isinstance against an ABC would be slow, and an
# ABC's caches would learn the script's classes).
_MAPPINGS = (dict, types.MappingProxyType)
_SEQUENCES = (list, tuple, set, frozenset, deque)

DATA, HELD, PASSED, DRAINED = "data", "held", "passed", "drained"


@dataclass(frozen=True)
class Checked:
    """What a wrapper checks: the host function and its parameters' roles (data unless
    named), by position and by keyword."""

    function: Callable[..., Any]
    roles: Mapping[str, str]
    name: str
    by_position: tuple[str, ...]
    beyond: str  # the role of arguments past the named positions (``*args``)
    other_keywords: str  # the role of keywords no parameter names (``**kwargs``)

    @classmethod
    def of(cls, function: Callable[..., Any], roles: Mapping[str, str]) -> Checked:
        try:
            parameters = list(inspect.signature(function).parameters.values())
        except ValueError:  # a C function with no signature (time.strptime): all data
            parameters = []
        unknown = set(roles) - {p.name for p in parameters}
        if unknown:  # a typo would leave a parameter checked as data, silently
            raise ValueError(f"{function.__name__} has no parameters {sorted(unknown)}")
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        star = next((p for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
        stars = next((p for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD), None)
        named = {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD}
        return cls(
            function,
            {name: role for name, role in roles.items() if name in named},
            getattr(function, "__name__", "function"),
            tuple(roles.get(p.name, DATA) for p in parameters if p.kind in positional),
            roles.get(star.name, DATA) if star is not None else DATA,
            roles.get(stars.name, DATA) if stars is not None else DATA,
        )

    def role(self, parameter: str) -> str:
        return self.roles.get(parameter, self.other_keywords)

    @recursion_safe  # checks, and changes nothing but the keywords it was given
    def arguments(
        self, args: tuple[Any, ...], keywords: dict[str, Any], skipped: int = 0
    ) -> Sequence[Any]:
        """``args`` checked (the first ``skipped`` positions are a bound or checked
        receiver's); ``keywords`` checked in place."""
        if all_scalar(map(type, args)) and (
            not keywords or all_scalar(map(type, keywords.values()))
        ):
            return args  # numbers and text only: the common call, answered at C speed
        positions, name = self.by_position, self.name
        checked = list(args)
        for i, value in enumerate(args):
            if type(value) not in SCALARS:
                at = i + skipped
                checked[i] = _checked(
                    name, value, positions[at] if at < len(positions) else self.beyond
                )
        if keywords:
            roles, other = self.roles, self.other_keywords
            for key, value in keywords.items():
                keywords[key] = _checked(name, value, roles.get(key, other))
        return checked


# wrapper -> what it checks (the tests call each with the script's objects)
WRAPPED: weakref.WeakKeyDictionary[Callable[..., Any], Checked] = weakref.WeakKeyDictionary()


def plain_arguments(
    function: Callable[..., Any],
    *,
    held: Collection[str] = (),
    drained: Collection[str] = (),
    passed: Collection[str] = (),
    listed: bool = True,
) -> Callable[..., Any]:
    """``function`` behind a check of its arguments (see the module's docstring).

    ``held``, ``drained`` and ``passed`` name parameters of ``function``; the rest are data.
    ``listed``: kept in ``WRAPPED`` for the tests (only wrappers that live as long as the
    process: a weak table's callback when a short-lived one dies would run at whatever
    depth a run's recursion has then reached)."""
    checked = Checked.of(function, _roles(held, drained, passed))

    def call(*args: Any, **keywords: Any) -> Any:
        if keywords or not all_scalar(map(type, args)):
            args = checked.arguments(args, keywords)  # type: ignore[assignment]
        return function(*args, **keywords)

    call.__name__ = call.__qualname__ = checked.name
    call.__doc__ = getattr(function, "__doc__", None)
    if listed:
        WRAPPED[call] = checked
    return call


def _roles(
    held: Collection[str], drained: Collection[str], passed: Collection[str]
) -> dict[str, str]:
    return (
        dict.fromkeys(held, HELD) | dict.fromkeys(drained, DRAINED) | dict.fromkeys(passed, PASSED)
    )


# Host methods a script reads off a host object (a queue's put, a template's substitute):
# checked as the guard hands them out, by the roles registered for them (data unless named).
_METHOD_ROLES: dict[Callable[..., Any], dict[str, str]] = {}
_METHOD_CHECKS: dict[Callable[..., Any], Checked] = {}  # host functions only, never a script's


def register_method_roles(
    owner: type,
    name: str,
    *,
    held: Collection[str] = (),
    drained: Collection[str] = (),
    passed: Collection[str] = (),
) -> None:
    """Name what ``owner.name`` does with its parameters (see the module's docstring)."""
    function = _python_function(inspect.getattr_static(owner, name))
    if function is None:
        raise TypeError(f"{owner.__name__}.{name} is not a Python function")
    _METHOD_ROLES[function] = _roles(held, drained, passed)
    _METHOD_CHECKS.pop(function, None)


def method_roles(function: Callable[..., Any]) -> Mapping[str, str]:
    """The roles registered for a host method's parameters (data unless named)."""
    return _METHOD_ROLES.get(function, {})


@recursion_safe  # reads only
def is_host_python(function: Any) -> bool:
    """Is ``function`` Python code of the host's (the standard library's), neither the
    script's nor the runtime's own (whose code is written with the rule in view)?"""
    if type(function) is not types.FunctionType:
        return False
    if str(function.__module__).startswith(_OWN_MODULES):
        return False
    scope = function.__globals__
    return not (type(scope) is dict and scope.get(SCOPE_KEY) is SCOPE_MARK)


_OWN_MODULES = ("codeact", "stdlib_bindings")


@recursion_safe  # caches a check only once it is whole, and builds its own wrapper
def checked_method(method: types.MethodType) -> Callable[..., Any] | None:
    """A bound host method as a script may call it (its arguments checked), or None when
    its function is not the host's Python code."""
    function = method.__func__
    checked = _METHOD_CHECKS.get(function)
    if checked is None:
        if not is_host_python(function):
            return None
        checked = _check_of(function)

    def call(*args: Any, **keywords: Any) -> Any:
        if keywords or not all_scalar(map(type, args)):
            args = checked.arguments(args, keywords, skipped=1)  # type: ignore[assignment]
        return method(*args, **keywords)

    call.__name__ = call.__qualname__ = checked.name
    return call


def checked_bound(method: Any) -> Any:
    """``checked_method`` for a facade's member (``random.choice``, a method of the
    session's own generator); a method of the runtime's own as it is. Not listed in
    ``WRAPPED``: a session's wrappers die with it, and a weak table's callback run then,
    at any depth of another run's recursion, would be an error nobody can raise."""
    call = checked_method(method) if type(method) is types.MethodType else None
    return method if call is None else call


@recursion_safe  # caches a check only once it is whole
def _check_of(function: Callable[..., Any]) -> Checked:
    """The check of a host function's arguments, kept for the functions of the standard
    library's modules (a function made at run time, whose globals are no module's, is
    checked anew: a process-wide table must not keep what one session made)."""
    checked = Checked.of(function, _METHOD_ROLES.get(function, {}))
    module = sys.modules.get(function.__module__)
    if module is not None and vars(module) is getattr(function, "__globals__", None):
        _METHOD_CHECKS[function] = checked
    return checked


def plain_values(name: str, *values: Any) -> tuple[Any, ...]:
    """``values`` checked as data for ``name`` (what the runtime's own code hands a host
    function): exact values, or a TypeError."""
    return tuple(_checked(name, value, DATA) for value in values)


@recursion_safe  # caches a check only once it is whole, and builds its own wrapper
def checked_unbound(function: Callable[..., Any], *, receiver: bool) -> Callable[..., Any]:
    """A host class's function read from the class, its arguments checked (but for the
    receiver, which the caller checks); any other function as it is. ``receiver``: False
    for a static method."""
    if not is_host_python(function):
        return function
    checked = _METHOD_CHECKS.get(function) or _check_of(function)
    skipped = 1 if receiver else 0

    def call(*args: Any, **keywords: Any) -> Any:
        rest = checked.arguments(args[skipped:], keywords, skipped=skipped)
        return function(*args[:skipped], *rest, **keywords)

    call.__name__ = call.__qualname__ = checked.name
    return call


def _python_function(attribute: Any) -> types.FunctionType | None:
    if isinstance(attribute, classmethod | staticmethod):
        attribute = attribute.__func__
    return attribute if type(attribute) is types.FunctionType else None


@recursion_safe  # checks only (a drained iterable is the script's own iteration)
def _checked(name: str, value: Any, role: str) -> Any:
    """``value`` as ``function`` may take it in ``role``, or a TypeError."""
    kind = type(value)
    if kind in SCALARS or role == PASSED:  # the common case, answered first
        return value
    if kind in CONTAINERS:  # an exact list, tuple, dict or set: its items, unless held
        return value if role == HELD else _plain(name, value)
    if role == DRAINED and _iterable(value):
        return _plain(name, list(value))  # the runtime drives the script's iteration
    value = exact_value(value)  # a subclass of str, int, float or bytes: its exact value
    if role == HELD:
        _refuse_script_made(name, value)
        return value
    return _plain(name, value)


@recursion_safe  # reads only
def _iterable(value: Any) -> bool:
    return hasattr(type(value), "__iter__") or hasattr(type(value), "__getitem__")


@recursion_safe  # reads only
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
        if isinstance(item, _MAPPINGS) or ChainMap in kind.__mro__:
            seen.add(id(item))
            for key, entry in item.items():
                pending += (key, entry)
        elif isinstance(item, _SEQUENCES):
            seen.add(id(item))
            if not all_scalar(map(type, item)):  # at C speed: numbers and text
                pending.extend(item)
        elif isinstance(item, types.SimpleNamespace):
            seen.add(id(item))
            pending.extend(vars(item).values())
    return value


@recursion_safe  # reads only
def _refuse_script_made(name: str, value: Any) -> None:
    """A TypeError if host code acting on ``value`` would run the script's code."""
    kind = type(value)
    if kind in CONTAINERS:  # the common case: an exact list, tuple, dict or set
        return
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


__all__ = [
    "DATA",
    "DRAINED",
    "HELD",
    "PASSED",
    "WRAPPED",
    "Checked",
    "checked_bound",
    "checked_method",
    "checked_unbound",
    "is_host_python",
    "method_roles",
    "plain_arguments",
    "plain_values",
    "register_method_roles",
]
