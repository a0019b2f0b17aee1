"""Host Python functions a script can call never run the script's code.

``random.choice`` calls ``len`` and ``[]`` on its sequence, ``html.escape`` calls
``replace`` on its text, ``urlencode`` ``str()`` on its values: given a script's object,
each ran the script's methods from host Python code. Every such function is offered
behind ``plain_arguments`` (or is reviewed below), and a spy proves it for each
parameter of each one.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import codeact
from codeact.sandbox import ScriptOutcome, SecurityViolation
from codeact.sandbox._builtins import stand_in_constructor
from codeact.sandbox._compiler import SCRIPT_FILES
from codeact.sandbox._ownership import READABLE
from codeact.sandbox._plain_arguments import (
    DRAINED,
    PASSED,
    WRAPPED,
    Checked,
    is_host_python,
    method_roles,
)
from codeact.stdlib import standard_sandbox

from .conftest import Runner

Run = Runner

# Host Python functions offered as they are, each reviewed: it acts on nothing of the
# script's (it stores what it is given, or reads only a class's own table).
REVIEWED_HOST_FUNCTIONS = {
    "contextlib.contextmanager": "wraps the script's generator function; calls it when used",
    "contextlib.asynccontextmanager": "the same for an async generator function",
    "dataclasses.field": "stores its arguments in a Field; reads none of them",
    "dataclasses.is_dataclass": "asks hasattr of the class (type(x) for an instance)",
}


def _host_function(value: object) -> types.FunctionType | None:
    function = value.__func__ if isinstance(value, types.MethodType) else value
    if not isinstance(function, types.FunctionType):
        return None
    if str(function.__module__).startswith(("codeact", "stdlib_bindings")):
        return None  # the runtime's own: written with the rule in view
    return function


def _facade_members() -> list[tuple[str, str, object]]:
    sandbox = standard_sandbox()
    found = [("builtins", name, value) for name, value in sandbox._builtins.items()]
    for module, facade in sorted(sandbox._facades.items()):
        found += [(module, name, getattr(facade, name)) for name in dir(facade)]
    return found


def test_every_host_python_function_a_script_reaches_is_checked_or_reviewed() -> None:
    unchecked = [
        f"{module}.{name}"
        for module, name, value in _facade_members()
        if _host_function(value) is not None and f"{module}.{name}" not in REVIEWED_HOST_FUNCTIONS
    ]
    assert unchecked == [], f"host Python functions offered unchecked: {unchecked}"


# A script class whose every hook says it ran: host code acting on it leaves a trace.
HOOKS = {  # hook -> (parameters, what it returns)
    **dict.fromkeys(("__len__", "__int__", "__index__", "__abs__", "__hash__"), ("", "1")),
    **dict.fromkeys(("__str__", "__repr__"), ("", "'spy'")),
    "__format__": (", spec", "'spy'"),
    "__iter__": ("", "iter([Spy()])"),
    "__getitem__": (", i", "'a'"),
    "__call__": (", *args", "1"),
    "__bool__": ("", "True"),
    "__float__": ("", "1.0"),
    **dict.fromkeys(("__contains__", "__eq__", "__lt__", "__le__", "__gt__"), (", o", "False")),
    **dict.fromkeys(
        ("__add__", "__radd__", "__sub__", "__mul__", "__truediv__", "__mod__"), (", o", "1")
    ),
}
SPY = (
    "hits = []\n"
    "class Spy:\n"
    "    def __getattr__(self, name):\n"
    "        hits.append(name)\n"
    "        raise AttributeError(name)\n"
    + "".join(
        f"    def {hook}(self{parameters}):\n        hits.append({hook!r})\n        return {value}\n"
        for hook, (parameters, value) in HOOKS.items()
    )
    + """\
traces = []
def attempt(label, call):
    hits.clear()
    try:
        call()
    except Exception as error:
        traces.append([label, list(hits), 'plain values' in str(error), type(error).__name__])
    else:
        traces.append([label, list(hits), False, None])
"""
)


def _calls(where: str, checked: Checked, bound: bool) -> list[tuple[str, str, str]]:
    """(label, role, call expression) with a Spy in each parameter of the function."""
    try:
        parameters = list(inspect.signature(checked.function).parameters.values())
    except ValueError:  # a C function without a signature: one positional argument
        return [(f"{where}(0)", "data", f"{where}(Spy())")]
    if bound:
        parameters = parameters[1:]
    calls = []
    positional = 0
    for parameter in parameters:
        role = checked.role(parameter.name)
        label = f"{where}({parameter.name})"
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
            call = f"{where}({'1, ' * positional}Spy())"
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        else:
            call = f"{where}({parameter.name}=Spy())"
        if parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            positional += 1
        calls.append((label, role, call))
    return calls


def _checked_functions() -> list[tuple[str, str, str]]:
    calls = []
    for module, name, value in _facade_members():
        if module == "builtins":
            continue
        alias = module.replace(".", "_")
        if isinstance(value, types.FunctionType) and value in WRAPPED:
            calls += _calls(f"{alias}.{name}", WRAPPED[value], bound=False)
        elif isinstance(value, type):
            for attribute, member in vars(value).items():
                if (
                    isinstance(member, types.FunctionType) and member in WRAPPED
                ):  # a class's own checked method (random.Random's)
                    where = f"{alias}.{name}(1).{attribute}"
                    calls += _calls(where, WRAPPED[member], bound=True)
    return calls


def _spy(run: Run, calls: list[tuple[str, str, str]]) -> list[list[Any]]:
    """Each call made by a script, with a Spy where it says: [label, hooks that ran,
    refused in words, the error's type]. Fails where host code ran a hook of the Spy."""
    modules = {module.replace(".", "_"): module for module, _, _ in _facade_members()}
    named = set(re.findall(r"\b([a-z_][a-z_0-9]*)\.", "".join(call for *_, call in calls)))
    imports = "".join(f"import {modules[a]} as {a}\n" for a in sorted(named) if a in modules)
    attempts = "".join(
        f"attempt({label!r}, lambda: {call})\n" for label, role, call in calls if role != PASSED
    )
    outcome = run(imports + SPY + attempts + "traces")
    assert outcome.ok, outcome.error
    traces: list[list[Any]] = outcome.value  # type: ignore[assignment]
    assert [t for t in traces if t[3] == "NameError"] == [], "calls the spy could not make"
    roles = {label: role for label, role, _ in calls}
    ran = {
        label: hits
        for label, hits, *_ in traces
        # the runtime itself drains an iterable given where the function iterates (list()
        # asks its length first), then refuses the script's objects it yielded
        if hits != [] and not (roles[label] == DRAINED and set(hits) <= {"__iter__", "__len__"})
    }
    assert ran == {}, f"host code ran the script's methods: {ran}"
    return traces


def test_no_checked_host_function_runs_the_scripts_code(run: Run) -> None:
    traces = _spy(run, _checked_functions())
    assert len(traces) > 150, "the spy reached too few functions"
    unrefused = [label for label, _, refused, _ in traces if not refused]
    assert unrefused == [], f"a script's object was not refused in words: {unrefused}"


def test_a_sequence_of_the_scripts_objects_is_picked_from_untouched(run: Run) -> None:
    outcome = run(
        SPY + "import random\n"
        "deck = [Spy(), Spy(), Spy()]\n"
        "random.seed(1)\n"
        "random.shuffle(deck)\n"
        "picked = [random.choice(deck), *random.sample(deck, 2), *random.choices(deck, k=2)]\n"
        "[all(type(card) is Spy for card in picked), hits]"
    )
    assert outcome.value == [True, []], outcome.error


def test_the_refusal_says_what_to_pass_and_the_script_can_catch_it(run: Run) -> None:
    outcome = run(
        "import statistics\n"
        "class Money:\n"
        "    def __init__(self, cents):\n"
        "        self.cents = cents\n"
        "    def __float__(self):\n"
        "        return self.cents / 100\n"
        "amounts = [Money(150), Money(250)]\n"
        "try:\n"
        "    statistics.mean(amounts)\n"
        "except TypeError as error:\n"
        "    message = str(error)\n"
        "[message, statistics.mean(float(a) for a in amounts)]"
    )
    assert outcome.ok, outcome.error
    message, mean = outcome.value  # type: ignore[misc]
    assert mean == 2.0
    assert message.startswith("mean() takes plain values here")
    assert "'Money'" in message
    assert "float(x)" in message


# A script expression for an instance of every host class whose Python methods a script
# can read (the test below fails for a class missing here).
INSTANCES = {
    "csv.DictWriter": "csv.DictWriter(io.StringIO(), ['a'])",
    "urllib.parse.ParseResult": "urllib.parse.urlparse('http://a/b')",
    "urllib.parse.SplitResult": "urllib.parse.urlsplit('http://a/b')",
    "urllib.parse.DefragResult": "urllib.parse.urldefrag('http://a/b#c')",
    "contextlib.ExitStack": "contextlib.ExitStack()",
    "asyncio.TaskGroup": "asyncio.TaskGroup()",
    "asyncio.locks.Semaphore": "asyncio.Semaphore()",
    "asyncio.locks.BoundedSemaphore": "asyncio.BoundedSemaphore()",
    "asyncio.locks.Lock": "asyncio.Lock()",
    "asyncio.locks.Event": "asyncio.Event()",
    "asyncio.locks.Condition": "asyncio.Condition()",
    "asyncio.queues.Queue": "asyncio.Queue()",
    "asyncio.queues.PriorityQueue": "asyncio.PriorityQueue()",
    "asyncio.queues.LifoQueue": "asyncio.LifoQueue()",
    "asyncio.timeouts.Timeout": "asyncio.timeout(1)",
    "os._Environ": "os.environ",
    "pathlib.PurePosixPath": "pathlib.PurePosixPath('a/b')",
    "pathlib.PureWindowsPath": "pathlib.PureWindowsPath('a/b')",
    "pathlib.PosixPath": "pathlib.Path('a/b')",
    "pathlib._PathParents": "pathlib.PurePosixPath('a/b').parents",
    "fractions.Fraction": "fractions.Fraction(1, 3)",
    "statistics.NormalDist": "statistics.NormalDist(1, 2)",
    "codeact.stdlib._modules.NormalDist": "statistics.NormalDist(1, 2)",  # what scripts make
    "random.Random": "random.Random(1)",
    "difflib.SequenceMatcher": "difflib.SequenceMatcher(None, 'ab', 'ac')",
    "difflib.Differ": "difflib.Differ()",
    "string.Template": "string.Template('$a')",
    "textwrap.TextWrapper": "textwrap.TextWrapper()",
    "collections.ChainMap": "collections.ChainMap({'a': 1})",
    "collections.Counter": "collections.Counter('ab')",
}
# Host classes built by their Python code from what the script gives, each reviewed.
REVIEWED_CONSTRUCTORS = {
    "collections.Counter": "counts what it is given: C code iterates and hashes it",
    "asyncio.Condition": "calls the lock it is given, as a context manager's protocol",
}


def _host_constructor(value: object) -> bool:
    if not isinstance(value, type) or issubclass(value, BaseException):
        return False
    for base in value.__mro__:
        for name in ("__init__", "__new__"):
            method = vars(base).get(name)
            if is_host_python(getattr(method, "__func__", method)):
                return True
    return False


def _host_methods() -> dict[str, list[tuple[str, Checked]]]:
    """The host Python methods a script can read on each readable host class."""
    standard_sandbox()  # every facade registered
    found: dict[str, list[tuple[str, Checked]]] = {}
    for kind, names in list(READABLE.items()):
        if not isinstance(kind, type) or names is False:
            continue
        public = names if isinstance(names, frozenset) else dir(kind)
        for name in sorted(n for n in public if not n.startswith("_")):
            value = getattr(kind, name, None)
            function = value.__func__ if isinstance(value, types.MethodType) else value
            if is_host_python(function):
                checked = Checked.of(function, method_roles(function))  # type: ignore[arg-type]
                found.setdefault(f"{kind.__module__}.{kind.__qualname__}", []).append(
                    (name, checked)
                )
    return found


def test_no_host_method_or_constructor_runs_the_scripts_code(run: Run) -> None:
    methods = _host_methods()
    assert sorted(set(methods) - set(INSTANCES)) == [], "host classes the spy does not reach"
    calls = []
    for kind, members in methods.items():
        for name, checked in members:
            # read on an instance: bound to it, or to its class (a class method)
            calls += _calls(f"({INSTANCES[kind]}).{name}", checked, bound=True)
    for module, name, value in _facade_members():
        where = f"{module.replace('.', '_')}.{name}"
        construct = stand_in_constructor(value)
        if construct is not None and construct in WRAPPED:
            calls += _calls(where, WRAPPED[construct], bound=False)
        elif _host_constructor(value) and f"{module}.{name}" not in REVIEWED_CONSTRUCTORS:
            calls += _calls(where, Checked.of(value, {}), bound=False)  # type: ignore[arg-type]
    traces = _spy(run, calls)
    assert len(traces) > 150, "the spy reached too few methods and constructors"


OPERATORS = {
    **{"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%"},
    **{"pow": "**", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"},
    **{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="},
}
OWN_CODE = str(Path(codeact.__file__).parent)


def _host_calls_into_the_script(source: str) -> tuple[ScriptOutcome, list[str]]:
    """``source`` run in this thread, and every call of the script's code made from host
    Python code (neither the script's own frames nor the runtime's)."""
    sandbox = standard_sandbox()
    found: list[str] = []

    def profile(frame: types.FrameType, event: str, _: object) -> None:
        caller = frame.f_back
        if event != "call" or caller is None or frame.f_code.co_filename not in SCRIPT_FILES:
            return
        where = caller.f_code.co_filename
        if where not in SCRIPT_FILES and not where.startswith(OWN_CODE):
            found.append(f"{frame.f_code.co_name} <- {caller.f_code.co_name} ({Path(where).name})")

    sys.setprofile(profile)
    try:
        outcome = sandbox.run(source)
    finally:
        sys.setprofile(None)
    return outcome, found


def test_operators_of_host_classes_never_run_the_scripts_code() -> None:
    # Python calls the script's own reflected method from the script's frame: that is the
    # protocol; host code computing with the script's operand is not
    instances = {
        **INSTANCES,
        "calendar._localized_month": "calendar.month_name",
        "calendar._localized_day": "calendar.day_name",
        "regex._regex_core.RegexFlag": "re.IGNORECASE",
        "uuid.UUID": "uuid.UUID(int=5)",
        "fractions.Fraction": "fractions.Fraction(1, 3)",
        "statistics.NormalDist": "statistics.NormalDist(1, 2)",
    }
    standard_sandbox()  # every facade registered
    lines = []
    for kind in list(READABLE):
        if not isinstance(kind, type):
            continue
        where = f"{kind.__module__}.{kind.__qualname__}"
        for name, symbol in OPERATORS.items():
            for dunder, call in (
                (f"__{name}__", "({0}) {1} Spy()"),
                (f"__r{name}__", "Spy() {1} ({0})"),
            ):
                method = next((vars(b)[dunder] for b in kind.__mro__ if dunder in vars(b)), None)
                if is_host_python(method):
                    assert where in instances, f"no instance of {where} to spy on"
                    expression = call.format(instances[where], symbol)
                    lines.append(f"attempt({expression!r}, lambda: {expression})\n")
    assert len(lines) > 40  # the walk found the host operators
    imports = "import calendar, collections, csv, fractions, io, os, pathlib, re, statistics\n"
    imports += "import uuid, string, difflib, textwrap, contextlib, asyncio, urllib.parse\n"
    outcome, found = _host_calls_into_the_script(imports + SPY + "".join(lines) + "traces")
    assert outcome.ok, outcome.error
    assert [t for t in outcome.value if t[3] == "NameError"] == []  # type: ignore[union-attr]
    assert found == [], f"host code ran the script's methods: {found}"


def test_a_property_read_from_a_host_class_acts_only_on_the_class_s_objects() -> None:
    """``type(f).numerator.fget(x)`` would run fractions' code on any object a script
    gives it: every host property a script reads from its class (and the runtime's own)
    checks the receiver of its getter, setter and deleter first."""
    sandbox = standard_sandbox()
    assert sandbox.run(SPY).error is None
    spy, hits = sandbox.globals["Spy"](), sandbox.globals["hits"]
    refused = []
    for kind in list(READABLE):
        if not isinstance(kind, type):
            continue
        names = {
            name
            for klass in kind.__mro__
            for name, value in vars(klass).items()
            if isinstance(value, property) and not name.startswith("_")
        }
        for name in sorted(names):
            try:
                read = sandbox.guards.getattr(kind, name)
            except (SecurityViolation, AttributeError):  # not readable, or not on the class
                continue
            for part, arguments in ((read.fget, ()), (read.fset, (1,)), (read.fdel, ())):
                if part is None:
                    continue
                with pytest.raises(SecurityViolation, match="acts only on"):
                    part(spy, *arguments)
                refused.append(f"{kind.__qualname__}.{name}")
    assert hits == [], "a host property ran the script's code"
    assert len(refused) > 100, "too few host properties were read"
