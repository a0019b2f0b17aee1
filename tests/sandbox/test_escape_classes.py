"""The escape classes an attack pass found, each as the complete script it used.

Each test runs on both executors and checks the effect, not only the error code:
the host's builtins never reach the script, host state shared by every session is
unchanged afterwards, and script code never runs outside the watched run.
"""

from __future__ import annotations

import collections.abc
import itertools
import textwrap
import threading
import typing
from collections.abc import Callable

import pytest

from codeact.sandbox import Limits, ScriptOutcome

from .conftest import Runner

Run = Callable[[str], ScriptOutcome]

SUPER_FORMATTER = """
import string
fmt = string.Formatter()
class P:
    def s(self):
        return super()
g, _ = type(P().s())(type(fmt), fmt).get_field('0.__globals__', [string.capwords], {})
g['__builtins__']
"""

METACLASS_OF_STAND_IN = """
M = type(range)
P = M('P', (), {'__match_args__': ('__self__',), '_real': object, '_construct': object})
match len:
    case P(b):
        r = b
r
"""

REAL_TYPE = """
T = type(int)
P = T('M', (T,), {'__instancecheck__': lambda c, o: True})('P', (), {'__match_args__': ('__self__',)})
match len:
    case P(b):
        r = b
r
"""

ESCAPES = {
    "super-proxy-over-formatter": SUPER_FORMATTER,
    "metaclass-of-a-stand-in": METACLASS_OF_STAND_IN,
    "the-real-type": REAL_TYPE,
    # the class type() builds binds only what a class statement may
    "type-of-type-builds-a-class": "T = type(type(1))\nT('X', (), {'__getattribute__': len})",
    "type-of-super": "class A:\n    def f(self):\n        return type(super())\nA().f()(int, 1)",
    "metaclass-of-an-enum": "import enum\nclass C(enum.Enum):\n    A = 1\ntype(C)('D', (), {'__del__': len})",
    "subclass-of-the-formatter": "import string\nclass F(string.Formatter):\n    pass\nF().get_field('0.__class__', [1], {})",
    "subclass-of-a-typing-abc": "import typing\nclass M(typing.Mapping):\n    pass",
    "subclass-of-a-host-metaclass-product": "import collections\nclass X(type(collections.ChainMap)):\n    pass",
    "formatter-get-field": "import string\nstring.Formatter().get_field('0.__class__', [1], {})",
    "keyword-pattern-on-a-host-object": "import functools\nmatch functools.reduce:\n    case object(keys=k):\n        r = k\nr",
}


@pytest.mark.parametrize("script", ESCAPES.values(), ids=ESCAPES.keys())
def test_no_script_reaches_host_builtins_or_builds_classes_behind_the_guards(
    run: Run, script: str
) -> None:
    outcome = run(script)
    assert outcome.error is not None, f"the escape ran: {outcome.value!r}"
    assert outcome.error.code in ("CODE_SECURITY_VIOLATION", "CODE_RUNTIME_ERROR"), outcome.error
    assert "builtins" not in repr(outcome.value)


def test_type_shows_stand_ins_that_keep_identity_and_isinstance(run: Run) -> None:
    outcome = run(
        "class Box:\n    pass\n"
        "[type(1) is int, type(b'') is bytes, type(range(3)) is range, type(Box()) is Box,"
        " isinstance(b'', type(b'')), type(len).__name__, type(type(1)) is type,"
        " isinstance(int, type), type(ValueError('x')) is ValueError]"
    )
    assert (
        outcome.value == [True, True, True, True, True, "builtin_function_or_method"] + [True] * 3
    )


def test_typing_is_inert_for_the_host(run: Run) -> None:
    before = typing.List[complex]  # noqa: UP006 - the typing alias is what is checked
    outcome = run(
        "import typing\n"
        "class Sly:\n"
        "    def __hash__(self):\n"
        "        return hash(complex)\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "forms = [typing.List[Sly()], typing.Dict[str, int], typing.Optional[int]]\n"
        "try:\n"
        "    typing.Mapping.register(list)\n"
        "except Exception as e:\n"
        "    pass\n"
        "[repr(typing.Dict[str, int]), isinstance({}, typing.Mapping), isinstance([], typing.Mapping)]"
    )
    assert outcome.error is not None or outcome.value == [
        "typing.Dict[str, int]",
        True,
        False,
    ]
    assert not isinstance([], collections.abc.Mapping)
    assert typing.List[complex] == before  # noqa: UP006
    assert typing.List[complex].__args__ == (complex,)  # noqa: UP006


def test_a_host_class_level_container_is_not_writable(run: Run) -> None:
    table = dict(textwrap.TextWrapper.unicode_whitespace_trans)
    outcome = run("import textwrap\ntextwrap.TextWrapper.unicode_whitespace_trans[10] = ' X '")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"
    outcome = run("import textwrap\ntextwrap.TextWrapper(width=5).unicode_whitespace_trans")
    assert outcome.error is not None
    assert textwrap.TextWrapper.unicode_whitespace_trans == table


def test_copy_never_lends_the_host_its_state(run: Run) -> None:
    outcome = run(
        "import copy\n"
        "class M(dict):\n"
        "    def get(self, key, default=None):\n"
        "        self.got = default\n"
        "        return dict.get(self, key, default)\n"
        "copy.deepcopy([1], M())"
    )
    assert outcome.error is not None
    outcome = run(
        "import copy, string\n"
        "memo = {}\n"
        "copy.deepcopy([string.Formatter(), {'a': [1]}], memo)\n"
        "sorted(type(v).__name__ for v in memo.values())"
    )
    assert outcome.value == ["dict", "list", "list"]
    assert not hasattr(itertools.chain, "hijacked")


def test_copies_of_script_objects_are_real_copies(run: Run) -> None:
    outcome = run(
        "import copy\n"
        "class Point:\n"
        "    def __init__(self, xs):\n"
        "        self.xs = xs\n"
        "class Tags(list):\n"
        "    pass\n"
        "p = Point([1])\n"
        "q = copy.deepcopy(p)\n"
        "q.xs.append(2)\n"
        "t = copy.copy(Tags([1, 2]))\n"
        "[p.xs, q.xs, type(q) is Point, type(t).__name__, list(t)]"
    )
    assert outcome.value == [[1], [1, 2], True, "Tags", [1, 2]]


def test_an_error_whose_text_never_ends_is_stopped_inside_the_run(
    make_runner: Callable[..., Runner],
) -> None:
    run = make_runner(Limits(wall_seconds=1.0, cpu_seconds=1.0))
    outcome = run(
        "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise E()"
    )
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert run("1 + 1").value == 2


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_generator_finalizer_runs_watched_not_in_a_host_thread(
    make_runner: Callable[..., Runner],
) -> None:
    run = make_runner(Limits(wall_seconds=1.0, cpu_seconds=1.0))
    script = (
        "def g():\n"
        "    try:\n"
        "        yield 1\n"
        "    finally:\n"
        "        while True:\n"
        "            pass\n"
        "x = g()\n"
        "next(x)\n"
        "cycle = [x]\n"
        "cycle.append(cycle)\n"
        "x = cycle = None"
    )
    outcome = run(script)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    kept = run(
        "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\nkeep = g()\nnext(keep)"
    )
    assert kept.ok
    run.reset()  # the kept generator's finally runs now, watched, and the reset returns
    collected = threading.Thread(target=__import__("gc").collect)
    collected.start()
    collected.join(30)
    assert not collected.is_alive()
    assert run("2 + 2").value == 4


def test_reset_forgets_classes_and_guards_too(run: Run) -> None:
    Runner_ = run
    assert Runner_("class Box:\n    pass\nb = Box()\ntype(b).__name__").value == "Box"
    Runner_.reset()  # type: ignore[attr-defined]
    outcome = Runner_("b")
    assert outcome.error is not None
    assert "NameError" in outcome.error.message


SIZE_ATTACKS = {
    "int-subclass-rmul": "class I(int):\n    def __rmul__(self, other):\n        return 0\n[0] * I(10**9)",
    "str-subclass-len": "class S(str):\n    def __len__(self):\n        return 0\nS('ab') * 10**8",
    "deque-repeat": "import collections\ncollections.deque([1]) * 10**9",
    "small-literal-chain": "'a' * 64 * 64 * 64 * 64 * 64 * 64",
    "bytearray-percent": "bytearray(b'%0999999999d') % 1",
    "decimal-f-format": "import decimal\nformat(decimal.Decimal('1e99999999'), 'f')",
    "decimal-f-string": "import decimal\nd = decimal.Decimal('1e99999999')\nf'{d:f}'",
    "json-indent": "import json\njson.dumps([[[[[1]]]]] * 1000, indent=10**7)",
    "nfkd": "import unicodedata\nunicodedata.normalize('NFKD', '\\ufdfa' * 10**6)",
    "translate": "('a' * 10**6).translate({97: 'x' * 1000})",
    "unbound-ljust": "str.ljust('a', 10**9)",
    "print-long-sep": "print(*range(100), sep='x' * 10**6)",
    "three-argument-pow": "pow(3, 10**200000, 10**200000 + 7)",
    "sum-of-lists": "sum([[1] * 1000] * 100000, [])",
    "result-of-repeats": "s = 'x' * 10**6\n[s] * 700",
    "error-text": "raise ValueError('x' * 5 * 10**6)",
}


@pytest.mark.parametrize("script", SIZE_ATTACKS.values(), ids=SIZE_ATTACKS.keys())
def test_sizes_are_checked_on_exact_values(make_runner: Callable[..., Runner], script: str) -> None:
    run = make_runner(Limits(wall_seconds=3.0, cpu_seconds=3.0, max_output_chars=20_000))
    outcome = run(script)
    if outcome.error is None:  # printing is bounded by truncation, not refused
        assert len(outcome.output) <= 20_100
        return
    assert outcome.error.code in ("CODE_RESOURCE_LIMIT", "CODE_RUNTIME_ERROR"), outcome.error
    assert len(outcome.error.message) <= 5_000
    assert run("1 + 1").value == 2


def test_print_behaves_like_cpython(run: Run) -> None:
    outcome = run("print(1, 2, sep='')\nprint('a', 'b', sep='-', end='!')")
    assert outcome.output == "12\na-b!"
    bad = run("print(1, bad=1)")
    assert bad.error is not None
    assert "TypeError" in bad.error.message


def test_string_formatter_formats(run: Run) -> None:
    outcome = run("import string\nstring.Formatter().format('{0} and {x!r:>5}', 1, x='y')")
    assert outcome.value == "1 and   'y'"


def test_a_dataclass_with_a_string_annotation_works(run: Run) -> None:
    outcome = run(
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: 'int'\n    y: int = 2\nP(1)"
    )
    assert outcome.error is None, outcome.error
    assert "x=1" in str(outcome.value)


@pytest.mark.anyio
async def test_many_in_process_sessions_calling_sync_tools_at_once_all_finish() -> None:
    """Scripts wait in threads for tools that need threads: they must not share one pool."""
    from codeact import ToolCall, ToolRegistry, tool
    from codeact.executors._in_process import InProcessExecutor

    @tool
    def echo(text: str) -> str:
        """Echo a text (a sync tool: it runs in a worker thread)."""
        return text

    registry = ToolRegistry()
    registry.register(echo)
    executor = InProcessExecutor(limits=Limits(wall_seconds=60, cpu_seconds=60))
    results: dict[int, ScriptOutcome] = {}

    async def one(index: int) -> None:
        async def call_tool(name: str, arguments: dict[str, object]) -> object:
            return await registry.execute(ToolCall(f"c{index}", name, arguments))

        results[index] = await executor.run(
            f"echo('token-{index}')",
            session=f"s{index}",
            tools={"echo": ("text",)},
            call_tool=call_tool,  # type: ignore[arg-type]
        )

    import anyio

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for index in range(60):
                group.start_soon(one, index)
    await executor.aclose()
    assert {i: r.value for i, r in results.items()} == {i: f"token-{i}" for i in range(60)}


C_LEVEL = {
    "nested-maps": "m = [1]\nfor _ in range(1_000_000):\n    m = map(abs, m)\nlist(m)",
    "quadratic-count": "xs = list(range(200_000))\nsum(map(xs.count, xs))",
    "huge-gcd": "import math\nmath.gcd(3 ** 2_000_000 + 1, 7 ** 1_400_000 + 3)",
    "max-over-c-iterator": "max(map(abs, range(10**9)))",
    # the regex engine sees through (a+)+ at once; (a|aa)+ still backtracks, until its timeout
    "regex-backtracking": "import re\nre.match(r'(a|aa)+$', 'a' * 64 + 'b')",
}


@pytest.mark.parametrize("script", C_LEVEL.values(), ids=C_LEVEL.keys())
def test_c_level_freezes_and_crashes_are_contained_by_the_process_executor(script: str) -> None:
    runner = Runner(Limits(wall_seconds=2.0, cpu_seconds=2.0), kind="process")
    try:
        outcome = runner(script)
        assert outcome.error is not None
        assert outcome.error.code in ("CODE_RESOURCE_LIMIT", "CODE_RUNTIME_ERROR"), outcome.error
        assert runner("6 * 7").value == 42  # the host and the next run live on
    finally:
        runner.close()


HOST_WRITES = {
    "guard-behind-a-method": "f = 'x'.join\nf.func('abc', '__class__')",
    "pattern-read-kept-by-finally": (
        "import textwrap\nw = textwrap.TextWrapper()\ntry:\n    match w:\n"
        "        case object(unicode_whitespace_trans=d):\n            pass\n"
        "finally:\n    d[10] = 'X'"
    ),
    "positional-pattern-read": (
        "import textwrap\nclass P:\n    pass\n"
        "match textwrap.TextWrapper():\n    case object(width=w):\n        r = w\nr"
    ),
    "total-ordering-on-a-host-class": "import functools, textwrap\nfunctools.total_ordering(textwrap.TextWrapper)",
    "dataclass-on-a-host-class": "import dataclasses, textwrap\ndataclasses.dataclass(textwrap.TextWrapper)",
    "wraps-onto-a-host-function": "import functools, json\nfunctools.wraps(len)(json.dumps)",
    "formatter-over-a-fake-guard": "import string\ntype(string.Formatter())(1)",
    # a host's changing dunder, read unbound: the object it changes must be the script's
    "unbound-setattr-on-a-host-class": "import textwrap\nobject.__setattr__(textwrap.TextWrapper, 'width', 1)",
    "unbound-init-on-a-host-object": "import textwrap\nobject.__init__(textwrap.TextWrapper)\ndict.__init__(textwrap.TextWrapper.unicode_whitespace_trans, {})",
    "unbound-setitem-on-a-host-table": "import textwrap\ndict.__setitem__(textwrap.TextWrapper.unicode_whitespace_trans, 10, 'X')",
}

# Dunder methods a script may read do only what an operator or a builtin does unguarded:
# a host's size-guarded operator, name-reading hook or setattr of a dunder stays shut.
DUNDER_ATTACKS = {
    "str-mul-method": "'a'.__mul__(10**10)",
    "list-subclass-mul": "class L(list):\n    pass\nL([1]).__mul__(10**9)",
    "int-pow-method": "(10).__pow__(10**8)",
    "format-method": "'x'.__format__('>999999999')",
    "percent-method": "'%0999999999d'.__mod__(1)",
    "host-getattr-hook": "import math\nmath.__getattr__('pi')",
    "stand-in-init": "t = type(range)\nt.__init__(t)",
    "tool-call-dunder": "add.__call__(1, 2)",
    "setattr-a-dunder": "class A:\n    pass\na = A()\nobject.__setattr__(a, '__class__', type(1))",
    "bound-setattr-a-dunder": "class A:\n    pass\nA().__setattr__('__dict__', {})",
    "super-mul": "class S(str):\n    def f(self):\n        return super().__mul__(10**10)\nS('a').f()",
    "super-format": "class S(str):\n    def f(self):\n        return super().__format__('>999999999')\nS('a').f()",
}


@pytest.mark.parametrize("script", DUNDER_ATTACKS.values(), ids=DUNDER_ATTACKS.keys())
def test_dunder_methods_never_skip_a_guard(run: Run, script: str) -> None:
    outcome = run(script)
    assert outcome.error is not None, f"the attack ran: {outcome.value!r}"
    assert outcome.error.code in ("CODE_SECURITY_VIOLATION", "CODE_RESOURCE_LIMIT"), outcome.error
    assert "exceeded its" not in outcome.error.message  # refused, not stopped after the fact


@pytest.mark.parametrize("script", HOST_WRITES.values(), ids=HOST_WRITES.keys())
def test_nothing_a_script_does_changes_host_objects(run: Run, script: str) -> None:
    table = dict(textwrap.TextWrapper.unicode_whitespace_trans)
    methods = set(vars(textwrap.TextWrapper))
    outcome = run(script)
    assert textwrap.TextWrapper.unicode_whitespace_trans == table
    assert set(vars(textwrap.TextWrapper)) == methods
    if "positional" in script or "width" in script:
        assert outcome.error is None or outcome.error.code == "CODE_SECURITY_VIOLATION"
        return
    assert outcome.error is not None, outcome.value


def test_a_string_subclass_cannot_poison_a_host_cache(run: Run) -> None:
    import datetime

    outcome = run(
        "import datetime\n"
        "class Sly(str):\n"
        "    def __hash__(self):\n"
        "        return hash('%Y')\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "datetime.datetime.strptime('01', Sly('%m'))"
    )
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"
    assert datetime.datetime.strptime("2024", "%Y").year == 2024


@pytest.mark.parametrize(
    "script",
    # the starred list is a million long: unpacking it is quick even on a busy machine, so
    # the size guard, not the wall clock, is what stops the product
    ["x = [0] * 10**7\nx * 10", "xs = [0] * 10**6\n[*xs] * 64", "x = 'a' * 10**7\n2 * x"],
    ids=["name-times-small-int", "starred-literal", "small-int-times-name"],
)
def test_a_small_literal_factor_beside_a_large_sequence_is_still_sized(
    run: Run, script: str
) -> None:
    outcome = run(script)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "limit 10,000,000" in outcome.error.message
