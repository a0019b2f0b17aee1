"""``eval`` and ``exec``: a string runs as the script's own code, under its rules and limits.

What CPython does with them is the oracle's to check (``oracle/builtins.scripts``); these
are the sides only a sandbox has: the policy applied to the string, the guards it runs
with whatever namespace the script hands over, its limits, its tool calls, its errors.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from codeact import InProcessExecutor
from codeact.executors._process import ProcessExecutor
from codeact.sandbox import Limits, ScriptOutcome

from .conftest import SHARED_RESULT, Runner

MakeRunner = Callable[..., Runner]


def test_a_string_is_held_to_the_scripts_rules_and_the_error_says_where(run: Runner) -> None:
    outcome = run("text = '_write_ = len'\nexec(text)")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"
    assert "the string given to exec uses what scripts may not" in outcome.error.message
    assert '"_write_" is reserved' in outcome.error.message
    assert outcome.error.line == 2  # the script's line that handed the string over


def test_a_refused_string_cannot_be_caught(run: Runner) -> None:
    outcome = run(
        "try:\n    eval('(lambda: 0).__globals__')\nexcept BaseException:\n    caught = True\ncaught"
    )
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"


def test_a_string_longer_than_a_script_may_be_is_a_limit(make_runner: MakeRunner) -> None:
    runner = make_runner(Limits(wall_seconds=5.0, cpu_seconds=5.0, max_source_chars=2_000))
    assert runner("exec('x = 1\\n' * 100)\nx").value == 1
    outcome = runner("exec('x = 1\\n' * 1_000)")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT"
    assert "6,000 characters (limit 2,000" in outcome.error.message


def test_tool_calls_made_in_a_string_are_the_runs_own(run: Runner) -> None:
    outcome = run("exec('first = add(a=1, b=2)')\nsecond = eval('add(a=first, b=10)')\nsecond")
    assert outcome.error is None, outcome.error
    assert outcome.value == 13
    assert [(c.name, c.ok) for c in outcome.tool_calls] == [("add", True), ("add", True)]


def test_a_tools_result_changed_in_a_string_leaves_the_hosts_value_alone(run: Runner) -> None:
    before = list(SHARED_RESULT)
    outcome = run("exec('kept = shared()\\nkept.append(99)')\nkept")
    assert outcome.error is None, outcome.error
    assert outcome.value == [*before, 99]
    assert before == SHARED_RESULT


def test_names_a_string_binds_at_the_top_stay_for_the_next_run(run: Runner) -> None:
    assert run("exec('def triple(n):\\n    return n * 3\\nbase = 4')").error is None
    assert run("triple(base)").value == 12


def test_a_function_a_string_made_prints_into_the_run_that_calls_it(run: Runner) -> None:
    assert run("space = {}\nexec('def shout(w):\\n    print(w.upper())', space)").error is None
    outcome = run("space['shout']('later')")
    assert outcome.error is None, outcome.error
    assert outcome.output == "LATER\n"


def test_compile_checks_the_string_when_it_compiles_not_when_it_runs(run: Runner) -> None:
    outcome = run("made = []\ncode = compile('_write_ = len', 'f.py', 'exec')\nmade.append(1)")
    assert outcome.error is not None
    assert outcome.error.code == "CODE_SECURITY_VIOLATION"
    assert '"_write_" is reserved' in outcome.error.message
    assert outcome.error.line == 2  # the compile call, before anything of it could run
    assert run("made").value == []  # nothing after it ran


def test_code_compiled_in_one_run_calls_tools_in_the_run_that_evaluates_it(run: Runner) -> None:
    first = run("total = compile('add(a=base, b=2)', '<total>', 'eval')\nbase = 1")
    assert first.error is None, first.error
    assert first.tool_calls == ()
    second = run("base = 40\neval(total)")
    assert second.error is None, second.error
    assert second.value == 42
    assert [(c.name, c.ok) for c in second.tool_calls] == [("add", True)]


def test_an_error_in_compiled_code_names_the_scripts_line(run: Runner) -> None:
    outcome = run("ratio = compile('1 / count', '<ratio>', 'eval')\ncount = 0\neval(ratio)")
    assert outcome.error is not None
    assert outcome.error.message.startswith("ZeroDivisionError: division by zero")
    assert outcome.error.line == 3  # the script's line that ran it


def test_a_namespace_the_script_gives_keeps_only_names(run: Runner) -> None:
    outcome = run(
        "space = {'value': 2}\nexec('value = value * 5\\ndel_me = 1\\ndel del_me', space)\n"
        "sorted(space.items())"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [["value", 10]]


def test_a_namespace_with_a_key_that_is_not_text_is_refused(run: Runner) -> None:
    outcome = run(
        "try:\n    exec('x = 1', {1: 'one'})\nexcept TypeError as e:\n    said = str(e)\nsaid"
    )
    assert outcome.value == "the globals and locals given to eval() or exec() are names: str keys"


def test_a_mapping_class_as_locals_is_refused_in_words(run: Runner) -> None:
    outcome = run(
        "class Names(dict):\n    pass\n"
        "try:\n    eval('1', {}, Names())\nexcept TypeError as e:\n    said = str(e)\nsaid"
    )
    assert isinstance(outcome.value, str)
    assert outcome.value.startswith("locals must be a dict in scripts")


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("exec('while True:\\n    pass')", "limit"),
        ("def down(n):\n    return eval('down(n + 1)')\ndown(0)", "RecursionError: maximum"),
    ],
    ids=["endless", "recursion-uncaught"],
)
def test_a_string_that_runs_away_ends_as_a_script_would(
    make_runner: MakeRunner, script: str, words: str
) -> None:
    outcome = make_runner(Limits(wall_seconds=1.0, cpu_seconds=1.0))(script)
    assert outcome.error is not None
    assert outcome.error.code == "CODE_RESOURCE_LIMIT", outcome.error
    assert words in outcome.error.message


def test_builtins_a_namespace_names_are_not_the_ones_the_code_gets(run: Runner) -> None:
    """The code gets the sandbox's builtins, whatever ``__builtins__`` the namespace holds
    (CPython would use the script's; here they would decide what a class statement or an
    import inside the string calls)."""
    outcome = run(
        "space = {'__builtins__': {'len': None, '__import__': None}}\n"
        "exec('import json\\nsize = len(json.dumps([1, 2]))', space)\nspace['size']"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == 6


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["inprocess", "process"])
async def test_sessions_running_strings_at_once_keep_their_own_names(kind: str) -> None:
    """Eight sessions, each binding and reading names through exec and eval in many runs
    at once (threads share the compile cache in-process): every session ends with exactly
    its own names, and closing leaves no worker behind."""
    limits = Limits(wall_seconds=30.0, cpu_seconds=30.0)
    executor: InProcessExecutor | ProcessExecutor = (
        InProcessExecutor(limits=limits)
        if kind == "inprocess"
        else ProcessExecutor(limits=limits, warm=0, max_sessions=8)
    )
    runs = 12
    values: dict[str, object] = {}

    async def no_tools(name: str, arguments: dict[str, object]) -> object:
        raise AssertionError(f"no tool is bound, yet {name} was called")

    async def run(source: str, session: str) -> ScriptOutcome:
        return await executor.run(source, session=session, tools={}, call_tool=no_tools)

    async def session(number: int) -> None:
        name = f"session-{number}"
        await run(f"exec('seen = []\\nmine = {number}')", name)
        for step in range(runs):
            script = f"exec('seen.append(mine * 100 + {step})')\neval('len(seen)')"
            outcome = await run(script, name)
            assert outcome.error is None, outcome.error
            assert outcome.value == step + 1
        shown = await run("space = {'seen': seen}\nexec('x = list(seen)', space)\nspace['x']", name)
        assert shown.error is None, shown.error
        values[name] = shown.value

    try:
        async with anyio.create_task_group() as tasks:
            for number in range(8):
                tasks.start_soon(session, number)
    finally:
        await executor.aclose()
    assert values == {f"session-{n}": [n * 100 + step for step in range(runs)] for n in range(8)}
    if isinstance(executor, ProcessExecutor):
        assert not executor.workers


def test_the_dicts_given_to_exec_are_let_go_when_the_code_ends() -> None:
    """globals() and locals() in code given a dict answer with that dict while the code
    runs; when it ends, raised or not, the runtime keeps nothing of it for them."""
    from codeact.sandbox import _string_code
    from codeact.stdlib import standard_sandbox

    outcome = standard_sandbox().run(
        "g, h, l = {}, {}, {}\n"
        "exec('r = globals()', g)\n"
        "try:\n"
        "    exec('r = locals()\\nx = 1 / 0', h, l)\n"
        "except ZeroDivisionError:\n"
        "    pass\n"
        "[g['r'] is g, l['r'] is l, 'r' in h]"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [True, True, False]
    assert _string_code._GIVEN == {}
