"""Brief scripts run where their caller is: which scripts are brief, that nothing of a
run handed back is seen or kept, and that what may change halfway is never read."""

from __future__ import annotations

import ast
import sys
import threading

import pytest

from codeact.sandbox import Limits
from codeact.sandbox._brief import MAX_BRIEF_STATEMENTS, brief_shape
from codeact.stdlib import standard_sandbox

GENEROUS = 60.0
BRIEF = [
    "1 + 1",
    "x = 1\nprint(x)",
    "a, b = 1, 2\nf'{a:>4}{b!r}'",
    "n = 3\nif n > 2:\n    n = 0\nelse:\n    pass\nn",
    "', '.join(sorted({'b', 'a'}))",
    "d = {'k': [1, 2]}\nd['k'][1:]",
    "total = sum(range(10))\ntotal",
    "'x'.upper() if True else None",
]
NOT_BRIEF = [
    "for i in range(3):\n    pass",
    "while False:\n    pass",
    "def f():\n    return 1",
    "class C:\n    pass",
    "f = lambda: 1",
    "[i for i in range(3)]",
    "(i for i in range(3))",
    "try:\n    x = 1\nexcept Exception:\n    pass",
    "with open('f') as f:\n    pass",
    "import math",
    "x = [0]\nx[0] = 1",
    "x.attribute = 1",
    "a, *rest = [1, 2, 3]",
    "(y := 1)",
    "del x",
    "global x",
    "assert True",
    "raise ValueError('no')",
    "x = 1\nx.__class__",
    "(lambda: 1)()",
    "\n".join(["x = 1"] * (MAX_BRIEF_STATEMENTS + 1)),
    "x = " + " + ".join(["1"] * 400),
]


@pytest.mark.parametrize("source", BRIEF)
def test_a_brief_script_is_known_by_its_shape(source: str) -> None:
    assert brief_shape(ast.parse(source)) is not None


@pytest.mark.parametrize("source", NOT_BRIEF)
def test_a_loop_a_definition_or_a_write_into_an_object_is_not_brief(source: str) -> None:
    assert brief_shape(ast.parse(source)) is None


@pytest.mark.parametrize(
    ("source", "reads", "binds"),
    [
        ("y = x + 1\nz = y", {"x"}, {"y", "z"}),
        ("if c:\n    a = 1\nelse:\n    a = 2\nb = a", {"c"}, {"a", "b"}),
        ("if c:\n    a = 1\nb = a", {"c", "a"}, {"a", "b"}),  # a may be the session's
        ("x += 1", {"x"}, {"x"}),
        ("print(len(s))", {"print", "len", "s"}, set()),
    ],
)
def test_the_names_read_before_they_are_surely_bound_are_the_reads(
    source: str, reads: set[str], binds: set[str]
) -> None:
    shape = brief_shape(ast.parse(source))
    assert shape is not None
    assert (set(shape.reads), set(shape.binds)) == (reads, binds)


@pytest.mark.parametrize(
    ("before", "source"),
    [
        ("", "x = 1\nlookup(1)"),  # a tool call: the host would see it
        ("items = [1, 2]", "x = 1\nlen(items)"),  # a list the run could change halfway
        ("class S(str):\n    pass\ns = S('a')", "x = 1\ns.upper()"),  # a script's class
        ("def len(v):\n    return 0", "x = 1\nlen('a')"),  # a builtin rebound by the script
        ("", "x = 1\neval('1')"),  # builtins not among the brief ones
        ("", "x = 1\nglobals()"),
        ("", "x = 1\nfor i in range(2):\n    pass"),
    ],
)
def test_a_script_that_is_not_brief_here_is_left_untouched(before: str, source: str) -> None:
    sandbox = standard_sandbox(limits=Limits(wall_seconds=30, cpu_seconds=30))
    if before:
        assert sandbox.run(before).ok
    printed: list[str] = []
    outcome = sandbox.run_brief(source, tools={"lookup": ("key",)}, on_output=printed.append)
    assert outcome is None
    assert "x" not in sandbox.globals  # nothing of it ran
    assert printed == []


@pytest.mark.parametrize(
    "source",
    [
        *BRIEF,
        "x = 1\nprint('a', x, sep='-')\nx",
        "1 / 0",
        "undefined_name",
        "'a' * 10**10",
        "int('9' * 5000)",
        "n = 2\nn += 'a'",
    ],
)
def test_a_brief_run_ends_as_the_same_run_in_its_thread_does(source: str) -> None:
    here = standard_sandbox(limits=Limits(wall_seconds=30, cpu_seconds=30))
    there = standard_sandbox(limits=Limits(wall_seconds=30, cpu_seconds=30))
    printed_here: list[str] = []
    printed_there: list[str] = []
    # a moment no busy machine outlasts: this compares outcomes, not where they were made
    brief = here.run_brief(source, tools={}, on_output=printed_here.append, moment=GENEROUS)
    assert brief is not None
    ran: list[object] = []
    thread = threading.Thread(
        target=lambda: ran.append(there.run(source, on_output=printed_there.append))
    )
    thread.start()
    thread.join()
    assert brief == ran[0]
    assert printed_here == printed_there
    assert here.user_names() == there.user_names()


LONG = "kept = 'new'\nprint('early')\ntotal = sum(range(10**8))\ntotal"


def test_a_run_that_outlasts_its_moment_is_handed_back_with_nothing_kept() -> None:
    sandbox = standard_sandbox(limits=Limits(wall_seconds=30, cpu_seconds=30))
    assert sandbox.run("kept = 'old'\nother = 1").ok
    printed: list[str] = []
    # a moment of nothing: the watchdog's first look hands the run back
    assert sandbox.run_brief(LONG, tools={}, on_output=printed.append, moment=0.0) is None
    assert sandbox.globals["kept"] == "old"  # put back
    assert "total" not in sandbox.globals
    assert printed == []  # its print was never shown
    # no interrupt is left pending in this thread: the next runs here end as they should
    again = sandbox.run_brief("other + 1", tools={}, on_output=printed.append, moment=GENEROUS)
    assert again is not None
    assert again.value == 2
    assert sandbox.run("x = 2\nx * 3").value == 6


def test_a_brief_run_gets_past_no_memory_limit() -> None:
    """A brief run's memory is counted from the watchdog's first look, not its start: it
    can allocate little within its moment, and an allocation past the limit outlasts the
    moment, is handed back and stopped when run again (72 MB of list against 48 MB)."""
    limits = Limits(wall_seconds=30, cpu_seconds=30, memory_bytes=48 * 1024 * 1024)
    sandbox = standard_sandbox(limits=limits)
    source = "held = [0] * 9_000_000\nlen(held)"
    brief = sandbox.run_brief(source, tools={})
    outcome = brief if brief is not None else sandbox.run(source)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "memory" in outcome.error.message


def test_no_interrupt_lands_in_a_runs_setup_or_escapes_it() -> None:
    # A stop due at the watchdog's first look (a moment of nothing, an abort asked before
    # the run began) ends the run or hands it back; it must never land in the host code
    # around the script (setting the run up, watching it, unwatching it) and escape to the
    # caller. Switching threads as often as CPython can puts that look anywhere.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(1000):
            fresh = standard_sandbox(limits=Limits(wall_seconds=30, cpu_seconds=30))
            brief = fresh.run_brief("x = 1\nx + 1", tools={}, moment=0.0)
            assert brief is None or brief.value == 2
            stopped = threading.Event()
            stopped.set()
            outcome = standard_sandbox(limits=Limits(wall_seconds=30)).run("1", stop=stopped)
            assert outcome.value == 1 or outcome.error is not None
    finally:
        sys.setswitchinterval(previous)
