"""Resource attacks: each ends in CODE_RESOURCE_LIMIT within its deadline plus a second."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeact.sandbox import Limits, ScriptOutcome
from codeact.sandbox._compiler import SCRIPT_FILENAME
from codeact.sandbox._errors import (
    RECURSION_WORDS,
    LimitExceeded,
    LimitInterrupt,
    recursion_safe,
    unwatch_stops,
    watch_stops,
)
from codeact.sandbox._guards import reraise_limits
from codeact.sandbox._limits import RunMonitor

from .conftest import Runner

MakeRunner = Callable[..., Runner]

WALL = 1.0
LIMITS = Limits(
    wall_seconds=WALL,
    cpu_seconds=WALL,
    memory_bytes=256 * 1024 * 1024,
    max_output_chars=10_000,
    max_printed_chars=100_000,
    max_tool_calls=50,
    max_source_chars=5_000,
)

LOOPS = {
    "while-true": "while True:\n    pass",
    "bare-except-swallow": "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass",
    "exception-swallow": "while True:\n    try:\n        while True:\n            pass\n    except Exception:\n        pass",
    # BaseException is offered: its handler re-raises the stop before its first statement
    "base-exception-swallow": (
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException as caught:\n        kept = caught"
    ),
    "base-exception-star-swallow": (
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except* BaseException:\n        pass"
    ),
    "base-exception-subclass-swallow": (
        "class Mine(BaseException):\n    pass\n"
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except (Mine, BaseException):\n        pass"
    ),
    "finally-loop": "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    "with-exit-swallows": (
        "class Quiet:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n"
        "while True:\n    with Quiet():\n        while True:\n            pass"
    ),
    "exec-loop": "exec('while True:\\n    pass')",
    "eval-in-a-loop": "while True:\n    eval('[0] * 10')",
    "generator-loop": "def g():\n    while True:\n        yield 1\nfor _ in g():\n    pass",
    "itertools-count-sum": "import itertools\nsum(itertools.count())",
    "itertools-deque-drain": "import itertools, collections\ncollections.deque(itertools.count(), maxlen=0)",
    "itertools-repeat": "import itertools\nfor _ in itertools.repeat(1):\n    pass",
    "itertools-cycle-max": "import itertools\nmax(itertools.cycle([1, 2]))",
    "itertools-product": "import itertools, collections\ncollections.deque(itertools.product(range(50), repeat=12), maxlen=0)",
    "iter-callable-sentinel": "max(iter(int, 1))",
    "map-over-endless": "import itertools\nsum(map(abs, itertools.count()))",
    "chain-from-iterable": (
        "import itertools, collections\n"
        "collections.deque(itertools.chain.from_iterable(itertools.repeat([1, 2])), maxlen=0)"
    ),
    "tee-branch": "import itertools\nmax(itertools.tee(itertools.count())[0])",
    "counter-elements": "import collections\nsum(1 for _ in collections.Counter(a=10**15).elements())",
    "huge-range-sum": "sum(range(10**15))",
    "huge-range-list": "list(range(10**12))",
    "any-over-huge-range": "any(x < 0 for x in range(10**15))",
    "list-doubling": "x = [1]\nwhile True:\n    x = x + x",
    "string-doubling-inplace": "s = 'x'\nwhile True:\n    s += s",
    # a script may catch a MemoryError it raised itself, never the one the limit ends it with
    "memory-error-swallow": (
        "kept = []\nwhile True:\n    try:\n        kept.append('x' * 10**7)\n"
        "    except MemoryError as e:\n        kept.append(e)"
    ),
    "dict-growth": "d = {}\ni = 0\nwhile True:\n    d[i] = 'x' * 100\n    i += 1",
}

BOMBS = {
    "string-repeat": "'a' * 10**10",
    "string-repeat-in-eval": "eval(\"'a' * 10**10\")",
    "power-in-exec": "exec('n = 10 ** 10 ** 8')",
    "list-repeat": "[0] * 10**9",
    "huge-power": "10 ** 10 ** 8",
    "builtin-pow": "pow(10, 10**8)",
    "huge-shift": "1 << 10**9",
    "inplace-repeat": "s = 'ab'\ns *= 10**10",
    "inplace-power": "n = 7\nn **= 10**9",
    "huge-join": "' '.join(['x' * 10**6] * 10**3)",
    "ljust": "'x'.ljust(10**10)",
    "zfill": "'1'.zfill(10**10)",
    "center": "'x'.center(10**10)",
    "replace-growth": "('a' * 10**6).replace('a', 'b' * 10**3)",
    "expandtabs": "('\\t' * 10**6).expandtabs(10**4)",
    "bytes-alloc": "bytes(10**10)",
    "bytearray-alloc": "bytearray(10**10)",
    "format-width": "format(1, '>999999999')",
    # a % directive's width or precision, literal or starred, in text and in bytes
    "percent-width": "'%999999999d' % 1",
    "percent-precision-float": "'%.999999999f' % 1.5",
    "percent-precision-integer": "b'%.2147483640d' % 1",
    "percent-star-width": "'%*s' % (10**9, 'x')",
    "percent-star-precision": "b'%.*e' % (10**9, 2.5)",
    "percent-mapping-width": "'%(a)999999999s' % {'a': 'x'}",
    # a tuple subclass shows the guard other items than CPython formats
    "percent-star-tuple-subclass": (
        "class Shown(tuple):\n    def __getitem__(self, i):\n        return 1\n"
        "    def __len__(self):\n        return 0\n"
        "    def __iter__(self):\n        return iter(())\n"
        "'%*s' % Shown((10**9, 'x'))"
    ),
    "factorial": "import math\nmath.factorial(10**7)",
    "comb": "import math\nmath.comb(10**8, 10**7)",
    # a count that fits a C int (CPython's OverflowError refuses a larger one, drawing nothing)
    "getrandbits": "import random\nrandom.getrandbits(2**31 - 1)",
    "own-random-bits": "import random\nrandom.Random(1).getrandbits(2**30)",
    "own-random-bytes": "import random\nrandom.Random(1).randbytes(2**28 - 1)",
    "shake-digest": "import hashlib\nhashlib.shake_256(b'x').hexdigest(10**10)",
    # one C call derives the whole key: its rounds (iterations times blocks) are counted first
    "struct-pad": "import struct\nstruct.pack('999999999x')",
    "struct-class": "import struct\nstruct.Struct('2000000000s')",
    # each code letter of a format is an entry of its parsed form: 32 bytes a letter
    "struct-codes": "import struct\nstruct.calcsize('b' * 5_000_000)",
    "pbkdf2-rounds": "import hashlib\nhashlib.pbkdf2_hmac('sha256', b'p', b's', 10**9)",
    "pbkdf2-blocks": "import hashlib\nhashlib.pbkdf2_hmac('sha512', b'p', b's', 10**4, 64 * 10**4)",
    "re-sub-growth": "import re\nre.sub('', 'x' * 10**4, 'y' * 10**5)",
    # an augmented assignment inside a try body goes through the same guard as outside
    "inplace-attribute-in-try": "class O:\n    s = 'ab'\no = O()\ntry:\n    o.s *= 10**10\nfinally:\n    pass",
}


def run_limited(make_runner: MakeRunner, script: str) -> tuple[str | None, str]:
    runner = make_runner(LIMITS)
    outcome = runner(script)
    assert outcome.error is not None, f"the script finished: {outcome.value!r}"
    return outcome.error.code, outcome.error.message


@pytest.mark.parametrize("script", LOOPS.values(), ids=LOOPS.keys())
def test_endless_work_is_stopped_within_its_deadline(make_runner: MakeRunner, script: str) -> None:
    code, message = run_limited(make_runner, script)
    assert code == "CODE_RESOURCE_LIMIT", message
    assert "limit" in message


@pytest.mark.parametrize("script", BOMBS.values(), ids=BOMBS.keys())
def test_memory_bombs_are_refused_before_they_allocate(
    make_runner: MakeRunner, script: str
) -> None:
    code, message = run_limited(make_runner, script)
    assert code == "CODE_RESOURCE_LIMIT", message
    # refused up front by a size guard, not by the watchdog after filling memory or time
    assert "exceeded its" not in message, message
    assert "killed" not in message, message


@pytest.mark.parametrize(
    "script",
    [
        "def f():\n    try:\n        while True:\n            pass\n    finally:\n        return 1\n"
        "while True:\n    f()",
        "while True:\n    try:\n        while True:\n            pass\n    finally:\n        continue",
        "while True:\n    for _ in range(2):\n        try:\n            while True:\n"
        "                pass\n        finally:\n            break",
        "def f():\n    try:\n        return 'a' * 10**10\n    finally:\n        return 0\n"
        "while True:\n    f()",
    ],
    ids=["return", "continue", "break", "size-guard"],
)
def test_leaving_finally_early_never_swallows_a_limit(make_runner: MakeRunner, script: str) -> None:
    code, message = run_limited(make_runner, script)
    assert code == "CODE_RESOURCE_LIMIT", message


def test_leaving_finally_early_runs_as_cpython_runs_it(make_runner: MakeRunner) -> None:
    script = (
        "def f():\n    try:\n        raise ValueError('x')\n    finally:\n        return 'kept'\n"
        "seen = []\nfor i in range(3):\n    try:\n        1 / 0\n    finally:\n        seen.append(i)\n"
        "        continue\n(f(), seen)"
    )
    assert make_runner(LIMITS)(script).value == ["kept", [0, 1, 2]]


def test_loops_inside_finally_may_still_break(make_runner: MakeRunner) -> None:
    script = "try:\n    x = 1\nfinally:\n    for i in range(5):\n        if i == 2:\n            break\ni"
    assert make_runner(LIMITS)(script).value == 2


def test_the_limit_that_was_hit_is_named(make_runner: MakeRunner) -> None:
    _, wall = run_limited(make_runner, "while True:\n    pass")
    assert "time" in wall
    cpu_bound = make_runner(Limits(wall_seconds=5.0, cpu_seconds=0.3))
    outcome = cpu_bound("while True:\n    pass")
    assert outcome.error is not None
    assert "CPU time" in outcome.error.message
    _, size = run_limited(make_runner, "'a' * 10**10")
    assert "10,000,000,000 characters" in size


def test_recursion_caught_and_retried_ends_in_a_resource_limit(make_runner: MakeRunner) -> None:
    # each level catches the error and recurses again: 2 ** depth attempts, as under
    # CPython, until the run's time is up; the session lives on
    script = "def f():\n    try:\n        return f()\n    except RecursionError:\n        return f()\nf()"
    runner = make_runner(LIMITS)
    outcome = runner(script)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "time" in outcome.error.message
    assert runner("1 + 1").value == 2


CAUGHT_RECURSION = {
    "own-function": "def f(n):\n    return f(n + 1)\n",
    "constructor": "class Loop:\n    def __init__(self):\n        Loop()\ndef f(n):\n    Loop()\n",
    # attribute reads, size-checked operators and a guarded builtin at every level
    "through-guards": "def f(n):\n    items = [n] * 2\n    items += [str(n).upper()]\n"
    "    return f(sorted(items, key=str)[0])\n",
    # writes, formats, powers, divisions and joins at every level
    "through-checks": "class Box:\n    pass\nbox = Box()\ndef f(n):\n    box.v = n\n"
    "    text = f'{n:>5}' + '%d' % n + '-'.join(['a', 'b'])\n"
    "    return f(divmod(n, 7)[0] * 7 + n % 7 + 2 ** 0)\n",
}


@pytest.mark.parametrize("shape", sorted(CAUGHT_RECURSION))
def test_a_script_catches_the_recursion_error_of_its_own_calls(
    make_runner: MakeRunner, shape: str
) -> None:
    """As under CPython: the error is raised where the script's call could not begin, or
    in guards that change nothing before their calls, so nothing of the host's is left
    halfway; the handler runs at the edge too (its own guard call is one frame deeper)."""
    script = CAUGHT_RECURSION[shape] + (
        "def deepest(n):\n    try:\n        return deepest(n + 1)\n"
        "    except RecursionError:\n        return n\n"
        "try:\n    f(0)\nexcept RecursionError as error:\n    caught = str(error)\n"
        "(caught, deepest(0) > 100)"
    )
    outcome = make_runner(LIMITS)(script)
    assert outcome.error is None, outcome.error
    caught, reached = outcome.value
    assert caught.startswith("maximum recursion depth exceeded")  # "while ..." where C saw it
    assert reached is True


# Recursion through methods the runtime wrote or looks up for the script: a dataclass's
# generated __init__, and super() (whose lookup asks guards that read only).
THROUGH_RUNTIME_METHODS = {
    "dataclass": "from dataclasses import dataclass\n@dataclass\nclass Node:\n    n: int = 0\n"
    "    def __post_init__(self):\n        Node(self.n + 1)\ndef f(n):\n    Node()\n",
    "super": "class Base:\n    def __init__(self):\n        Child()\nclass Child(Base):\n"
    "    def __init__(self):\n        super().__init__()\ndef f(n):\n    Child()\n",
}
# A level of these takes a few frames, so where the limit lands (the script's frame or a
# host frame it called) moves with the depth the recursion starts from: try each.
STARTING_DEPTHS = 6


@pytest.mark.parametrize("shape", sorted(THROUGH_RUNTIME_METHODS))
def test_a_script_catches_recursion_through_the_runtimes_methods_from_any_depth(
    make_runner: MakeRunner, shape: str
) -> None:
    script = THROUGH_RUNTIME_METHODS[shape] + (
        "caught = []\ndef at(m):\n    if m:\n        return at(m - 1)\n    try:\n"
        "        f(0)\n    except RecursionError as error:\n        caught.append(str(error))\n"
        f"for m in range({STARTING_DEPTHS}):\n    at(m)\ncaught"
    )
    outcome = make_runner(Limits(wall_seconds=60.0, cpu_seconds=30.0))(script)
    assert outcome.error is None, outcome.error
    assert len(outcome.value) == STARTING_DEPTHS
    assert all(text.startswith(RECURSION_WORDS) for text in outcome.value)


# Each side in a fresh interpreter: the recursion limit is the whole process's.
_DEEPEST = "def deepest(n):\n    try:\n        return deepest(n + 1)\n    except RecursionError:\n        return n\n"
_UNDER_CPYTHON = _DEEPEST + "print(deepest(1))"
_FROM_A_DEEP_HOST = (
    "import sys\nfrom codeact.sandbox import Limits\nfrom codeact.stdlib import standard_sandbox\n"
    "sandbox = standard_sandbox(limits=Limits(wall_seconds=60.0, cpu_seconds=30.0))\n"
    "def host(depth):\n    return host(depth - 1) if depth else sandbox.run(sys.argv[1])\n"
    "outcome = host(int(sys.argv[2]))\nassert outcome.error is None, outcome.error\n"
    "print(outcome.value)\n"
)


@pytest.mark.parametrize("host_depth", [0, 600])
def test_a_script_nests_as_deep_as_under_cpython_however_deep_the_host_runs_it(
    host_depth: int,
) -> None:
    """Under ``python script.py`` a script nests CPython's default 1,000 frames less its
    own; a host's frames under ``Sandbox.run`` are not the script's to pay for."""
    cpython = subprocess.run(
        [sys.executable, "-c", _UNDER_CPYTHON], capture_output=True, text=True, check=True
    )
    ours = subprocess.run(
        [sys.executable, "-c", _FROM_A_DEEP_HOST, _DEEPEST + "deepest(1)", str(host_depth)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(ours.stdout) >= int(cpython.stdout) > 900


def test_the_hosts_recursion_limit_is_put_back_after_overlapping_runs() -> None:
    """Runs in threads at different host depths, overlapping: each reaches CPython's depth
    while it runs, and the process's limit is the host's own once the last has ended."""
    from codeact.stdlib import standard_sandbox

    own = sys.getrecursionlimit()
    reached: list[object] = []
    started = threading.Barrier(4)

    def run_at(host_depth: int) -> None:
        sandbox = standard_sandbox(limits=Limits(wall_seconds=60.0, cpu_seconds=30.0))
        try:
            started.wait(timeout=60)

            def host(depth: int) -> ScriptOutcome:
                return host(depth - 1) if depth else sandbox.run(_DEEPEST + "deepest(1)")

            outcome = host(host_depth)
            reached.append(outcome.value if outcome.error is None else outcome.error)
        finally:
            sandbox.close()

    threads = [threading.Thread(target=run_at, args=(depth,)) for depth in (0, 100, 200, 300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(reached) == 4
    assert all(type(value) is int and value >= 999 for value in reached), reached
    assert sys.getrecursionlimit() == own


def test_a_limit_the_host_sets_during_a_run_is_kept() -> None:
    from codeact.stdlib import standard_sandbox

    own = sys.getrecursionlimit()
    sandbox = standard_sandbox(limits=Limits(wall_seconds=60.0, cpu_seconds=30.0))

    def host_sets(name: str, arguments: dict[str, object]) -> None:
        sys.setrecursionlimit(own + 500)  # the host's own decision, while the run is under way

    try:
        outcome = sandbox.run("set_limit()", tools={"set_limit": ()}, call_tool=host_sets)
        assert outcome.error is None, outcome.error
        assert sys.getrecursionlimit() == own + 500
    finally:
        sys.setrecursionlimit(own)
        sandbox.close()


def _recursion_error_handled() -> None:
    try:
        raise RecursionError("maximum recursion depth exceeded")
    except RecursionError:
        reraise_limits()  # what every except block of a script calls first


def test_a_recursion_error_in_a_tripped_run_is_the_limit_that_tripped() -> None:
    """At a script's deepest frame, the interpreter cannot make the watchdog's interrupt
    (its construction is one call too deep) and raises a RecursionError instead: caught,
    a script spinning there would run on. Once the run's monitor has tripped, every
    handler turns that error into the limit."""
    monitor = RunMonitor(Limits())
    try:
        watch_stops(monitor)
        with pytest.raises(LimitExceeded) as untripped:  # raised outside a script: the limit
            _recursion_error_handled()
        assert untripped.value.limit == "recursion depth"
        watch_stops(monitor)  # a run of its own: the first stop would doom it
        monitor.tripped = "wall-clock time (1 s)"  # what the watchdog records, then interrupts
        with pytest.raises(LimitInterrupt, match="wall-clock time"):
            _recursion_error_handled()
    finally:
        unwatch_stops()


def _stopped_halfway() -> None:
    raise RecursionError(RECURSION_WORDS)  # a host function no review marked, at the limit


@recursion_safe
def _judging_at_the_edge() -> None:
    raise RecursionError(RECURSION_WORDS)  # reraise_limits' own call, one frame too deep


# Script code (its file name is the script's): a handler at the deepest frame, where
# judging what it caught raises a RecursionError of its own, and a handler above it.
_EDGE = compile(
    "def edge():\n"
    "    try:\n        stopped_halfway()\n"
    "    except RecursionError:\n        judging_at_the_edge()\n"
    "def above():\n"
    "    try:\n        edge()\n"
    "    except RecursionError:\n        reraise_limits()\n        return 'caught'\n",
    SCRIPT_FILENAME,
    "exec",
)


def test_a_recursion_error_raised_while_judging_a_halfway_one_is_the_limit() -> None:
    """The error a handler at the edge raises while judging comes from script and marked
    frames only; the host's error it was handling, its context, is judged too, so a script
    cannot go on past host code it stopped halfway by catching one frame higher."""
    scope = {
        "stopped_halfway": _stopped_halfway,
        "judging_at_the_edge": _judging_at_the_edge,
        "reraise_limits": reraise_limits,
    }
    exec(_EDGE, scope)
    with pytest.raises(LimitExceeded) as stopped:
        scope["above"]()
    assert stopped.value.limit == "recursion depth"
    assert stopped.value.message == f"RecursionError: {RECURSION_WORDS}"


def test_a_recursion_error_in_host_code_halfway_is_the_limit(make_runner: MakeRunner) -> None:
    # the regex library's parser was stopped halfway: what it left is not the script's to
    # catch and go on with (CPython lets it be caught: its state is its own to know)
    script = (
        "import re\ntry:\n    re.compile('(' * 20_000 + ')' * 20_000)\n"
        "except RecursionError:\n    print('caught')\n"
    )
    outcome = make_runner(LIMITS)(script)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert outcome.error.message.startswith("RecursionError: maximum recursion depth exceeded")
    assert outcome.output == ""


def test_a_recursion_error_in_json_indented_encoding_is_the_scripts() -> None:
    """json's pure-Python encoder (an indent) nests a generator per level: stopped at the
    limit, it is the script's to catch, as the C encoder's is (the oracle's case). In a
    host's thread only: at a worker's deeper limit, resuming so deep a chain of generators
    for every chunk takes seconds (and as many where the host's own limit is as deep: the
    run's limits leave room for it)."""
    from codeact.stdlib import standard_sandbox

    sandbox = standard_sandbox(limits=Limits(wall_seconds=60.0, cpu_seconds=30.0))
    script = (
        "import json\nx = {}\nfor _ in range(30_000):\n    x = {'a': [x]}\n"
        "try:\n    json.dumps(x, indent=2)\nexcept RecursionError as error:\n"
        "    caught = str(error)\ncaught"
    )
    outcome = sandbox.run(script)
    sandbox.close()
    assert outcome.error is None, outcome.error
    assert str(outcome.value).startswith(RECURSION_WORDS)


def test_output_flood_is_cut_and_reported(make_runner: MakeRunner) -> None:
    runner = make_runner(LIMITS)
    outcome = runner("while True:\n    print('x' * 1000)")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "printed more than 100,000" in outcome.error.message
    assert outcome.output.startswith("x" * 1000)
    assert "characters of output cut" in outcome.output
    assert len(outcome.output) < 10_200


def test_output_past_the_limit_shows_its_start_and_end_and_the_run_keeps_its_result(
    make_runner: MakeRunner,
) -> None:
    runner = make_runner(LIMITS)
    outcome = runner("for i in range(5_000):\n    print(f'line {i}')\n'finished'")
    assert outcome.error is None
    assert outcome.value == "finished"
    assert outcome.output.startswith("line 0\nline 1\n")
    assert outcome.output.endswith("line 4998\nline 4999\n")
    printed = sum(len(f"line {i}\n") for i in range(5_000))
    kept = outcome.output.split("\n[... ")[0] + outcome.output.split(" cut ...]\n")[1]
    assert f"[... {printed - len(kept):,} characters of output cut ...]" in outcome.output
    assert len(kept) == 10_000  # the limit, half from the start and half from the end


def test_tool_call_flood_is_stopped_at_the_limit(make_runner: MakeRunner) -> None:
    runner = make_runner(LIMITS)
    outcome = runner("while True:\n    add(1, 2)")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "more than 50 tool calls" in outcome.error.message
    assert len(outcome.tool_calls) == 50


def test_source_size_is_bounded(make_runner: MakeRunner) -> None:
    code, message = run_limited(make_runner, "x = 1\n" * 2_000)
    assert code == "CODE_RESOURCE_LIMIT"
    assert "characters" in message


def test_the_host_and_the_session_live_on_after_limits(make_runner: MakeRunner) -> None:
    runner = make_runner(LIMITS)
    threads = threading.active_count()
    for script in ("while True:\n    pass", "'a' * 10**10", "def f():\n    f()\nf()"):
        assert runner(script).error is not None
    outcome = runner("survivor = 40 + 2\nsurvivor")
    assert outcome.value == 42
    assert threading.active_count() <= threads + 1  # at most the watchdog was added


def test_a_limit_tripped_during_a_tool_call_waits_for_the_call_to_return() -> None:
    """Host code (here the tool itself) never receives the interrupt: it lands after."""
    import threading

    from codeact.sandbox import Limits as SandboxLimits
    from codeact.stdlib import standard_sandbox

    sandbox = standard_sandbox(limits=SandboxLimits(wall_seconds=5, cpu_seconds=0.2))
    finished: list[str] = []
    entered = threading.Event()

    def busy_tool(name: str, arguments: dict[str, object]) -> object:
        entered.set()
        total = 0
        for i in range(3_000_000):  # CPU well past the script's limit, in the script's thread
            total += i
        finished.append("tool ran to its end")
        return total

    def abort_when_inside() -> None:
        entered.wait(30)
        sandbox.abort()

    helper = threading.Thread(target=abort_when_inside)
    helper.start()
    outcome = sandbox.run("work()\nwhile True:\n    pass", tools={"work": ()}, call_tool=busy_tool)
    helper.join()
    assert finished == ["tool ran to its end"]
    assert outcome.error is not None
    assert outcome.error.code == "ABORTED"
    assert [c.name for c in outcome.tool_calls] == ["work"]
    sandbox.close()


@given(
    chunks=st.lists(st.text(alphabet="ab\n", max_size=40), max_size=30),
    shown=st.integers(min_value=0, max_value=60),
)
def test_printed_output_keeps_exactly_its_start_and_its_end(chunks: list[str], shown: int) -> None:
    from codeact.sandbox._printed import Printed

    printed = Printed(shown)
    for chunk in chunks:
        printed.add(chunk)
    full = "".join(chunks)
    assert printed.total == len(full)
    if len(full) <= shown:
        assert printed.text() == full
        return
    head, tail = full[: shown - shown // 2], full[len(full) - shown // 2 :]
    assert (
        printed.text()
        == f"{head}\n[... {len(full) - shown:,} characters of output cut ...]\n{tail}"
    )


def test_an_interrupt_landing_in_a_host_finalizer_is_not_reported_but_other_faults_are() -> None:
    import sys

    from codeact.sandbox._errors import LimitInterrupt
    from codeact.sandbox._limits import quiet_late_interrupts

    reported: list[BaseException | None] = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: reported.append(unraisable.exc_value)
    try:
        quiet_late_interrupts()

        class Finalized:
            def __init__(self, error: BaseException) -> None:
                self.error = error

            def __del__(self) -> None:
                raise self.error

        Finalized(LimitInterrupt("wall", "the wall-clock limit was exceeded"))  # dropped at once
        Finalized(ValueError("a library's own fault"))
    finally:
        sys.unraisablehook = before
    assert [type(error) for error in reported] == [ValueError]
