"""Run-time guards: the functions the transformed code calls in place of raw operations."""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # str.format's own field parser
import functools
import operator
import re
import string
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._errors import LimitExceeded, SandboxStop, SecurityViolation
from ._limits import Limits
from ._ownership import (
    SCRIPT_CLASSES,
    WRITABLE_TYPES,
    is_readable,
    is_script_class,
    is_writable,
)
from ._transformer import (
    FORBIDDEN_ATTRIBUTES,
    GUARDED_ATTRIBUTES,
    READABLE_DUNDERS,
    SCRIPT_DUNDERS,
    is_private_name,
)

_MISSING = object()
_PLAIN = (list, dict, set, bytearray)
_SEQUENCES = (str, bytes, bytearray, list, tuple)
_PERCENT_SPEC = re.compile(rb"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_NUMBERS = re.compile(r"\d+")


class Guards:
    """The guards of one sandbox, sized by its :class:`Limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.formatter = SafeFormatter(self)

    # Attribute access -----------------------------------------------------------------

    def getattr(self, obj: Any, name: str, default: Any = _MISSING) -> Any:
        """Read ``obj.name`` if the allowlist permits it; AttributeError if it is missing."""
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name[:1] == "_":
            return self._private_getattr(obj, name, default)
        if name in FORBIDDEN_ATTRIBUTES:
            raise SecurityViolation(f"access to the attribute {name!r} is not allowed")
        if type(obj) is super and _super_of_script(obj):
            return getattr(obj, name)
        if not is_readable(obj):
            kind = obj.__name__ if isinstance(obj, type) else type(obj).__name__
            raise SecurityViolation(f"attributes of {kind} objects are not accessible from scripts")
        if name in GUARDED_ATTRIBUTES and isinstance(obj, str | bytes | bytearray | type):
            guarded = self._string_method(obj, name)
            if guarded is not None:
                return guarded
        if default is _MISSING:
            return getattr(obj, name)
        return getattr(obj, name, default)

    def _private_getattr(self, obj: Any, name: str, default: Any) -> Any:
        if name in READABLE_DUNDERS:
            value = getattr(obj, name, None)
            if value is None or isinstance(value, str):
                return value
        elif type(obj) is super and _super_of_script(obj):
            if name in SCRIPT_DUNDERS or is_private_name(name):
                return getattr(obj, name)
        elif is_private_name(name) and is_writable(obj) and not isinstance(obj, _PLAIN):
            return getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        raise SecurityViolation(f"access to the private attribute {name!r} is not allowed")

    def hasattr(self, obj: Any, name: str) -> bool:
        try:
            self.getattr(obj, name)
        except AttributeError:
            return False
        return True

    def write(self, obj: Any) -> Any:
        """Let a script change its own objects and plain containers, nothing else."""
        if is_writable(obj):
            return obj
        kind = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        raise SecurityViolation(f"{kind} objects cannot be modified from scripts")

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        private = type(name) is str and is_private_name(name)
        if (
            type(name) is not str
            or (name[:1] == "_" and not private)
            or name in FORBIDDEN_ATTRIBUTES
        ):
            raise SecurityViolation(f"setting the attribute {name!r} is not allowed")
        setattr(self.write(obj), name, value)

    def delattr(self, obj: Any, name: str) -> None:
        if type(name) is not str or name[:1] == "_":
            raise SecurityViolation(f"deleting the attribute {name!r} is not allowed")
        delattr(self.write(obj), name)

    # Size-guarded operators -----------------------------------------------------------

    def method(self, obj: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """``obj.name(*args)`` for the guarded names, checked in one call."""
        kind = type(obj)
        if kind is str or kind is bytes or kind is bytearray:
            if name == "join" and len(args) == 1 and not kwargs:
                return self.join(obj, args[0])
            if name == "replace" and len(args) >= 2:
                self._check_replace(obj, args[0], args[1])
            elif name in ("format", "format_map"):
                return self.getattr(obj, name)(*args, **kwargs)
            elif name != "replace":
                self._check_width(obj, name, args, kwargs)
            return getattr(obj, name)(*args, **kwargs)
        return self.getattr(obj, name)(*args, **kwargs)

    def mul(self, a: Any, b: Any) -> Any:
        kind_a, kind_b = type(a), type(b)
        if kind_a is float or kind_b is float:
            return a * b
        self._check_mul(a, b)
        return a * b

    def power(self, a: Any, b: Any, modulo: Any = None) -> Any:
        if modulo is not None:
            return pow(a, b, modulo)
        self._check_pow(a, b)
        return a**b

    def lshift(self, a: Any, b: Any) -> Any:
        self._check_lshift(a, b)
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, str | bytes):
            self._check_percent_format(a, b)
        return a % b

    def inplace(self, op: str, a: Any, b: Any) -> Any:
        if op == "+=":
            if type(a) is not int and isinstance(a, _SEQUENCES):
                self._check_concat(a, b)
        elif op == "*=":
            self._check_mul(a, b)
        elif op == "**=":
            self._check_pow(a, b)
        elif op == "<<=":
            self._check_lshift(a, b)
        elif op == "%=" and isinstance(a, str | bytes):
            self._check_percent_format(a, b)
        return _INPLACE[op](a, b)

    def format_spec(self, value: Any, conversion: int, spec: str) -> str:
        if conversion == ord("r"):
            value = repr(value)
        elif conversion == ord("s"):
            value = str(value)
        elif conversion == ord("a"):
            value = ascii(value)
        self._check_spec(spec)
        return format(value, spec)

    def format_value(self, value: Any, spec: str = "") -> str:
        self._check_spec(spec)
        return format(value, spec)

    # Builtins with a size or shape to check -------------------------------------------

    def make_range(self, *args: int) -> Any:
        span = range(*args)
        try:
            small = len(span) <= self.limits.max_eager_range
        except OverflowError:
            small = False
        return span if small else LongRange(span)

    def make_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        if args and isinstance(args[0], int):
            self._check_items(args[0])
        return bytes(*args, **kwargs)

    def make_bytearray(self, *args: Any, **kwargs: Any) -> bytearray:
        if args and isinstance(args[0], int):
            self._check_items(args[0])
        return bytearray(*args, **kwargs)

    def iterate(self, source: Any, *sentinel: Any) -> Iterator[Any]:
        if sentinel:  # iter(callable, sentinel) can spin forever in C: make it tick
            return ticking(iter(source, *sentinel))
        return iter(source)

    def type_of(self, obj: Any, *rest: Any) -> type:
        if rest:
            raise SecurityViolation(
                "type() with three arguments is not allowed; use a class statement"
            )
        return type(obj)

    def join(self, separator: Any, items: Iterable[Any]) -> Any:
        parts = items if type(items) is list or type(items) is tuple else list(items)
        try:
            total = sum(map(len, parts)) + len(separator) * max(len(parts) - 1, 0)
        except TypeError:  # a part with no length: join itself will say what is wrong
            return separator.join(parts)
        self._check_items(total)
        return separator.join(parts)

    # Helpers ---------------------------------------------------------------------------

    def _check_concat(self, a: Any, b: Any) -> None:
        if isinstance(b, _SEQUENCES):
            self._check_items(len(a) + len(b))

    def _check_mul(self, a: Any, b: Any) -> None:
        if type(a) is int and type(b) is int:
            if a.bit_length() + b.bit_length() > self.limits.max_int_bits:
                raise LimitExceeded("integer size")
        elif isinstance(a, _SEQUENCES) and isinstance(b, int):
            self._check_items(len(a) * b)
        elif isinstance(b, _SEQUENCES) and isinstance(a, int):
            self._check_items(len(b) * a)

    def _check_pow(self, a: Any, b: Any) -> None:
        if isinstance(b, int) and b > 1 and hasattr(a, "numerator"):
            bits = max(int(a.numerator).bit_length(), int(a.denominator).bit_length())
            if bits > 1 and bits * b > self.limits.max_int_bits:
                raise LimitExceeded("integer size")

    def _check_lshift(self, a: Any, b: Any) -> None:
        if (
            isinstance(a, int)
            and isinstance(b, int)
            and a
            and a.bit_length() + b > self.limits.max_int_bits
        ):
            raise LimitExceeded("integer size")

    def _check_items(self, count: int) -> None:
        if count > self.limits.max_sequence_items:
            raise LimitExceeded(
                "sequence size",
                f"the result would hold {count:,} items (limit {self.limits.max_sequence_items:,})",
            )

    def _check_spec(self, spec: str) -> None:
        for number in _FORMAT_NUMBERS.findall(spec):
            if len(number) > 7 or int(number) > self.limits.max_format_width:
                raise LimitExceeded(
                    "format width",
                    f"format width {number} exceeds {self.limits.max_format_width:,}",
                )

    def _check_percent_format(self, template: str | bytes, args: Any) -> None:
        raw = template.encode("utf-8", "surrogatepass") if isinstance(template, str) else template
        stars = 0
        for width, precision in _PERCENT_SPEC.findall(raw):
            for number in (width, precision):
                if number == b"*":
                    stars += 1
                elif number and (len(number) > 7 or int(number) > self.limits.max_format_width):
                    raise LimitExceeded("format width")
        if stars:
            values = args if isinstance(args, tuple) else (args,)
            if any(isinstance(v, int) and abs(v) > self.limits.max_format_width for v in values):
                raise LimitExceeded("format width")

    def _string_method(self, obj: Any, name: str) -> Callable[..., Any] | None:
        if name in ("format", "format_map"):
            if obj is not str and not isinstance(obj, str):
                return None
            if isinstance(obj, type):
                return getattr(self.formatter, name)  # type: ignore[no-any-return]
            return functools.partial(getattr(self.formatter, name), obj)
        if isinstance(obj, type):
            return None
        return functools.partial(self.method, obj, name)

    def _check_replace(self, text: Any, old: Any, new: Any) -> None:
        if isinstance(old, str | bytes) and isinstance(new, str | bytes) and len(new) > len(old):
            pieces = len(text) // max(len(old), 1) + 1
            self._check_items(len(text) + pieces * (len(new) - len(old)))

    def _check_width(
        self, text: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        width = args[0] if args else kwargs.get("width", kwargs.get("tabsize", 8))
        if not isinstance(width, int):
            return
        if name == "expandtabs":
            tab = "\t" if isinstance(text, str) else b"\t"
            self._check_items(len(text) + width * text.count(tab))
        else:
            self._check_items(width)


class SafeFormatter(string.Formatter):
    """``str.format`` whose field paths go through the attribute guard."""

    def __init__(self, guards: Guards) -> None:
        self._guards = guards

    def format(self, template: str, /, *args: Any, **kwargs: Any) -> str:
        return self.vformat(template, args, kwargs)

    def format_map(self, template: str, mapping: Any, /) -> str:
        return self.vformat(template, (), mapping)

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        first, rest = _formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._guards.getattr(obj, key) if is_attribute else operator.getitem(obj, key)
        return obj, first

    def format_field(self, value: Any, format_spec: str) -> Any:
        self._guards._check_spec(format_spec)
        return format(value, format_spec)


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

    def __contains__(self, value: object) -> bool:
        return value in self._span

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
        return self._span.count(value)

    def index(self, value: int) -> int:
        return self._span.index(value)


def operator_guards(guards: Guards) -> dict[str, Callable[..., Any]]:
    """The hot guards as closures with a fast path first: they run inside loops."""
    max_bits = guards.limits.max_int_bits
    writable = WRITABLE_TYPES
    slow_mul, slow_mod, slow_write = guards.mul, guards.mod, guards.write

    def mul(a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:
            if a.bit_length() + b.bit_length() > max_bits:
                raise LimitExceeded("integer size")
            return a * b
        return slow_mul(a, b)

    def mod(a: Any, b: Any) -> Any:
        if type(a) is int:
            return a % b
        return slow_mod(a, b)

    def write(obj: Any) -> Any:
        if type(obj) in writable:
            return obj
        return slow_write(obj)

    return {"_mul_": mul, "_mod_": mod, "_write_": write}


def ticking(iterator: Iterator[Any]) -> Iterator[Any]:
    """Re-yield ``iterator`` from Python code, so C consumers of it can be interrupted.

    An explicit loop, not ``yield from``: its backward jump is where the interpreter
    checks for pending interrupts (and hands over the GIL); ``yield from`` never does.
    """
    for item in iterator:  # noqa: UP028 - see the docstring
        yield item


def reraise_limits() -> None:
    """Called first in every except block: a caught limit or stop goes on propagating."""
    error = sys.exc_info()[1]
    if isinstance(error, RecursionError):
        raise LimitExceeded("recursion depth", "maximum recursion depth exceeded") from None
    if isinstance(error, MemoryError):
        raise LimitExceeded("memory", "the script ran out of memory") from None


def script_class_factory() -> Any:
    """The metaclass hook RestrictedPython routes every class statement through."""
    return ScriptClassFactory()


class ScriptClassFactory:
    """Builds script classes with the metaclass their bases imply, and remembers them."""

    def __prepare__(self, name: str, bases: tuple[type, ...], **kwargs: Any) -> Any:
        meta = _metaclass_for(bases)
        return meta.__prepare__(name, bases, **kwargs)

    def __call__(self, name: str, bases: tuple[type, ...], namespace: Any, **kwargs: Any) -> type:
        meta = _metaclass_for(bases)
        if "__exit__" in namespace:
            namespace["__exit__"] = _unswallowing_exit(namespace["__exit__"])
        cls: type = meta(name, bases, namespace, **kwargs)
        SCRIPT_CLASSES.add(cls)
        return cls


def _unswallowing_exit(exit_method: Callable[..., Any]) -> Callable[..., Any]:
    """A script's ``__exit__`` may suppress its own errors, never a limit or a stop."""

    def __exit__(self: Any, kind: Any, error: Any, traceback: Any) -> Any:
        suppress = exit_method(self, kind, error, traceback)
        return suppress and not isinstance(error, SandboxStop)

    return __exit__


def _metaclass_for(bases: tuple[type, ...]) -> type:
    winner: type = type
    for base in bases:
        if not isinstance(base, type):
            raise SecurityViolation("class bases must be classes")
        if issubclass(base, type):
            raise SecurityViolation("metaclasses cannot be defined in scripts")
        meta = type(base)
        if issubclass(meta, winner):
            winner = meta
    if winner is not type and winner.__module__ not in ("enum", "abc"):
        raise SecurityViolation(
            f"classes with metaclass {winner.__name__} cannot be defined in scripts"
        )
    return winner


def _super_of_script(obj: super) -> bool:
    this_class = obj.__thisclass__  # type: ignore[attr-defined]
    return isinstance(this_class, type) and is_script_class(this_class)


def _formatter_field_name_split(field_name: str) -> tuple[Any, Iterator[tuple[bool, Any]]]:
    return _string.formatter_field_name_split(field_name)  # type: ignore[no-any-return]


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
    "Guards",
    "LongRange",
    "SafeFormatter",
    "reraise_limits",
    "script_class_factory",
    "ticking",
]
