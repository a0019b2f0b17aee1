"""Ordinary agent scripts: each gives the same result in the sandbox as in plain CPython.

The oracle is CPython itself: every script also runs under a plain ``exec`` with
the same tools as plain functions, and both results must be equal.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

import pytest

from codeact.sandbox import ScriptOutcome

SUM_300 = " + ".join(str(i) for i in range(300))

SCRIPTS: dict[str, str] = {
    "arithmetic": "(7 * 6 - 2) ** 2 // 3 % 1000",
    "augmented-name": "n = 1\nn += 2\nn *= 5\nn -= 1\nn //= 2\nn",
    "augmented-item": "d = {'a': 1}\nd['a'] += 1\nd['b'] = d.get('b', 0) + 5\ncounts = [0, 0]\ncounts[1] += 3\n(d, counts)",
    "augmented-attribute": "class Counter:\n    def __init__(self):\n        self.n = 0\n    def hit(self):\n        self.n += 1\n        return self\nCounter().hit().hit().hit().n",
    "augmented-nested-item": "grid = [[0] * 3 for _ in range(3)]\ngrid[1][2] += 7\ngrid",
    "annotated-assignment": "x: int = 5\ny: list[str] = ['a']\nclass P:\n    z: float = 1.5\n(x, y, P.z)",
    "nonlocal": "def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n    return inc\nc = counter()\nc(); c()\nc()",
    "global": "total = 0\ndef bump(k):\n    global total\n    total += k\nfor i in range(4):\n    bump(i)\ntotal",
    "class-super": "class Base:\n    def __init__(self, name):\n        self.name = name\n    def greet(self):\n        return 'hi ' + self.name\nclass Child(Base):\n    def __init__(self):\n        super().__init__('kid')\n    def greet(self):\n        return super().greet().upper()\nChild().greet()",
    "class-dunders": "class V:\n    def __init__(self, x):\n        self.x = x\n    def __repr__(self):\n        return f'V({self.x})'\n    def __eq__(self, o):\n        return self.x == o.x\n    def __lt__(self, o):\n        return self.x < o.x\n    def __hash__(self):\n        return hash(self.x)\n[repr(v) for v in sorted([V(3), V(1), V(2)])] + [V(1) == V(1), len({V(1), V(1)})]",
    "class-container": "class Bag:\n    def __init__(self):\n        self.items = []\n    def __len__(self):\n        return len(self.items)\n    def __iter__(self):\n        return iter(self.items)\n    def __getitem__(self, i):\n        return self.items[i]\n    def __contains__(self, x):\n        return x in self.items\nb = Bag()\nb.items.extend([4, 5])\n(len(b), list(b), b[1], 5 in b)",
    "property-static-class": "class T:\n    factor = 3\n    def __init__(self, v):\n        self._v = v\n    @property\n    def v(self):\n        return self._v * 2\n    @staticmethod\n    def s(x):\n        return x + 1\n    @classmethod\n    def c(cls, x):\n        return x * cls.factor\n(T(2).v, T.s(1), T.c(2))",
    "generator": "def evens(n):\n    for i in range(n):\n        if i % 2 == 0:\n            yield i\nlist(evens(9))",
    "generator-send": "def acc():\n    total = 0\n    while True:\n        x = yield total\n        total += x\ng = acc()\nnext(g)\ng.send(5)\ng.send(7)",
    "closure": "def make(k):\n    return lambda x: x * k\n[make(i)(10) for i in range(3)]",
    "decorator": "def twice(f):\n    def wrapper(*args, **kwargs):\n        return f(f(*args, **kwargs))\n    return wrapper\n@twice\ndef inc(x):\n    return x + 1\ninc(5)",
    "decorator-wraps": "import functools\ndef logged(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n    return inner\n@logged\ndef area(w, h):\n    'Area.'\n    return w * h\narea(3, 4)",
    "lambda-default-args": "fs = [lambda x, i=i: x + i for i in range(3)]\n[f(10) for f in fs]",
    "default-arguments": "def f(a, b=2, *args, c=3, **kw):\n    return (a, b, args, c, sorted(kw))\nf(1), f(1, 5, 6, 7, c=0, z=1, y=2)",
    "comprehensions": "{'list': [x * x for x in range(5) if x % 2], 'set': sorted({c for c in 'hello'}), 'dict': {k: len(k) for k in ['a', 'bb']}, 'gen': sum(x for x in range(10))}",
    "nested-comprehension": "[[i * j for j in range(3)] for i in range(3)]",
    "walrus": "data = [3, 8, 1, 9]\nif (n := len(data)) > 3:\n    r = n\n[y for x in data if (y := x * 2) > 5] + [r]",
    "match-sequence": "def kind(v):\n    match v:\n        case []:\n            return 'empty'\n        case [x]:\n            return f'one {x}'\n        case [x, *rest]:\n            return f'many {x} {len(rest)}'\n[kind([]), kind([1]), kind([1, 2, 3])]",
    "match-mapping-class": "from dataclasses import dataclass\n@dataclass\nclass Point:\n    x: int\n    y: int\ndef where(p):\n    match p:\n        case {'x': 0, **rest}:\n            return ('dict-axis', rest)\n        case Point(x=0, y=y):\n            return ('y-axis', y)\n        case Point(x=x, y=0):\n            return ('x-axis', x)\n        case _:\n            return 'elsewhere'\n[where({'x': 0, 'k': 1}), where(Point(0, 5)), where(Point(4, 0)), where(Point(1, 1))]",
    "match-literals-guards": "def sign(n):\n    match n:\n        case 0:\n            return 'zero'\n        case int() if n > 0:\n            return 'pos'\n        case None | False:\n            return 'nothing'\n        case _:\n            return 'neg'\n[sign(0), sign(5), sign(-2), sign(None)]",
    "fstrings": "name = 'Ada'\nn = 3.14159\nf'{name!r} {n:.2f} {n:>8.1f} {42:05d} {name.upper()} {n=}'",
    "str-format": "'{} + {} = {total}'.format(1, 2, total=3) + ' ' + '{0[k]} {1:,}'.format({'k': 'v'}, 1234567)",
    "format-map-percent": "'{a}-{b}'.format_map({'a': 1, 'b': 2}) + ' %s=%05.1f' % ('x', 3.14159)",
    "try-except-finally": "log = []\ndef risky(x):\n    try:\n        log.append('try')\n        return 10 / x\n    except ZeroDivisionError as e:\n        log.append(type(e).__name__)\n        return None\n    finally:\n        log.append('finally')\n(risky(2), risky(0), log)",
    "try-else-reraise": "def parse(s):\n    try:\n        v = int(s)\n    except ValueError:\n        raise KeyError(s) from None\n    else:\n        return v\nout = []\nfor s in ['1', 'x']:\n    try:\n        out.append(parse(s))\n    except KeyError as e:\n        out.append(('bad', str(e)))\nout",
    "bare-except": "try:\n    [][1]\nexcept:\n    r = 'caught'\nr",
    "custom-exception": "class AppError(Exception):\n    def __init__(self, code):\n        super().__init__(f'code {code}')\n        self.code = code\ntry:\n    raise AppError(7)\nexcept AppError as e:\n    r = (e.code, str(e), e.args)\nr",
    "context-manager": "class Timer:\n    def __init__(self):\n        self.events = []\n    def __enter__(self):\n        self.events.append('enter')\n        return self\n    def __exit__(self, kind, err, tb):\n        self.events.append('exit ' + (kind.__name__ if kind else 'ok'))\n        return kind is ValueError\nt = Timer()\nwith t:\n    pass\nwith t as same:\n    raise ValueError('swallowed by its own manager')\nt.events + [same is t]",
    "star-unpacking": "a = [1, 2]\nfirst, *rest = [1, 2, 3, 4]\nhead, (x, y) = 0, (5, 6)\n([*a, 3], {**{'k': 1}, 'j': 2}, first, rest, x + y, (*a, *a))",
    "star-call": "def f(*args, **kwargs):\n    return len(args), sorted(kwargs)\nargs = [1, 2, 3]\nopts = {'b': 1, 'a': 2}\nf(*args, 0, **opts, c=3)",
    "swap-and-chained": "a, b = 1, 2\na, b = b, a\n(a, b, 1 < a < 3, a == 2 != b)",
    "loops-else": "found = None\nfor n in range(2, 20):\n    for d in range(2, n):\n        if n % d == 0:\n            break\n    else:\n        found = n\ni = 0\nwhile i < 3:\n    i += 1\nelse:\n    i = -i\n(found, i)",
    "del-assert": "d = {'a': 1, 'b': 2}\ndel d['a']\nlst = [1, 2, 3]\ndel lst[0]\nassert lst == [2, 3], 'bad'\n(d, lst)",
    "slicing": "s = 'abcdefgh'\nl = list(range(10))\nl[2:4] = ['x']\n(s[::-1], s[1:5:2], l, l[-2:])",
    "string-methods": "t = '  Hello, World  '\n(t.strip().lower(), t.split(','), '-'.join(['a', 'b']), 'abc'.replace('b', 'B'), 'x'.center(5, '*'), '7'.zfill(3), 'ab'.startswith('a'))",
    "isinstance-checks": "(isinstance(b'x', bytes), isinstance(3, (int, float)), type(3) is int, isinstance(range(3), range), type('s') == str)",
    "bytes-and-encoding": "b = 'héllo'.encode('utf-8')\n(len(b), b.decode('utf-8'), bytes([104, 105]), bytearray(b'ab') + b'c')",
    "sum-300-terms": SUM_300,
    "recursion-fib": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(20)",
    "sorting-keys": "people = [{'n': 'b', 'a': 30}, {'n': 'a', 'a': 25}, {'n': 'c', 'a': 30}]\n[p['n'] for p in sorted(people, key=lambda p: (-p['a'], p['n']))]",
    "zip-enumerate-dict": "names = ['x', 'y']\nvalues = [1, 2]\n(dict(zip(names, values)), list(enumerate(names, 1)), list(reversed(values)), min(values), max(names))",
    "json-roundtrip": "import json\ndata = json.loads('{\"a\": [1, 2, {\"b\": null}]}')\ndata['c'] = True\njson.dumps(data, sort_keys=True)",
    "regex": "import re\ntext = 'Order 66 shipped 2024-05-01; order 7 pending'\n(re.findall(r'\\d{4}-\\d{2}-\\d{2}', text), [int(m.group(1)) for m in re.finditer(r'[Oo]rder (\\d+)', text)], re.sub(r'\\s+', ' ', 'a   b'), re.compile('x', re.I).match('X') is not None)",
    "datetime": "import datetime as dt\nd = dt.date(2024, 2, 28) + dt.timedelta(days=2)\n(d.isoformat(), d.weekday(), dt.datetime(2024, 1, 1, 12).strftime('%H:%M'), dt.datetime.strptime('05/06/2024', '%d/%m/%Y').month)",
    "collections": "from collections import Counter, defaultdict, deque, namedtuple, OrderedDict\nc = Counter('abracadabra')\ndd = defaultdict(list)\ndd['k'].append(1)\nq = deque([1, 2, 3], maxlen=3)\nq.append(4)\nPt = namedtuple('Pt', 'x y')\n(c.most_common(2), dict(dd), list(q), Pt(1, 2).y, list(OrderedDict(b=1, a=2)))",
    "itertools": "import itertools as it\n(list(it.islice(it.count(5), 3)), list(it.chain([1], [2])), list(it.chain.from_iterable([[1], [2, 3]])), [k for k, _ in it.groupby('aabbc')], list(it.combinations('abc', 2)), list(it.product([0, 1], repeat=2)), list(it.accumulate([1, 2, 3])))",
    "functools": "import functools\n@functools.lru_cache(maxsize=None)\ndef f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n(f(50), functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]), functools.partial(pow, 2)(10))",
    "math-statistics": "import math, statistics\n(math.sqrt(16), math.gcd(12, 18), round(math.pi, 3), math.factorial(10), statistics.mean([1, 2, 3, 4]), statistics.median([3, 1, 2]), round(statistics.stdev([1, 2, 3, 4]), 4))",
    "decimal-fractions": "from decimal import Decimal\nfrom fractions import Fraction\n(str(Decimal('0.1') + Decimal('0.2')), str(Fraction(1, 3) + Fraction(1, 6)), Fraction(3, 4).numerator)",
    "heapq-bisect": "import heapq, bisect\nh = [5, 1, 4]\nheapq.heapify(h)\nheapq.heappush(h, 0)\nsmallest = [heapq.heappop(h) for _ in range(2)]\nxs = [1, 3, 5]\nbisect.insort(xs, 4)\n(smallest, heapq.nlargest(2, [3, 9, 1]), xs, bisect.bisect_left(xs, 4))",
    "string-textwrap": "import string, textwrap\n(string.ascii_lowercase[:5], textwrap.fill('the quick brown fox jumps', width=10), textwrap.dedent('  a\\n  b'), string.Template('$who likes $what').substitute(who='I', what='tea'))",
    "enum": "import enum\nclass Color(enum.Enum):\n    RED = 1\n    GREEN = 2\n(Color.RED.name, Color(2).name, [c.value for c in Color], Color.RED in Color)",
    "dataclass": "from dataclasses import dataclass, field, asdict\n@dataclass(order=True)\nclass Item:\n    price: float\n    name: str = 'x'\n    tags: list = field(default_factory=list)\nitems = sorted([Item(3.0, 'b'), Item(1.5, 'a')])\n([i.name for i in items], asdict(items[0]))",
    "hash-base64-uuid": "import hashlib, base64, uuid\n(hashlib.sha256(b'abc').hexdigest()[:16], base64.b64encode(b'hi').decode(), len(str(uuid.uuid5(uuid.NAMESPACE_DNS, 'x'))), uuid.UUID('12345678123456781234567812345678').hex[:4])",
    "difflib-unicodedata-copy": "import difflib, unicodedata, copy\nnested = [[1], [2]]\ndeep = copy.deepcopy(nested)\ndeep[0].append(9)\n(difflib.get_close_matches('appel', ['apple', 'ape']), unicodedata.name('é'), nested, round(difflib.SequenceMatcher(None, 'abc', 'abd').ratio(), 3))",
    "typing-annotations": "from typing import Optional, List, Dict\ndef f(xs: List[int], k: Optional[str] = None) -> Dict[str, int]:\n    return {k or 'sum': sum(xs)}\nf([1, 2, 3])",
    "printing": "for i in range(3):\n    print('line', i, sep='-')\nprint('no newline', end='')\n'done'",
    "tool-calls": "a = add(2, 3)\nb = add(a=a, b=10)\nc = add(b)\n[a, b, c, record(text='hello')]",
    "tool-errors": "try:\n    fail('broken')\nexcept ToolError as e:\n    r = (e.code, 'broken' in e.message)\nr",
    "tool-results-are-plain-data": "xs = shared()\nxs.append(4)\n(xs, type(xs) is list)",
    "bool-none-ellipsis": "(bool([]), None is None, ... is Ellipsis, not 0, any([0, 1]), all([]))",
    "divmod-round-abs": "(divmod(17, 5), round(2.675, 2), abs(-3), int('ff', 16), hex(255), bin(5), chr(65), ord('a'))",
    "integer-big": "2 ** 200 % 1000007 + 10 ** 30 // 7",
    "sets": "a = {1, 2, 3}\nb = {2, 3, 4}\n(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a.issubset({1, 2, 3, 4}))",
    "persisted-name-is-reused": "helper_total = sum(range(5))\nhelper_total * 2",
}


def _tools() -> dict[str, Callable[..., Any]]:
    from codeact import ToolError

    shared_list = [1, 2, 3]

    def add(a: int, b: int = 0) -> int:
        return a + b

    def record(text: str) -> str:
        return type(text).__name__

    def shared() -> list[int]:
        return list(shared_list)

    def fail(message: str) -> None:
        raise ToolError(f"RuntimeError: {message}", "TOOL_ERROR")

    return {"add": add, "record": record, "shared": shared, "fail": fail, "ToolError": ToolError}


def run_in_cpython(source: str) -> Any:
    """The reference: the same script under a plain exec, last expression evaluated."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    scope: dict[str, Any] = {"__name__": "__main__", **_tools()}
    exec(compile(tree, "<cpython>", "exec", dont_inherit=True), scope)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), "<cpython>", "eval", dont_inherit=True), scope)


def normalise(value: Any) -> Any:
    """Plain JSON, as the sandbox reports it (tuples become lists)."""
    return json.loads(json.dumps(value, default=repr))


@pytest.mark.parametrize("source", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_script_matches_cpython(run: Callable[[str], ScriptOutcome], source: str) -> None:
    outcome = run(source)
    assert outcome.error is None, outcome.error
    assert outcome.value == normalise(run_in_cpython(source))


def test_there_are_at_least_fifty_scripts() -> None:
    assert len(SCRIPTS) >= 50


def test_values_json_has_not_are_returned_as_their_repr(
    run: Callable[[str], ScriptOutcome],
) -> None:
    outcome = run("[float('nan'), float('-inf'), {1, 2}, {'k' * 3: 1.5}]")
    assert outcome.error is None, outcome.error
    assert outcome.value == ["nan", "-inf", "{1, 2}", {"kkk": 1.5}]


def test_printed_output_is_captured(run: Callable[[str], ScriptOutcome]) -> None:
    outcome = run(SCRIPTS["printing"])
    assert outcome.output == "line-0\nline-1\nline-2\nno newline"


def test_names_persist_across_runs_until_reset(run: Callable[[str], ScriptOutcome]) -> None:
    assert run("kept = [1, 2]\ndef double(x):\n    return x * 2").ok
    assert run("double(len(kept))").value == 4
    run.reset()  # type: ignore[attr-defined]
    outcome = run("kept")
    assert outcome.error is not None
    assert "NameError" in outcome.error.message


def test_a_redirect_left_open_does_not_take_the_next_runs_output(
    run: Callable[[str], ScriptOutcome],
) -> None:
    """A generator suspended inside a redirect_stdout block keeps it open past its run;
    the next run prints into its own output all the same, and closing the generator then
    ends no redirect of that run's."""
    first = run(
        "import contextlib, io\n"
        "kept = io.StringIO()\n"
        "def inside():\n"
        "    with contextlib.redirect_stdout(kept):\n"
        "        yield\n"
        "left_open = inside()\n"
        "next(left_open)\n"
        "print('into kept')"
    )
    assert first.ok
    assert first.output == ""
    second = run(
        "print('into the output')\n"
        "mine = io.StringIO()\n"
        "with contextlib.redirect_stdout(mine):\n"
        "    left_open.close()\n"
        "    print('into mine')\n"
        "[kept.getvalue(), mine.getvalue()]"
    )
    assert second.output == "into the output\n"
    assert second.value == ["into kept\n", "into mine\n"]


def test_tool_calls_are_listed_with_their_status(run: Callable[[str], ScriptOutcome]) -> None:
    outcome = run("add(1, 2)\ntry:\n    fail('x')\nexcept ToolError:\n    pass\nrecord('y')")
    assert [(c.name, c.ok, c.code) for c in outcome.tool_calls] == [
        ("add", True, None),
        ("fail", False, "TOOL_ERROR"),
        ("record", True, None),
    ]


def test_a_name_a_module_does_not_offer_is_an_import_error_naming_both(
    run: Callable[[str], ScriptOutcome],
) -> None:
    outcome = run("from typing import List, get_overloads")
    assert outcome.error is not None
    assert outcome.error.message == (
        "ImportError: cannot import name 'get_overloads' from 'typing' (not offered to scripts)"
    )
    fallback = run(
        "try:\n    from json import nope\nexcept ImportError as error:\n"
        "    found = (error.name, str(error))\nfrom collections import abc, Counter\nfound"
    )
    assert fallback.error is None
    assert fallback.value == [  # json has no such name: CPython's words, without its path
        "json",
        "cannot import name 'nope' from 'json' (unknown location)",
    ]
