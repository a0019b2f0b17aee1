"""Run-time guards: the functions the transformed code calls in place of raw operations."""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # str.format's own field parser
import builtins
import ctypes
import decimal
import enum
import functools
import math
import operator
import re
import sys
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import Any

from ._compiler import SCRIPT_FILES
from ._errors import (
    LimitExceeded,
    LimitInterrupt,
    SandboxStop,
    SecurityViolation,
    raised_by_script,
    recursion_in_script,
    recursion_safe,
    recursion_words,
    stop_in_flight,
    tripped_limit,
)
from ._limits import Limits
from ._ownership import (
    BASE_CLASSES,
    DUNDER_DATA,
    DUNDERS_SHOWN,
    GENERIC_BASES,
    HOST_METHOD_NAMES,
    HOST_METHODS,
    PLAIN_TYPES,
    RAW_TYPES,
    READABLE,
    SCRIPT_CLASSES,
    SHOWN,
    SHOWN_BY_VALUE,
    WRITABLE_TYPES,
    is_script_class,
    is_script_function,
    is_shared_container,
    is_writable,
    owns_private_name,
    readable_names,
)
from ._pending import Pending
from ._plain_arguments import checked_method, checked_unbound
from ._script_classes import ScriptClassFactory, delete_dunder_later, set_dunder_later
from ._sealed import HEAP_TYPE, seal
from ._transformer import (
    CALLBACK_METHODS,
    CLASS_BODY_DUNDERS,
    CLASS_DATA_DUNDERS,
    COPY_HOOKS,
    ENUM_SUNDERS,
    FORBIDDEN_ATTRIBUTES,
    GUARDED_ATTRIBUTES,
    GUARDED_DUNDERS,
    READABLE_DUNDERS,
    SCRIPT_DUNDERS,
    is_private_name,
)
from ._work_bounds import (
    FREE_DIVISION_BITS,
    FUNCTION_TYPE,
    SEQUENCES,
    check_division,
    exact_index,
    exact_len,
    is_repeatable,
    is_ticking_instance,
    rational_bits,
    repeated_len,
    text_base,
    ticking,
    with_interruptible_callbacks,
    wrapped_kind,
)

_MISSING = object()
# Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or PyType_FromSpec), whose
# methods may be Python code that trusts its receiver; static builtins check theirs.
# Methods only a host type defines (in C); no script can name one to bind it.
_C_METHODS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
_OWN_MODULES = ("codeact.", "stdlib_bindings")
MAX_MODULUS_BITS = 65_536
MAX_MODPOW_WORK = 1 << 28
# A % directive: its mapping key, flags, width, precision, length modifier and conversion.
_PERCENT_DIRECTIVE = re.compile(
    rb"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?"
    rb"(?P<conversion>.?)",
    re.DOTALL,
)
_LONG_NUMBER = 10**20  # more digits than any C integer holds: CPython refuses it itself
_SSIZE_MAX = sys.maxsize
_INT_MAX = 2**31 - 1
_TRUNCATING = frozenset(b"srabc")  # a precision only cuts their text short (or is ignored)
_INTEGER_CONVERSIONS = frozenset(b"diuxXo")


@recursion_safe  # reads only
def _refused_or_truncated(number: int, is_precision: bool, conversion: bytes) -> bool:
    """Does CPython refuse this width or precision before allocating (past the C ``Py_ssize_t``
    or ``int`` it is read into, or a precision past what digits can be padded to), or does the
    precision only cut text short? Then it is CPython's to answer, not a limit's."""
    if not is_precision:
        return number > _SSIZE_MAX
    if number > _INT_MAX or (conversion and conversion[0] in _TRUNCATING):
        return True
    return bool(conversion) and conversion[0] in _INTEGER_CONVERSIONS and number > _INT_MAX - 3


_FORMAT_NUMBERS = re.compile(r"\d+")
LRU_CACHE_WRAPPER = type(functools.lru_cache(None)(len))  # functools.lru_cache's and cache's
# The standard format mini-language: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_STANDARD_SPEC = re.compile(
    r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?"
    r"(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)",
    re.DOTALL,
)


class Guards:
    """The guards of one sandbox, sized by its :class:`Limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.formatter = ScriptFormatter(self)
        # Types whose public attributes read raw: exact plain data, and the classes this
        # session's scripts made (added as they are made). Nothing else, by any construct.
        self.raw: set[type] = set(RAW_TYPES)
        # One stand-in per host type for this session (type(a) is type(b) holds): a cache
        # of the session's, so no host-global table keeps what a script's type() made.
        self.opaque: dict[type, OpaqueType] = {}
        # What type(x) shows where the script sees a stand-in (its builtins' own; the
        # process's static facades' are in SHOWN).
        self.shown: dict[type, Any] = {}
        # Set by the sandbox: run a coroutine on the run's loop; write to its output, as
        # printed to the standard output or to the standard error.
        self.run_coroutine: Callable[[Any], Any] = _no_run
        self.emit: Callable[[str], None] = _no_run
        self.emit_error: Callable[[str], None] = _no_run
        # Where the standard streams go while contextlib's redirect_stdout and
        # redirect_stderr blocks run: one-item tuples, innermost last (the run's output
        # when empty).
        self.stdout_targets: list[tuple[Any]] = []
        self.stderr_targets: list[tuple[Any]] = []

    # Attribute access -----------------------------------------------------------------

    @recursion_safe  # checks, then reads: nothing changed before a call
    def getattr(self, obj: Any, name: str, default: Any = _MISSING) -> Any:
        """Read ``obj.name`` if the object model permits it; AttributeError if it is missing.

        Transformed code calls this for every attribute read whose receiver is not
        plain data or a script object (those read raw, after an inline type check).
        """
        if name in CALLBACK_METHODS:  # list.sort, by any path (super() included)
            return _callback_safe(self._read(obj, name, default))
        return self._read(obj, name, default)

    @recursion_safe
    def _read(self, obj: Any, name: str, default: Any) -> Any:
        if type(name) is not str:
            if not isinstance(name, str):
                raise TypeError(f"attribute name must be string, not {type(name).__name__!r}")
            raise TypeError("attribute name must be a plain string in scripts")
        if name[:1] == "_":
            return self._private_getattr(obj, name, default)
        if name in FORBIDDEN_ATTRIBUTES:  # frames, code, tracebacks, mro: never by any path
            if (
                name == "mro"
                and isinstance(obj, type)
                and (obj in SCRIPT_CLASSES or _builtin_hierarchy(obj))
            ):
                # the script's own class or a builtin: its __mro__ as a list, classes as
                # type() shows them
                return Builtin(lambda: list(self._dunder(obj, "__mro__", _MISSING)), name)
            raise SecurityViolation(f"access to the attribute {name!r} is not allowed")
        if type(obj) is Pending:  # a planned write's result has no content to read yet
            obj.needed(f"reads .{name} of")
        if name in GUARDED_ATTRIBUTES and isinstance(obj, str | bytes | bytearray | type):
            guarded = self._string_method(obj, name)  # size-checked str methods, bound or not
            if guarded is not None:
                return guarded
        kind = type(obj)
        if kind in self.raw:
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        if kind is types.GenericAlias:  # list[int].append: its origin's, as CPython forwards
            return self._read(obj.__origin__, name, default)
        if name == "obj" and isinstance(obj, BaseException):
            # AttributeError.obj: the receiver of a failed read, perhaps host code's own
            raise SecurityViolation("access to the attribute 'obj' of an error is not allowed")
        if kind is super:
            allowed: frozenset[str] | bool | None = None if _super_of_script(obj) else False
        else:
            allowed = readable_names(obj)
        if allowed is False or (isinstance(allowed, frozenset) and name not in allowed):
            # a typo: CPython's error where nothing defines the name, so nothing is hidden
            # (hasattr(ValueError, 'x'), hasattr(itemgetter(1), 'x') are False); a name
            # something defines is refused
            if _defined_nowhere(obj, name):
                if default is not _MISSING:
                    return default
                raise self._no_attribute(obj, name)
            # relays (typing aliases, host classes, functions, tools): nothing to read
            what = obj.__name__ if isinstance(obj, type) else kind.__name__
            if allowed is False:
                raise SecurityViolation(f"attributes of {what} objects are not accessible")
            raise SecurityViolation(f"the attribute {name!r} of {what} is not accessible")
        value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        if (
            type(value) is FUNCTION_TYPE
            and isinstance(obj, type)
            and obj.__flags__ & HEAP_TYPE
            and not is_script_function(value)
        ):
            # Counter.copy read from the class: host code that would run on any receiver
            # (a script's class, whose __class__ is the real type) unless it is one of its own
            value = _unbound_method(obj, name, value)
        elif isinstance(obj, type) and isinstance(value, property | functools.cached_property):
            value = _class_property(obj, name, value)
        if is_shared_container(obj, name, value):  # a host class's container is every session's
            raise SecurityViolation(f"the attribute {name!r} is shared with the host")
        if name in HOST_METHOD_NAMES:  # a method that caches its arguments process-wide
            wrap = HOST_METHODS.get((obj if isinstance(obj, type) else kind, name))
            if wrap is not None:
                return wrap(value, self)
        if type(value) is types.MethodType:
            # a host method's Python code would act on the script's objects: checked first
            checked = checked_method(value)
            if checked is not None:
                return checked
        return value

    def _no_attribute(self, obj: Any, name: str) -> AttributeError:
        """CPython's error for a name nothing defines (its own lookup says it, running
        nothing), naming a stand-in's type as ``type()`` shows it."""
        try:
            _lookup_of(obj)(obj, name)
        except AttributeError as error:
            if isinstance(obj, type):
                return error
            shown = self.type_of(obj)
            if shown is type(obj):
                if shown.__name__ == shown.__qualname__:
                    return error
                what = shown.__qualname__  # a runtime's subclass, named as the class it stands for
            else:
                # a stand-in for a host type is named as its repr names it (re.Pattern), never
                # by the runtime module that holds it
                if type(shown) is OpaqueType:
                    module = _OPAQUE_REAL[id(shown)][2]
                else:
                    module = getattr(shown, "__module__", "builtins")
                bare = module in ("", "builtins")
                what = shown.__name__ if bare else f"{module}.{shown.__name__}"
            return AttributeError(f"{what!r} object has no attribute {name!r}")
        raise SecurityViolation(f"the attribute {name!r} is not accessible")  # found after all

    @recursion_safe  # reads, and returns what it found
    def _private_getattr(self, obj: Any, name: str, default: Any) -> Any:
        if type(obj) is types.GenericAlias and name not in _ALIAS_OWN_DUNDERS:
            # list[int].__mro__: the origin's (the script holds it as __origin__ already)
            return self._private_getattr(obj.__origin__, name, default)
        if name in READABLE_DUNDERS:  # __name__, __qualname__, __doc__: plain strings only
            reader = DUNDERS_SHOWN.get(type(obj))  # the exact type: never a script's class
            if reader is not None:  # a module stand-in's name, which it does not hold
                try:
                    return reader(obj, name)
                except AttributeError:
                    if default is not _MISSING:
                        return default
                    raise
            value = getattr(obj, name, _MISSING)
            if value is _MISSING:  # getattr('x', '__name__', 'x'): the default, as in CPython
                if default is not _MISSING:
                    return default
                raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
            if name == "__module__" and type(value) is str and value.startswith(_OWN_MODULES):
                return "builtins"  # the runtime's private modules are not the script's business
            if value is None or type(value) is str:
                return value
        elif name in GUARDED_DUNDERS:
            return self._dunder(obj, name, default)
        elif name in DUNDER_DATA.get(type(obj), ()):
            # list[int].__args__: what the script subscripted with, read back; a path's
            # __fspath__, its string
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        elif name == "__parameters__" and isinstance(obj, type) and obj in SCRIPT_CLASSES:
            found = _class_parameters(obj)
            if found is not None:
                return found
            if default is not _MISSING:
                return default
            raise AttributeError(f"type object {obj.__name__!r} has no attribute {name!r}")
        elif name == "__wrapped__" and is_script_function(obj):
            # functools.wraps on the script's own function: what the script wrapped (a
            # facade's wrappers are never script functions: their __wrapped__ stays hidden)
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        elif name == "__wrapped__" and type(obj) is LRU_CACHE_WRAPPER:
            # lru_cache or cache on the script's own function: that function, and nothing
            # else an lru_cache may wrap (a host callable stays hidden)
            wrapped = getattr(obj, name, _MISSING)
            if is_script_function(wrapped):
                return wrapped
        elif type(obj) is super and _super_of_script(obj):
            if is_private_name(name):
                return getattr(obj, name)
            if name in SCRIPT_DUNDERS:  # super().__init__(): found past the class it names
                mro = obj.__self_class__.__mro__  # type: ignore[attr-defined]
                after = mro[mro.index(obj.__thisclass__) + 1 :]  # type: ignore[attr-defined]
                return self._dunder_found(obj, name, after, default)
        elif name == "__class_getitem__" and (alias := _alias_maker(obj)) is not None:
            return alias  # list.__class_getitem__(int) is list[int], and builds nothing else
        elif name in SCRIPT_DUNDERS:
            return self._dunder_method(obj, name, default)
        elif (is_private_name(name) or name in ENUM_SUNDERS) and owns_private_name(obj, name):
            # _private names only on the script's own objects (a facade's are its internals)
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        if _defined_nowhere(obj, name):  # getattr(1, '__foo__'): CPython's error, nothing hidden
            if default is not _MISSING:
                return default
            raise self._no_attribute(obj, name)
        raise SecurityViolation(f"access to the private attribute {name!r} is not allowed")

    def _dunder_method(self, obj: Any, name: str, default: Any) -> Any:
        """``x.__eq__``, ``it.__next__``, ``Base.__init__``: the script's own methods, and a
        host's where they only do what an operator or a builtin already does to ``x``."""
        host_class = isinstance(obj, type) and not issubclass(obj, type)
        # host objects, stand-ins, facades: as ever; a host class's unbound method (it
        # changes only what the script may write: see _changing)
        if readable_names(obj) is not None and not host_class:
            what = obj.__name__ if isinstance(obj, type) else type(obj).__name__
            raise SecurityViolation(f"the attribute {name!r} of {what} is not accessible")
        return self._dunder_found(
            obj, name, (obj if isinstance(obj, type) else type(obj)).__mro__, default
        )

    def _dunder_found(self, obj: Any, name: str, mro: tuple[type, ...], default: Any) -> Any:
        """The dunder ``name`` of ``obj``, found in ``mro`` as CPython finds it, if the class
        that defines it is the script's, or the method is one a script may hold."""
        defining = next((k for k in mro if name in vars(k)), None)
        if defining is None:
            kept = _kept_on_instance(obj, name)  # n.__abs__ = None: where CPython looks next
            if kept is not _MISSING:
                return kept
            if default is not _MISSING:
                return default
            raise AttributeError(f"{mro[0].__name__!r} object has no attribute {name!r}")
        value = getattr(obj, name)
        own = vars(defining)[name]
        if isinstance(own, staticmethod | classmethod):  # __new__, __init_subclass__
            own = own.__func__
        if isinstance(own, _C_METHODS):
            # a host type's own method, copied onto the script's class by host machinery
            # (EnumType gives an IntEnum int's __format__): judged as that type's
            defining = own.__objclass__
        if defining in SCRIPT_CLASSES:
            if is_script_function(own) or type(own) is not FUNCTION_TYPE:
                # the script's function, or what its class body bound (None, a class)
                return value
            # a method a factory wrote on the script's class (dataclass's __init__,
            # namedtuple's __new__): host code, never on another receiver
            if name in COPY_HOOKS:  # the copy facade's business, never the script's
                what = mro[0].__name__
                raise SecurityViolation(f"the attribute {name!r} of {what} is not accessible")
            if name == "__new__":
                return Builtin(_constructing(value, defining), name)
            if isinstance(obj, type):
                return _on_own_instances(value, defining, name)
            return value
        if name == "__new__":  # object.__new__(cls) in a script's __new__
            if type(own) is FUNCTION_TYPE:  # a host's Python constructor: host code
                raise SecurityViolation(f"{defining.__name__}.__new__ is not accessible")
            return Builtin(_constructing(value, defining), name)
        bound = not isinstance(obj, type)
        if not bound and defining.__flags__ & HEAP_TYPE:
            # Path's __init__ on the script's object: host code would read the object's
            # attributes raw and store what it read (the real type) where the script reads
            value = _on_own_instances(value, defining, name)
        if name in INERT_DUNDERS:
            return value
        if name in CHANGING_DUNDERS:  # on what the script may change, nothing else
            if bound:
                self.write(obj.__self__ if type(obj) is super else obj)  # type: ignore[attr-defined]
            return Builtin(_changing(self, value, name, bound=bound), name)
        # a host's __mul__, __format__, __getattr__...: it would skip a size or name guard
        raise SecurityViolation(f"the attribute {name!r} of {mro[0].__name__} is not accessible")

    def _dunder(self, obj: Any, name: str, default: Any) -> Any:
        """The dunders whose values the object model can vouch for, each on its own terms."""
        if name == "__class__":  # what type() answers: never a metaclass or a host class
            return self.type_of(obj)
        own = is_script_class(obj if isinstance(obj, type) else type(obj))
        if name == "__dict__" and own and not isinstance(obj, type):
            return obj.__dict__  # the script's own object: its attributes are its own
        if name == "__annotations__" and (
            is_script_function(obj) or (isinstance(obj, type) and obj in SCRIPT_CLASSES)
        ):
            # what the script's class body or def annotated: its own dict (a class without
            # annotations has an empty one, as in CPython)
            if isinstance(obj, type):
                return vars(obj).get("__annotations__") or {}
            return obj.__annotations__
        if isinstance(obj, type) and obj in SCRIPT_CLASSES:  # a script's class statement's
            if name == "__dict__":
                return _class_namespace(obj)
            if name == "__mro__":
                return tuple(self.class_shown(k) for k in obj.__mro__ if not _made_here(k))
            if name == "__bases__":
                return tuple(self.class_shown(k) for k in _bases_shown(obj))
            if name == "__abstractmethods__":  # the names an ABC still lacks: strings
                found = vars(obj).get("__abstractmethods__")
                if type(found) is frozenset and all(type(n) is str for n in found):
                    return found
                if default is not _MISSING:
                    return default
                raise AttributeError("__abstractmethods__")
            if name == "__base__":
                base = obj.__base__
                while base is not None and _made_here(base):
                    base = base.__base__
                return None if base is None else self.class_shown(base)
            if name == "__subclasses__":  # the classes the script derived from it: its own
                subclasses = type.__dict__["__subclasses__"]  # type's, never the class's own
                return Builtin(lambda: [k for k in subclasses(obj) if k in SCRIPT_CLASSES], name)
        if isinstance(obj, type) and _builtin_hierarchy(obj):
            # int.__mro__, KeyError.__bases__: builtins, as a script class derived from one
            # shows them already
            if name == "__mro__":
                return tuple(self.class_shown(k) for k in _MRO(obj))
            if name == "__bases__":
                return tuple(self.class_shown(k) for k in obj.__bases__)
            if name == "__base__":
                return None if obj.__base__ is None else self.class_shown(obj.__base__)
        if name in ("__dataclass_fields__", "__match_args__", "__slots__") and own:
            value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
            if name == "__dataclass_fields__" or type(value) in (tuple, list, str):
                return value
        if name == "__members__" and own and isinstance(obj, type) and issubclass(obj, enum.Enum):
            # the script's own members by name, as a dict of them (the real view is a
            # mappingproxy, whose kind also wraps host classes' namespaces)
            # (read from the map EnumType made for this class: no host property runs)
            members = vars(obj).get("_member_map_")
            if type(members) is dict:
                return dict(members)
        if name in ("__cause__", "__context__", "__suppress_context__", "__notes__") and (
            isinstance(obj, BaseException)  # an error's chain is errors; its notes are strings
        ):
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        if default is not _MISSING:
            return default
        if _defined_nowhere(obj, name):  # object().__dict__: no such attribute, nothing hidden
            raise self._no_attribute(obj, name)
        what = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        raise SecurityViolation(f"the attribute {name!r} of {what} is not accessible")

    def vars(self, obj: Any) -> dict[str, Any]:
        """``vars(x)``: the ``__dict__`` of the script's own objects (``vars()``, a frame's
        names, is the interpreter's)."""
        value = self._dunder(obj, "__dict__", None)
        if value is None:
            raise TypeError("vars() argument must have __dict__ attribute")
        return value  # type: ignore[no-any-return]

    def dir(self, obj: Any) -> list[str]:
        """``dir(x)``: names only, which say nothing a guarded read would not."""
        return sorted(str(name) for name in builtins.dir(obj))

    def hasattr(self, obj: Any, name: str) -> bool:
        try:
            self.getattr(obj, name)
        except AttributeError:
            return False
        return True

    @recursion_safe
    def write(self, obj: Any) -> Any:
        """Let a script change its own objects and plain containers, nothing else."""
        if is_writable(obj):
            return obj
        if is_script_function(obj):
            # wrapper.calls = 0: a public attribute of the script's own function (no host
            # code reads one; private names and dunders are refused before this)
            return obj
        if type(obj) in PLAIN_TYPES or type(obj) in _UNWRITABLE_TYPES:
            # (1).x = 2, t[0] = 1, object().x = 1, list[int].x = 1: these builtins have no
            # attribute or item a write could reach, so CPython's own error says no
            return obj
        kind = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        raise SecurityViolation(f"{kind} objects cannot be modified from scripts")

    def write_private(self, obj: Any, name: str) -> Any:
        """``obj._name = v``: the script's own private names on its own objects; a host
        object's are its internals (a queue's deque, a logger's handlers), even where its
        public attributes may be set."""
        if type(obj) not in PLAIN_TYPES and not owns_private_name(obj, name):
            kind = obj.__name__ if isinstance(obj, type) else type(obj).__name__
            raise SecurityViolation(f"the private attribute {name!r} of {kind} cannot be set")
        return self.write(obj)

    def write_instance(self, obj: Any) -> Any:
        """``obj.__repr__ = f``: on the script's own instances, where a dunder is plain data
        (operators read the class's); on the script's own classes (a class decorator's
        way), through the rules its class statement applies (``__exit__``'s wrapper, no
        ``__hash__`` on a str)."""
        if isinstance(obj, type):
            return _LaterDunders(obj)
        return self.write(obj)

    def setattr(self, obj: Any, name: str, value: Any, /) -> None:
        if type(name) is str and name in CLASS_BODY_DUNDERS:
            setattr(self.write_instance(obj), name, value)
            return
        check_settable(name)
        setattr(self._writable_for(obj, name), name, value)

    def delattr(self, obj: Any, name: str) -> None:
        if type(name) is str and name in CLASS_BODY_DUNDERS:
            delattr(self.write_instance(obj), name)
            return
        check_settable(name)  # what may be set may be deleted: public and private names
        delattr(self._writable_for(obj, name), name)

    def _writable_for(self, obj: Any, name: str) -> Any:
        return self.write_private(obj, name) if name[:1] == "_" else self.write(obj)

    # Size-guarded operators -----------------------------------------------------------

    @recursion_safe
    def method(self, obj: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """``obj.name(*args)`` for the guarded names, checked in one call."""
        if type(name) is not str or name not in GUARDED_ATTRIBUTES:  # a name from anywhere else
            raise SecurityViolation(f"{name!r} is not a size-checked method")
        if isinstance(obj, str | bytes | bytearray):
            base = text_base(obj)  # sizes from the builtin itself: a subclass may lie
            if name in ("format", "format_map"):
                return getattr(self.formatter, name)(obj, *args, **kwargs)
            if name == "join" and len(args) == 1 and not kwargs:
                return self.join(obj, args[0])
            if name == "replace" and len(args) >= 2:
                self._check_replace(obj, args[0], args[1])
            elif name == "translate" and args:
                self._check_translate(obj, args[0])
            elif name != "replace":
                args = self._check_width(obj, name, args, kwargs)
            if type(obj) is base:
                return getattr(obj, name)(*args, **kwargs)
            return getattr(base, name)(obj, *args, **kwargs)
        return self.getattr(obj, name)(*args, **kwargs)

    @recursion_safe  # the size checks and operators below change nothing of their own
    def mul(self, a: Any, b: Any, /) -> Any:
        kind_a, kind_b = type(a), type(b)
        if kind_a is float or kind_b is float:
            return a * b
        a, b = self._sized_product(a, b)
        return a * b

    @recursion_safe
    def power(self, base: Any, exp: Any, mod: Any = None) -> Any:
        """``**`` and ``pow`` (pow's own parameter names: a call may give them)."""
        if mod is not None:  # modular exponentiation: one long C call, sized before it runs
            if isinstance(exp, int) and isinstance(mod, int):
                mod_bits = abs(int.__index__(mod)).bit_length()
                exp_bits = abs(int.__index__(exp)).bit_length()
                if mod_bits > MAX_MODULUS_BITS or mod_bits * exp_bits > MAX_MODPOW_WORK:
                    raise LimitExceeded("integer size", "pow() with a modulus this large")
            return pow(base, exp, mod)
        self._check_pow(base, exp)
        return base**exp

    @recursion_safe
    def lshift(self, a: Any, b: Any, /) -> Any:
        a, b = self._sized_shift(a, b)
        return a << b

    @recursion_safe
    def mod(self, a: Any, b: Any, /) -> Any:
        if isinstance(a, str | bytes | bytearray):
            self._check_percent_format(a, b)
        else:
            check_division(a, b)
        return a % b

    @recursion_safe
    def floordiv(self, a: Any, b: Any, /) -> Any:
        check_division(a, b)
        return a // b

    @recursion_safe
    def divmod(self, a: Any, b: Any) -> Any:
        check_division(a, b)
        return divmod(a, b)

    @recursion_safe
    def inplace(self, op: str, a: Any, b: Any) -> Any:
        if op == "+=":
            if type(a) is not int and isinstance(a, SEQUENCES):
                self._check_concat(a, b)
        elif op == "*=":
            a, b = self._sized_product(a, b)
        elif op == "**=":
            self._check_pow(a, b)
        elif op == "<<=":
            a, b = self._sized_shift(a, b)
        elif op == "%=" and isinstance(a, str | bytes | bytearray):
            self._check_percent_format(a, b)
        elif op in ("%=", "//="):
            check_division(a, b)
        return _INPLACE[op](a, b)

    @recursion_safe
    def format_spec(self, value: Any, conversion: int, spec: str) -> str:
        if conversion == ord("r"):
            value = repr(value)
        elif conversion == ord("s"):
            value = str(value)
        elif conversion == ord("a"):
            value = ascii(value)
        self._check_spec(spec, value)
        return format(value, spec)

    @recursion_safe
    def format_value(self, value: Any, spec: str = "") -> str:
        if not isinstance(spec, str):  # before the spec is read as one
            shown = "None" if spec is None else type(spec).__name__
            raise TypeError(f"format() argument 2 must be str, not {shown}")
        self._check_spec(spec, value)
        return format(value, spec)

    # Builtins with a size or shape to check -------------------------------------------

    def round_value(self, number: Any, ndigits: Any = None) -> Any:
        """``round``: an int rounded to ``-n`` digits divides by ten to the ``n`` first."""
        if ndigits is None:
            return round(number)
        places = exact_index(ndigits)
        too_many = type(places) is int and -places * 3.33 > self.limits.max_int_bits
        if isinstance(number, int) and too_many:
            raise LimitExceeded("integer size", f"round(..., {places:,}) is too large")
        return round(number, places)

    def make_range(self, *args: int, **keywords: Any) -> Any:
        if keywords:
            raise TypeError("range() takes no keyword arguments")
        span = range(*args)
        try:
            small = len(span) <= self.limits.max_eager_range
        except OverflowError:
            small = False
        return span if small else LongRange(span)

    def make_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        return bytes(*self._sized_buffer(args), **kwargs)

    def make_bytearray(self, *args: Any, **kwargs: Any) -> bytearray:
        return bytearray(*self._sized_buffer(args), **kwargs)

    def _sized_buffer(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``bytes(n)``: a count (an int, or anything with ``__index__`` and no bytes of its
        own) is sized and handed on as the exact int it stands for."""
        if not args or isinstance(args[0], str | bytes | bytearray | memoryview):
            return args
        if isinstance(args[0], int) or not hasattr(type(args[0]), "__bytes__"):
            count = exact_index(args[0])
            if type(count) is int:
                self._check_items(count, b"")
                return (count, *args[1:])
        return args

    def iterate(self, source: Any, *sentinel: Any) -> Iterator[Any]:
        if sentinel:  # iter(callable, sentinel) can spin forever in C: make it tick
            return ticking(iter(source, *sentinel))
        return iter(source)

    def new_class(self, name: Any, /, *rest: Any, **keywords: Any) -> type:
        """``type(name, bases, namespace)``: the class a class statement binding those names
        would make, by the same factory (metaclass, bases, builders and class keywords
        alike)."""
        if len(rest) != 2:
            raise TypeError("type() takes 1 or 3 arguments")
        bases, namespace = rest
        for position, (value, kind) in enumerate(((name, str), (bases, tuple), (namespace, dict))):
            if type(value) is not kind:
                got = "None" if value is None else type(value).__name__  # CPython's words
                raise TypeError(
                    f"type.__new__() argument {position + 1} must be {kind.__name__}, not {got}"
                )
        factory = ScriptClassFactory(self.raw)
        body = factory.__prepare__(name, bases, **keywords)
        body["__module__"] = "__main__"
        body["__qualname__"] = name
        for key, value in namespace.items():
            if type(key) is not str:
                raise TypeError("a class's attribute names must be strings")
            # only what a class statement may bind: never __class__, __del__, __dict__,
            # __getattribute__ or another name the machinery reads; annotations as a plain
            # dict (what annotated assignments in a class body make)
            if key.startswith("_") and not (
                is_private_name(key)
                or key in CLASS_BODY_DUNDERS
                or key in CLASS_DATA_DUNDERS
                or (key in ("__module__", "__qualname__") and type(value) is str)
                or (key == "__annotations__" and type(value) is dict)
            ):
                raise SecurityViolation(
                    f"a class made by a call (type(), a functional form) may not bind {key!r}"
                )
            body[key] = value
        return factory(name, bases, body, **keywords)

    def super_of(self, kind: Any, obj: Any) -> Any:
        """``super(Cls, self)``: only past one of the script's own classes, as ``super()``
        in its methods would go; ``super(str, x)`` would reach a host method past the
        override a stand-in or a guard put there."""
        if not (isinstance(kind, type) and kind in SCRIPT_CLASSES):
            what = getattr(kind, "__name__", type(kind).__name__)
            raise SecurityViolation(f"super({what}, ...) takes one of the script's own classes")
        return super(kind, obj)

    def type_of(self, *args: Any, **keywords: Any) -> Any:
        """``type(obj)``: the script's own classes and builtins' classes, stand-ins otherwise.

        Never a metaclass, ``super`` or a host class: with those a script could build
        classes and proxies that read attributes behind the guards.
        """
        if len(args) != 1:
            return self.new_class(*args, **keywords) if args else self.new_class(None)
        if keywords:
            raise TypeError("type() takes no keyword arguments")
        kind = wrapped_kind(type(args[0]))  # a ticking map is a map
        shown = self.shown.get(kind) or SHOWN.get(kind)
        if shown is not None:
            return shown
        by_value = SHOWN_BY_VALUE.get(kind)  # keyed by the exact type: never a script's
        if by_value is not None:
            return by_value(args[0])
        if issubclass(kind, type) or kind is OpaqueType:  # a class's class: what type() is
            type_stand_in = self.shown.get(type)
            if type_stand_in is not None:
                return type_stand_in
        if kind in self.raw or kind in READABLE or is_script_class(kind):
            if not issubclass(kind, type) and kind not in OPAQUE_CLASSES:
                return kind
        elif issubclass(kind, BaseException):
            return kind
        return self.opaque_type(kind)

    def class_shown(self, kind: type) -> Any:
        """A class as the script sees it among a script class's bases: its own classes,
        the builtins and reviewed bases it derives from, a stand-in for anything else."""
        shown = self.shown.get(kind) or SHOWN.get(kind)  # Enum: the stand-in scripts hold
        if shown is not None:
            return shown
        if kind in SCRIPT_CLASSES or kind in BASE_CLASSES or kind in PLAIN_TYPES:
            return kind
        if issubclass(kind, BaseException) and not kind.__flags__ & HEAP_TYPE:
            return kind
        return self.opaque_type(kind)

    def opaque_type(self, real: type, name: str | None = None) -> OpaqueType:
        """This session's one stand-in for a host type (shown as ``name``, if given; else
        as CPython shows it, ``types.GenericAlias``, but never the runtime's own module)."""
        found = self.opaque.get(real)
        if found is None:
            module = "" if name else _shown_module(real)
            found = self.opaque[real] = OpaqueType(real, name, module)
        return found

    def check_pattern_names(self, subject: Any, names: tuple[str, ...]) -> None:
        """What a class pattern reads on ``subject``, asked of the guard first, for any type.

        CPython's class pattern reads ``subject.name`` itself, after this check; so only
        names whose guarded value *is* the raw value may be read: never a dunder (the
        guard answers ``__class__`` with a stand-in, the raw read would bind the real
        class), never a name the guard answers with a wrapper (a size-checked method).
        """
        raw = type(subject) in self.raw
        for name in names:
            if type(name) is not str:  # a str subclass could answer the checks below falsely
                raise TypeError("a class pattern's attribute names must be strings")
            if raw and name[:1] != "_" and name not in _NOT_RAW_NAMES:
                continue  # plain data or the script's own object: the guard reads it raw too
            if name[:2] == "__":  # __class__, __globals__, __self__, __reduce_ex__...
                raise SecurityViolation(f"a class pattern may not read {name!r}")
            value = self.getattr(subject, name, None)
            if type(value) in _WRAPPERS:  # the raw read would bind the unguarded method
                raise SecurityViolation(f"a class pattern may not read {name!r} of this object")

    def sum(self, iterable: Iterable[Any], /, start: Any = 0) -> Any:
        """``sum``: numbers in C; anything else (``sum(lists, [])``) step by step, sized."""
        if type(start) in (int, float, complex) and type(iterable) in (list, tuple):
            return builtins.sum(iterable, start)
        if isinstance(start, str):
            raise TypeError("sum() can't sum strings [use ''.join(seq) instead]")
        if isinstance(start, bytes | bytearray):  # CPython's own refusals, word for word
            what = "bytes" if isinstance(start, bytes) else "bytearray"
            raise TypeError(f"sum() can't sum {what} [use b''.join(seq) instead]")
        total = start
        for item in iterable:  # bytecode between steps: limits can stop a quadratic sum
            if isinstance(total, SEQUENCES):
                self._check_concat(total, item)
            total = total + item
        return total

    @recursion_safe
    def join(self, separator: Any, items: Iterable[Any]) -> Any:
        if type(items) is not list and type(items) is not tuple:
            try:
                items = iter(items)
            except TypeError:
                raise TypeError("can only join an iterable") from None
        parts = items if type(items) is list or type(items) is tuple else list(items)
        base = text_base(separator)
        measure = len if set(map(type, parts)) <= {base} else exact_len  # subclasses may lie
        try:
            total = sum(map(measure, parts)) + exact_len(separator) * max(len(parts) - 1, 0)
        except TypeError:  # a part with no length: join itself will say what is wrong
            return base.join(separator, parts)
        self._check_items(total, separator)
        return base.join(separator, parts)

    # Helpers ---------------------------------------------------------------------------

    @recursion_safe
    def _check_concat(self, a: Any, b: Any) -> None:
        if isinstance(b, SEQUENCES):
            self._check_items(exact_len(a) + exact_len(b), a)

    @recursion_safe
    def _sized_product(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``a * b`` checked on what it makes; the operands as the operation then takes them
        (a count's ``__index__`` runs once, here: a second call could answer otherwise)."""
        if is_repeatable(a) and not is_repeatable(b):
            b = exact_index(b)
            if type(b) is int:  # exact sizes: a subclass of list or str may lie
                self._check_items(repeated_len(a, b), a)
        elif is_repeatable(b) and not is_repeatable(a):
            a = exact_index(a)
            if type(a) is int:
                self._check_items(repeated_len(b, a), b)
        elif isinstance(a, int) and isinstance(b, int):  # int.bit_length: a subclass may lie
            if int.bit_length(a) + int.bit_length(b) > self.limits.max_int_bits:
                raise LimitExceeded("integer size")
        elif isinstance(a, Fraction) or isinstance(b, Fraction):
            self._check_fraction_product(a, b)
        return a, b

    def _check_fraction_product(self, a: Any, b: Any) -> None:
        """Fraction arithmetic multiplies numerators and denominators in host code."""
        bits = sum(map(rational_bits, (a, b)))
        if bits > self.limits.max_int_bits:
            raise LimitExceeded("integer size", "a fraction this large")

    def _sized_shift(self, a: Any, b: Any) -> tuple[Any, Any]:
        if isinstance(a, int):
            a, b = int.__index__(a), exact_index(b)
            if type(b) is int and a and int.bit_length(a) + b > self.limits.max_int_bits:
                raise LimitExceeded("integer size")
        return a, b

    @recursion_safe
    def _check_pow(self, a: Any, b: Any) -> None:
        if not isinstance(b, int):
            return
        exponent = int.__index__(b)  # a subclass's __gt__ could say it is small
        if exponent > 1 and (isinstance(a, int | Fraction) or hasattr(a, "numerator")):
            bits = rational_bits(a)
            if bits > 1 and bits * exponent > self.limits.max_int_bits:
                raise LimitExceeded("integer size")

    @recursion_safe
    def _check_items(self, count: int, like: Any = None) -> None:
        """``count`` elements of a result like ``like``: a string's are characters."""
        if count > self.limits.max_sequence_items:
            unit = (
                "characters"
                if isinstance(like, str)
                else "bytes"
                if isinstance(like, bytes | bytearray)
                else "items"
            )
            limit = self.limits.max_sequence_items
            raise LimitExceeded(
                "sequence size", f"the result would hold {count:,} {unit} (limit {limit:,})"
            )

    @recursion_safe
    def _check_spec(self, spec: str, value: Any = None) -> None:
        if isinstance(value, decimal.Decimal) and value.is_finite() and spec:
            # 'f' and friends write every digit of the exponent out: Decimal('1e99999999')
            self._check_items(abs(value.adjusted()) + len(value.as_tuple().digits), spec)
        for number in _spec_numbers(spec, value):
            if len(number) > 19 or int(number) > self.limits.max_format_width:
                raise LimitExceeded(
                    "format width",
                    f"format width {number} exceeds {self.limits.max_format_width:,}",
                )

    @recursion_safe
    def _check_percent_format(self, template: str | bytes | bytearray, args: Any) -> None:
        """A ``%`` directive's width and precision, each read as CPython will use it: a size
        it would pad or print digits to is bounded; one CPython refuses before it allocates
        (past its C integer range), and a precision that only truncates (``%.5s``), pass."""
        if isinstance(template, str):
            raw = str.encode(template, "utf-8", "surrogatepass")
        else:
            raw = bytes(template)
        # read as CPython reads them: a tuple subclass's own __len__ or __getitem__ never runs
        values = tuple(tuple.__iter__(args)) if isinstance(args, tuple) else (args,)
        taken = 0  # the arguments the directives so far consumed: where a star reads its number
        for found in _PERCENT_DIRECTIVE.finditer(raw):
            width, precision, conversion = found.group("width", "precision", "conversion")
            numbers = []
            for number, is_precision in ((width, False), (precision, True)):
                if number == b"*":
                    star = values[taken] if taken < len(values) else None
                    taken += 1
                    if isinstance(star, int):  # CPython says "* wants int" to anything else
                        read = int.__index__(star)  # a negative precision is none at all
                        numbers.append((max(read, 0) if is_precision else abs(read), is_precision))
                elif number:
                    numbers.append(
                        (_LONG_NUMBER if len(number) > 19 else int(number), is_precision)
                    )
            value = None
            if conversion != b"%" and found.group("key") is None:
                value = values[taken] if taken < len(values) else None
                taken += 1
            # an infinity or NaN is written as a word, whatever digits were asked for
            word = (
                type(value) is float
                and not math.isfinite(value)
                and bool(conversion)
                and conversion in b"eEfFgG"
            )
            for number, is_precision in numbers:
                if is_precision and word:
                    continue
                if number > self.limits.max_format_width and not _refused_or_truncated(
                    number, is_precision, conversion
                ):
                    raise LimitExceeded(
                        "format width",
                        f"format width {number:,} exceeds {self.limits.max_format_width:,}",
                    )

    def _string_method(self, obj: Any, name: str) -> Callable[..., Any] | None:
        kind = obj if isinstance(obj, type) else type(obj)
        base = next((b for b in (str, bytes, bytearray) if issubclass(kind, b)), kind)
        qualname = f"{base.__name__}.{name}"  # what a call error names: "str.format()"
        if name in ("format", "format_map"):
            if obj is not str and not isinstance(obj, str):
                return None
            if isinstance(obj, type):
                return GuardedMethod(
                    getattr(self.formatter, name), name, qualname=qualname, unbound=True
                )
            return GuardedMethod(getattr(self.formatter, name), name, obj, qualname=qualname)
        if isinstance(obj, type):
            if not issubclass(obj, str | bytes | bytearray):
                return None
            # str.ljust(s, n)
            return GuardedMethod(
                self._unbound_method, name, obj, name, qualname=qualname, unbound=True
            )
        return GuardedMethod(self.method, name, obj, name, qualname=qualname)

    def _unbound_method(self, kind: type, name: str, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(obj, kind):
            raise TypeError(f"descriptor {name!r} requires a {kind.__name__!r} object")
        return self.method(obj, name, *args, **kwargs)

    def _check_translate(self, text: Any, table: Any) -> None:
        if isinstance(table, dict) and table:
            widest = max((exact_len(v) for v in table.values() if isinstance(v, str)), default=1)
            self._check_items(exact_len(text) * widest, text)

    def _check_replace(self, text: Any, old: Any, new: Any) -> None:
        if isinstance(old, str | bytes) and isinstance(new, str | bytes) and len(new) > len(old):
            pieces = len(text) // max(len(old), 1) + 1
            self._check_items(len(text) + pieces * (len(new) - len(old)), text)

    def _check_width(
        self, text: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, ...]:
        """Check the width argument; the exact int is what the method then receives."""
        width = exact_index(args[0] if args else kwargs.get("width", kwargs.get("tabsize", 8)))
        if type(width) is not int:
            return args
        base = text_base(text)
        if name == "expandtabs":
            tab = "\t" if base is str else b"\t"
            self._check_items(base.__len__(text) + width * base.count(text, tab), text)
        else:
            self._check_items(width, text)
        return (width, *args[1:]) if args else args


@recursion_safe  # reads, and wraps in a method of this call's own
def _callback_safe(value: Any) -> Any:
    """The builtin ``list.sort`` with its ``key`` made ``interruptible``; anything else as is."""
    method: Any = value
    if method is _LIST_SORT or (
        type(method) is _BUILTIN_METHOD
        and method.__name__ == "sort"
        and isinstance(method.__self__, list)
    ):
        guarded = with_interruptible_callbacks(method, names=("key",))
        return GuardedMethod(guarded, "sort", qualname="list.sort", unbound=method is _LIST_SORT)
    return method


_LIST_SORT: Any = list.sort
_BUILTIN_METHOD: Any = type([].append)


def _no_run(*args: Any) -> Any:
    raise RuntimeError("not inside a script run")


class Builtin:  # type() shows builtins.builtin_function_or_method
    """A builtin the runtime implements, as a script holds it: a name and a call, nothing
    to read (a bound method of the guards would show, and hand over, the guards)."""

    __slots__ = ("_call", "_name", "_refusal")

    def __init__(
        self,
        call: Callable[..., Any],
        name: str,
        refusal: Callable[[tuple[Any, ...], dict[str, Any]], Any] | None = None,
    ) -> None:
        """``refusal``: given the arguments ``call`` would not take, it refuses them in the
        builtin's words, or calls ``call`` with them bound as the builtin binds them."""
        self._call = call
        self._name = name
        self._refusal = refusal

    @recursion_safe  # a relay
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._call(*args, **kwargs)
        except TypeError as error:
            # refused by the call itself, before any frame of the callee began (no cost to
            # a call that binds): answered in the builtin's words
            if self._refusal is None or error.__traceback__.tb_next is not None:  # type: ignore[union-attr]
                raise
        return self._refusal(args, kwargs)

    @property
    def __name__(self) -> str:
        return self._name

    def __getattr__(self, name: str) -> Any:
        if name == "__qualname__":  # a class body may not define it as a property
            return self._name
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<built-in function {self._name}>"

    def __reduce__(self) -> Any:
        raise TypeError("a builtin cannot be pickled in scripts")


Builtin.__module__, Builtin.__qualname__ = "builtins", "builtin_function_or_method"
# the class's own name too (errors name it): its instances' __name__ is each builtin's
type.__setattr__(Builtin, "__name__", "builtin_function_or_method")


# Read through type's own descriptors: a metaclass cannot answer for them.
_TYPE_DICT = type.__dict__["__dict__"].__get__  # a class's own namespace
_MRO = type.__dict__["__mro__"].__get__
_DICT_OFFSET = type.__dict__["__dictoffset__"].__get__
_GENERIC_LOOKUPS = (object.__dict__["__getattribute__"], type.__dict__["__getattribute__"])
# a builtin stand-in's __getattr__ answers one name, __qualname__, and nothing public
_BUILTIN_GETATTR = Builtin.__dict__["__getattr__"]
# Callables whose classes define no public name: a public name read on one is a typo.
_NO_PUBLIC_NAMES = frozenset(
    {
        Builtin,
        types.BuiltinFunctionType,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
        types.MethodWrapperType,
        types.ClassMethodDescriptorType,
    }
)
# CPython's own callables and the exact plain types name a lookup in their class's
# namespace: the generic one (each C type's slot wrapper of PyObject_GenericGetAttr), so a
# lookup there runs nothing of the object either ((1).__dict__ finds nothing, runs nothing)
_GENERIC_LOOKUPS += tuple(
    _TYPE_DICT(kind)["__getattribute__"]
    for kind in (*_NO_PUBLIC_NAMES, *PLAIN_TYPES)
    if "__getattribute__" in _TYPE_DICT(kind)
)
# A C type that names CPython's generic lookup as its own (operator.itemgetter,
# struct.Struct) has a slot wrapper of its own for it: asked of the type itself, which
# function its lookup slot holds (typeslots.h: Py_tp_getattro is 58, in the stable ABI).
_GET_SLOT = ctypes.pythonapi.PyType_GetSlot
_GET_SLOT.restype, _GET_SLOT.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_int)
_TP_GETATTRO = 58
_GENERIC_GETATTRO = _GET_SLOT(object, _TP_GETATTRO)
_WRAPPER_GENERIC: dict[Any, bool] = {}  # slot wrappers come from C types only: a few dozen


@recursion_safe  # reads, and caches an answer once it has it whole
def _generic_lookup(lookup: Any) -> bool:
    """Is a class's ``__getattribute__`` CPython's generic lookup, which runs nothing of
    the object's but a descriptor the class namespaces (read first) would show?"""
    if any(lookup is generic for generic in _GENERIC_LOOKUPS):
        return True
    if type(lookup) is not types.WrapperDescriptorType:
        return False  # a class's own Python lookup, or a builtin one
    known = _WRAPPER_GENERIC.get(lookup)
    if known is None:
        owner = lookup.__objclass__
        known = lookup.__name__ == "__getattribute__" and (
            _GET_SLOT(owner, _TP_GETATTRO) == _GENERIC_GETATTRO
        )
        _WRAPPER_GENERIC[lookup] = known
    return known


@recursion_safe  # reads only
def _script_instance_dict(obj: Any) -> dict[Any, Any] | None:
    """The real ``__dict__`` of the script's own instance, read without running any of its
    code; None for anything else (a host object's is not the script's to probe)."""
    if isinstance(obj, type) or not is_script_class(type(obj)):
        return None
    try:
        namespace = object.__getattribute__(obj, "__dict__")
    except AttributeError:  # __slots__: no instance dict
        return None
    return namespace if type(namespace) is dict else None


def _kept_on_instance(obj: Any, name: str) -> Any:
    """What the script's own instance keeps under ``name`` in its ``__dict__`` (a dunder
    it set there)."""
    namespace = _script_instance_dict(obj)
    return _MISSING if namespace is None else namespace.get(name, _MISSING)


@recursion_safe  # reads only
def _instance_lacks(obj: Any, name: str) -> bool:
    """Is ``name`` missing from ``obj``'s instance dict: the script's own object's real
    one, or, for a public name only, a host object's (whether a host object holds a private
    name is not the script's to learn; that it lacks ``widht``, CPython's hasattr says)?"""
    namespace = _script_instance_dict(obj)
    if namespace is None and name[:1] != "_":
        namespace = _host_instance_dict(obj)
    if namespace is None or any(type(key) is not str for key in namespace):
        return False  # a key of the script's str subclass: a lookup here would run its __eq__
    return name not in namespace


@recursion_safe  # reads only
def _host_instance_dict(obj: Any) -> dict[Any, Any] | None:
    """A host object's instance dict, read by CPython's own ``__dict__`` getter (no code of
    the object's runs); None for anything else."""
    kind = type(obj)
    if isinstance(obj, type) or is_script_class(kind):
        return None
    getter = next(
        (_TYPE_DICT(k)["__dict__"] for k in _MRO(kind) if "__dict__" in _TYPE_DICT(k)), None
    )
    if type(getter) is not types.GetSetDescriptorType:  # a class's own __dict__ property: host code
        return None
    namespace = getter.__get__(obj, kind)
    return namespace if type(namespace) is dict else None


@recursion_safe  # reads only
def _defined_nowhere(obj: Any, name: str) -> bool:
    """Would CPython's lookup of ``obj.name`` find nothing, and run nothing while it looks?

    Read from class namespaces only, compared by identity: no class in the lookup's path
    defines ``name``, a ``__getattr__`` or a lookup of its own, and the instance dict, if
    there is one, lacks it (the script's own object's read from the real dict; a host
    object's for a public name only).
    """
    kind = type(obj)
    path = _MRO(kind)
    if isinstance(obj, type):
        # a class's attribute: the name in its own classes, then its metaclass's; only the
        # metaclass's own lookup runs for it (a class's __getattribute__ is its instances':
        # BaseException's is one of its own)
        if any(name in _TYPE_DICT(cls) for cls in _MRO(obj)):
            return False
    elif _DICT_OFFSET(kind) and not _instance_lacks(obj, name):
        return False
    for cls in path:
        namespace = _TYPE_DICT(cls)
        if name in namespace:
            return False
        fallback = namespace.get("__getattr__")
        if (
            fallback is not None
            and fallback is not _BUILTIN_GETATTR
            and fallback is not _GUARDED_GETATTR
        ):
            return False
        lookup = namespace.get("__getattribute__")
        if lookup is not None and not _generic_lookup(lookup):
            return False
    return True


def _lookup_of(obj: Any) -> Callable[[Any, str], Any]:
    """CPython's generic lookup for ``obj``: raises its AttributeError for a missing name."""
    return type.__getattribute__ if isinstance(obj, type) else object.__getattribute__


class GuardedMethod:
    """A size-checked method as a script holds it: callable, with nothing to read.

    Not a ``functools.partial``: its ``func`` would hand the script the guard itself,
    to call with arguments of its own choosing.
    """

    __slots__ = ("_bound", "_call", "_name", "_qualname", "_unbound")

    def __init__(
        self,
        call: Callable[..., Any],
        name: str,
        *bound: Any,
        qualname: str | None = None,
        unbound: bool = False,
    ) -> None:
        self._call = call
        self._name = name
        self._bound = bound
        self._qualname = qualname
        self._unbound = unbound  # read from the class (str.join): a method descriptor

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*self._bound, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # what CPython's call errors name the callee by ("list.sort() got multiple ...")
        if name == "__qualname__" and self._qualname is not None:
            return self._qualname
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<built-in method {self._name}>"

    def __reduce__(self) -> Any:
        raise TypeError("a method cannot be pickled in scripts")


GuardedMethod.__module__ = "builtins"  # a call error names "list.sort()", not a module of ours
# it answers __qualname__ alone, as a builtin stand-in's does
_GUARDED_GETATTR = GuardedMethod.__dict__["__getattr__"]
# type(str.join), type(''.join): what CPython's would be
SHOWN_BY_VALUE[GuardedMethod] = lambda method: (
    types.MethodDescriptorType if method._unbound else types.BuiltinFunctionType
)


class ScriptFormatter:
    """``string.Formatter`` for scripts, by composition: every field path goes through the guard.

    Not a subclass of the real one: its methods read fields with the real ``getattr``.
    """

    __slots__ = ("_guards",)

    def __init__(self, guards: Guards) -> None:
        if type(guards) is not Guards:  # type(fmt)(x) from a script: x is not a guard
            raise SecurityViolation("a formatter cannot be made from scripts")
        self._guards = guards

    def format(self, template: str, /, *args: Any, **kwargs: Any) -> str:
        return self.vformat(template, args, kwargs)

    def format_map(self, template: str, mapping: Any, /) -> str:
        return self.vformat(template, (), mapping)

    def vformat(self, template: str, args: Any, kwargs: Any) -> str:
        if type(template) is not str:
            template = str.__str__(template)
        return self._formatted(template, args, kwargs, 0)[0]

    def _formatted(self, template: str, args: Any, kwargs: Any, auto: int) -> tuple[str, int]:
        """The text, and the automatic field number reached: a spec's own fields go on
        numbering from the field they belong to (``'{:{}}'`` takes two arguments)."""
        parts: list[str] = []
        total = 0
        for literal, field, spec, conversion in _string.formatter_parser(template):
            parts.append(literal)
            if field is None:
                continue
            if field == "":
                field, auto = str(auto), auto + 1
            elif field.isdigit() and auto:
                raise ValueError("cannot switch from automatic field numbering to manual")
            value = self._field(field, args, kwargs)
            if spec and "{" in spec:
                spec, auto = self._formatted(spec, args, kwargs, auto)
            text = self._guards.format_spec(value, ord(conversion) if conversion else -1, spec)
            total += len(text) + len(literal)
            self._guards._check_items(total, "")
            parts.append(text)
        return "".join(parts), auto

    def parse(self, template: str) -> list[tuple[str, str | None, str | None, str | None]]:
        return list(_string.formatter_parser(template))

    def _field(self, field: str, args: Any, kwargs: Any) -> Any:
        first, rest = _string.formatter_field_name_split(field)
        if isinstance(first, int) and first >= len(args):  # CPython's words, not the tuple's
            raise IndexError(f"Replacement index {first} out of range for positional args tuple")
        obj = args[first] if isinstance(first, int) else kwargs[first]
        for is_attribute, key in rest:
            obj = self._guards.getattr(obj, key) if is_attribute else operator.getitem(obj, key)
        return obj

    def __repr__(self) -> str:
        return "<string.Formatter>"


class LongRange:
    """A range too long to hand to C code: iterating it runs bytecode, so limits can stop it."""

    __slots__ = ("_span",)

    def __init__(self, span: range) -> None:
        self._span = span

    def __iter__(self) -> Iterator[int]:
        return ticking(iter(self._span))

    def __len__(self) -> int:
        return len(self._span)

    def __getitem__(self, index: Any) -> Any:
        item = self._span[index]
        return LongRange(item) if isinstance(item, range) else item

    # An exact int is found arithmetically; anything else (an object with __index__ or
    # __eq__) is compared with every item, in C for a range: a billion steps no limit
    # could stop. Here those steps are Python's, and a limit stops them.
    def __contains__(self, value: object) -> bool:
        if type(value) is int or type(value) is bool:
            return value in self._span
        return any(item == value for item in ticking(iter(self._span)))

    def __reversed__(self) -> Iterator[int]:
        return ticking(reversed(self._span))

    def __repr__(self) -> str:
        return repr(self._span)

    @property
    def start(self) -> int:
        return self._span.start

    @property
    def stop(self) -> int:
        return self._span.stop

    @property
    def step(self) -> int:
        return self._span.step

    def count(self, value: int) -> int:
        if type(value) is int or type(value) is bool:
            return self._span.count(value)
        return sum(1 for item in ticking(iter(self._span)) if item == value)

    def index(self, value: int) -> int:
        if type(value) is int or type(value) is bool:
            return self._span.index(value)
        for position, item in enumerate(ticking(iter(self._span))):
            if item == value:
                return position
        raise ValueError(f"{value!r} is not in range")


def operator_guards(guards: Guards) -> dict[str, Callable[..., Any]]:
    """The hot guards as closures with a fast path first: they run inside loops."""
    max_bits = guards.limits.max_int_bits
    writable = WRITABLE_TYPES
    slow_mul, slow_mod, slow_write = guards.mul, guards.mod, guards.write

    @recursion_safe
    def mul(a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:
            if a.bit_length() + b.bit_length() > max_bits:
                raise LimitExceeded("integer size")
            return a * b
        return slow_mul(a, b)

    @recursion_safe
    def mod(a: Any, b: Any) -> Any:
        if type(a) is int and a.bit_length() <= FREE_DIVISION_BITS:
            return a % b
        return slow_mod(a, b)

    @recursion_safe
    def write(obj: Any) -> Any:
        if type(obj) in writable:
            return obj
        return slow_write(obj)

    return {
        "_mul_": mul,
        "_mod_": mod,
        "_write_": write,
        "_write_instance_": guards.write_instance,
        "_write_private_": guards.write_private,
        "_floordiv_": guards.floordiv,
    }


def check_settable(name: Any) -> None:
    """Names a script may set: public ones and its own private ones, never a dunder."""
    if not isinstance(name, str):  # as CPython says it, before any rule of the sandbox
        raise TypeError(f"attribute name must be string, not {type(name).__name__!r}")
    private = type(name) is str and (is_private_name(name) or name in ENUM_SUNDERS)
    if type(name) is not str or (name[:1] == "_" and not private) or name in FORBIDDEN_ATTRIBUTES:
        raise SecurityViolation(f"setting the attribute {name!r} is not allowed")


# Dunder methods read on objects whose public names a script may read: each does what an
# operator or a builtin already does to them, unguarded. Absent on purpose: the size-guarded
# operators (__mul__, __pow__, __lshift__, __mod__, __floordiv__, __divmod__, __format__),
# __getattr__ and __call__ (a host's own machinery), and every in-place operator.
INERT_DUNDERS = frozenset(
    {
        *(f"__{op}__" for op in ("eq", "ne", "lt", "le", "gt", "ge", "hash", "bool")),
        *(f"__{op}__" for op in ("len", "length_hint", "contains", "getitem", "iter", "next")),
        *(f"__{op}__" for op in ("reversed", "str", "repr", "neg", "pos", "abs", "invert")),
        *(f"__{op}__" for op in ("index", "int", "float", "complex", "trunc", "floor", "ceil")),
        *(f"__{op}__" for op in ("add", "sub", "truediv", "and", "or", "xor")),
        *(f"__r{op}__" for op in ("add", "sub", "truediv", "and", "or", "xor")),
        "__enter__",
        "__exit__",
        "__init_subclass__",  # object's does nothing: super().__init_subclass__(**kw)
    }
)
# ... and those that change their receiver: only what the script may change (``_write_``).
CHANGING_DUNDERS = frozenset(
    {"__init__", "__setitem__", "__delitem__", "__setattr__", "__delattr__", "__post_init__"}
)


def _changing(guards: Guards, method: Any, name: str, *, bound: bool) -> Callable[..., Any]:
    """A host's changing dunder as a script may call it: the object it changes must be one
    the script may write (``object.__setattr__(self, ...)`` in a frozen dataclass), and a
    name it sets one the script may set."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if not bound:  # Exception.__init__(self, ...): the receiver comes first
            if not args:
                raise TypeError(f"{name}() needs the object it acts on")
            guards.write(args[0])
        if name in ("__setattr__", "__delattr__"):
            rest = args if bound else args[1:]  # (name, value) after the receiver
            check_settable(rest[0] if rest else None)
        return method(*args, **kwargs)

    return call


@recursion_safe  # reads, and wraps in a builtin of this call's own
def _unbound_method(owner: type, name: str, value: Any) -> Any:
    """A plain function read from a host class: a method (receiver checked) unless the
    class holds it as a static method, which has no receiver to trust."""
    for klass in owner.__mro__:
        if name in vars(klass):
            if isinstance(vars(klass)[name], staticmethod):
                return checked_unbound(value, receiver=False)  # no receiver, arguments checked
            break
    return _on_own_instances(checked_unbound(value, receiver=True), owner, name)


@recursion_safe  # reads, and builds a property of its own
def _class_property(owner: type, name: str, value: Any) -> Any:
    """A property read from a class (``Fraction.numerator``): its getter and setter, where
    host code, act on the class's own instances only (``.fget(x)`` would run fractions'
    code on any object). A host class's ``cached_property`` is refused: it holds a lock
    every instance takes."""
    if isinstance(value, functools.cached_property):
        if is_script_function(value.func):
            return value
        raise SecurityViolation(f"the attribute {name!r} of {owner.__name__} is not accessible")
    parts = (value.fget, value.fset, value.fdel)
    if all(part is None or is_script_function(part) for part in parts):
        return value  # the script's own property, as it made it

    def own(function: Any) -> Any:
        if function is None or is_script_function(function):
            return function
        return _on_own_instances(checked_unbound(function, receiver=True), owner, name)

    checked = property(own(value.fget), own(value.fset), own(value.fdel))
    checked.__doc__ = value.__doc__  # its own, not the wrapper's (None stays None)
    return checked


@recursion_safe  # builds its own wrapper only
def _on_own_instances(method: Any, owner: type, name: str) -> Callable[..., Any]:
    """A host class's unbound dunder, callable only on that class's own instances (a script
    subclass of a reviewed base included): never host code run on a foreign receiver."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if not args or not isinstance(args[0], owner):
            raise SecurityViolation(
                f"{owner.__name__}.{name} acts only on {owner.__name__} objects"
            )
        return method(*args, **kwargs)

    return Builtin(call, name)


class _LaterDunders:
    """The target of ``Cls.__dunder__ = value`` on a class: the write goes through the
    class statement's rules. Transformed code assigns to it and drops it; no script
    holds one."""

    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        object.__setattr__(self, "_cls", cls)

    def __setattr__(self, name: str, value: Any) -> None:
        set_dunder_later(object.__getattribute__(self, "_cls"), name, value)

    def __delattr__(self, name: str) -> None:
        delete_dunder_later(object.__getattribute__(self, "_cls"), name)


def _constructing(new: Any, owner: type) -> Callable[..., Any]:
    """``owner.__new__`` as a script may call it: it makes the script's own objects only
    (never an uninitialised host object), built on bases that keep no state of their own
    past ``__new__`` (builtins, enums): a reviewed Python base's ``__init__`` is not
    skipped."""

    def call(*args: Any, **kwargs: Any) -> Any:
        kind = args[0] if args else None
        if not (
            isinstance(kind, type)
            and is_script_class(kind)
            and issubclass(kind, owner)
            and all(
                k in SCRIPT_CLASSES or not k.__flags__ & HEAP_TYPE or issubclass(k, enum.Enum)
                for k in kind.__mro__
            )
        ):
            what = getattr(kind, "__name__", type(kind).__name__)
            raise SecurityViolation(
                f"{owner.__name__}.__new__ makes the script's own {owner.__name__} "
                f"classes' objects, not {what}'s"
            )
        return new(*args, **kwargs)

    return call


@recursion_safe  # reads, into a dict of its own
def _class_parameters(cls: type) -> tuple[Any, ...] | None:
    """A generic script class's type variables, from the forms its class statement's bases
    were (``class Box(Generic[T])``); None for a class that is not generic."""
    if not any(k in GENERIC_BASES for k in cls.__mro__):
        return None
    found: dict[Any, None] = {}
    written = vars(cls).get("__orig_bases__", ())
    for base in written if type(written) is tuple else ():
        if "__parameters__" in DUNDER_DATA.get(type(base), ()):  # a facade's typing form
            found.update(dict.fromkeys(base.__parameters__))
    return tuple(found)


@recursion_safe  # reads only
def _builtin_hierarchy(cls: type) -> bool:
    """A class written in C that scripts name as plain data, derive from or raise: its
    ancestors are such classes too (a class of the runtime's, or any host class, is not)."""
    return not cls.__flags__ & HEAP_TYPE and (
        cls in PLAIN_TYPES or cls in BASE_CLASSES or issubclass(cls, BaseException)
    )


# What a GenericAlias answers itself; it forwards every other name to its origin.
_ALIAS_OWN_DUNDERS = frozenset(
    {
        "__class__",
        "__origin__",
        "__args__",
        "__parameters__",
        "__unpacked__",
        "__typing_unpacked_tuple_args__",
        "__mro_entries__",
        "__reduce_ex__",
        "__reduce__",
        "__copy__",
        "__deepcopy__",
    }
)
# Objects with no attribute or item a write could reach (nor a __setattr__ of their own).
_UNWRITABLE_TYPES = frozenset({object, types.GenericAlias, types.UnionType})


@recursion_safe  # reads, and makes a wrapper
def _alias_maker(obj: Any) -> Callable[[Any], Any] | None:
    """``obj.__class_getitem__`` where it only makes the alias ``obj[item]`` (CPython's own
    for a builtin class and the classes derived from it, ``re.Pattern``'s for its stand-in),
    bound to ``obj`` without a lookup on it; None where it is anything else."""
    if type(obj) is OpaqueType:  # the stand-in, as the alias's origin: never the real type
        method = _alias_method(_OPAQUE_REAL[id(obj)][0])
    elif isinstance(obj, type):
        method = _alias_method(obj)
    else:
        return None
    if method is None:
        return None
    if type(obj) is OpaqueType or type(method) is classmethod:  # a call to hold, not its parts
        return Builtin(functools.partial(types.GenericAlias, obj), "__class_getitem__")
    bound: Callable[[Any], Any] = method.__get__(None, obj)  # C's: its __self__ is obj, unread
    return bound


@recursion_safe  # reads only
def _alias_method(cls: type) -> Any:
    """The ``__class_getitem__`` ``cls`` finds first, if it is one that only makes an alias:
    a builtin's (C's ``Py_GenericAlias``) or a stand-in's ``classmethod(GenericAlias)``."""
    for k in _MRO(cls):
        own = _TYPE_DICT(k).get("__class_getitem__")  # type's own getter: no metaclass answers
        if own is None:
            continue
        if type(own) is types.ClassMethodDescriptorType and not k.__flags__ & HEAP_TYPE:
            return own
        if type(own) is classmethod and own.__func__ is types.GenericAlias:
            return own
        return None
    return None


def _made_here(cls: type) -> bool:
    """A class the runtime made between a script's class and its base (NamedTuple's
    namedtuple): CPython's class has no such step, so its hierarchy never shows it."""
    module = vars(cls).get("__module__")
    return type(module) is str and module.startswith(_OWN_MODULES)


def _bases_shown(cls: type) -> list[type]:
    bases: list[type] = []
    for base in cls.__bases__:
        bases.extend(_bases_shown(base) if _made_here(base) else [base])
    return bases


# What a script class's namespace holds that is the machinery's, not the script's: the
# instances' attribute slots (host descriptors) and what a factory or metaclass keeps.
_NAMESPACE_KEPT_DUNDERS = frozenset(
    {"__module__", "__doc__", "__annotations__", "__slots__", "__match_args__"}
)


def _class_namespace(cls: type) -> dict[str, Any]:
    """``Cls.__dict__`` of a script's class: a copy of what its body bound (CPython's is a
    read-only view); the names and values the machinery keeps there are left out."""
    namespace: dict[str, Any] = {}
    for key, value in vars(cls).items():
        if type(key) is not str:
            continue
        if key[:1] == "_" and not (
            is_private_name(key)
            or key in CLASS_BODY_DUNDERS
            or key in ENUM_SUNDERS
            or key in _NAMESPACE_KEPT_DUNDERS
        ):
            continue
        inner = value
        if isinstance(value, staticmethod | classmethod):
            inner = value.__func__
        elif isinstance(value, property):
            inner = value.fget
        if type(inner) is FUNCTION_TYPE and not is_script_function(inner):
            continue  # a factory's method (dataclass's __init__): host code
        if readable_names(value) is False and inner is value and type(value) is not FUNCTION_TYPE:
            continue  # a slot's or namedtuple field's descriptor: a host object
        namespace[key] = value
    return namespace


@recursion_safe  # it raises, and changes nothing
def reraise_limits() -> None:
    """Called first in every except block, and before a ``return``, ``break`` or ``continue``
    leaves a finally block: a limit or stop in flight goes on propagating."""
    error = sys.exc_info()[1]
    if isinstance(error, SandboxStop):  # a finally discarding it would end the run cleanly
        raise error
    doom = stop_in_flight()
    if doom is not None:  # a finally raised in front of the stop: the stop goes on regardless
        raise doom
    if isinstance(error, RecursionError):
        tripped = tripped_limit()
        if tripped is not None:  # a stop the interpreter could not make this deep: the run's
            # fate all the same (caught, a script spinning at its deepest frame would run on)
            raise LimitInterrupt(tripped, f"the script exceeded its {tripped} limit") from None
        if not recursion_in_script(error, SCRIPT_FILES):
            # host code stopped halfway through its work: its state is not the script's to see
            raise LimitExceeded("recursion depth", recursion_words(error)) from None
    if isinstance(error, MemoryError):
        if raised_by_script(error, SCRIPT_FILES):
            return  # the script's own raise, caught by its own handler: as CPython has it
        raise LimitExceeded("memory", "the script ran out of memory") from None


def script_class_factory(guards: Guards) -> Any:
    """The metaclass hook RestrictedPython routes every class statement through."""
    return ScriptClassFactory(guards.raw)


@recursion_safe  # reads only
def _spec_numbers(spec: str, value: Any) -> list[str]:
    """The numbers in a format spec that size what the format makes: every one, but a
    precision that only cuts a string or meets inf or nan (the standard mini-language's).
    A number's precision counts even where CPython writes no zeros past its digits ('g'):
    it allocates that many bytes first."""
    standard = _STANDARD_SPEC.fullmatch(spec) if type(spec) is str else None
    if standard is None:
        return _FORMAT_NUMBERS.findall(spec)
    numbers = [standard["width"]]
    kind = type(value)
    cuts = kind is str or standard["type"] == "s"
    if not (cuts or (kind is float and not math.isfinite(value))):
        numbers.append(standard["precision"] or "")
    return [number for number in numbers if number]


class OpaqueType:
    """What ``type(x)`` shows for a host type: its name and isinstance, nothing to build with.

    The real type is kept in a table of this module, not under a name of the stand-in:
    no read, guarded or not, reaches it.
    """

    __slots__ = ("__dict__", "__weakref__")

    def __init__(self, real: type, name: str | None = None, module: str = "") -> None:
        _OPAQUE_REAL[id(self)] = (real, name or real.__name__, module)
        weakref.finalize(self, _OPAQUE_REAL.pop, id(self), None)
        # what an alias's repr reads (re.Pattern[str]): two strings, read before the class's
        # own __module__ (scripts read neither here: their reads go to _opaque_dunder)
        vars(self).update(__qualname__=name or real.__name__, __module__=module or "builtins")

    @property
    def __name__(self) -> str:
        return _OPAQUE_REAL[id(self)][1]

    def __instancecheck__(self, obj: Any) -> bool:
        real = _OPAQUE_REAL[id(self)][0]
        wrapper = is_ticking_instance(obj, real)
        return isinstance(obj, real) if wrapper is None else wrapper

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # a host class: never built by scripts
        raise SecurityViolation(f"{self.__name__} objects cannot be made from scripts")

    def __getitem__(self, item: Any) -> Any:
        """``re.Pattern[str]``: an alias of the stand-in, where the real type makes one."""
        make = _alias_maker(self)
        if make is None:
            raise TypeError(f"type {self.__name__!r} is not subscriptable")
        return make(item)

    def __repr__(self) -> str:
        module = _OPAQUE_REAL[id(self)][2]
        return f"<class {(f'{module}.' if module else '') + self.__name__!r}>"

    def __reduce__(self) -> Any:
        raise TypeError("a type cannot be pickled in scripts")


def _opaque_dunder(shown: OpaqueType, name: str) -> str | None:
    """A stand-in's ``__name__``, ``__qualname__`` and ``__module__`` as the type it stands
    for shows them (``_asyncio.Task``), its ``__doc__`` none."""
    _, shown_name, module = _OPAQUE_REAL[id(shown)]
    if name == "__module__":
        return module or "builtins"
    return None if name == "__doc__" else shown_name


DUNDERS_SHOWN[OpaqueType] = _opaque_dunder

_TYPE_MODULE = vars(type)["__module__"].__get__


def _shown_module(real: type) -> str:
    module = _TYPE_MODULE(real)  # type's own getter: no metaclass answers for the class
    if type(module) is not str or module == "builtins" or module.startswith(_OWN_MODULES):
        return ""
    return module


# id(stand-in) -> (the real type, the name it shows, the module its repr names)
_OPAQUE_REAL: dict[int, tuple[type, str, str]] = {}
# Host classes whose type() is a stand-in though their instances are readable: calling
# them would put script values in the class's own registries (a flag class keeps every
# value it is called with as a pseudo-member).
OPAQUE_CLASSES: set[type] = set()


class _PatternMeta(type):
    """Metaclass of a class pattern's stand-in: isinstance asks the guard first."""

    _cls: Any
    _names: tuple[str, ...]
    _guards: Guards

    def __instancecheck__(cls, subject: Any) -> bool:
        if not isinstance(subject, cls._cls):
            return False
        # every name, whatever the subject's type: refused here, before the pattern reads it
        cls._guards.check_pattern_names(subject, cls._names)
        return True


def match_class_guard(guards: Guards) -> Callable[..., type]:
    """``_match_class_(C, names, positional)``: what a class pattern with sub-patterns matches.

    Builtins that match themselves (``case int(x)``) are returned as they are; any
    other class is replaced by a stand-in that checks the names the pattern will read.
    """
    made: dict[tuple[Any, tuple[str, ...]], type] = {}
    # (class, keyword names, positional count) -> (the __match_args__ object seen, stand-in):
    # a match in a loop asks again on every pass, and the same tuple needs no new check
    recent: dict[tuple[Any, tuple[str, ...], int], tuple[Any, type]] = {}

    def stand_in(cls: Any, names: tuple[str, ...], positional: int) -> type:
        if not isinstance(cls, type):
            raise TypeError("called match pattern must be a class")
        if not names and cls in _MATCH_SELF:
            return cls
        raw_args = getattr(cls, "__match_args__", ())
        seen = recent.get((cls, names, positional))
        if seen is not None and seen[0] is raw_args:
            return seen[1]
        match_args = tuple(raw_args)
        if any(type(name) is not str for name in match_args):  # hashed below, in host code
            raise TypeError("__match_args__ elements must be strings")
        read = (*names, *match_args[:positional])
        key = (cls, read)
        found = made.get(key)
        if found is None:
            namespace = {
                "_cls": cls,
                "_names": read,
                "_guards": guards,
                "__match_args__": match_args,
            }
            found = made[key] = seal(_PatternMeta(cls.__name__, (), namespace))
        recent[(cls, names, positional)] = (raw_args, found)
        return found

    return stand_in


# Public names the guard never answers raw, whatever the receiver.
_NOT_RAW_NAMES = FORBIDDEN_ATTRIBUTES | GUARDED_ATTRIBUTES | CALLBACK_METHODS
# What the guard hands out in place of a raw attribute: a class pattern may not bind these.
_WRAPPERS = frozenset({GuardedMethod})
_MATCH_SELF = frozenset(
    {bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple}
)


@recursion_safe  # reads only
def _super_of_script(obj: super) -> bool:
    this_class = obj.__thisclass__  # type: ignore[attr-defined]
    return isinstance(this_class, type) and is_script_class(this_class)


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "//=": operator.ifloordiv,
    "@=": operator.imatmul,
}


__all__ = [
    "Builtin",
    "GuardedMethod",
    "Guards",
    "LongRange",
    "OpaqueType",
    "ScriptFormatter",
    "match_class_guard",
    "reraise_limits",
    "script_class_factory",
]
