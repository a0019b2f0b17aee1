"""A crawl of everything a script can reach, failing on anything that would let it out.

From every name a script starts with (builtins, every member of every facade, a
bound tool, values the script itself makes), the crawl follows what a script can
follow: public attribute reads as the guards answer them, a handful of dunders a
script may try, ``type(x)``, items of containers, and the results of calling
zero-argument members that are safe to call. It fails on a module, frame, code
object, traceback, a class that builds classes, ``super`` itself, a function whose
host globals are readable, or a mutable container that a host class holds.
"""

from __future__ import annotations

import contextlib
import types
from collections import deque
from typing import Any

from codeact._sandbox import Sandbox
from codeact._sandbox._errors import SandboxStop
from codeact._sandbox._ownership import is_script_class

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
    "__subclasses__",
    "__builtins__",
    "__module__",
    "__objclass__",
    "__init__",
    "__reduce_ex__",
    "__getattribute__",
    "__dataclass_fields__",
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
)
MAX_OBJECTS = 60_000
# super().__init__() (the script's own constructor); what type() answers; the script's
# own objects' attributes; an error's chain. Their values are crawled like any other.
ALLOWED_DUNDERS = frozenset(
    {"__init__", "__class__", "__dict__", "__dataclass_fields__", "__context__", "__cause__"}
)
NOT_VALUES = frozenset({"super", "__build_class__", "__import__"})

SEED_SCRIPT = """
import collections, dataclasses, datetime, decimal, enum, fractions, functools, itertools
import json, math, random, re, statistics, string, textwrap, typing, uuid, difflib, copy
class Box:
    def __init__(self):
        self.items = [1]
    def method(self):
        return 1
    def sup(self):
        return super()
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
    Box(), Box, Box().sup(), Color.RED, Color, Point(), Point, gen(), closure(), caught,
    re.compile('a'), re.match('a', 'a'), datetime.datetime(2024, 1, 1), datetime.timedelta(1),
    decimal.Decimal('1.5'), fractions.Fraction(1, 3), uuid.uuid4(), collections.deque([1]),
    collections.Counter('ab'), collections.OrderedDict(a=1), collections.defaultdict(list),
    collections.ChainMap({}), collections.namedtuple('NT', 'a b')(1, 2), string.Formatter(),
    string.Template('$a'), textwrap.TextWrapper(), difflib.SequenceMatcher(None, 'a', 'b'),
    statistics.NormalDist(), random.Random(1), functools.partial(len), functools.lru_cache(None)(len),
    itertools.count(), itertools.chain([1]), typing.List[int], typing.TypeVar('T'), 'x'.join,
    'x'.format, iter([1]), range(3), range(10**9), b'x', bytearray(b'x'), {}.keys(), add,
    type(1), type(len), type(range), type(add), type(Color), json, math,
]
import asyncio, io, csv, time, types, operator, contextlib, queue, array, zlib, abc, pprint
import urllib.parse, calendar, binascii, tomllib, html, secrets, keyword, numbers
import collections.abc
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...
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
    return [task, other, tg, asyncio.Event(), asyncio.Lock(), asyncio.Semaphore(1),
            asyncio.Queue(), asyncio.timeout(1), asyncio.current_task()]
pending_coroutine = coro()
seeds += asyncio.run(gather_objects())
seeds += [
    io.StringIO('a'), io.BytesIO(b'a'), csv.reader(['a']), csv.writer(io.StringIO()),
    csv.DictReader(['a', '1']), time.gmtime(0), types.SimpleNamespace(a=1),
    operator.attrgetter('a'), operator.itemgetter(0), operator.methodcaller('a'),
    contextlib.ExitStack(), contextlib.suppress(ValueError), queue.Queue(),
    array.array('i', [1]), zlib.compress(b'a'), urllib.parse.urlparse('http://x'),
    decimal.Context(), decimal.localcontext(), Shape, Pair(1), Pair, agen(), pending_coroutine,
    calendar.month_name, numbers.Number, collections.abc.Mapping,
]
pending_coroutine.close()
left = agen()
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


def _reads(sandbox: Sandbox, obj: Any) -> list[tuple[str, Any]]:
    guards = sandbox.guards
    found: list[tuple[str, Any]] = []
    names = _public_names(obj) + list(PROBED_DUNDERS)
    for name in names:
        try:
            value = guards.getattr(obj, name)
        except (SandboxStop, AttributeError, TypeError, ValueError, LookupError):
            continue
        except Exception:  # a property that fails on this value: nothing reached
            continue
        found.append((name, value))
    with contextlib.suppress(SandboxStop):
        found.append(("type()", guards.type_of(obj)))
    if type(obj) in (list, tuple, set, frozenset):
        found.extend(("item", item) for item in list(obj)[:50])
    elif type(obj) is dict:
        found.extend(("value", item) for item in list(obj.values())[:50])
    return found


def _public_names(obj: Any) -> list[str]:
    try:
        return [n for n in dir(obj) if not n.startswith("_")]
    except Exception:
        return []


def test_nothing_a_script_can_reach_leads_out_of_the_sandbox() -> None:
    sandbox = Sandbox()
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

    seen: set[int] = set()
    keep: list[Any] = []  # ids stay unique while everything is alive
    queue: deque[tuple[str, Any]] = deque(roots)
    problems: list[str] = []
    while queue and len(seen) < MAX_OBJECTS:
        path, obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        keep.append(obj)
        problem = _dangerous(obj, scope)
        if problem is not None:
            problems.append(f"{path}: {problem} ({obj!r:.80})")
            continue
        for name, value in _reads(sandbox, obj):
            dunder = name in PROBED_DUNDERS and name not in ALLOWED_DUNDERS
            if dunder and value is not None and type(value) is not str:
                problems.append(f"{path}.{name}: a dunder reached ({type(value).__name__})")
                continue
            queue.append((f"{path}.{name}", value))
    assert problems == [], "\n".join(problems[:40])
    assert len(seen) > 500  # the crawl really walked the surface


def test_no_script_class_escapes_the_ownership_rules() -> None:
    sandbox = Sandbox()
    sandbox.run("class A:\n    pass\nclass B(A, Exception):\n    pass\nobj = B()")
    kind = type(sandbox.globals["obj"])
    assert is_script_class(kind)
    outcome = sandbox.run("type(obj).__name__, type(type(obj)).__name__")
    assert outcome.value == ["B", "type"]
    outcome = sandbox.run("type(type(obj))('C', (), {})")
    assert outcome.error is not None
