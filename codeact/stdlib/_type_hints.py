"""``typing.get_type_hints`` for scripts: annotations read, string annotations resolved.

The real function evaluates a string annotation with ``eval`` in the module the class
or function came from: host code running text the script wrote, and for a host
function the host's own module namespace. Here a string is parsed, and only the forms
an annotation is made of are evaluated: names (the script's namespace, then its
builtins), attributes of modules, subscripts of the typing forms and of classes whose
``__class_getitem__`` is the host's, ``|``, tuples, lists and constants. Nothing of the
script runs: a name that is not there, or a form outside these, is an error.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, cast

from ..sandbox._compiler import SCRIPT_FILES
from ..sandbox._guards import Builtin
from ..sandbox._ownership import SCOPE_KEY, SCOPE_MARK, SCRIPT_CLASSES, is_script_function
from ._facade import Facade
from ._typing import ClassAlias, TypingForm

NONE_TYPE = type(None)
# the forms whose arguments are values or metadata, not types to resolve
_VALUE_ARGUMENTS = frozenset({"Literal"})
_EXTRAS = frozenset({"Annotated", "Required", "NotRequired"})
_PLAIN = frozenset({int, float, complex, str, bytes, bool, NONE_TYPE, type(Ellipsis)})

Names = Callable[[str], Any]


def get_type_hints(
    obj: Any,
    globalns: dict[str, Any] | None = None,
    localns: dict[str, Any] | None = None,
    include_extras: bool = False,
) -> dict[str, Any]:
    """``typing.get_type_hints`` on the script's classes and functions."""
    for given in (globalns, localns):
        if given is not None and type(given) is not dict:  # a script's mapping would answer
            raise TypeError("get_type_hints takes plain dicts as namespaces")
    if isinstance(obj, type):
        hints = _class_hints(obj, globalns, localns)
    else:
        hints = _function_hints(obj, globalns, localns)
    if include_extras:
        return hints
    return {name: _strip_extras(hint) for name, hint in hints.items()}


def _class_hints(
    cls: type, globalns: dict[str, Any] | None, localns: dict[str, Any] | None
) -> dict[str, Any]:
    hints: dict[str, Any] = {}
    # the calling script's frame: where its classes were made, and its builtins
    module, builtins = _calling_script_namespaces()
    if globalns is not None:
        module = globalns
    for base in reversed(cls.__mro__):
        annotations = vars(base).get("__annotations__")
        if not annotations:
            continue
        if base not in SCRIPT_CLASSES:  # the host's annotations name the host's modules
            raise TypeError(
                f"get_type_hints reads the script's own classes, not {base.__qualname__}"
            )
        if type(annotations) is not dict:  # the script rebound it: not typing's to read
            continue
        own = dict(vars(base)) if localns is None else localns
        # as typing looks (the module first: it swaps the two when neither is given)
        first, second = (module, own) if localns is None and globalns is None else (own, module)
        lookup = _lookup_in(first, second, builtins)
        for name, value in list(annotations.items()):
            hints[name] = _resolve_hint(value, lookup)
    return hints


def _function_hints(
    obj: Any, globalns: dict[str, Any] | None, localns: dict[str, Any] | None
) -> dict[str, Any]:
    function = obj
    if isinstance(function, types.MethodType | staticmethod | classmethod):
        function = function.__func__
    if isinstance(function, Facade | Builtin | types.BuiltinFunctionType):
        return {}  # no annotations, as typing finds on a module or a builtin
    if type(function) is not types.FunctionType:
        shown = repr(obj) if _shown_plainly(obj) else _named(obj)
        raise TypeError(f"{shown} is not a module, class, method, or function.")
    if not is_script_function(function):
        if not function.__annotations__:
            return {}
        # the host's annotations would be resolved in its module: its names stay its own
        raise TypeError(
            f"get_type_hints reads the script's own functions, not {function.__qualname__}"
        )
    annotations = function.__annotations__
    if type(annotations) is not dict:
        return {}
    lookup = _function_lookup(function, globalns, localns)
    return {name: _resolve_hint(value, lookup) for name, value in list(annotations.items())}


def resolved_annotation(function: types.FunctionType, value: Any) -> Any:
    """One annotation of the script's ``function`` as ``get_type_hints`` gives it (what
    ``singledispatch``'s ``register`` reads)."""
    return _resolve_hint(value, _function_lookup(function, None, None))


def _function_lookup(
    function: types.FunctionType, globalns: dict[str, Any] | None, localns: dict[str, Any] | None
) -> Names:
    namespace = function.__globals__
    module = namespace if globalns is None else globalns
    own = module if localns is None else localns
    builtins = namespace.get("__builtins__")  # the script's own
    return _lookup_in(own, module, builtins if type(builtins) is dict else {})


def _named(obj: Any) -> str:
    """An object as an error names it, without calling a script's ``__repr__``."""
    return f"<{type(obj).__name__} object>"


def _calling_script_namespaces() -> tuple[dict[str, Any], dict[str, Any]]:
    """The module namespace and builtins of the script frame that called (empty if none)."""
    frame = _script_frame()
    return (frame.f_globals, frame.f_builtins) if frame is not None else ({}, {})


def _script_frame() -> types.FrameType | None:
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename not in SCRIPT_FILES:
        frame = frame.f_back
    if frame is None or frame.f_globals.get(SCOPE_KEY) is not SCOPE_MARK:
        return None
    return frame


def _lookup_in(*namespaces: Mapping[str, Any]) -> Names:
    def lookup(name: str) -> Any:
        if not name.startswith("_"):  # guards, temporaries and dunders are not the script's
            for namespace in namespaces:
                if name in namespace:
                    return namespace[name]
        raise NameError(f"name {name!r} is not defined")

    return lookup


def _resolve_hint(value: Any, lookup: Names) -> Any:
    """One annotation as typing returns it: None as its type, strings evaluated."""
    if value is None:
        return NONE_TYPE
    if type(value) is str:
        return _checked_type(_evaluate_text(value, lookup))
    return _resolve_inside(value, lookup)


def _checked_type(value: Any) -> Any:
    """What a forward reference may evaluate to, as typing checks it: None is its type,
    a tuple is refused, anything else is taken."""
    if value is None:
        return NONE_TYPE
    if type(value) is tuple:
        shown = repr(value) if all(_shown_plainly(item) for item in value) else "a tuple"
        raise TypeError(f"Forward references must evaluate to types. Got {shown:.100}.")
    return value


def _shown_plainly(value: Any) -> bool:
    """May an error show ``repr(value)``: nothing of the script's runs for it."""
    kind = type(value)
    return kind in _PLAIN or (isinstance(value, type) and kind is type)


def _resolve_inside(value: Any, lookup: Names) -> Any:
    """Forward references inside a form (``Optional['Node']``, ``list['Node']``)."""
    if type(value) is TypingForm and value._args and value._name not in _VALUE_ARGUMENTS:
        args = value._args
        if value._name == "Annotated":  # the type resolved, its metadata as it is
            resolved = (_resolve_hint(args[0], lookup), *args[1:])
        else:
            resolved = tuple(_resolve_argument(arg, lookup) for arg in args)
        return value if _same(resolved, args) else TypingForm(value._name, value._origin, resolved)
    if type(value) is types.GenericAlias:
        resolved = tuple(_resolve_argument(arg, lookup) for arg in value.__args__)
        if _same(resolved, value.__args__):
            return value
        return _alias(value, resolved)
    return value


def _alias(alias: types.GenericAlias, args: tuple[Any, ...]) -> types.GenericAlias:
    """``list[args]`` for an alias of ``list``: the same origin, new arguments."""
    origin: Any = alias.__origin__
    return types.GenericAlias(origin, args)


def _same(made: tuple[Any, ...], given: tuple[Any, ...]) -> bool:
    """Nothing replaced: compared by identity (``==`` would ask a script's ``__eq__``)."""
    return all(a is b for a, b in zip(made, given, strict=True))


def _resolve_argument(arg: Any, lookup: Names) -> Any:
    if type(arg) is list:  # Callable[[int, 'Node'], str]
        return [_resolve_argument(item, lookup) for item in arg]
    if type(arg) is str:
        return _checked_type(_evaluate_text(arg, lookup))
    return _resolve_inside(arg, lookup)


def _evaluate_text(text: str, lookup: Names) -> Any:
    try:
        tree = ast.parse(text.strip(), "<annotation>", mode="eval")
    except SyntaxError:
        raise SyntaxError(f"Forward reference must be an expression -- got {text!r}") from None
    return _evaluate(tree.body, lookup)


def _evaluate(node: ast.expr, lookup: Names) -> Any:
    """The annotation forms, each evaluated without calling anything of the script's."""
    if isinstance(node, ast.Name):
        return lookup(node.id)
    if isinstance(node, ast.Constant):
        if type(node.value) is str:  # a reference inside a reference: List['Node']
            return _checked_type(_evaluate_text(node.value, lookup))
        return node.value
    if isinstance(node, ast.Attribute):
        return _attribute(_evaluate(node.value, lookup), node.attr)
    if isinstance(node, ast.Subscript):
        return _subscript(_evaluate(node.value, lookup), _evaluate(node.slice, lookup))
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(item, lookup) for item in node.elts)
    if isinstance(node, ast.List):
        return [_evaluate(item, lookup) for item in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union(_evaluate(node.left, lookup), _evaluate(node.right, lookup))
    raise TypeError(
        "a string annotation get_type_hints evaluates holds names, attributes, subscripts, "
        f"'|' and constants, not {type(node).__name__}"
    )


def _attribute(owner: Any, name: str) -> Any:
    # a private or dunder name is no annotation's (it would read the host's internals)
    if name.startswith("_"):
        raise AttributeError(f"{name!r} is not an attribute an annotation may name")
    if isinstance(owner, Facade):  # typing.List, collections.abc.Mapping
        return getattr(owner, name)
    if isinstance(owner, type) and owner in SCRIPT_CLASSES:  # Outer.Inner: read, not run
        for base in owner.__mro__:
            if base in SCRIPT_CLASSES and name in vars(base):
                return vars(base)[name]
        raise AttributeError(f"type object {owner.__name__!r} has no attribute {name!r}")
    raise TypeError(
        f"an annotation get_type_hints evaluates reads attributes of modules and of the "
        f"script's classes, not of {_named(owner)}"
    )


def _subscript(origin: Any, args: Any) -> Any:
    if isinstance(origin, TypingForm | ClassAlias):
        return origin[args]
    if isinstance(origin, type):
        for base in origin.__mro__:
            if "__class_getitem__" in vars(base):
                if base in SCRIPT_CLASSES:  # the script's own would run here, in the host
                    raise TypeError(
                        f"get_type_hints does not call {origin.__name__}.__class_getitem__"
                    )
                return cast(Any, origin)[args]
    raise TypeError(f"{_named(origin)} is not subscriptable in an annotation")


def _union(left: Any, right: Any) -> Any:
    for side in (left, right):
        plain = side is None or isinstance(side, type | types.GenericAlias | types.UnionType)
        if not plain and not isinstance(side, TypingForm):
            raise TypeError(f"unsupported operand type for |: {_named(side)}")
    return left | right


def _strip_extras(hint: Any) -> Any:
    """``Annotated[int, ...]`` as ``int``, inside other forms too (``include_extras``)."""
    if type(hint) is TypingForm and hint._args:
        if hint._name in _EXTRAS:
            return _strip_extras(hint._args[0])
        if hint._name in _VALUE_ARGUMENTS:
            return hint
        stripped = tuple(_strip_extras(arg) for arg in hint._args)
        if _same(stripped, hint._args):
            return hint
        return TypingForm(hint._name, hint._origin, stripped)
    if type(hint) is types.GenericAlias:
        stripped = tuple(_strip_extras(arg) for arg in hint.__args__)
        if _same(stripped, hint.__args__):
            return hint
        return _alias(hint, stripped)
    if type(hint) is list:
        return [_strip_extras(item) for item in hint]
    return hint


__all__ = ["get_type_hints", "resolved_annotation"]
