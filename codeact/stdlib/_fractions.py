"""``fractions.Fraction`` for scripts: arithmetic sized before it runs.

The real class computes in Python with the host's integers: a product of two
fractions multiplies numerators and denominators, ``round(f, n)`` raises ten to the
``n``, and a string or ``Decimal`` with a large exponent becomes that power of ten.
None of that passes through the interpreter's integer guards, and each is one long
C call no limit can interrupt. Here every operation checks the size of what it will
make, and its result is this class again, so the next operation is checked as well.

The real class is Python code that reads ``numerator``, ``imag`` or ``__repr__`` of
what it is given: a script's object never reaches it (an operator or a comparison with
one answers NotImplemented, so Python asks the script's object itself; a constructor or
class method refuses it).
"""

from __future__ import annotations

import decimal
import fractions
import math
import numbers
import re
from collections.abc import Callable
from typing import Any

from ..sandbox._errors import LimitExceeded
from ..sandbox._ownership import exact_value, is_script_class
from ..sandbox._plain_arguments import plain_arguments, plain_values
from ..sandbox._work_bounds import exact_index

MAX_BITS = 4_000_000  # as an integer's limit: what one result may hold
_DIGIT_BITS = math.log2(10)
_EXPONENT = re.compile(r"[eE]\s*([-+]?\d+)")


def _bits(value: Any) -> int:
    """Bits of the larger part of a rational (an int's own), 0 for anything else."""
    if isinstance(value, int):
        return int.bit_length(value)
    if isinstance(value, fractions.Fraction):
        return max(int.bit_length(value.numerator), int.bit_length(value.denominator))
    return 0


def _refuse_above(bits: float, what: str) -> None:
    if bits > MAX_BITS:
        raise LimitExceeded("integer size", f"{what}: the result would exceed {MAX_BITS:,} bits")


def _check_source(value: Any) -> None:
    """A string or Decimal whose exponent would be written out as a power of ten."""
    if isinstance(value, str):
        found = _EXPONENT.search(value)
        if found is not None:
            digits = found.group(1).lstrip("+-")
            if len(digits) > 9 or int(digits) * _DIGIT_BITS > MAX_BITS:
                raise LimitExceeded("integer size", "a fraction this large")
    elif isinstance(value, decimal.Decimal) and value.is_finite():
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)
        _refuse_above(abs(exponent) * _DIGIT_BITS, "a fraction this large")


class Fraction(fractions.Fraction):
    """``fractions.Fraction``, every operation sized by what it makes."""

    __slots__ = ()

    def __new__(cls, numerator: Any = 0, denominator: Any = None) -> Any:
        numerator, denominator = plain_values("Fraction", numerator, denominator)
        _check_source(numerator)
        made = fractions.Fraction(numerator, denominator)
        return _own(made)

    @classmethod
    def from_decimal(cls, dec: Any) -> Any:
        (dec,) = plain_values("from_decimal", dec)
        _check_source(dec)
        return _own(fractions.Fraction.from_decimal(dec))

    @classmethod
    def from_float(cls, f: Any) -> Any:
        return _own(_from_float(f))

    def limit_denominator(self, max_denominator: int = 1_000_000) -> Any:
        return _own(_limit_denominator(self, max_denominator))

    def __round__(self, ndigits: Any = None) -> Any:
        if ndigits is None:
            return fractions.Fraction.__round__(self)
        places = exact_index(ndigits)
        if isinstance(places, int):  # ten to the ndigits, times the fraction
            _refuse_above(_bits(self) + abs(places) * _DIGIT_BITS, f"round(..., {places:,})")
        return _own(fractions.Fraction.__round__(self, places))

    def __reduce__(self) -> Any:
        return (Fraction, (str(self),))

    def __repr__(self) -> str:
        return f"Fraction({self.numerator}, {self.denominator})"


_from_float = plain_arguments(fractions.Fraction.from_float)
_limit_denominator = plain_arguments(fractions.Fraction.limit_denominator)


def _own(value: Any) -> Any:  # a Fraction of this class, or what the operation made
    """A result of the real class as this one (its parts already in lowest terms)."""
    if type(value) is not fractions.Fraction:
        return value
    made = fractions.Fraction.__new__(Fraction)
    object.__setattr__(made, "_numerator", value.numerator)
    object.__setattr__(made, "_denominator", value.denominator)
    return made


def _sum_of_sizes(a: Any, b: Any) -> float:
    return _bits(a) + _bits(b)


def _power_size(base: Any, exponent: Any) -> float:
    if isinstance(exponent, fractions.Fraction):
        if exponent.denominator != 1:
            return 0  # a float power: no large integers
        exponent = exponent.numerator
    if not isinstance(exponent, int):
        return 0
    return _bits(base) * abs(int.__index__(exponent))


def _sized(name: str, size: Callable[[Any, Any], float], reflected: bool) -> Callable[..., Any]:
    method = getattr(fractions.Fraction, name)

    def operate(self: Fraction, other: Any, *rest: Any) -> Any:
        other = exact_value(other)  # an int subclass's numerator is its own property
        if is_script_class(type(other)):  # the script's number answers for itself
            return NotImplemented
        if isinstance(other, numbers.Rational):
            base, exponent = (other, self) if reflected else (self, other)
            _refuse_above(size(base, exponent), "fraction arithmetic")
        result = method(self, other, *rest)
        if isinstance(result, tuple):  # divmod
            return tuple(_own(part) for part in result)
        return _own(result)

    operate.__name__ = operate.__qualname__ = name
    return operate


def _unary(name: str) -> Callable[[Fraction], Any]:
    method = getattr(fractions.Fraction, name)

    def operate(self: Fraction) -> Any:
        return _own(method(self))

    operate.__name__ = operate.__qualname__ = name
    return operate


def _compared(name: str) -> Callable[[Fraction, Any], Any]:
    method = getattr(fractions.Fraction, name)

    def compare(self: Fraction, other: Any) -> Any:
        other = exact_value(other)
        if is_script_class(type(other)):  # its numerator or imag would be read here
            return NotImplemented
        return method(self, other)

    compare.__name__ = compare.__qualname__ = name
    return compare


for _name in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Fraction, _name, _compared(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "divmod"):
    setattr(Fraction, f"__{_name}__", _sized(f"__{_name}__", _sum_of_sizes, False))
    setattr(Fraction, f"__r{_name}__", _sized(f"__r{_name}__", _sum_of_sizes, True))
Fraction.__pow__ = _sized("__pow__", _power_size, False)  # type: ignore[method-assign]
Fraction.__rpow__ = _sized("__rpow__", _power_size, True)  # type: ignore[method-assign]
for _name in ("__neg__", "__pos__", "__abs__"):
    setattr(
        Fraction, _name, (lambda m: lambda self: _own(m(self)))(getattr(fractions.Fraction, _name))
    )
Fraction.__module__ = "fractions"

__all__ = ["Fraction"]
