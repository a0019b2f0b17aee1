"""The standard modules scripts may import, each as a curated facade.

Every member is listed by name. Left out on purpose: anything that returns a
module, touches files, processes, the network or the clock's sleep; anything that
evaluates strings as code (``typing.get_type_hints`` is the sandbox's own, which reads an
annotation's text without running it: ``_type_hints.py``); anything that reads
attributes by name behind the guard's back (``functools.update_wrapper`` with custom
names; ``operator.attrgetter`` and ``string.Formatter`` are the sandbox's own, reading
through the guard); ``collections.UserString`` and ``uuid.uuid1`` (host identity).
``re.purge`` clears nothing (the real one clears the cache every session shares).
``typing`` and ``copy`` are the sandbox's own (``_typing.py``, ``_copy.py``), and class
decorators that write to a class (``dataclass``, ``total_ordering``, ``wraps``) only ever
write to the script's.
"""

from __future__ import annotations

import base64
import bisect
import collections
import contextlib
import copy
import dataclasses
import datetime
import decimal
import difflib
import enum
import fractions
import functools
import hashlib
import heapq
import itertools
import json
import math
import random
import statistics
import string
import textwrap
import types
import unicodedata
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import regex

from ..contract._exceptions import ToolError
from ..sandbox._builtins import check_count, clinic_arguments, guarded_type, no_keywords
from ..sandbox._errors import LimitExceeded, SecurityViolation, recursion_safe
from ..sandbox._guards import (
    LRU_CACHE_WRAPPER,
    OPAQUE_CLASSES,
    Guards,
    OpaqueType,
    ScriptFormatter,
)
from ..sandbox._ownership import (
    DUNDER_DATA,
    SCRIPT_CLASSES,
    SHOWN,
    FixedMethods,
    exact_value,
    is_script_class,
    is_script_function,
    register_base,
    register_host_method,
    register_readable,
)
from ..sandbox._plain_arguments import (
    checked_bound,
    plain_arguments,
    plain_values,
    register_method_roles,
)
from ..sandbox._script_classes import ScriptEnumType, functional_enum
from ..sandbox._sealed import seal
from ..sandbox._work_bounds import (
    MAX_DIVISION_WORK,
    check_gcd,
    exact_index,
    interruptible,
    reduce,
    ticking,
    ticking_factory,
    with_interruptible_callbacks,
)
from . import _copy as script_copy
from . import _dataclasses as script_dataclasses
from . import _fractions as script_fractions
from . import _method_roles as method_roles
from . import _recorded as recorded
from ._asyncio import asyncio_facade
from ._dispatch import DispatchingMethod, SingleDispatch, SingleDispatchMethod, singledispatch
from ._everyday import (
    Context,
    getcontext,
    localcontext,
    session_everyday_facades,
    setcontext,
    static_everyday_facades,
)
from ._everyday import (
    Decimal as ScriptDecimal,
)
from ._facade import Facade, checked_class, pick, plain_functions
from ._graphlib import GRAPHLIB_MEMBERS, SORTER_METHODS, TopologicalSorter
from ._logging import logging_facade
from ._names import DEFAULT_MODULES
from ._regex import fnmatch_members, re_members
from ._shake import shake_128, shake_256
from ._system import STATIC_SYSTEM_FACADES, session_system_facades
from ._traceback import traceback_facade
from ._type_hints import get_type_hints
from ._typing import CONSTRUCTORS, typing_members
from ._warnings import warnings_facade

MAX_FACTORIAL = 20_000
MAX_RANDOM_BITS = 1 << 24


class Counter(FixedMethods, collections.Counter[Any]):
    """``collections.Counter`` whose ``elements()`` can be interrupted, and whose arithmetic
    makes counters of this class (CPython's makes ``collections.Counter``, which scripts do
    not hold: ``(a - b).get(k)`` would be refused)."""

    def elements(self) -> Iterator[Any]:
        return ticking(super().elements())

    def __add__(self, other: Any) -> Any:
        return _ours(super().__add__(other))

    def __sub__(self, other: Any) -> Any:
        return _ours(super().__sub__(other))

    def __or__(self, other: Any) -> Any:
        return _ours(super().__or__(other))

    def __and__(self, other: Any) -> Any:
        return _ours(super().__and__(other))

    def __pos__(self) -> Any:
        return _ours(super().__pos__())

    def __neg__(self) -> Any:
        return _ours(super().__neg__())


class ChainMap(FixedMethods, collections.ChainMap[Any, Any]):
    """``collections.ChainMap`` whose methods are never replaced on an instance: its
    mapping code calls them on ``self`` (``==`` calls ``self.items``)."""


def _ours(result: Any) -> Any:
    return result if result is NotImplemented else Counter(result)


class ScriptRandom(random.Random):
    """``random.Random`` whose bit and byte requests are bounded, seeded (without a seed
    given) from taped entropy, so a replayed run draws what it drew before."""

    def seed(self, a: Any = None, version: int = 2) -> None:
        a, version = plain_values("seed", a, version)  # an int's abs() is taken in C
        super().seed(recorded.seed_value() if a is None else a, version)

    def getrandbits(self, *args: Any, **keywords: Any) -> int:
        no_keywords("Random.getrandbits", keywords)  # C's method takes none
        if len(args) != 1:
            given = f"({len(args)} given)"
            raise TypeError(f"Random.getrandbits() takes exactly one argument {given}")
        k = args[0]
        # past a C int, CPython's own OverflowError says no before anything is drawn
        if type(k) is int and MAX_RANDOM_BITS < k <= C_INT_MAX:
            raise LimitExceeded("integer size", f"getrandbits({k:,}) asks for too many bits")
        return super().getrandbits(k)

    def randbytes(self, n: int) -> bytes:
        (n,) = plain_values("randbytes", n)  # its Python code multiplies n
        if type(n) is int and MAX_RANDOM_BITS // 8 < n <= C_INT_MAX // 8:
            raise LimitExceeded("sequence size", f"randbytes({n:,}) asks for too many bytes")
        return super().randbytes(n)

    def __repr__(self) -> str:
        return "<random.Random object>"


C_INT_MAX = 2**31 - 1


def _copied_random(generator: ScriptRandom) -> ScriptRandom:
    """A generator in the same state, as CPython's copy makes one (drawing from the copy
    leaves the original where it was)."""
    made = ScriptRandom(0)
    made.setstate(generator.getstate())
    return made


script_copy.register_copies(ScriptRandom, _copied_random)


class NormalDist(statistics.NormalDist):
    """``statistics.NormalDist`` whose arithmetic never sums the script's objects in host
    code: an operand of the script's answers NotImplemented (Python then asks the operand
    itself), and every result is of this class again."""

    __slots__ = ()


def _normal_operator(name: str) -> Callable[..., Any]:
    method = getattr(statistics.NormalDist, name)

    def operate(self: NormalDist, *other: Any) -> Any:
        other = tuple(exact_value(value) for value in other)
        if any(is_script_class(type(value)) for value in other):
            return NotImplemented
        made = method(self, *other)
        if type(made) is statistics.NormalDist:  # the base class's result, as this class
            return NormalDist(made.mean, made.stdev)
        return made

    operate.__name__ = operate.__qualname__ = name
    return operate


for _operator in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "pos", "neg"):
    setattr(NormalDist, f"__{_operator}__", _normal_operator(f"__{_operator}__"))

# Random's Python methods and what they hold: a sequence's items are only picked or
# moved (a deck of the script's cards is fine); every other parameter is a number they
# compute with, plain only (the attribute guard and the facade check them).
for _name, _held in {"choice": "seq", "shuffle": "x", "sample": "population"}.items():
    register_method_roles(ScriptRandom, _name, held=(_held,))
register_method_roles(ScriptRandom, "choices", held=("population",))


def _namedtuple(
    typename: str,
    field_names: Any,
    *,
    rename: bool = False,
    defaults: Any = None,
    module: Any = None,
) -> type:
    module = "__main__" if module is None else module  # the script's class, not this module's
    make: Callable[..., type] = collections.namedtuple  # called with the script's values
    cls = make(typename, field_names, rename=rename, defaults=defaults, module=module)
    SCRIPT_CLASSES.add(cls)
    return cls


def _formatter_maker(guards: Guards) -> Callable[..., ScriptFormatter]:
    def Formatter(*args: Any, **keywords: Any) -> ScriptFormatter:  # string's own name
        if args or keywords:
            raise TypeError("Formatter() takes no arguments")
        return ScriptFormatter(guards)

    return Formatter


def _tee(*args: Any, **keywords: Any) -> tuple[Iterator[Any], ...]:
    """``itertools.tee``, each copy ticking (its arguments refused in itertools' words)."""
    no_keywords("itertools.tee", keywords)
    check_count("tee", args, 1, 2)
    return tuple(ticking(branch) for branch in itertools.tee(*args))


ENUM_BASES = ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum")


# What type() shows for an enum class, and enum.EnumType (EnumMeta) as scripts hold it: its
# name and isinstance, nothing to build with (EnumType's own call would make a class).
ENUM_TYPE = OpaqueType(enum.EnumType, "EnumType", "enum")
SHOWN[enum.EnumType] = SHOWN[ScriptEnumType] = ENUM_TYPE


def _iterator_class(
    kind: type,
    *,
    positions: tuple[int, ...] = (),
    names: tuple[str, ...] = (),
    **replaced: Any,
) -> type:
    """An itertools class as scripts hold it: its instances tick (``ticking``), and
    ``type()`` and ``isinstance`` answer for the class (the callbacks at ``positions`` or
    ``names`` enter Python on every call)."""
    make = with_interruptible_callbacks(kind, positions=positions, names=names)
    stand_in = guarded_type(kind, ticking_factory(make), **replaced)
    SHOWN[kind] = stand_in
    return stand_in


def _enum_base(base: type) -> type:
    """An enum base as scripts hold it: a base for class statements, and its functional
    form (``Enum('Color', 'RED GREEN')``) making the class that statement would make,
    through the running session's class builder (EnumType's own would skip its checks)."""

    def construct(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 or kwargs:
            return functional_enum(base, *args, **kwargs)
        return base(*args)

    stand_in = seal(guarded_type(base, construct))
    SHOWN[base] = stand_in  # what a script class's __bases__ and __mro__ show for it
    return stand_in


def _unique(enumeration: Any) -> Any:
    """``enum.unique`` reading the class's member table and each member's own name: the
    real one reads ``member.name``, which a script's enum may define as its own property."""
    if not isinstance(enumeration, enum.EnumType):
        raise TypeError(f"unique() takes an enum class, not {type(enumeration).__name__!r}")
    duplicates = [
        (alias, vars(member)["_name_"])
        for alias, member in vars(enumeration)["_member_map_"].items()
        if alias != vars(member)["_name_"]
    ]
    if duplicates:
        details = ", ".join(f"{alias} -> {name}" for alias, name in duplicates)
        raise ValueError(f"duplicate values found in {enumeration!r}: {details}")
    return enumeration


def _on_script_classes(decorate: Callable[..., Any], name: str = "") -> Callable[..., Any]:
    """A class decorator that writes to the class: only ever onto the script's own."""
    name = name or decorate.__name__

    def guarded(cls: Any) -> Any:
        if cls not in SCRIPT_CLASSES:  # a host class is every session's
            raise SecurityViolation(f"{name} only decorates the script's classes")
        return decorate(cls)

    return guarded


def _wraps(wrapped: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    copy_names = functools.wraps(
        wrapped, assigned=("__name__", "__qualname__", "__doc__"), updated=()
    )

    def decorate(wrapper: Callable[..., Any]) -> Callable[..., Any]:
        if not is_script_function(wrapper):  # it sets names on the wrapper: the script's own
            raise SecurityViolation("functools.wraps only decorates the script's functions")
        return copy_names(wrapper)

    return decorate


def _cmp_to_key(*args: Any, **keywords: Any) -> Any:
    """``functools.cmp_to_key``, whose comparison C calls back per item: made interruptible."""
    mycmp = clinic_arguments("cmp_to_key", ("mycmp",), 1, args, keywords)["mycmp"]
    return functools.cmp_to_key(interruptible(mycmp))


def _bounded(limit: int, what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any, **keywords: Any) -> Any:
        no_keywords(f"math.{fn.__name__}", keywords)
        args = tuple(map(exact_index, args))  # what fn takes: one __index__ call, checked
        if any(type(a) is int and a > limit for a in args):
            raise LimitExceeded(what, f"{fn.__name__}() arguments above {limit:,} are not allowed")
        return fn(*args)

    guarded.__name__ = fn.__name__
    return guarded


def _sized_gcd(function: Callable[..., int]) -> Callable[..., int]:
    def sized(*numbers: Any, **keywords: Any) -> int:
        no_keywords(f"math.{function.__name__}", keywords)
        numbers = tuple(map(exact_index, numbers))
        check_gcd(*numbers)
        return function(*numbers)

    return sized


def _sized_isqrt(*args: Any, **keywords: Any) -> int:
    # Newton steps of long divisions: 4 s in one C call on a 3.8-million-bit integer
    no_keywords("math.isqrt", keywords)
    if len(args) != 1:
        raise TypeError(f"math.isqrt() takes exactly one argument ({len(args)} given)")
    n = exact_index(args[0])
    if isinstance(n, int) and int.bit_length(n) ** 2 > 2 * MAX_DIVISION_WORK:
        raise LimitExceeded("integer size", "isqrt of an integer this large takes too long")
    return math.isqrt(n)


def _prod(*args: Any, **keywords: Any) -> Any:
    if len(args) + len(keywords) > 2:  # prod(iterable, /, *, start=1), in math's words
        raise TypeError(f"prod() takes at most 2 arguments ({len(args) + len(keywords)} given)")
    if len(args) != 1:
        raise TypeError(f"prod() takes exactly 1 positional argument ({len(args)} given)")
    for name in keywords:
        if name != "start":
            raise TypeError(f"{name!r} is an invalid keyword argument for prod()")
    iterable, total = args[0], keywords.get("start", 1)
    for item in iterable:
        total *= item
        if isinstance(total, int) and int.bit_length(total) > 4_000_000:
            raise LimitExceeded("integer size")
    return total


# The digests scripts may make: the fixed-length ones as they are, the extendable-output
# shakes through _shake (a digest as long as asked for would be one C call).
HASHES = "md5 sha1 sha224 sha256 sha384 sha512 sha3_224 sha3_256 sha3_384 sha3_512 blake2b blake2s"
_SHAKES = {"shake_128": shake_128, "shake_256": shake_256}
_HASH_NAMES = frozenset([*HASHES.split(), *_SHAKES])


def _hash_new(name: str, data: bytes = b"", **options: Any) -> Any:
    """``hashlib.new``, for the algorithms the facade offers, by any name OpenSSL gives
    them (``sha-256``, ``SHA512``, ``blake2b512``)."""
    if type(name) is not str:
        raise TypeError("name must be a string")
    canonical = name.lower()
    if canonical not in _HASH_NAMES:
        with contextlib.suppress(ValueError):
            canonical = hashlib.new(name).name  # an empty digest: OpenSSL's own alias table
    if canonical not in _HASH_NAMES:
        raise ValueError(f"unsupported hash type {name}")
    made = _SHAKES.get(canonical) or getattr(hashlib, canonical)
    return made(data, **options)


# Iterations times output blocks of one pbkdf2_hmac: about a second of C work no limit
# can interrupt (OWASP's 600,000 rounds of SHA-256 fit).
MAX_PBKDF2_ROUNDS = 2_000_000


def _pbkdf2_hmac(
    hash_name: Any, password: Any, salt: Any, iterations: Any, dklen: Any = None
) -> bytes:
    """``hashlib.pbkdf2_hmac``, its work bounded before the one C call that does it all."""
    # exact builtins: OpenSSL's digests are looked up by name in a cache of the process
    hash_name, password, salt = exact_value(hash_name), exact_value(password), exact_value(salt)
    rounds, length = exact_index(iterations), exact_index(dklen)
    try:
        block = hashlib.new(hash_name).digest_size
    except (TypeError, ValueError):  # CPython's own error, from the call below
        block = 0
    if type(rounds) is int and block and rounds > 0:
        blocks = 1 if type(length) is not int or length <= block else -(-length // block)
        if rounds * blocks > MAX_PBKDF2_ROUNDS:
            work = f"{rounds:,} iterations over {blocks:,} blocks"
            raise LimitExceeded("work", f"pbkdf2_hmac of {work} takes too long")
    return hashlib.pbkdf2_hmac(hash_name, password, salt, rounds, length)


# hashlib's members but its two sets, which each session has copies of
_HASH_MEMBERS = {
    **pick(hashlib, HASHES),
    **_SHAKES,
    "new": _hash_new,
    "pbkdf2_hmac": _pbkdf2_hmac,
}


MAX_JSON_INDENT = 1_000
NORMALIZE_GROWTH = 18  # the most one character expands under NFKD (U+FDFA)


_JSON_HOOKS = (
    "default",
    "object_hook",
    "object_pairs_hook",
    "parse_float",
    "parse_int",
    "parse_constant",
)


# json's own functions, for a RecursionError on deeply nested data to be the script's to
# catch (as CPython lets it): what an encoding keeps (the markers dict, the C encoder) is
# made per call, and the shared default decoder's C scanner clears its memo however a
# scan ends, so an error raised halfway leaves nothing of the host's behind.
for _json_function in (
    json.dumps,
    json.loads,
    json.JSONEncoder.encode,
    json.JSONEncoder.iterencode,
    vars(json.encoder)["_make_iterencode"],  # the encoder iterencode builds for an indent
    json.JSONDecoder.decode,
    json.JSONDecoder.raw_decode,
):
    recursion_safe(_json_function)


@recursion_safe  # sets only its own keyword arguments before json's
def _json_loads(s: Any, **options: Any) -> Any:
    # the C scanner calls each hook per object or number: a C hook would run unstoppably
    for name in _JSON_HOOKS:
        if name in options:
            options[name] = interruptible(options[name])
    return json.loads(exact_value(s), **options)  # json's Python code calls s.startswith


@recursion_safe  # sets only its own keyword arguments before json's
def _json_dumps(obj: Any, *, cls: Any = None, **options: Any) -> str:
    if cls is not None:  # the script's encoder class: made and asked as json.dumps does
        if not (isinstance(cls, type) and issubclass(cls, JSONEncoder)):
            raise TypeError("json.dumps(cls=...) takes a subclass of json.JSONEncoder in scripts")
        return cls(**options).encode(obj)
    if "default" in options:  # called per value JSON cannot encode, from C
        options["default"] = interruptible(options["default"])
    indent = exact_index(options.get("indent"))
    if indent is not None:
        options["indent"] = indent
    if (isinstance(indent, int) and indent > MAX_JSON_INDENT) or (
        isinstance(indent, str) and len(indent) > MAX_JSON_INDENT
    ):  # an indent repeats at every nesting level of every line
        raise LimitExceeded("json indent", f"json.dumps(indent=...) above {MAX_JSON_INDENT:,}")
    return json.dumps(obj, **options)


_DECODER_OPTIONS = (
    *("object_hook", "parse_float", "parse_int", "parse_constant", "strict"),
    "object_pairs_hook",
)


def _json_facade(guards: Guards) -> Facade:
    """``json`` with ``dump`` and ``load``, which write to and read from the script's own
    file object (``sys.stdout``, an ``io.StringIO``, its own class): its ``write`` and
    ``read`` are read through the guards and called as the script would call them."""

    @recursion_safe  # encodes, then hands the text to the script's own write
    def dump(obj: Any, fp: Any, **options: Any) -> None:
        # json.dump writes its chunks as it encodes them: the same text, written at once
        guards.getattr(fp, "write")(_json_dumps(obj, **options))

    @recursion_safe  # reads through the script's own read, then decodes
    def load(fp: Any, **options: Any) -> Any:
        return _json_loads(guards.getattr(fp, "read")(), **options)

    return Facade(
        "json",
        {
            **pick(json, "JSONDecodeError"),
            "loads": _json_loads,
            "dumps": _json_dumps,
            "load": load,
            "dump": dump,
            "JSONEncoder": JSONEncoder,
            "JSONDecoder": JSONDecoder,
        },
    )


class JSONEncoder(FixedMethods):
    """``json.JSONEncoder`` as scripts use it: a base whose ``default`` a subclass overrides.

    It keeps its options as given and encodes through the facade's ``dumps`` (the same
    bounds and interruptible callbacks), calling ``default`` for what JSON cannot hold.
    Its methods act only on its own instances (the script's subclasses' included).
    """

    item_separator = ", "
    key_separator = ": "
    _replaceable = ("default",)  # JSONEncoder(default=f) sets it on the instance

    def __init__(
        self,
        *,
        skipkeys: bool = False,
        ensure_ascii: bool = True,
        check_circular: bool = True,
        allow_nan: bool = True,
        sort_keys: bool = False,
        indent: Any = None,
        separators: Any = None,
        default: Any = None,
    ) -> None:
        self.skipkeys, self.ensure_ascii = skipkeys, ensure_ascii
        self.check_circular, self.allow_nan = check_circular, allow_nan
        self.sort_keys, self.indent = sort_keys, indent
        if separators is not None:
            self.item_separator, self.key_separator = separators
        elif indent is not None:
            self.item_separator = ","
        if default is not None:
            self.default = default  # type: ignore[method-assign]

    def default(self, o: Any) -> Any:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    @recursion_safe  # reads its own options
    def encode(self, o: Any) -> str:
        if not isinstance(self, JSONEncoder):  # JSONEncoder.encode(host_object, ...)
            raise TypeError("JSONEncoder.encode acts only on JSONEncoder objects")
        return _json_dumps(
            o,
            default=self.default,
            skipkeys=self.skipkeys,
            ensure_ascii=self.ensure_ascii,
            check_circular=self.check_circular,
            allow_nan=self.allow_nan,
            sort_keys=self.sort_keys,
            indent=self.indent,
            separators=(self.item_separator, self.key_separator),
        )

    def iterencode(self, o: Any) -> Any:
        return iter([self.encode(o)])


class JSONDecoder:
    """``json.JSONDecoder`` as scripts use it: ``decode``, and ``raw_decode`` to read one
    value off the front of a text; a base whose subclass hands its own ``object_hook`` to
    ``__init__``. The hooks it was given are kept as given and handed, interruptible, to a
    real decoder made with it (whose C scanner takes them at once, as CPython's does:
    setting one later changes nothing). The real decoder is held in a slot read and written
    by the slot's own descriptor, never by a name a script's subclass could define again.
    """

    __slots__ = ("_real", *_DECODER_OPTIONS)

    def __init__(
        self,
        *,
        object_hook: Any = None,
        parse_float: Any = None,
        parse_int: Any = None,
        parse_constant: Any = None,
        strict: bool = True,
        object_pairs_hook: Any = None,
    ) -> None:
        if not isinstance(self, JSONDecoder):  # JSONDecoder.__init__(another_object)
            raise TypeError("JSONDecoder.__init__ acts only on JSONDecoder objects")
        given = {
            "object_hook": object_hook,
            "parse_float": parse_float,
            "parse_int": parse_int,
            "parse_constant": parse_constant,
            "strict": bool(strict),  # a plain flag for json's Python code
            "object_pairs_hook": object_pairs_hook,
        }
        # written through the slots' own descriptors: on a script's subclass, no
        # __setattr__ or property of its own runs from here
        for name, value in given.items():
            _DECODER_SLOTS[name].__set__(self, value)
        hooks = {name: interruptible(value) for name, value in given.items() if name != "strict"}
        _DECODER_SLOTS["_real"].__set__(self, json.JSONDecoder(strict=given["strict"], **hooks))

    @recursion_safe  # the real decoder's, on this decoder's own
    def decode(self, s: Any) -> Any:
        return _real_decoder(self, "decode").decode(exact_value(s))

    @recursion_safe  # the real decoder's, on this decoder's own
    def raw_decode(self, s: Any, idx: Any = 0) -> tuple[Any, int]:
        return _real_decoder(self, "raw_decode").raw_decode(exact_value(s), exact_index(idx))


# the slots' own descriptors
_DECODER_SLOTS = {name: JSONDecoder.__dict__[name] for name in JSONDecoder.__slots__}


@recursion_safe  # reads only
def _real_decoder(decoder: Any, method: str) -> json.JSONDecoder:
    if not isinstance(decoder, JSONDecoder):  # JSONDecoder.decode(host_object, ...)
        raise TypeError(f"JSONDecoder.{method} acts only on JSONDecoder objects")
    try:
        return _DECODER_SLOTS["_real"].__get__(decoder, JSONDecoder)  # type: ignore[no-any-return]
    except AttributeError:  # a subclass that never called JSONDecoder.__init__: CPython's words
        name = type(decoder).__name__
        raise AttributeError(f"{name!r} object has no attribute 'scan_once'") from None


class TextWrapper(FixedMethods, textwrap.TextWrapper):
    """``textwrap.TextWrapper`` whose options and texts reach textwrap's Python code as
    exact builtins (a script's ``str`` subclass would have its methods called there), and
    whose methods are never replaced on an instance (``fill`` calls ``self.wrap``)."""

    def wrap(self, text: str) -> list[str]:  # fill wraps through it
        return super().wrap(exact_value(text))


def _normalize(form: str, text: str) -> str:
    if isinstance(text, str) and str.__len__(text) * NORMALIZE_GROWTH > MAX_NORMALIZE_CHARS:
        raise LimitExceeded("sequence size", "the text is too long to normalize in scripts")
    return unicodedata.normalize(form, text)  # type: ignore[arg-type]


MAX_NORMALIZE_CHARS = 10_000_000


def _static_facades() -> dict[str, Facade]:
    """Facades that hold no per-session state, built once."""
    everyday = static_everyday_facades()
    collections_abc = everyday["collections.abc"]
    return {
        **everyday,
        **STATIC_SYSTEM_FACADES,
        "math": Facade(
            "math",
            {
                **pick(
                    math,
                    "pi e tau inf nan ceil floor trunc fabs sqrt exp log log2 log10 log1p "
                    "expm1 sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh "
                    "degrees radians hypot dist isclose isfinite isinf isnan copysign "
                    "fmod frexp ldexp modf remainder fsum pow gamma lgamma erf erfc nextafter ulp "
                    "cbrt exp2",
                ),
                "factorial": _bounded(MAX_FACTORIAL, "integer size", math.factorial),
                "comb": _bounded(MAX_FACTORIAL * 10, "integer size", math.comb),
                "perm": _bounded(MAX_FACTORIAL * 10, "integer size", math.perm),
                "prod": _prod,
                # quadratic in C on large integers: sized before they run
                "gcd": _sized_gcd(math.gcd),
                "lcm": _sized_gcd(math.lcm),
                "isqrt": _sized_isqrt,
            },
        ),
        "datetime": Facade(
            "datetime",
            pick(datetime, "date datetime time timedelta timezone tzinfo MINYEAR MAXYEAR UTC"),
        ),
        "collections": Facade(
            "collections",
            {
                **pick(collections, "deque OrderedDict defaultdict"),
                "ChainMap": ChainMap,
                "abc": collections_abc,
                "Counter": Counter,
                "namedtuple": _namedtuple,
            },
        ),
        "itertools": Facade(
            "itertools",
            {
                **{
                    name: _iterator_class(getattr(itertools, name))
                    for name in [
                        "combinations",
                        "combinations_with_replacement",
                        "compress",
                        "count",
                        "cycle",
                        "islice",
                        "pairwise",
                        "permutations",
                        "product",
                        "repeat",
                        "zip_longest",
                    ]
                },
                # a C callback would run per skipped item inside one next(): it enters Python
                **{
                    name: _iterator_class(getattr(itertools, name), positions=(0,))
                    for name in ["dropwhile", "filterfalse", "starmap", "takewhile"]
                },
                "groupby": _iterator_class(itertools.groupby, positions=(1,), names=("key",)),
                "accumulate": _iterator_class(
                    itertools.accumulate, positions=(1,), names=("func",)
                ),
                "chain": _iterator_class(
                    itertools.chain,
                    from_iterable=staticmethod(
                        lambda iterables: ticking(itertools.chain.from_iterable(iterables))
                    ),
                ),
                "tee": _tee,
            },
        ),
        "functools": Facade(
            "functools",
            {
                **pick(
                    functools,
                    "partial cached_property WRAPPER_ASSIGNMENTS WRAPPER_UPDATES",
                ),
                # the script's function, whose names update_wrapper reads
                **plain_functions(functools, "cache lru_cache", held=("user_function", "maxsize")),
                # reduce and cmp_to_key call back per item from C: a Python loop, a Python call
                "reduce": reduce,
                "cmp_to_key": _cmp_to_key,
                "total_ordering": _on_script_classes(functools.total_ordering),
                "wraps": _wraps,
                "singledispatch": singledispatch,
                "singledispatchmethod": SingleDispatchMethod,
            },
        ),
        "statistics": Facade(
            "statistics",
            {
                # each iterates its data and does arithmetic on the items
                **plain_functions(
                    statistics,
                    "mean fmean geometric_mean harmonic_mean median median_low median_high "
                    "median_grouped mode multimode pstdev pvariance stdev variance quantiles "
                    "correlation covariance linear_regression",
                    drained=("data", "weights"),  # any iterable, as CPython's take
                ),
                "NormalDist": checked_class(statistics.NormalDist, made=NormalDist),
                "StatisticsError": statistics.StatisticsError,
            },
        ),
        "textwrap": Facade(
            "textwrap",
            {
                **plain_functions(textwrap, "wrap fill dedent indent shorten", held=("predicate",)),
                "TextWrapper": TextWrapper,
            },
        ),
        "decimal": Facade(
            "decimal",
            {
                **pick(
                    decimal,
                    "InvalidOperation DivisionByZero DecimalException ROUND_HALF_UP "
                    "ROUND_HALF_EVEN ROUND_HALF_DOWN ROUND_UP ROUND_DOWN ROUND_CEILING "
                    "ROUND_FLOOR ROUND_05UP Inexact Rounded Overflow Underflow Subnormal "
                    "Clamped FloatOperation DivisionUndefined DivisionImpossible "
                    "InvalidContext ConversionSyntax MAX_PREC MAX_EMAX MIN_EMIN MIN_ETINY",
                ),
                "Decimal": ScriptDecimal,
                "localcontext": localcontext,
                "getcontext": getcontext,
                "setcontext": setcontext,
                "Context": Context,
            },
        ),
        "fractions": Facade("fractions", {"Fraction": script_fractions.Fraction}),
        "graphlib": Facade("graphlib", GRAPHLIB_MEMBERS),
        "heapq": Facade(
            "heapq",
            {
                **pick(heapq, "heappush heappop heapify heapreplace heappushpop"),
                **{
                    name: with_interruptible_callbacks(getattr(heapq, name), names=("key",))
                    for name in ("nlargest", "nsmallest")
                },
                "merge": ticking_factory(with_interruptible_callbacks(heapq.merge, names=("key",))),
            },
        ),
        "bisect": Facade(
            "bisect",
            {
                name: with_interruptible_callbacks(getattr(bisect, name), names=("key",))
                for name in [
                    "bisect",
                    "bisect_left",
                    "bisect_right",
                    "insort",
                    "insort_left",
                    "insort_right",
                ]
            },
        ),
        "base64": Facade(
            "base64",
            {
                **plain_functions(
                    base64,
                    "b64encode b64decode urlsafe_b64encode urlsafe_b64decode standard_b64encode "
                    "standard_b64decode b32encode b32decode b32hexencode b32hexdecode b16encode "
                    "b16decode b85encode b85decode a85encode a85decode encodebytes decodebytes",
                ),
                **pick(base64, "MAXBINSIZE MAXLINESIZE"),
            },
        ),
        "uuid": Facade(
            "uuid",
            plain_functions(uuid, "uuid3 uuid5")
            | pick(uuid, "NAMESPACE_DNS NAMESPACE_URL NAMESPACE_OID NAMESPACE_X500")
            | {"UUID": checked_class(uuid.UUID)}
            | {"uuid4": recorded.uuid4},  # taped entropy
        ),
        "difflib": Facade(
            "difflib",
            {
                # lines and words are hashed and compared: plain ones only; the junk
                # predicates are the script's callbacks
                **plain_functions(
                    difflib,
                    "get_close_matches unified_diff context_diff ndiff",
                    drained=("possibilities",),  # a and b are sequences: indexed
                    held=("linejunk", "charjunk"),
                ),
                # the sequences are hashed and compared too; the junk predicates are called
                "SequenceMatcher": checked_class(difflib.SequenceMatcher, held=("isjunk",)),
                "Differ": checked_class(difflib.Differ, held=("linejunk", "charjunk")),
            },
        ),
        "unicodedata": Facade(
            "unicodedata",
            pick(
                unicodedata,
                "name lookup category numeric decimal digit east_asian_width "
                "combining mirrored bidirectional decomposition is_normalized unidata_version",
            )
            | {"normalize": _normalize},
        ),
        "copy": Facade(
            "copy",
            {"copy": script_copy.copy, "deepcopy": script_copy.deepcopy, "Error": copy.Error},
        ),
        # get_type_hints reads forms: its module imports _typing, never the other way round
        "typing": Facade("typing", {**typing_members(), "get_type_hints": get_type_hints}),
        "enum": Facade(
            "enum",
            {
                "auto": enum.auto,
                "unique": _unique,
                **{name: _enum_base(getattr(enum, name)) for name in ENUM_BASES},
                "EnumType": ENUM_TYPE,
                "EnumMeta": ENUM_TYPE,
            },
        ),
    }


WRAP_OPTIONS = (
    *("width", "initial_indent", "subsequent_indent", "expand_tabs", "replace_whitespace"),
    *("fix_sentence_endings", "break_long_words", "drop_whitespace", "break_on_hyphens"),
    *("tabsize", "max_lines", "placeholder"),
)


def _register_readable_types() -> None:
    register_readable(
        Facade,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
        decimal.Decimal,
        # named tuples of plain values that offered functions return
        type(decimal.Decimal(1).as_tuple()),  # DecimalTuple: sign, digits, exponent
        type(datetime.date(2024, 1, 1).isocalendar()),  # IsoCalendarDate: year, week, weekday
        type(statistics.linear_regression([1, 2], [1, 2])),  # LinearRegression: slope, intercept
        fractions.Fraction,
        script_fractions.Fraction,
        regex.RegexFlag,
        uuid.UUID,
        statistics.NormalDist,
        NormalDist,
        difflib.SequenceMatcher,
        difflib.Differ,
        difflib.Match,
        string.Template,
        ScriptRandom,
        dataclasses.Field,
        dataclasses.InitVar,  # InitVar[int]: the type it was subscripted with, nothing else
        type(hashlib.sha256()),
        type(hashlib.blake2b()),
        type(hashlib.blake2s()),
        type(iter(())),
        type(iter([])),
        type(iter({})),
        type(iter("")),
        types.GeneratorType,
        functools.partial,
        functools.cached_property,
        LRU_CACHE_WRAPPER,
        type(functools.lru_cache(None)(len).cache_info()),  # hits, misses, maxsize, currsize
        type(Counter().most_common),
        OpaqueType,
    )
    register_readable(ScriptFormatter, names=("format", "format_map", "vformat", "parse"))
    # an OrderedDict's views, as a dict's: iterated, compared, isdisjoint (never .mapping)
    register_readable(
        *(type(getattr(collections.OrderedDict(), view)()) for view in ("keys", "values", "items")),
        names=("isdisjoint",),
    )
    register_readable(SingleDispatch, names=("register", "dispatch", "registry"))
    register_readable(SingleDispatchMethod, names=("register",))
    register_readable(DispatchingMethod, names=())
    SHOWN[DispatchingMethod] = types.FunctionType  # what type() of CPython's shows
    register_readable(TopologicalSorter, names=SORTER_METHODS)
    register_readable(
        JSONEncoder,
        writable=True,
        names=(
            *("default", "encode", "iterencode", "indent", "sort_keys", "item_separator"),
            *("skipkeys", "ensure_ascii", "check_circular", "allow_nan", "key_separator"),
        ),
    )
    register_readable(JSONDecoder, names=("decode", "raw_decode", *_DECODER_OPTIONS))
    # a wrapper's options are its own, read and set as CPython's documentation shows (the
    # class's translation table and patterns, which every session shares, stay hidden)
    register_readable(TextWrapper, writable=True, names=("wrap", "fill", *WRAP_OPTIONS))
    method_roles.register(ChainMap, Counter)
    recorded.register_clock_methods()
    # strptime caches each format it is given for the process
    register_host_method(
        datetime.datetime, "strptime", lambda method, guards: plain_arguments(method, listed=False)
    )
    # called from a script, a flag class keeps the value as a pseudo-member for good
    OPAQUE_CLASSES.add(regex.RegexFlag)
    register_base(
        enum.Enum,
        enum.IntEnum,
        enum.Flag,
        enum.IntFlag,
        enum.StrEnum,
        collections.OrderedDict,
        collections.defaultdict,
        collections.deque,
        Counter,
        ToolError,
        json.JSONDecodeError,
        JSONEncoder,
        JSONDecoder,
        decimal.InvalidOperation,
        statistics.StatisticsError,
        dataclasses.FrozenInstanceError,
    )
    register_readable(
        collections.deque,
        collections.OrderedDict,
        collections.defaultdict,
        ChainMap,
        Counter,
        writable=True,
    )
    # d.__missing__(key): what d[key] does for a missing key (the factory, then the entry)
    DUNDER_DATA[collections.defaultdict] = frozenset({"__missing__"})


# What type() of these shows: the public name each stands for.
for _kind, _module, _name in (
    (ScriptFormatter, "string", "Formatter"),
    (JSONEncoder, "json.encoder", "JSONEncoder"),
    (JSONDecoder, "json.decoder", "JSONDecoder"),
    (TextWrapper, "textwrap", "TextWrapper"),
    (SingleDispatch, "functools", "singledispatch"),
    (SingleDispatchMethod, "functools", "singledispatchmethod"),
    (ScriptRandom, "random", "Random"),
    (Counter, "collections", "Counter"),
    (ChainMap, "collections", "ChainMap"),
):
    _kind.__module__, _kind.__qualname__ = _module, _name
# CPython's own errors name a class by __name__ ('Random' object has no attribute ...)
ScriptRandom.__name__ = "Random"
ScriptFormatter.__name__ = "Formatter"
SingleDispatchMethod.__name__ = "singledispatchmethod"

# typing.Deque() and friends make what collections' facade makes
CONSTRUCTORS.update(
    {
        collections.deque: collections.deque,
        collections.defaultdict: collections.defaultdict,
        collections.OrderedDict: collections.OrderedDict,
        collections.ChainMap: ChainMap,
        collections.Counter: Counter,
    }
)
STATIC_FACADES = _static_facades()
_register_readable_types()

# The facades built per session (random's state, the script's own print and loop).
SESSION_MODULES = frozenset(
    {
        *("re", "random", "string", "operator", "zlib", "pprint", "asyncio", "sys", "os"),
        *("struct", "types", "json", "contextlib", "ast", "gzip"),
        *("traceback", "dataclasses", "logging", "warnings", "fnmatch", "hashlib"),
    }
)
if frozenset(STATIC_FACADES) | SESSION_MODULES != DEFAULT_MODULES:  # the names list drifted
    raise ImportError("_names.DEFAULT_MODULES and the facades disagree")


# made once for the process (a session's facade holds them; the tests list them)
TEMPLATE = checked_class(string.Template)
CAPWORDS = plain_arguments(string.capwords)


def session_facades(
    guards: Guards, *, seed: int | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Facade]:
    """All facades for one sandbox: the shared ones plus those with per-session state.

    ``environ`` is what ``os.environ`` and ``os.getenv`` show: nothing unless given."""
    own_random = ScriptRandom(seed)
    facades = dict(STATIC_FACADES)
    facades["random"] = Facade(
        "random",
        {
            **{
                name: checked_bound(getattr(own_random, name))
                for name in [
                    "seed",
                    "random",
                    "uniform",
                    "randint",
                    "randrange",
                    "choice",
                    "choices",
                    "shuffle",
                    "sample",
                    "gauss",
                    "normalvariate",
                    "expovariate",
                    "triangular",
                    "betavariate",
                    "lognormvariate",
                    "vonmisesvariate",
                    "gammavariate",
                    "paretovariate",
                    "weibullvariate",
                    "getstate",
                    "setstate",
                    "getrandbits",
                    "randbytes",
                ]
            },
            "Random": ScriptRandom,
        },
    )
    facades["string"] = Facade(
        "string",
        {
            **pick(
                string,
                "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits "
                "punctuation printable whitespace",
            ),
            "Template": TEMPLATE,
            "capwords": CAPWORDS,
            "Formatter": _formatter_maker(guards),
        },
    )
    facades["re"] = Facade("re", re_members(guards))
    facades["json"] = _json_facade(guards)
    facades["fnmatch"] = Facade("fnmatch", fnmatch_members(facades["re"]))
    facades["dataclasses"] = Facade(
        "dataclasses",
        {
            **pick(
                dataclasses,
                "field is_dataclass FrozenInstanceError MISSING KW_ONLY InitVar",
            ),
            "fields": script_dataclasses.fields,
            "dataclass": script_dataclasses.dataclass,
            "asdict": script_dataclasses.asdict,
            "astuple": script_dataclasses.astuple,
            "replace": script_dataclasses.replace,
            "make_dataclass": script_dataclasses.make_dataclass_for(guards.new_class),
        },
    )
    # sets, as CPython's: each session's own copies
    algorithms = {
        name: set(_HASH_NAMES) for name in ("algorithms_guaranteed", "algorithms_available")
    }
    facades["hashlib"] = Facade("hashlib", {**_HASH_MEMBERS, **algorithms}, own=algorithms)
    facades.update(session_everyday_facades(guards))
    facades["asyncio"] = asyncio_facade(guards)
    facades.update(session_system_facades(guards, environ or {}))
    facades["traceback"] = traceback_facade(guards, facades["sys"].stderr)
    facades["logging"] = logging_facade(guards, facades["sys"].stderr)
    facades["warnings"] = warnings_facade(facades["sys"].stderr, facades["re"])
    guards.shown[Facade] = guards.opaque_type(Facade, "module")  # names it, builds nothing
    return facades


__all__ = ["DEFAULT_MODULES", "SESSION_MODULES", "STATIC_FACADES", "Counter", "session_facades"]
