"""``functools.singledispatch`` for scripts: a function chosen by its first argument's class.

The real one keeps a cache keyed by weak references to every class it dispatched on
(host classes included) and reads annotations through ``typing.get_type_hints``, which
evaluates strings in the function's globals. This one keeps each registration as the
script made it, finds the implementation along the argument's MRO (then among the
abstract classes registered, as the real one does), and shows the script only the
classes it registered: never the real type behind a builtin's stand-in.
"""

from __future__ import annotations

import abc
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..sandbox._ownership import is_script_function, real_base
from ._type_hints import resolved_annotation
from ._typing import TypingForm


class SingleDispatch:
    """What ``@functools.singledispatch`` makes of the script's function."""

    def __init__(self, default: Callable[..., Any]) -> None:
        if not callable(default):
            raise TypeError(f"{default!r} is not a callable object")
        self._default = default
        self._implementations: dict[type, Callable[..., Any]] = {object: default}
        self._shown: dict[type, Any] = {object: object}  # real class -> as the script gave it

    @property
    def __name__(self) -> str:
        name = getattr(self._default, "__name__", "singledispatch function")
        return name if type(name) is str else "singledispatch function"

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        doc = getattr(self._default, "__doc__", None)
        return doc if type(doc) is str else None

    def __repr__(self) -> str:
        return f"<function {self.__name__} at {id(self):#x}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            raise TypeError(f"{self.__name__} requires at least 1 positional argument")
        return self._find(type(args[0]))(*args, **kwargs)

    def dispatch(self, cls: Any) -> Callable[..., Any]:
        """The implementation for ``cls``."""
        real = real_base(cls)
        if not isinstance(real, type):
            raise TypeError(f"dispatch() argument must be a class, not {type(cls).__name__}")
        return self._find(real)

    @property
    def registry(self) -> Mapping[Any, Callable[..., Any]]:
        """Each registered class, as the script gave it, and its implementation."""
        return types.MappingProxyType(
            {self._shown[cls]: function for cls, function in self._implementations.items()}
        )

    def register(self, cls: Any, function: Callable[..., Any] | None = None) -> Any:
        """``@f.register(cls)``, ``f.register(cls, function)`` or ``@f.register`` on a
        function whose first parameter is annotated with the class (or a union of them)."""
        if function is None:
            if (
                isinstance(real_base(cls), type)
                or isinstance(cls, types.UnionType)
                or _is_union(cls)
            ):
                return lambda function: self.register(cls, function)
            function, cls = cls, _first_annotation(cls)
        for each in cls.__args__ if isinstance(cls, types.UnionType) or _is_union(cls) else (cls,):
            real = real_base(each)
            if not isinstance(real, type):
                raise TypeError(
                    f"Invalid first argument to `register()`. {each!r} is not a class or "
                    "union type."
                )
            self._implementations[real] = function
            self._shown[real] = each
        return function

    def _find(self, cls: type) -> Callable[..., Any]:
        for klass in cls.__mro__:
            if klass in self._implementations:
                found = self._implementations[klass]
                break
        else:
            found = self._default
        # an abstract class registered (Sequence, Mapping) counts where the MRO found only
        # object: the first one the class is a subclass of, in registration order
        if found is self._default:
            for key, function in self._implementations.items():
                if isinstance(key, abc.ABCMeta) and issubclass(cls, key):
                    return function
        return found


def _first_annotation(function: Any) -> Any:
    """The class the first parameter of the script's ``function`` is annotated with."""
    if not is_script_function(function):
        raise TypeError(
            f"Invalid first argument to `register()`: {function!r}. Use either "
            "`@register(some_class)` or plain `@register` on an annotated function."
        )
    annotations = dict(function.__annotations__)
    annotations.pop("return", None)
    if not annotations:
        raise TypeError(
            f"Invalid first argument to `register()`: {function!r}. Use either "
            "`@register(some_class)` or plain `@register` on an annotated function."
        )
    name, annotation = next(iter(annotations.items()))
    # from __future__ import annotations: 'int | str', resolved as get_type_hints does
    annotation = resolved_annotation(function, annotation)
    if isinstance(annotation, types.UnionType) or _is_union(annotation):
        if all(isinstance(real_base(each), type) for each in annotation.__args__):
            return annotation
        what = "not all arguments are classes"
    elif isinstance(real_base(annotation), type):
        return annotation
    else:
        what = "is not a class"
    # a form or a class shows itself; a script's object is named, its __repr__ not run
    shown = repr(annotation) if _shows_itself(annotation) else "the annotation"
    raise TypeError(f"Invalid annotation for {name!r}. {shown} {what}.")


def _shows_itself(annotation: Any) -> bool:
    """Is ``repr(annotation)`` free of the script's code (a class, a form, an alias of
    classes)?"""
    if isinstance(annotation, type | TypingForm):
        return True
    if isinstance(annotation, types.GenericAlias | types.UnionType):
        return all(isinstance(each, type) for each in annotation.__args__)
    return False


def _is_union(annotation: Any) -> bool:
    """``typing.Union[int, str]`` (or ``Optional``), which register takes as ``int | str``."""
    return type(annotation) is TypingForm and annotation._name in ("Union", "Optional")


def singledispatch(func: Callable[..., Any]) -> SingleDispatch:
    """``functools.singledispatch`` (``func``: its own parameter's name)."""
    return SingleDispatch(func)


# What a method registered with a singledispatchmethod may be: a function the script wrote,
# or a static or class method around one. Their __get__ is CPython's own; a descriptor
# class of the script's would have its __get__ run here, in host code.
_METHOD_KINDS = (staticmethod, classmethod)


class SingleDispatchMethod:
    """What ``@functools.singledispatchmethod`` makes of the script's method: a descriptor
    whose calls dispatch on the class of the first argument after ``self`` (or ``cls``)."""

    __slots__ = ("_dispatcher",)

    def __init__(self, func: Any) -> None:
        _check_method(func)
        self._dispatcher = dispatcher = SingleDispatch(_unwrapped(func))
        dispatcher._default = dispatcher._implementations[object] = func  # bound when called

    def register(self, cls: Any, method: Any = None) -> Any:
        """``@m.register(cls)``, ``m.register(cls, method)`` or ``@m.register`` on a method
        whose first parameter after ``self`` is annotated with the class."""
        if method is not None:
            return self._register(cls, method)
        if isinstance(real_base(cls), type) or isinstance(cls, types.UnionType) or _is_union(cls):
            return lambda method: self._register(cls, method)
        _check_method(cls)  # @m.register on a method whose parameter names the class
        return self._register(_first_annotation(_unwrapped(cls)), cls)

    def _register(self, cls: Any, method: Any) -> Any:
        _check_method(method)
        self._dispatcher.register(cls, method)
        return method

    def __get__(self, obj: Any, cls: Any = None) -> DispatchingMethod:
        return DispatchingMethod(self._dispatcher, obj, cls)

    def __repr__(self) -> str:
        return f"<functools.singledispatchmethod object at {id(self):#x}>"


class DispatchingMethod:
    """A singledispatchmethod read from an object or its class: a call picks the method
    registered for its first argument's class and binds it as the attribute read would.
    Not a plain function: the guard would take one read from a class for a host method."""

    __slots__ = ("_cls", "_dispatcher", "_obj")

    def __init__(self, dispatcher: SingleDispatch, obj: Any, cls: Any) -> None:
        if type(dispatcher) is not SingleDispatch:  # type(m)(...) from a script
            raise TypeError("a dispatching method is read from a singledispatchmethod")
        self._dispatcher, self._obj, self._cls = dispatcher, obj, cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:  # CPython 3.11 reads args[0] unchecked
            raise IndexError("tuple index out of range")
        found = self._dispatcher._find(type(args[0]))  # never the object's own __class__
        return found.__get__(self._obj, self._cls)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<function {self._dispatcher.__name__} at {id(self):#x}>"


def _check_method(method: Any) -> None:
    """A method the script wrote, or a static or class method around one (whose __get__
    would otherwise be whatever the object held defines)."""
    inner = method.__func__ if type(method) in _METHOD_KINDS else method
    if not is_script_function(inner):
        raise TypeError(
            "singledispatchmethod takes the script's own functions, static methods and "
            f"class methods, not {type(method).__name__} objects"
        )


def _unwrapped(method: Any) -> Any:
    """The function a static or class method holds (whose annotations name the class)."""
    return method.__func__ if type(method) in _METHOD_KINDS else method


__all__ = ["DispatchingMethod", "SingleDispatch", "SingleDispatchMethod", "singledispatch"]
