"""Host Python functions a script can call never run the script's code.

``random.choice`` calls ``len`` and ``[]`` on its sequence, ``html.escape`` calls
``replace`` on its text, ``urlencode`` ``str()`` on its values: given a script's object,
each ran the script's methods from host Python code. Every such function is offered
behind ``plain_arguments`` (or is reviewed below), and a spy proves it for each
parameter of each one.
"""

from __future__ import annotations

import inspect
import types

from codeact.sandbox._plain_arguments import DRAINED, PASSED, WRAPPED, Checked
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
        refused = 'plain values' in str(error)
    else:
        refused = False
    traces.append([label, list(hits), refused])
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


def test_no_checked_host_function_runs_the_scripts_code(run: Run) -> None:
    calls = _checked_functions()
    modules = sorted({where.split(".")[0] for _, _, where in calls})
    imports = "".join(
        f"import {alias.replace('_', '.', 1) if alias.startswith(('os_', 'urllib_')) else alias}"
        f" as {alias}\n"
        for alias in modules
    )
    attempts = "".join(
        f"attempt({label!r}, lambda: {call})\n" for label, role, call in calls if role != PASSED
    )
    outcome = run(imports + SPY + attempts + "traces")
    assert outcome.ok, outcome.error
    roles = {label: role for label, role, _ in calls}
    assert len(outcome.value) > 150, "the spy reached too few functions"  # type: ignore[arg-type]
    ran = {
        label: hits
        for label, hits, _ in outcome.value  # type: ignore[union-attr]
        # the runtime itself drains an iterable given where the function iterates (list()
        # asks its length first), then refuses the script's objects it yielded
        if hits != [] and not (roles[label] == DRAINED and set(hits) <= {"__iter__", "__len__"})
    }
    assert ran == {}, f"host code ran the script's methods: {ran}"
    unrefused = [label for label, _, refused in outcome.value if not refused]  # type: ignore[union-attr]
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
