"""A crawl of everything a script can reach, failing on anything that would let it out.

From every name a script starts with (builtins, every member of every facade, a
bound tool, values the script itself makes), the crawl follows what a script can
follow: public attribute reads as the guards answer them, a handful of dunders a
script may try, every private name an object has, ``type(x)`` and the type of that,
what a class pattern would bind (CPython reads the subject itself, once the guard has
allowed the name), and items of containers. It fails on a module, frame, code
object, traceback, a class that builds classes, ``super`` itself, a function whose
host globals are readable, a mutable container that a host class holds, or a repr
that shows a heap address or the runtime's own module names.
"""

from __future__ import annotations

import collections
import contextlib
import decimal
import fractions
import pathlib
import re
import threading
import types
from collections import deque
from typing import Any

import pytest

from codeact.sandbox import Limits, Sandbox
from codeact.sandbox._errors import SandboxStop
from codeact.sandbox._guards import CHANGING_DUNDERS, INERT_DUNDERS, match_class_guard
from codeact.sandbox._ownership import (
    BASE_CLASSES,
    PLAIN_TYPES,
    READABLE,
    is_script_class,
    owns_private_name,
)
from codeact.sandbox._pending import Pending
from codeact.stdlib import standard_sandbox
from codeact.stdlib._modules import ENUM_TYPE

PROBED_DUNDERS = (
    "__class__",
    "__dict__",
    "__globals__",
    "__self__",
    "__func__",
    "__wrapped__",
    "__closure__",
    "__code__",
    "__base__",
    "__bases__",
    "__mro__",
    "mro",
    "__subclasses__",
    "__builtins__",
    "__module__",
    "__objclass__",
    "__init__",
    "__reduce_ex__",
    "__getattribute__",
    "__dataclass_fields__",
    "__args__",
    "__origin__",
    "__parameters__",
    "__metadata__",
    "__context__",
    "__cause__",
    "__traceback__",
    "cr_frame",
    "cr_code",
    "cr_await",
    "ag_frame",
    "ag_code",
    "ag_await",
    "gi_frame",
    "gi_yieldfrom",
    "get_coro",
    "get_loop",
    "get_stack",
    "_callbacks",
    "_loop",
    "_coro",
    # dunder methods a script may read (the script's own, or inert ones of the host's), and
    # those it may not: each value found is crawled further
    "__eq__",
    "__len__",
    "__next__",
    "__iter__",
    "__getitem__",
    "__repr__",
    "__enter__",
    "__exit__",
    "__add__",
    "__setattr__",
    "__setitem__",
    "__post_init__",
    "__mul__",
    "__pow__",
    "__mod__",
    "__format__",
    "__getattr__",
    "__call__",
    "__init_subclass__",
    "__members__",
    "__copy__",
    "__deepcopy__",
    "__getnewargs__",
    "__getstate__",
    "__setstate__",
    "__new__",
    "__get__",
    "__set__",
    "__delete__",
    "__set_name__",
    "__class_getitem__",
    "__abstractmethods__",
    "__fspath__",
    "__missing__",
)
# Private names of the runtime's own stand-ins and wrappers, tried on everything.
PROBED_PRIVATE = ("_real", "_construct", "_members", "_guards", "_cls", "_bound", "_call", "_span")
MAX_OBJECTS = 60_000
# super().__init__() (the script's own constructor); what type() answers; the script's
# own objects' attributes; an error's chain. Their values are crawled like any other.
ALLOWED_DUNDERS = frozenset(
    {"__init__", "__class__", "__dict__", "__dataclass_fields__", "__context__", "__cause__"}
    | {"__members__"}  # a script enum's own members, by name
    | {"__args__", "__origin__", "__parameters__", "__metadata__"}  # typing forms' parts
    | {"__bases__", "__base__", "__mro__"}  # a script class's or a builtin's bases, as shown
    | {"__subclasses__"}  # a script class's: the classes the script derived from it
    | {"mro"}  # a script class's or a builtin's __mro__, as a list
    | {"__abstractmethods__"}  # the names a script ABC lacks: strings
    | {"__new__"}  # the script's own, or a builtin's that makes only the script's objects
    | {"__fspath__"}  # a path's own string, by a bound method of its class
    | {"__missing__"}  # a defaultdict's: its factory's value for a key, as d[key] makes it
    | {"__class_getitem__"}  # a builtin's or a stand-in's: it makes obj[item], an alias of obj
    | INERT_DUNDERS
    | CHANGING_DUNDERS
)
# Read only where the script defined them itself (its own class's method).
SCRIPT_ONLY_DUNDERS = frozenset(
    {"__mul__", "__pow__", "__mod__", "__format__", "__getattr__", "__call__"}
    | {"__copy__", "__deepcopy__", "__getnewargs__", "__getstate__", "__setstate__"}
    | {"__get__", "__set__", "__delete__", "__set_name__", "__class_getitem__"}
)
NOT_VALUES = frozenset({"super", "__build_class__", "__import__"})

SEED_SCRIPT = """
import collections, dataclasses, datetime, decimal, enum, fractions, functools, itertools
import json, math, random, re, statistics, string, textwrap, typing, uuid, difflib, copy
import hashlib, types
class Box:
    def __init__(self):
        self.items = [1]
    def method(self):
        return 1
    def sup(self):
        return super()
class Sized(list):
    def __call__(self):
        return len(self)
    def __format__(self, spec):
        return 'sized'
class Kept(tuple):
    def __getnewargs__(self):
        return (tuple(self),)
    def __getstate__(self):
        return {'copied': True}
    def __setstate__(self, state):
        self.state = state
    def __copy__(self):
        return Kept(self)
class Color(enum.Enum):
    RED = 1
@dataclasses.dataclass
class Point:
    x: int = 0
def gen():
    yield 1
def closure():
    v = 1
    return lambda: v
try:
    1 / 0
except ZeroDivisionError as e:
    caught = e
seeds = [
    Box(), Box, Box().sup(), Sized([1]), Sized, Kept((1,)), copy.deepcopy(Kept((1,))), Color.RED, Color, Point(), Point, gen(), closure(), caught,
    re.compile('a'), re.match('a', 'a'), datetime.datetime(2024, 1, 1), datetime.timedelta(1),
    decimal.Decimal('1.5'), fractions.Fraction(1, 3), uuid.uuid4(), collections.deque([1]),
    collections.Counter('ab'), collections.OrderedDict(a=1), collections.defaultdict(list),
    collections.ChainMap({}), collections.namedtuple('NT', 'a b')(1, 2), string.Formatter(),
    string.Template('$a'), textwrap.TextWrapper(), difflib.SequenceMatcher(None, 'a', 'b'),
    statistics.NormalDist(), random.Random(1), functools.partial(len), functools.lru_cache(None)(len),
    itertools.count(), itertools.chain([1]), map(len, []), zip(iter([1])), itertools.tee([1])[0],
    itertools.groupby('aa'), itertools.chain.from_iterable([[1]]), typing.List[int], typing.TypeVar('T'), 'x'.join,
    'x'.format, iter([1]), range(3), range(10**9), b'x', bytearray(b'x'), {}.keys(), add,
    type(1), type(len), type(range), type(add), type(Color), json, math,
    functools.lru_cache(None)(closure), functools.cache(gen), enum.EnumMeta, enum.EnumType,
]
import asyncio, io, csv, time, types, operator, contextlib, queue, array, zlib, abc, pprint
import urllib.parse, calendar, binascii, tomllib, html, secrets, keyword, numbers, struct
import graphlib, shlex
import collections.abc
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...
@typing.runtime_checkable
class Closer(typing.Protocol):
    def close(self): ...
class Pair(typing.NamedTuple):
    a: int
    b: int = 0
async def agen():
    yield 1
async def coro():
    return 1
async def gather_objects():
    task = asyncio.create_task(coro())
    await task
    async with asyncio.TaskGroup() as tg:
        other = tg.create_task(coro())
    loop = asyncio.get_running_loop()
    return [task, other, tg, asyncio.Event(), asyncio.Lock(), asyncio.Semaphore(1),
            asyncio.Queue(), asyncio.timeout(1), asyncio.current_task(), loop,
            loop.call_soon(len, ''), loop.call_later(60, len, ''), loop.create_future()]
pending_coroutine = coro()
seeds += asyncio.run(gather_objects())
seeds += [asyncio.get_event_loop(), asyncio.new_event_loop()]
seeds += [
    io.StringIO('a'), io.BytesIO(b'a'), csv.reader(['a']), csv.writer(io.StringIO()),
    csv.DictReader(['a', '1']), time.gmtime(0), types.SimpleNamespace(a=1),
    operator.attrgetter('a'), operator.itemgetter(0), operator.methodcaller('a'),
    contextlib.ExitStack(), contextlib.suppress(ValueError), queue.Queue(),
    array.array('i', [1]), zlib.compress(b'a'), urllib.parse.urlparse('http://x'),
    zlib.compressobj(), zlib.decompressobj(),
    decimal.Context(), decimal.localcontext(), Shape, Pair(1), Pair, agen(), pending_coroutine,
    calendar.month_name, numbers.Number, collections.abc.Mapping, Closer, type(Closer),
    isinstance(io.StringIO(), Closer), json.JSONEncoder(), json.JSONEncoder,
    struct.Struct('<h'), struct.iter_unpack('<h', b'ab'), type(struct.Struct('<h')),
]
class Encoder(json.JSONEncoder):
    def default(self, o):
        return str(o)
seeds += [Encoder(indent=1), Encoder, json.dumps({1}, cls=Encoder)]
class Decoder(json.JSONDecoder):
    def __init__(self):
        super().__init__(object_hook=self.object_hook)
    def object_hook(self, d):
        return d
seeds += [json.JSONDecoder(parse_float=str), json.JSONDecoder, Decoder(), Decoder]
seeds += [json.loads('[1]', cls=Decoder), textwrap.TextWrapper(width=9), textwrap.TextWrapper]
seeds += [compile('x = 1', 'made.py', 'exec'), type(compile('1', 'f', 'eval'))]
class Dispatching:
    @functools.singledispatchmethod
    def on(self, x):
        return x
    @on.register
    def _(self, x: int):
        return x + 1
seeds += [Dispatching.__dict__['on'], Dispatching().on, Dispatching.on]
seeds += [calendar.TextCalendar(6), calendar.Calendar(), calendar.Calendar(1).itermonthdates(2024, 2)]
seeds += [calendar.HTMLCalendar(6), shlex.shlex('a b', posix=True)]
@functools.singledispatch
def shown(x):
    return 'x'
shown.register(int, lambda x: 'int')
shown.register(type, lambda x: 'type')
@shown.register
def _(x: list):
    return 'list'
seeds += [shown, shown.registry, shown.dispatch(int), shown.dispatch(bool), shown.register]
import traceback
try:
    json.loads('{')
except ValueError as failure:
    seeds += [traceback, traceback.format_exc(), traceback.format_exception(failure)]
    seeds += [traceback.TracebackException.from_exception(failure)]
pending_coroutine.close()
left = agen()
import sys, os, os.path, pathlib, gc
try:
    1 / 0
except ZeroDivisionError:
    info = sys.exc_info()
seeds += [
    sys.stdout, sys.version_info, sys.float_info, sys.implementation, info, os.environ,
    pathlib.Path('a/b.txt'), pathlib.PureWindowsPath('c:/x'), pathlib.Path('a/b').parents,
    pathlib.PurePath('x'), decimal.getcontext(), hashlib.new('sha256'),
    hashlib.shake_128(b'x'), hashlib.new('shake_256'), list[int], int | str,
    typing.Optional[typing.List[int]], typing.Callable[[int], str], typing.Annotated[int, 'm'],
    typing.Type[int], typing.get_origin, typing.get_args, functools.wraps(len)(lambda: 1),
    type('Made', (Box,), {'size': 1, '__repr__': lambda self: 'made'}),
]
class Field:
    def __set_name__(self, owner, name):
        self.name = '_' + name
    def __get__(self, obj, kind=None):
        return self if obj is None else getattr(obj, self.name, None)
    def __set__(self, obj, value):
        setattr(obj, self.name, value)
    def __delete__(self, obj):
        delattr(obj, self.name)
class Model(Box):
    __slots__ = ('slot',)
    field = Field()
    @staticmethod
    def make():
        return 1
    def __class_getitem__(cls, item):
        return cls
class Single:
    def __new__(cls, *args):
        return super().__new__(cls)
class Celsius(float):
    def __new__(cls, value):
        return super().__new__(cls, value)
class Planet(enum.Enum):
    EARTH = (1, 'blue')
    def __new__(cls, number, color):
        member = object.__new__(cls)
        member._value_ = number
        return member
class Later(Pair):
    def __new__(cls, a):
        return super().__new__(cls, a, a)
model = Model()
model.field = 1
seeds += [
    Field, Model, model, Model[int], vars(Model), Model.__mro__, Single(), Single,
    Celsius(1.5), Celsius, Planet.EARTH, Planet, Later(1), Later, vars(Point), vars(Pair),
    Color.__mro__, Pair.__mro__, Shape.__bases__, Encoder.__mro__, Model.mro, Model.mro(),
]
def with_repr(cls):
    def __repr__(self):
        return 'decorated'
    cls.__repr__ = __repr__
    cls.__exit__ = lambda *exc: False
    return cls
@with_repr
class Decorated:
    pass
seeds += [Decorated, Decorated(), Decorated.__exit__, super(Model, model), super(Celsius, Celsius(2.0))]
Item = typing.TypeVar('Item')
class GBox(typing.Generic[Item]):
    pass
seeds += [GBox, GBox[int], GBox[int](), GBox.__parameters__, GBox.__mro__, typing.List[GBox]]
# aliases, whose other names are their origin's: a builtin's, a stand-in's, a script class's
seeds += [list[int], dict[str, int], type[int], enumerate[str], re.Pattern[str], re.Match[str]]
seeds += [asyncio.Task[int], collections.deque[int], collections.OrderedDict[str, int]]
class Listed(list):
    pass
seeds += [Model.__class_getitem__, list.__class_getitem__(Model), Listed, Listed[int]]
import zoneinfo
seeds += [zoneinfo.ZoneInfo('Europe/Paris')]
MadeData = dataclasses.make_dataclass('MadeData', [('x', int), ('y', int, 0)], frozen=True)
seeds += [dataclasses.make_dataclass, MadeData, MadeData(1), vars(MadeData)]
sorter = graphlib.TopologicalSorter({'a': ['b'], 'b': []})
seeds += [graphlib, sorter, sorter.static_order(), graphlib.CycleError('x', [1])]
import io, logging
log_buffer = io.StringIO()
log_handler = logging.StreamHandler(log_buffer)
log_handler.setFormatter(logging.Formatter('{name} {message}', style='{'))
part_log = logging.getLogger('app.part')
part_log.addHandler(log_handler)
part_log.warning('seeded %s', Box())
seeds += [
    logging, part_log, part_log.parent, part_log.root, part_log.handlers, log_handler,
    log_handler.formatter, logging.NullHandler(), logging.getLogger(), type(part_log),
]
import warnings
with warnings.catch_warnings(record=True) as caught_warnings:
    warnings.simplefilter('always')
    warnings.warn('seeded', RuntimeWarning)
seeds += [warnings, caught_warnings, caught_warnings[0], warnings.catch_warnings()]
"""


def _dangerous(obj: Any, sandbox_globals: dict[str, Any]) -> str | None:
    if isinstance(obj, types.ModuleType):
        return "a module"
    if isinstance(obj, types.FrameType | types.CodeType | types.TracebackType):
        return "a frame, code object or traceback"
    if obj is type or obj is super:
        return "type or super itself"
    if isinstance(obj, type) and issubclass(obj, type):
        return "a metaclass"
    if isinstance(obj, types.FunctionType) and obj.__globals__ is not sandbox_globals:
        return None  # held opaque: checked below by the dunder probes finding nothing
    return None


def _reads(sandbox: Sandbox, obj: Any, pattern: Any) -> list[tuple[str, Any]]:
    guards = sandbox.guards
    found: list[tuple[str, Any]] = []
    names = _public_names(obj) + list(PROBED_DUNDERS) + _private_names(obj)
    for name in names:
        try:
            value = guards.getattr(obj, name)
        except (SandboxStop, AttributeError, TypeError, ValueError, LookupError):
            pass
        except Exception:  # a property that fails on this value: nothing reached
            pass
        else:
            found.append((name, value))
        if name[:1] != "_":
            continue  # a public name binds what the guarded read above found
        # ``case C(name=v)`` with C = type(obj): CPython binds what it reads itself, once
        # the pattern's stand-in class (the sandbox's own, as compiled code gets it) says so
        try:
            if isinstance(obj, pattern(type(obj), (name,), 0)):
                found.append((f"<pattern {name}>", getattr(obj, name)))
        except (SandboxStop, Exception):  # refused, or missing
            pass
    with contextlib.suppress(SandboxStop):
        shown = guards.type_of(obj)
        found.append(("type()", shown))
        found.append(("type(type())", guards.type_of(shown)))
    if type(obj) in (list, tuple, set, frozenset):
        found.extend(("item", item) for item in list(obj)[:50])
    elif type(obj) is dict:
        found.extend(("value", item) for item in list(obj.values())[:50])
    return found


def _script_defined(value: Any, scope: dict[str, Any]) -> bool:
    function = getattr(value, "__func__", value)
    return isinstance(function, types.FunctionType) and function.__globals__ is scope


def _private_names(obj: Any) -> list[str]:
    try:
        own = [n for n in dir(obj) if n[:1] == "_" and n[1:2] != "_"]
    except (Exception, SandboxStop):
        own = []
    return own + list(PROBED_PRIVATE)


# The runtime's private modules and its files; heap addresses are CPython's own (id() gives them).
TELLING = re.compile(r"codeact\._|codeact\.\w+\._|codeact/|stdlib_bindings")


def _telling_repr(obj: Any, scope: dict[str, Any]) -> str | None:
    """A repr a script sees must not show the runtime's private modules or its files."""
    if is_script_class(type(obj)) or (isinstance(obj, type) and is_script_class(obj)):
        return None  # the script's own objects say what their class says
    if isinstance(obj, types.FunctionType) and obj.__globals__ is scope:
        return None  # the script's own functions: CPython's repr shows an address
    if isinstance(obj, types.GeneratorType | types.CoroutineType | types.AsyncGeneratorType):
        return None  # the script's own generators (their code is the script's)
    try:
        text = repr(obj)
    except (Exception, SandboxStop):  # a pending value stops a preview rather than show
        return None
    found = TELLING.search(text)
    return None if found is None else f"its repr shows {found.group()!r}: {text[:80]}"


def _public_names(obj: Any) -> list[str]:
    try:
        return [n for n in dir(obj) if not n.startswith("_")]
    except (Exception, SandboxStop):
        return []


# Values whose reads are their type's: a few of each stand for all. Some make a new value
# on every read (a Decimal's .imag, a path's .parent, a ChainMap's .parents, the last over
# the maps the first one held), so without a bound their chains never end.
PLAIN_VALUES = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    decimal.Decimal,
    fractions.Fraction,
    pathlib.PurePosixPath,
    pathlib.PosixPath,
    pathlib.PureWindowsPath,
    collections.ChainMap,
)
PLAIN_SAMPLES = 4


def _shape(obj: Any) -> Any:
    """A key under which one object stands for every other with the same key, or None.

    What the guards answer on a method bound to a host object (``'x'.join``, ``f.__eq__``)
    depends on the method and the type of what it is bound to, never on that object; a
    plain value's reads are its type's. Crawling each once lets the crawl reach further
    instead of walking ten thousand bindings of the same method.
    """
    kind = type(obj)
    if kind in (types.BuiltinMethodType, types.MethodWrapperType):
        bound = obj.__self__
        if isinstance(bound, types.ModuleType):
            return None  # a module's function is one object already
        return (kind, type(bound), obj.__name__)
    if kind is types.MethodType:
        return (kind, type(obj.__self__), id(obj.__func__))
    if kind in PLAIN_VALUES:
        return kind
    return None


def _crawl(
    sandbox: Sandbox, roots: list[tuple[str, Any]], limit: int = MAX_OBJECTS
) -> tuple[list[tuple[str, Any]], list[str]]:
    """Everything reachable from ``roots`` (path and object, in the order found), and the
    problems found on the way."""
    scope = sandbox.globals
    pattern = match_class_guard(sandbox.guards)
    seen: set[int] = set()
    shapes: dict[Any, int] = {}
    reached: list[tuple[str, Any]] = []  # keeps ids unique while everything is alive
    queue: deque[tuple[str, Any]] = deque(roots)
    problems: list[str] = []
    while queue and len(seen) < limit:
        path, obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        shape = _shape(obj)
        if shape is not None:
            shapes[shape] = shapes.get(shape, 0) + 1
            if shapes[shape] > (PLAIN_SAMPLES if shape in PLAIN_VALUES else 1):
                continue  # another object of this shape was crawled: it stands for this one
        reached.append((path, obj))
        problem = _dangerous(obj, scope)
        if problem is not None:
            problems.append(f"{path}: {problem} ({obj!r:.80})")
            continue
        problem = _telling_repr(obj, scope)
        if problem is not None:
            problems.append(f"{path}: {problem}")
        for name, value in _reads(sandbox, obj, pattern):
            bare = name.removeprefix("<pattern ").removesuffix(">")
            dunder = bare in PROBED_DUNDERS and bare not in ALLOWED_DUNDERS
            if bare in SCRIPT_ONLY_DUNDERS and _script_defined(value, scope):
                dunder = False  # Box.__call__ the script wrote: its own function
            if bare == "__wrapped__" and (
                _script_defined(obj, scope) or _script_defined(value, scope)
            ):
                # what functools.wraps stored on the script's own function, or the
                # script's own function an lru_cache wraps
                dunder = False
            if dunder and value is not None and type(value) is not str:
                problems.append(f"{path}.{name}: a dunder reached ({type(value).__name__})")
                continue
            if bare in PROBED_PRIVATE and name != "type()":
                problems.append(f"{path}.{name}: a stand-in's private name reached")
                continue
            if bare[:1] == "_" and bare[1:2] != "_" and not owns_private_name(obj, bare):
                # a host object's internals (a queue's deque, a Counter's _keep_positive)
                problems.append(f"{path}.{name}: a host object's private name reached")
                continue
            queue.append((f"{path}.{name}", value))
    return reached, problems


def _seeded() -> tuple[Sandbox, list[tuple[str, Any]]]:
    sandbox = standard_sandbox()
    outcome = sandbox.run(
        SEED_SCRIPT, tools={"add": ("a", "b")}, call_tool=lambda name, arguments: None
    )
    assert outcome.error is None, outcome.error
    scope = sandbox.globals
    # super, __build_class__ and __import__ are only ever called by compiled code: a
    # script cannot hold them as values (the transformer refuses the names).
    held = {k: v for k, v in scope["__builtins__"].items() if k not in NOT_VALUES}
    roots: list[tuple[str, Any]] = [(f"builtins.{k}", v) for k, v in held.items()]
    roots += [(f"module {name}", facade) for name, facade in sandbox._facades.items()]
    roots += [(f"seed {i}", v) for i, v in enumerate(scope["seeds"])]
    roots.append(("a planned write's pending value", Pending(1, "pay")))
    return sandbox, roots


Crawled = tuple[Sandbox, list[tuple[str, Any]], list[str]]


@pytest.fixture(scope="module")
def crawled() -> Crawled:
    """One crawl of the seeded surface, for the read pass and the call pass."""
    sandbox, roots = _seeded()
    reached, problems = _crawl(sandbox, roots)
    return sandbox, reached, problems


def test_nothing_a_script_can_reach_leads_out_of_the_sandbox(crawled: Crawled) -> None:
    sandbox, reached, problems = crawled
    assert problems == [], "\n".join(problems[:40])
    assert len(reached) > 500  # the crawl really walked the surface
    # the newest names are walked: enum's metaclass stand-in, an lru_cache's __wrapped__
    assert any(value is ENUM_TYPE for _, value in reached)
    assert any(
        path.endswith(".__wrapped__") and _script_defined(value, sandbox.globals)
        for path, value in reached
    )
    assert any(path.endswith(".__fspath__") for path, _ in reached)  # a path's, and on
    assert any(path.endswith(".__missing__") for path, _ in reached)  # a defaultdict's
    assert any(path.endswith(".purge") for path, _ in reached)  # re's, called in the call pass
    assert any(path.endswith(".Task") for path, _ in reached)  # asyncio's stand-in for its class
    assert any(path.endswith(".GeneratorType") for path, _ in reached)  # types', as type() shows
    assert any(path.endswith("json.dump") for path, _ in reached)  # writes through the guards
    assert any(path.endswith("json.load") for path, _ in reached)  # reads through them
    assert any(path.endswith(".redirect_stdout") for path, _ in reached)  # contextlib's
    assert any(path.endswith(".redirect_stderr") for path, _ in reached)
    # a script class's subclasses (called in the call pass), a builtin's ancestors
    assert any(path.endswith(".__subclasses__") for path, _ in reached)
    # an alias's names are read through to its origin, and a builtin makes aliases
    assert any(path.endswith(".__class_getitem__") for path, _ in reached)
    assert any(path.endswith("builtins.KeyError.__mro__") for path, _ in reached)
    assert len(reached) < MAX_OBJECTS  # and ended with nothing left, not at its bound


# The call pass: every host callable the crawl reached is called, from a script, with
# objects a script makes (the shapes host code trusts: an __index__, an __eq__ that is
# always true, a sequence that is not one, a bare class, subclasses of builtins).
PROBE_SCRIPT = """
class Index:
    def __index__(self):
        return 3
    def __int__(self):
        return 3
class Equal:
    def __eq__(self, other):
        return True
    def __hash__(self):
        return 0
class Shaped:
    def __len__(self):
        return 2
    def __iter__(self):
        return iter([1, 2])
    def __getitem__(self, index):
        return 1
    def __str__(self):
        return 'shaped'
class Bare:
    pass
class Text(str):
    pass
class Number(int):
    pass
class Items(list):
    pass
probes = [Index(), Equal(), Shaped(), Bare(), Bare, Text('a'), Number(2), Items([1])]
"""
CALL_SCRIPT = """
made = []
for index in range(start, len(targets)):
    reached[0] = index
    # the makers last: type(name, bases, namespace) and the functional forms
    # (Enum('a', 'b c'), TypedDict('a', {'a': probe})), whose classes are crawled too
    shapes = [('a', 'b c')]
    for probe in probes:
        shapes += [(probe,), (probe, probe), (1, probe), (probe, 'a')]
        shapes += [('a', (), {'a': probe}), ('a', {'a': probe})]
    for arguments in shapes:
        try:
            made.append(targets[index](*arguments))
        except Exception:
            pass
"""
MAX_CALLED = 8_000
CALL_LIMITS = Limits(wall_seconds=1.0, cpu_seconds=1.0)


def _callables(sandbox: Sandbox, reached: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The host callables reached, one per function (a method bound to many objects once)."""
    scope = sandbox.globals
    chosen: dict[Any, tuple[str, Any]] = {}
    for path, obj in reached:
        if type(obj) is Pending:
            continue  # a planned write's result: nothing to call until it is made
        if not callable(obj) or _script_defined(obj, scope) or is_script_class(type(obj)):
            continue
        if isinstance(obj, type) and is_script_class(obj):
            continue
        if isinstance(obj, types.MethodType):
            key: Any = ("method", id(obj.__func__))
        elif isinstance(obj, types.BuiltinMethodType | types.MethodWrapperType) and not (
            isinstance(obj.__self__, types.ModuleType)
        ):
            key = ("builtin method", type(obj.__self__), obj.__name__)
        else:
            key = ("value", id(obj))
        chosen.setdefault(key, (path, obj))
    return list(chosen.values())[:MAX_CALLED]


def _leaks(value: Any, scope: dict[str, Any]) -> str | None:
    """What a call must never hand a script: a module, frame, code, ``type``, ``super``, a
    metaclass, or a host class the script could not otherwise name."""
    problem = _dangerous(value, scope)
    # a class of the script's own builtins (its type) it names already
    builtin = any(value is named for named in scope["__builtins__"].values())
    if problem is None and isinstance(value, type) and not _nameable(value) and not builtin:
        problem = "a host class"
    return problem


def _nameable(kind: type) -> bool:
    return (
        is_script_class(kind)
        or kind in PLAIN_TYPES
        or kind in READABLE
        or kind in BASE_CLASSES
        or issubclass(kind, BaseException)
    )


def test_host_callables_called_with_script_made_objects_hand_out_nothing(
    crawled: Crawled,
) -> None:
    sandbox, reached, _ = crawled
    assert sandbox.run(PROBE_SCRIPT).error is None
    scope = sandbox.globals
    probes = list(scope["probes"])
    targets = _callables(sandbox, reached)
    assert len(targets) > 300  # the pass really called the surface
    assert any(target is ENUM_TYPE for _, target in targets)  # called, not only read
    newest = (".__fspath__", ".__missing__", ".group", ".pbkdf2_hmac", ".iter_unpack")
    newest += (".get_type_hints", ".static_order", ".get_ready")
    newest += (".get_event_loop", ".run_until_complete", ".call_later", ".run_in_executor")
    newest += (".__subclasses__", ".mro")  # a script class's subclasses, a builtin's ancestors
    newest += (".__class_getitem__",)  # a builtin's alias maker, read on a class or an alias
    newest += (".ZoneInfo", ".available_timezones", ".utcoffset")  # zoneinfo's
    newest += ("typing.Deque", "typing.DefaultDict", "re.escape")  # they make or refuse now
    newest += (".raw_decode", ".dedent")  # they hand json's and textwrap's code exact text
    newest += ("ast.literal_eval", "cmath.sqrt", "cmath.polar")  # the newest modules'
    newest += ("functools.singledispatchmethod", "gzip.compress", "gzip.decompress")
    newest += (".itermonthdates", ".formatmonth", ".prmonth", "calendar.prcal")
    # checked host functions, methods and constructors; the runtime's own replacements
    newest += ("statistics.mean", "random.choice", ".substitute", ".writerow", "uuid.UUID")
    newest += ("statistics.NormalDist", "enum.unique", "dataclasses.fields")
    newest += ("asyncio.iscoroutinefunction", "asyncio.iscoroutine", ".limit_denominator")
    newest += (".formatyearpage", ".push_source", ".error_leader")  # HTMLCalendar's, shlex's
    newest += (".from_exception", ".format_exception_only")  # TracebackException's
    newest += ("zlib.compressobj", "zlib.decompressobj")  # zlib's streams, bounded
    for name in (*newest, "itertools.chain.from_iterable"):  # the newest reads, called too
        assert any(path.endswith(name) for path, _ in targets), name
    for kind in ("JSONDecoder", "TextWrapper"):  # the runtime's own classes, made by calls
        assert any(isinstance(t, type) and t.__name__ == kind for _, t in targets), kind
    for name in ("eval", "exec", "compile", "input"):  # the interpreter's own, called too
        assert any(target is scope["__builtins__"][name] for _, target in targets), name
    sandbox.limits = CALL_LIMITS
    problems: list[str] = []
    made: list[tuple[str, Any]] = []

    def call_all() -> None:
        scope["targets"] = [target for _, target in targets]
        scope["reached"] = [0]
        start = 0
        while start < len(targets):
            # a stop (a limit, a refused name) ends the run: the next run starts past the
            # target that caused it, so every target is called
            scope["start"] = start
            outcome = sandbox.run(CALL_SCRIPT, call_tool=lambda name, arguments: None)
            stopped = scope["reached"][0]
            where = f"{targets[start][0]} .. {targets[stopped][0]}"
            for value in scope.get("made", []):
                if isinstance(value, types.CoroutineType):
                    value.close()  # asyncio.sleep(probe): made, never awaited
                problem = _leaks(value, scope)
                if problem is not None:
                    problems.append(f"one of {where}: {problem} ({value!r:.80})")
                made.append((f"one of {where}", value))
            for probe in probes:  # what host code stored on the script's own objects
                for name, value in list(getattr(probe, "__dict__", {}).items()):
                    problem = _leaks(value, scope)
                    if problem is not None:
                        problems.append(
                            f"one of {where} stored {problem} in a script object's {name}"
                        )
            start = len(targets) if outcome.error is None else stopped + 1

    # In a thread of its own, as an executor runs scripts: in the main thread, asyncio's
    # policy would make a real event loop for a script's asyncio.Future() and keep it.
    caller = threading.Thread(target=call_all)
    caller.start()
    caller.join(timeout=600)  # a generous bound on the pass, not a measured duration
    assert not caller.is_alive(), "the call pass did not finish"
    # and what the calls made, crawled as everything else is
    more, found = _crawl(sandbox, made, limit=MAX_OBJECTS // 3)
    problems += found
    assert problems == [], "\n".join(problems[:40])
    roots = len({id(value) for _, value in made})  # many calls make the same value
    assert len(more) >= min(roots, MAX_OBJECTS // 3)  # each value made was crawled


def test_no_script_class_escapes_the_ownership_rules() -> None:
    sandbox = standard_sandbox()
    sandbox.run("class A:\n    pass\nclass B(A, Exception):\n    pass\nobj = B()")
    kind = type(sandbox.globals["obj"])
    assert is_script_class(kind)
    outcome = sandbox.run("type(obj).__name__, type(type(obj)).__name__")
    assert outcome.value == ["B", "type"]
    # the class type() builds is the script's, made as a class statement makes it
    assert sandbox.run("C = type(type(obj))('C', (B,), {'size': 1})").error is None
    assert is_script_class(sandbox.globals["C"])
    outcome = sandbox.run("type(type(obj))('D', (), {'__getattribute__': len})")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"
