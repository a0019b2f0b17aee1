"""Host code never acts on a script's objects: the findings of the fourth attack pass.

Each finding is the script that reproduced it, run on both executors; each test checks
the effect (what the host kept, what a run could build, whether it ended), not only
the code. The rule they share: a host function never runs with an object the script
controls as its receiver; sizes are checked on what an operation will make; a stop in
flight ends the run whatever a ``finally`` raises in front of it; classes every session
shares refuse writes; and a tool never runs in the script's decimal context.
"""

from __future__ import annotations

import collections
import decimal
import enum
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import regex

from codeact import ErrorCode, Runtime, ToolCall, ToolRegistry, tool
from codeact.contract._json import thaw
from codeact.executors._in_process import InProcessExecutor
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits, ScriptOutcome
from codeact.sandbox._errors import SecurityViolation
from codeact.sandbox._ownership import BASE_CLASSES, READABLE, SCRIPT_CLASSES
from codeact.sandbox._script_classes import _check_class_keywords
from codeact.sandbox._sealed import is_sealed

from .conftest import Runner

Run = Callable[[str], ScriptOutcome]
SMALL = Limits(wall_seconds=4.0, cpu_seconds=4.0, memory_bytes=256 * 1024 * 1024)


def _script(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


# 1. A host class's method on the script's object ----------------------------------------

PATH_PARENTS_INIT = _script(
    """
    from pathlib import PurePosixPath
    class Holder:
        pass
    class FakePath:
        _drv = ''
        _root = ''
        _parts = []
        _tail = []
    held = Holder()
    type(PurePosixPath('a').parents).__init__(held, FakePath)
    sorted(vars(held))
    """
)


def test_a_host_init_never_runs_on_the_scripts_object(run: Runner) -> None:
    outcome = run(PATH_PARENTS_INIT)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_SECURITY_VIOLATION
    assert "acts only on _PathParents objects" in outcome.error.message


CALL_PASS_FINDINGS = {
    # Counter.copy(cls) is cls.__class__(cls): the real type, from a plain method read
    "a-host-method-on-a-script-class": "import collections\n"
    "class Bare:\n    pass\ncollections.Counter.copy(Bare)",
    # the same method, inherited by the script's own subclass of a reviewed base
    "an-inherited-host-method-on-a-script-class": "import collections\n"
    "class Tally(collections.Counter):\n    pass\nclass Bare:\n    pass\nTally.copy(Bare)",
    # localcontext's __enter__ on a script object would store the host's decimal context
    "localcontext-enter-on-a-script-object": "import decimal\n"
    "class Holder:\n    pass\ndecimal.localcontext.__enter__(Holder())",
    # EnumType's functional form, on a script's enum, built a class no check had seen
    "an-enum-made-by-a-call": "import enum\nclass Base(enum.Enum):\n    pass\n"
    "Base('Made', {'A': 1, '__getattribute__': len})",
}


@pytest.mark.parametrize("finding", sorted(CALL_PASS_FINDINGS))
def test_what_the_crawlers_call_pass_found_is_refused(run: Runner, finding: str) -> None:
    outcome = run(CALL_PASS_FINDINGS[finding])
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_SECURITY_VIOLATION, outcome.error


RANGE_SEARCHES = {
    "contains": "class Index:\n    def __index__(self):\n        return -1\nIndex() in range(10 ** 18)",
    "count": "class Any:\n    pass\nrange(10 ** 18).count(Any())",
    "index": "class Any:\n    pass\nrange(10 ** 18).index(Any())",
}


@pytest.mark.parametrize("search", sorted(RANGE_SEARCHES))
def test_searching_a_long_range_for_a_non_int_is_stopped_by_the_limit(
    make_runner: Callable[..., Runner], search: str
) -> None:
    # found by the call pass: CPython compares each of 10**18 items in one C loop, which
    # holds the interpreter (the whole host, in-process) until it ends, years later
    run = make_runner(Limits(wall_seconds=1.0, cpu_seconds=1.0))
    done: list[ScriptOutcome] = []
    worker = threading.Thread(target=lambda: done.append(run(RANGE_SEARCHES[search])))
    worker.start()
    worker.join(timeout=120)  # a generous bound on an event, not a measured duration
    assert done, "the search was not stopped"
    assert done[0].error is not None
    assert done[0].error.code == ErrorCode.CODE_RESOURCE_LIMIT


def test_a_reviewed_bases_own_init_still_serves_its_subclasses(run: Runner) -> None:
    outcome = run(
        _script(
            """
            import collections
            class Tally(collections.Counter):
                def __init__(self, text):
                    collections.Counter.__init__(self, text)
            class Failure(Exception):
                def __init__(self, why):
                    Exception.__init__(self, why)
            [sorted(Tally('abca').items()), str(Failure('no'))]
            """
        )
    )
    assert outcome.error is None
    assert outcome.value == [[["a", 2], ["b", 1], ["c", 1]], "no"]


def test_dataclass_refuses_a_field_name_that_would_be_code(tmp_path: Path) -> None:
    from codeact.stdlib import _dataclasses

    marker = tmp_path / "ran"
    name = f"a, *, b=open({str(marker)!r}, 'w')"
    made = type("Injected", (), {"__annotations__": {name: int}})
    SCRIPT_CLASSES.add(made)  # as if a script had made it
    with pytest.raises(SecurityViolation, match="not a valid dataclass field name"):
        _dataclasses.dataclass(made)
    assert not marker.exists()


def test_asdict_copies_with_the_scripts_copy_never_the_hosts(run: Runner) -> None:
    outcome = run(
        _script(
            """
            from dataclasses import dataclass, asdict, astuple, replace
            import io
            class Leaf:
                def __init__(self, n):
                    self.n = n
            @dataclass
            class Box:
                leaf: object
                items: list
            box = Box(Leaf(3), [1, (2, 3)])
            as_dict = asdict(box)
            as_tuple = astuple(box)
            stream = io.StringIO('host state')
            shared = asdict(Box(stream, []))['leaf'] is stream
            [as_dict['leaf'].n, as_dict['leaf'] is box.leaf, as_dict['items'],
             as_tuple[1], replace(box, items=[]).items, shared]
            """
        )
    )
    assert outcome.error is None, outcome.error
    # the host's deepcopy would rebuild the stream from its pickled state; the script's
    # copy makes a buffer of the same text itself, a new one, as CPython's asdict does
    assert outcome.value == [
        3,
        False,
        [1, [2, 3]],
        [1, [2, 3]],
        [],
        False,
    ]


def test_asdict_refuses_what_the_scripts_decorator_did_not_make(run: Runner) -> None:
    outcome = run(
        _script(
            """
            import dataclasses
            try:
                dataclasses.asdict(dataclasses.field())
            except TypeError as error:
                r = str(error)
            r
            """
        )
    )
    assert outcome.value == "asdict() should be called on dataclass instances"


def test_class_keywords_never_reach_a_hosts_init_subclass() -> None:
    """``class B(Base, kind=...)`` hands its keywords to the first ``__init_subclass__`` along
    the bases: refused when that, or any along the way, is host code (none of the reviewed
    bases has one today: the rule holds for the next one added)."""

    class HostBase:
        def __init_subclass__(cls, **options: object) -> None:
            super().__init_subclass__()

    with pytest.raises(SecurityViolation, match="not the script's"):
        _check_class_keywords((HostBase,), type)
    with pytest.raises(SecurityViolation, match="not allowed with a EnumType base"):
        _check_class_keywords((), enum.EnumType)
    _check_class_keywords((object,), type)  # object's own refuses them as CPython does


FUNCTIONAL_FORMS = {
    "enum": "import enum\nMade = enum.Enum('Made', 'A B')",
    "int-enum": "import enum\nMade = enum.IntEnum('Made', ['A', 'B'], start=5)",
    "script-enum": "import enum\nclass Base(enum.Enum):\n    pass\nMade = Base('Made', {'A': 1})",
    "named-tuple": "import typing\nMade = typing.NamedTuple('Made', [('a', int)])",
    "typed-dict": "import typing\nMade = typing.TypedDict('Made', {'a': int}, total=False)",
}


@pytest.mark.parametrize("form", sorted(FUNCTIONAL_FORMS))
def test_a_functional_form_makes_the_scripts_own_class(run: Runner, form: str) -> None:
    """A class a module's functional form makes is the script's, as a class statement's
    is: the script may set an attribute on it (never on a host's class)."""
    outcome = run(FUNCTIONAL_FORMS[form] + "\nMade.note = 'set'\nMade.note")
    assert outcome.error is None, outcome.error
    assert outcome.value == "set"


def test_a_descriptor_in_a_functional_enum_is_named_on_the_scripts_class(run: Runner) -> None:
    # EnumType's own form handed __set_name__ a class no statement had made; built through
    # the session's builder, the owner is the script's class, which the script may write
    outcome = run(
        _script(
            """
            import enum
            named = []
            class Tagged:
                def __set_name__(self, owner, name):
                    owner.tagged = name  # a host class would refuse this write
                    named.append(name)
                def __get__(self, obj, kind=None):  # a descriptor: not a member
                    return 'described'
            Made = enum.Enum('Made', {'a': Tagged(), 'B': 2})
            (named, [member.name for member in Made], Made.B.a)
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [["a"], ["B"], "described"]


FUNCTIONAL_BODIES = {
    # what EnumType's own form would have bound on the class, unchecked
    "getattribute": "enum.Enum('E', {'A': 1, '__getattribute__': len})",
    "finalizer": "enum.Enum('E', [('A', 1), ('__del__', print)])",
    "sunder-hook": "enum.Enum('E', {'_generate_next_value_': len, 'A': 1})",
    "script-enum-class": "class B(enum.Enum):\n    pass\nB('E', {'__reduce__': print})",
    "named-tuple-dunder": "typing.NamedTuple('P', [('__getattribute__', int)])",
}


@pytest.mark.parametrize("body", sorted(FUNCTIONAL_BODIES))
def test_a_functional_form_binds_only_what_a_class_statement_may(run: Runner, body: str) -> None:
    outcome = run("import enum, typing\n" + FUNCTIONAL_BODIES[body])
    assert outcome.error is not None
    assert outcome.error.kind in {"SecurityViolation", "ValueError"}, outcome.error


def test_an_enums_start_is_an_int_never_the_scripts_number(run: Runner) -> None:
    # EnumType adds 1 to the last value: a script's number would run its __add__ in enum.py
    outcome = run(
        _script(
            """
            import enum
            class Count:
                def __add__(self, other):
                    return 1
            enum.Enum('E', 'A B', start=Count())
            """
        )
    )
    assert outcome.error is not None
    assert outcome.error.message == "TypeError: an enum's start must be an int"


COPIED_HOST_METHODS = {
    # EnumType puts int's own __format__ in an IntEnum's namespace: read from there, it
    # would format with any width, past the guard every format goes through
    "int-enum-class": "import enum\nclass Level(enum.IntEnum):\n    LOW = 1\n"
    "Level.__format__(Level.LOW, '999999999d')",
    "int-enum-member": "import enum\nclass Level(enum.IntEnum):\n    LOW = 1\n"
    "Level.LOW.__format__('999999999d')",
    "functional-str-enum": "import enum\nMode = enum.StrEnum('Mode', 'FAST')\n"
    "Mode.FAST.__format__('>999999999')",
}


@pytest.mark.parametrize("copied", sorted(COPIED_HOST_METHODS))
def test_a_host_method_copied_onto_a_script_class_is_the_host_types(
    run: Runner, copied: str
) -> None:
    outcome = run(COPIED_HOST_METHODS[copied])
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_SECURITY_VIOLATION, outcome.error
    assert "'__format__'" in outcome.error.message


def test_an_int_enum_formats_through_the_width_guard(run: Runner) -> None:
    outcome = run(
        "import enum\nclass Level(enum.IntEnum):\n    LOW = 1\n"
        "shown = f'{Level.LOW:>4}|{Level.LOW:03d}'\nf'{Level.LOW:999999999d}'"
    )
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_RESOURCE_LIMIT, outcome.error
    kept = run("shown")
    assert kept.value == "   1|001"


def test_no_class_is_built_outside_a_scripts_run() -> None:
    """The builder is the running script's session's: host code, or a thread where no
    script runs, has none to make a class with."""
    from codeact.sandbox._script_classes import build_class, functional_enum

    with pytest.raises(SecurityViolation, match="running script"):
        functional_enum(enum.Enum, "Made", "A B")
    with pytest.raises(SecurityViolation, match="running script"):
        build_class("Made", (), {})


def test_a_protocol_check_runs_no_code_of_the_object(run: Runner) -> None:
    """``isinstance(x, SomeProtocol)`` looks names up in class and instance dictionaries:
    the object's ``__getattr__`` never runs (typing's ``hasattr`` would run it, so here an
    object that only answers through ``__getattr__`` does not match)."""
    outcome = run(
        _script(
            """
            from typing import Protocol, runtime_checkable
            @runtime_checkable
            class Closer(Protocol):
                def close(self): ...
            class Spy:
                asked = []
                def __getattr__(self, name):
                    Spy.asked.append(name)
                    return lambda: None
            class Real:
                def close(self):
                    pass
            [isinstance(Spy(), Closer), Spy.asked, isinstance(Real(), Closer)]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [False, [], True]


JSON_ENCODER_MISUSES = {  # script -> the kind of error that ends it
    "encode-on-a-host-object": (
        "import json\njson.JSONEncoder.encode(json, 1)",
        "SecurityViolation",
    ),
    "default-taken-from-a-host-object": (
        "import json, io\njson.JSONEncoder.encode(io.StringIO('x'), {1})",
        "SecurityViolation",
    ),
    "a-class-that-is-no-encoder": ("import json\njson.dumps(1, cls=dict)", "TypeError"),
}


@pytest.mark.parametrize("misuse", sorted(JSON_ENCODER_MISUSES))
def test_the_json_encoder_acts_only_on_its_own_objects(run: Runner, misuse: str) -> None:
    """The encoder base reads ``default`` and its options from the object it is given:
    never a host object handed in as ``self``, and ``cls`` must be an encoder class."""
    script, kind = JSON_ENCODER_MISUSES[misuse]
    outcome = run(script)
    assert outcome.error is not None
    assert outcome.error.kind == kind, outcome.error


def test_the_json_encoder_class_is_shared_and_refuses_writes(run: Runner) -> None:
    run("import json\nclass Mine(json.JSONEncoder):\n    item_separator = '; '")
    outcome = run("import json\njson.JSONEncoder.item_separator = '|'")
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.CODE_SECURITY_VIOLATION
    assert run("import json\njson.dumps([1, 2])").value == "[1, 2]"


def test_singledispatch_shows_the_classes_as_the_script_gave_them(run: Runner) -> None:
    """Registering ``int`` files the real type behind the script's stand-in; the registry
    hands back the stand-in, never the host's class (whose constructor is unguarded)."""
    outcome = run(
        _script(
            """
            import functools
            @functools.singledispatch
            def f(x):
                return 'x'
            f.register(int, lambda x: 'int')
            f.register(type, lambda x: 'type')
            keys = list(f.registry)
            [keys[1] is int, keys[2] is type, f(3), f(int), f.dispatch(bool)(1)]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [True, True, "int", "type", "int"]


def test_traceback_tells_text_of_the_scripts_frames_and_writes_through_the_guards(
    run: Runner,
) -> None:
    """``traceback`` hands out text naming only the script's own frames (the guards' and
    the host's modules' never appear), and writes to a ``file`` as the script would."""
    outcome = run(
        _script(
            """
            import traceback, json
            class Sink:
                def __init__(self):
                    self.parts = []
                def write(self, text):
                    self.parts.append(text)
            sink = Sink()
            try:
                json.loads('{bad')
            except ValueError:
                text = traceback.format_exc()
                traceback.print_exc(file=sink)
            [text.count('File '), 'codeact' in text, 'json' in text.splitlines()[1],
             ''.join(sink.parts) == text]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [1, False, False, True]
    refused = run(
        "import traceback, sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
        "    traceback.print_exc(file=sys)"
    )
    assert refused.error is not None
    assert "write" in refused.error.message


def test_copy_hooks_count_only_as_the_script_wrote_them(run: Runner) -> None:
    """``copy`` calls the script's ``__getnewargs__``, ``__getstate__`` and ``__setstate__``
    as script code; a hook a factory put on a script's class (namedtuple's
    ``__getnewargs__``) is host code: never read, and copying goes on without it."""
    outcome = run(
        _script(
            """
            import collections, copy
            Pair = collections.namedtuple('Pair', 'a b')
            pair = Pair(1, [2])
            class Kept:
                def __init__(self):
                    self.calls = []
                def __getstate__(self):
                    self.calls.append('get')
                    return {'calls': list(self.calls)}
                def __setstate__(self, state):
                    self.calls = state['calls'] + ['set']
            kept = Kept()
            deep = copy.deepcopy(pair)
            [type(deep).__name__, deep.b is pair.b, deep == pair,
             copy.deepcopy(kept).calls, kept.calls, kept.__getstate__.__name__]
            """
        )
    )
    assert outcome.error is None, outcome.error
    refused = run("pair.__getnewargs__")
    assert refused.error is not None
    assert refused.error.code == ErrorCode.CODE_SECURITY_VIOLATION
    assert outcome.value == [
        "Pair",
        False,
        True,
        ["get", "set"],
        ["get"],
        "__getstate__",
    ]


# 2. Shared classes refuse writes ----------------------------------------------------------


def test_every_class_the_runtime_shares_between_sessions_refuses_writes(run: Runner) -> None:
    run("1")  # a session exists: the classes were sealed before its first script
    ours = [
        kind
        for kind in (*READABLE, *BASE_CLASSES)
        if isinstance(kind, type) and kind.__module__.startswith(("codeact", "stdlib_bindings"))
    ]
    import codeact.stdlib._system as system

    ours += [system.ScriptStream, system.Facade]
    assert len(ours) >= 10
    for kind in ours:
        assert is_sealed(kind), kind
        with pytest.raises(TypeError, match="immutable"):
            type.__setattr__(kind, "write", print)
    assert not is_sealed(collections.Counter)  # the host's own classes are left alone
    assert not any(k in SCRIPT_CLASSES for k in ours)


def test_every_class_a_shared_module_writes_is_sealed_whatever_name_it_shows(
    run: Runner,
) -> None:
    """Read from the source, not the names: a class statement of the interpreter's or the
    facades' modules makes a class every session shares, and one that shows a standard
    module's name and has no function of its own (``queue.Empty``, ``pathlib.PosixPath``)
    is sealed too."""
    import ast
    import inspect
    import sys

    run("1")  # a session exists: the classes were sealed before its first script
    modules = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith(("codeact.sandbox.", "codeact.stdlib."))
    ]
    checked = []
    for module in modules:
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                kind = vars(module)[node.name]
                assert is_sealed(kind), f"{module.__name__}.{node.name}"
                checked.append(kind)
    renamed = [k for k in checked if not k.__module__.startswith("codeact")]
    assert len(checked) > 100
    assert any(k.__module__ == "queue" and k.__name__ == "Empty" for k in renamed)


# 3. A stop in flight cannot be swallowed -------------------------------------------------

STOP_SHAPES = {
    "finally-raises-then-except": """
        n = 0
        while True:
            try:
                try:
                    while True:
                        pass
                finally:
                    raise ValueError('in front')
            except ValueError:
                n += 1
                if n > 50:
                    break
        print('survived', n)
        """,
    "security-stop-behind-a-finally": """
        def f():
            pass
        for i in range(3):
            try:
                try:
                    getattr(f, '__glob' + 'als__')
                finally:
                    raise KeyError('in front')
            except KeyError:
                pass
        print('survived')
        """,
    "exit-suppresses-what-a-finally-raised": """
        class Quiet:
            def __enter__(self):
                return self
            def __exit__(self, *details):
                return True
        for i in range(50):
            with Quiet():
                try:
                    while True:
                        pass
                finally:
                    raise ValueError('in front')
        print('survived')
        """,
    "contextlib-suppress": """
        import contextlib
        for i in range(50):
            with contextlib.suppress(ValueError):
                try:
                    while True:
                        pass
                finally:
                    raise ValueError('in front')
        print('survived')
        """,
    "finally-returns": """
        def f():
            try:
                try:
                    while True:
                        pass
                finally:
                    raise ValueError('in front')
            finally:
                return 'swallowed'
        for i in range(50):
            f()
        print('survived')
        """,
    "in-a-coroutine": """
        import asyncio
        async def spin():
            try:
                try:
                    while True:
                        pass
                finally:
                    raise ValueError('in front')
            except ValueError:
                return 'swallowed'
        async def main():
            for i in range(50):
                await spin()
            print('survived')
        await main()
        """,
}


@pytest.mark.parametrize("shape", sorted(STOP_SHAPES))
def test_a_stop_in_flight_ends_the_run_whatever_stands_in_front(
    make_runner: Callable[..., Runner], shape: str
) -> None:
    run = make_runner(Limits(wall_seconds=1.0, cpu_seconds=1.0))
    outcome = run(_script(STOP_SHAPES[shape]))
    assert outcome.error is not None
    assert outcome.error.code in (ErrorCode.CODE_RESOURCE_LIMIT, ErrorCode.CODE_SECURITY_VIOLATION)
    assert "survived" not in outcome.output
    if shape == "security-stop-behind-a-finally":
        assert outcome.error.code == ErrorCode.CODE_SECURITY_VIOLATION
    else:
        assert "limit" in outcome.error.message


# 4. Sizes are checked on what an operation makes ------------------------------------------

INDEX = "class Big:\n    def __index__(self):\n        return 10 ** 9\n"
LYING_INT = "class Small(int):\n    def __abs__(self):\n        return 0\n    def __gt__(self, other):\n        return False\n"

OVERSIZED = {
    "list-times-index": INDEX + "[0] * Big()",
    "str-times-index": INDEX + "'ab' * Big()",
    "bytes-of-index": INDEX + "bytes(Big())",
    "bytearray-of-index": INDEX + "bytearray(Big())",
    "ljust-to-index": INDEX + "'x'.ljust(Big())",
    "percent-star-width": LYING_INT + "'%*d' % (Small(10 ** 9), 1)",
    "comb-of-index": INDEX + "import math\nmath.comb(Big(), 100_000)",
    "int-times-lying-int": LYING_INT + "Small(1 << 3_000_000) * Small(1 << 3_000_000)",
    "round-an-int": "round(5, -10 ** 8)",
    "fraction-products": "from fractions import Fraction\nf = Fraction(3 ** 1_000_000, 7)\n"
    "for i in range(8):\n    f = f * f + Fraction(1, 3)",
    "round-a-fraction": "from fractions import Fraction\nround(Fraction(1, 3), 10 ** 8)",
    "fraction-of-a-string": "from fractions import Fraction\nFraction('1e99999999')",
    "int-of-a-decimal": "from decimal import Decimal\nint(Decimal('1e600000'))",
    "mean-of-decimals": "import statistics\nfrom decimal import Decimal\n"
    "statistics.mean([Decimal('1e600000'), Decimal(1)])",
    "decimal-context-exponent": "import decimal\ndecimal.Context(Emax=10 ** 8)",
    "pattern-sub-template": "import re\nre.compile('a').sub('\\\\g<0>' * 200, 'a' * 200_000)",
    "pattern-sub-callable": "import re\nre.compile('a').sub(lambda m: 'x' * 100_000, 'a' * 5_000)",
    "match-expand": "import re\nlen(re.search('(a+)', 'a' * 200_000).expand('\\\\1' * 500))",
    "module-sub-callable": "import re\nre.sub('a', lambda m: 'y' * 100_000, 'a' * 5_000)",
}


@pytest.mark.parametrize("attack", sorted(OVERSIZED))
def test_an_oversized_result_is_refused_before_it_is_made(
    make_runner: Callable[..., Runner], attack: str
) -> None:
    run = make_runner(SMALL)
    outcome = run(OVERSIZED[attack])
    assert outcome.error is not None, attack
    assert outcome.error.code == ErrorCode.CODE_RESOURCE_LIMIT, outcome.error
    # refused by a size guard, not stopped by the clock or the memory limit after the fact
    assert not outcome.error.message.startswith("the script exceeded its")
    assert "memory" not in outcome.error.message


def test_the_sized_forms_still_compute_what_python_computes(run: Runner) -> None:
    outcome = run(
        _script(
            """
            import math, re
            from fractions import Fraction
            from decimal import Decimal
            class Three:
                def __index__(self):
                    return 3
            f = Fraction(1, 3)
            [
                [0] * Three(), len(bytes(Three())), 'x'.ljust(Three()) + '|', math.comb(Three(), 2),
                str(f * f + 1), str(round(Fraction(22, 7), 2)), str(2 ** Fraction(3)),
                round(1234, -2), int(Decimal('1e3')), type(f * f) is Fraction,
                re.compile('(a)').sub(lambda m: m.group(1).upper(), 'banana'),
                re.search('(n)(a)', 'banana').expand(r'\\2\\1'), re.I | re.M,
                type(re.I) is int,
            ]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [
        [0, 0, 0],
        3,
        "x  |",
        3,
        "10/9",
        "157/50",
        "8",
        1200,
        1000,
        True,
        "bAnAnA",
        "an",
        10,
        True,
    ]


def test_regex_flags_never_grow_a_table_of_the_process(make_runner: Callable[..., Runner]) -> None:
    run = make_runner()
    before = len(regex.RegexFlag._value2member_map_)
    outcome = run("import re\n[type(re.I | (i << 24)).__name__ for i in range(2000)][-1]")
    assert outcome.error is None
    assert outcome.value == "int"
    assert len(regex.RegexFlag._value2member_map_) == before


# 5. A tool never runs in the script's decimal context ------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("executor", [InProcessExecutor, ProcessExecutor])
async def test_a_sync_tool_computes_in_the_hosts_decimal_context(executor: type) -> None:
    @tool
    def seventh() -> str:
        """One seventh, as the host's decimal arithmetic computes it."""
        return str(decimal.Decimal(1) / decimal.Decimal(7))

    registry = ToolRegistry()
    registry.register(seventh)
    expected = str(decimal.Decimal(1) / decimal.Decimal(7))
    host_precision = decimal.getcontext().prec
    script = _script(
        """
        import decimal
        decimal.getcontext().prec = 3
        mine = str(decimal.Decimal(2) / decimal.Decimal(4))
        [mine, seventh()]
        """
    )
    async with Runtime(registry, mode="code", executor=executor(limits=Limits())) as runtime:
        result = await runtime.execute(ToolCall("c1", "run_code", {"code": script}))
        again = await runtime.execute(
            ToolCall("c2", "run_code", {"code": "str(decimal.getcontext().prec)"})
        )
    assert not result.is_error, result.text
    assert thaw(result.value)["result"] == ["0.5", expected]  # type: ignore[index]
    assert thaw(again.value)["result"] == "3"  # type: ignore[index]  # the session keeps its own
    assert decimal.getcontext().prec == host_precision


# typing.get_type_hints: a string annotation is read, never run ---------------------------

LOUD = _script(
    """
    import typing
    from typing import Annotated
    heard = []
    class Loud:
        def __class_getitem__(cls, item):
            heard.append('class_getitem')
            return int
        def __or__(self, other):
            heard.append('or')
            return int
        def __eq__(self, other):
            heard.append('eq')
            return True
        def __hash__(self):
            return 0
        def __getattr__(self, name):
            heard.append('getattr')
            return int
        def __repr__(self):
            heard.append('repr')
            return 'Loud'
    loud = Loud()
    def make():
        heard.append('call')
        return int
    """
)
# What CPython's eval would run of the script's: each refused before anything runs.
RUN_BY_EVAL = {
    "a-call": ("'make()'", "TypeError"),
    "a-scripts-class-getitem": ("'Loud[int]'", "TypeError"),
    "a-scripts-or": ("'loud | int'", "TypeError"),
    "a-scripts-getattr": ("'loud.anything'", "TypeError"),
    "a-dunder-attribute": ("'Loud.__dict__'", "AttributeError"),
    "a-guards-name": ("'_getattr_'", "NameError"),
    "the-builtins-name": ("'__builtins__'", "NameError"),
    "an-import": ("'__import__(\"os\")'", "TypeError"),
}


@pytest.mark.parametrize("case", sorted(RUN_BY_EVAL))
def test_get_type_hints_runs_nothing_a_string_annotation_names(run: Runner, case: str) -> None:
    annotation, error = RUN_BY_EVAL[case]
    outcome = run(
        LOUD
        + f"def target(x: {annotation}) -> None:\n    pass\n"
        + "try:\n    typing.get_type_hints(target)\n    raised = None\n"
        + "except Exception as caught:\n    raised = type(caught).__name__\n"
        + "[raised, heard]"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [error, []]


def test_get_type_hints_strips_metadata_without_comparing_it(run: Runner) -> None:
    """``Annotated`` metadata is the script's object: dropped by identity, never ``==``."""
    outcome = run(
        LOUD
        + "def target(x: Annotated[int, loud], y: 'Annotated[str, loud]') -> None:\n    pass\n"
        + "plain = typing.get_type_hints(target)\n"
        + "extras = typing.get_type_hints(target, include_extras=True)\n"
        + "[plain['x'] is int, plain['y'] is str, extras['x'].__metadata__[0] is loud, heard]"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [True, True, True, []]


def test_get_type_hints_never_reads_the_namespace_of_host_code(run: Runner) -> None:
    """A host function's annotations name its module's objects: refused, not resolved."""
    outcome = run(
        _script(
            """
            import math, typing
            try:
                typing.get_type_hints(typing.get_origin)  # the runtime's, annotated
            except TypeError as caught:
                message = str(caught)
            [message, typing.get_type_hints(math.sqrt), typing.get_type_hints(print)]
            """
        )
    )
    assert outcome.error is None, outcome.error
    message, unannotated, builtin = outcome.value
    assert "the script's own functions" in message
    assert unannotated == builtin == {}  # nothing to resolve, as CPython finds them


# graphlib: the sorter keys a dict by the nodes, so only the host's own values are nodes ---

GRAPH_MISUSES = {
    # a script class as a node: its __hash__ and __eq__ would run inside the sorter
    "a-scripts-node": "TopologicalSorter().add(Loud())",
    "a-scripts-predecessor": "TopologicalSorter().add('a', Loud())",
    "a-scripts-node-in-a-tuple": "TopologicalSorter().add(('a', Loud()))",
    "a-scripts-node-marked-done": "s = TopologicalSorter({'a': []})\ns.prepare()\ns.done(Loud())",
    # the graph and predecessors are read by the sorter: the script's own would run there
    "a-scripts-mapping": "TopologicalSorter(Graph())",
    "a-generator-of-predecessors": "TopologicalSorter({'a': (heard.append('gen') for x in 'b')})",
    "a-scripts-subclass-of-str": "TopologicalSorter().add(Text('a'))",
}
GRAPH_SETUP = _script(
    """
    from graphlib import TopologicalSorter
    heard = []
    class Loud:
        def __hash__(self):
            heard.append('hash')
            return 0
        def __eq__(self, other):
            heard.append('eq')
            return True
    class Graph(dict):
        def items(self):
            heard.append('items')
            return [('a', ['b'])]
    class Text(str):  # a str to C, with a __dict__ of the script's
        pass
    """
)


@pytest.mark.parametrize("misuse", sorted(GRAPH_MISUSES))
def test_graphlib_runs_nothing_of_the_scripts(run: Runner, misuse: str) -> None:
    outcome = run(
        GRAPH_SETUP
        + "try:\n"
        + textwrap.indent(GRAPH_MISUSES[misuse], "    ")
        + "\n    raised = None\nexcept TypeError as caught:\n    raised = 'TypeError'\n"
        + "[raised, heard]"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == ["TypeError", []]


def test_a_failing_callback_is_never_described_with_the_scripts_objects(run: Runner) -> None:
    """asyncio describes a callback that raised (reprlib on its arguments, attribute reads
    on the callable) before the loop's handler hears of it: host code on the script's
    objects. The script's loop schedules each callback inside an object of its own."""
    outcome = run(
        "import asyncio\nseen = []\nclass Loud:\n"
        "    def __repr__(self):\n        seen.append('repr')\n        return 'loud'\n"
        "    def __getattr__(self, name):\n        seen.append(name)\n"
        "        raise AttributeError(name)\n"
        "    def __call__(self, x):\n        raise ValueError('x')\n"
        "def boom(x):\n    raise ValueError('x')\n"
        "async def main():\n    loop = asyncio.get_running_loop()\n"
        "    loop.call_soon(boom, Loud())\n    loop.call_later(0.001, Loud(), Loud())\n"
        "    future = loop.create_future()\n    future.add_done_callback(Loud())\n"
        "    future.set_result(1)\n    await asyncio.sleep(0.05)\n    return 'ran'\n"
        "(asyncio.run(main()), seen)"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == ["ran", []]


class _HostKey(str):
    """A key of the host's own, for a zone the host made in zoneinfo's process cache."""


def test_a_zone_key_reaches_the_lookup_as_a_plain_string(run: Runner) -> None:
    # zoneinfo's lookup is host Python (path checks and joins): a str subclass's own
    # methods would run in it, with the host's frames on the stack. And a zone the host
    # made (in the class's cache, keyed by its own object) is never handed to a script.
    import zoneinfo

    hosts = zoneinfo.ZoneInfo(_HostKey("Europe/Paris"))
    outcome = run(
        _script(
            """
            import zoneinfo
            called = []
            class Key(str):
                def startswith(self, *args):
                    called.append('startswith')
                    return False
                def split(self, *args):
                    called.append('split')
                    return ['UTC']
                def __fspath__(self):
                    called.append('fspath')
                    return 'UTC'
            zone = zoneinfo.ZoneInfo(Key('Europe/Paris'))
            class Place:
                def __fspath__(self):
                    called.append('place')
                    return 'UTC'
            try:
                zoneinfo.ZoneInfo(Place())
            except TypeError as error:
                refused = str(error)
            zone.key, type(zone.key).__name__, called, refused
            """
        )
    )
    assert outcome.ok, outcome.error
    assert outcome.value == [
        "Europe/Paris",
        "str",
        [],
        "expected str, bytes or os.PathLike object, not Place",
    ]
    assert type(hosts.key) is _HostKey  # still the host's, in the cache the script never read


def test_copy_typing_and_re_never_call_what_a_script_wrote(run: Runner) -> None:
    # the copy facade reads a Counter's items with dict's own method, a union's members are
    # compared by identity and plain values, and re.escape refuses what is not text: none
    # of them reads, hashes or compares through a method the script defined
    outcome = run(
        _script(
            """
            import collections, copy, re, typing
            called = []
            class Tally(collections.Counter):
                def items(self):
                    called.append('items')
                    return []
                @property
                def default_factory(self):
                    called.append('default_factory')
                    return list
            class Member:
                def __eq__(self, other):
                    called.append('eq')
                    return True
                def __hash__(self):
                    called.append('hash')
                    return 1
                def __str__(self):
                    called.append('str')
                    return 'x'
            tally = Tally(a=2)
            copies = [dict(copy.copy(tally)), dict(copy.deepcopy(tally))]
            union = typing.Union[Member(), Member(), int]
            try:
                re.escape(Member())
            except TypeError as error:
                refused = str(error)
            copies, len(typing.get_args(union)), refused, called
            """
        )
    )
    assert outcome.ok, outcome.error
    assert outcome.value == [
        [{"a": 2}, {"a": 2}],
        3,
        "decoding to str: need a bytes-like object, Member found",
        [],
    ]


def test_textwrap_and_json_hand_their_code_exact_text(run: Runner) -> None:
    # textwrap's and json's Python code would call a str subclass's methods (expandtabs,
    # splitlines, startswith, __len__), and a decoder's __init__ a subclass's __setattr__
    outcome = run(
        _script(
            """
            import json
            import textwrap
            calls = []
            class S(str):
                def expandtabs(self, *a):
                    calls.append("expandtabs")
                    return str(self)
                def splitlines(self, *a):
                    calls.append("splitlines")
                    return str.splitlines(self, *a)
                def startswith(self, *a):
                    calls.append("startswith")
                    return str.startswith(self, *a)
                def __len__(self):
                    calls.append("len")
                    return 3
            class D(json.JSONDecoder):
                def __setattr__(self, name, value):
                    calls.append("setattr " + name)
                    object.__setattr__(self, name, value)
            w = textwrap.TextWrapper(width=8, initial_indent=S("> "))
            w.subsequent_indent = S("  ")
            made = [
                w.fill(S("alpha beta gamma")),
                textwrap.fill(S("a b c"), 3),
                textwrap.indent(S("a\\nb"), S("- ")),
                textwrap.dedent(S("  x")),
                textwrap.shorten(S("hello world foo"), 11),
                json.loads(S("[1]")),
                json.JSONDecoder().raw_decode(S("[3] x")),
                D().decode("[4]"),
                type(w.initial_indent).__name__,
            ]
            [made, calls]
            """
        )
    )
    assert outcome.error is None, outcome.error
    made, calls = outcome.value
    assert calls == []
    assert made == [
        "> alpha\n  beta\n  gamma",
        "a b\nc",
        "- a\n- b",
        "x",
        "hello [...]",
        [1],
        [[3], 3],
        [4],
        "str",
    ]


def test_literal_eval_and_compile_read_the_text_never_a_subclass_method(run: Runner) -> None:
    # ast's Python code would call a str subclass's lstrip; compile's file name a bytes
    # subclass's __bytes__
    outcome = run(
        _script(
            """
            import ast
            calls = []
            class S(str):
                def lstrip(self, *a):
                    calls.append("lstrip")
                    return "'not this'"
            class B(bytes):
                def __bytes__(self):
                    calls.append("bytes")
                    return b"other"
            made = [
                ast.literal_eval(S("  ['the', 'text']")),
                compile(S("1 + 1"), B(b"name.py"), S("eval")).co_filename,
                eval(compile(B(b"2 * 3"), "f", "eval")),
            ]
            class Shown:
                def __repr__(self):
                    calls.append("repr")
                    return "shown"
            try:
                ast.literal_eval(Shown())
            except ValueError as error:
                made.append(str(error))
            [made, calls]
            """
        )
    )
    assert outcome.error is None, outcome.error
    # CPython's error would show the object's repr: the script's own __repr__, not run here
    assert outcome.value == [
        [["the", "text"], "name.py", 6, "malformed node or string: <Shown object>"],
        [],
    ]


def test_calendar_hands_its_code_plain_numbers(run: Runner) -> None:
    # calendar's Python code adds, compares and takes remainders of what it is given:
    # an int subclass's operators would run there
    outcome = run(
        _script(
            """
            import calendar
            calls = []
            class N(int):
                def __add__(self, other):
                    calls.append("add")
                    return int(self) + other
                __radd__ = __add__
                def __mod__(self, other):
                    calls.append("mod")
                    return int(self) % other
                def __le__(self, other):
                    calls.append("le")
                    return int(self) <= other
                def __ge__(self, other):
                    calls.append("ge")
                    return int(self) >= other
            sundays = calendar.Calendar(N(6))
            sundays.firstweekday = N(6)
            text = calendar.TextCalendar(N(6))
            made = [
                sundays.monthdayscalendar(N(2024), N(2))[0],
                type(sundays.firstweekday).__name__,
                text.formatmonth(N(2024), N(2), N(2)).splitlines()[1],
                text.formatweek([(N(1), N(0))], N(2)),
            ]
            [made, calls]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [
        [[0, 0, 0, 0, 1, 2, 3], "int", "Su Mo Tu We Th Fr Sa", " 1"],
        [],
    ]


def test_a_queues_size_reaches_its_code_as_a_plain_number(run: Runner) -> None:
    # Queue.full compares self.maxsize: an int subclass's __le__ would run there
    outcome = run(
        _script(
            """
            import queue
            calls = []
            class N(int):
                def __le__(self, other):
                    calls.append("le")
                    return True
                def __lt__(self, other):
                    calls.append("lt")
                    return True
            q = queue.Queue()
            q.maxsize = N(2)
            q.put(1)
            [q.full(), type(q.maxsize).__name__, calls]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [False, "int", []]


def test_gzip_compress_hands_its_code_plain_values(run: Runner) -> None:
    # gzip.compress compares its level and takes int(mtime) in Python code
    outcome = run(
        _script(
            """
            import gzip
            calls = []
            class M:
                def __int__(self):
                    calls.append("int")
                    return 0
                def __eq__(self, other):
                    calls.append("eq")
                    return False
                __hash__ = None
            for level, mtime in ((9, M()), (M(), 0)):
                try:
                    gzip.compress(b"x", level, mtime=mtime)
                except TypeError:
                    calls.append("refused")
            class Level(int):
                def __eq__(self, other):
                    calls.append("eq")
                    return False
            packed = gzip.compress(b"x", Level(9), mtime=0)
            [calls, gzip.decompress(packed)]
            """
        )
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [["refused", "refused"], "b'x'"]
