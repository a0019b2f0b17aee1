"""codeact against its peers, in one run: ``python -m benchmarks.peers`` (``make bench``).

``python -m benchmarks.peers --busy N`` measures what a user gets with N processes spinning
on the CPU beside every engine (all under the same load), and only that.

Peers: plain CPython ``exec`` (the baseline), smolagents' LocalPythonExecutor and
pydantic's Monty (a Rust interpreter in worker processes). They run in the separate
environment ``make bench`` builds; a peer that is not installed is skipped.

First what a user gets: codeact through ``Runtime.execute`` and ``run_code`` (the
pre-run check, the executor, the dispatch pipeline for every tool call), in-process and
in worker processes, per tool call, per warm trivial run and cold start, engines
interleaved and repeated. Then the interpreter alone: codeact's sandbox with tools bound
to a bare callback, as the peers bind plain functions.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from codeact import (
    Executor,
    InProcessExecutor,
    ProcessExecutor,
    Runtime,
    TextBlock,
    ToolCall,
    ToolExecutionSuccess,
    ToolRegistry,
    tool,
)
from codeact.sandbox import Limits
from codeact.stdlib import standard_sandbox

from ._timing import busy_cores, compiled_as_installed, header
from .interpreter import LOOP, STRINGS, median_seconds

CALLS = 10_000
TOOL_SCRIPT = f"total = 0\nfor i in range({CALLS}):\n    total = total + add(i, 1)\ntotal"
TRIVIAL = "x = 1"
SCRIPTS = {
    "loop-heavy": LOOP,
    "string-heavy": STRINGS,
    f"tool-call-heavy ({CALLS:,} calls)": TOOL_SCRIPT,
}
ROUNDS = 5
TRIVIAL_RUNS = 300
LIMITS = Limits(wall_seconds=300, cpu_seconds=300, max_tool_calls=CALLS + 1)


def add(a: int, b: int) -> int:
    return a + b


def median(action: Callable[[], object]) -> float:
    return median_seconds(action, ROUNDS)


def cpython(source: str) -> Callable[[], object]:
    code = compile(source, "<cpython>", "exec")
    return lambda: exec(code, {"add": add})


def codeact_sandbox(source: str) -> Callable[[], object]:
    sandbox = standard_sandbox(limits=LIMITS)

    def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return add(**arguments)

    def run() -> object:
        outcome = sandbox.run(source, tools={"add": ("a", "b")}, call_tool=call_tool)
        assert outcome.ok, outcome.error
        return outcome.value

    return run


ANSWER = ToolExecutionSuccess(call_id="c", name="add", value=0, content=(TextBlock(text="0"),))


def codeact_executor(source: str, kind: str) -> Callable[[], object]:
    """Through an executor; each tool call crosses to the host and back (a fixed answer)."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return ToolExecutionSuccess(
            call_id="c", name=name, value=add(**arguments), content=(TextBlock(text=""),)
        )

    def run() -> object:
        async def main() -> object:
            executor = (
                InProcessExecutor(limits=LIMITS)
                if kind == "inprocess"
                else ProcessExecutor(limits=LIMITS, warm=0)
            )
            try:
                await executor.run("0", session="s", tools={"add": ("a", "b")}, call_tool=call_tool)
                started = time.perf_counter()
                outcome = await executor.run(
                    source, session="s", tools={"add": ("a", "b")}, call_tool=call_tool
                )
                assert outcome.ok, outcome.error
                return time.perf_counter() - started
            finally:
                await executor.aclose()

        return anyio.run(main)

    return run


def smolagents_executor(source: str) -> Callable[[], object] | None:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None
    executor = LocalPythonExecutor(additional_authorized_imports=[])
    executor.send_tools({"add": add})  # type: ignore[dict-item]
    return lambda: executor(source)


def monty(source: str) -> tuple[Callable[[], object], Callable[[], None]] | None:
    try:
        import pydantic_monty
    except ImportError:
        return None
    pool = pydantic_monty.Monty(min_processes=1)
    pool.__enter__()
    session = pool.checkout(limits={"max_suspensions": 10**8})
    session.__enter__()

    def close() -> None:
        session.__exit__(None, None, None)
        pool.__exit__(None, None, None)

    return (
        lambda: session.feed_run(source, external_lookup={"add": add}, skip_type_check=True)
    ), close


# What a user gets ------------------------------------------------------------------
# codeact through Runtime.execute(run_code) (pre-run check, executor, the whole dispatch
# pipeline for each tool call) beside the peers as their users call them. Engines are
# interleaved within each round, so a noisy moment hits all of them alike.

USER_CALLS = 2_000
USER_LOOP = f"t = 0\nfor i in range({USER_CALLS}):\n    t += lookup(i)\nt"
# A search-like result: 200 rows of four fields (about 15 KB of JSON) per call.
ROW_CALLS = 100
ROW_LOOP = f"n = 0\nfor i in range({ROW_CALLS}):\n    n += len(search(i))\nn"
ROWS = [
    {"id": i, "title": f"result number {i}", "score": i / 7, "tags": ["a", "b"]} for i in range(200)
]
USER_ROUNDS = 7
USER_RUNS = 200
COLD_ROUNDS = 5
USER_LIMITS = Limits(wall_seconds=120, cpu_seconds=120, max_tool_calls=USER_CALLS + 1)
ENGINES = (
    "codeact in-process",
    "codeact process",
    "Monty 1.4 (worker)",
    "smolagents",
    "CPython exec",
)
METRICS = ("per tool call", "per call, 200 rows", "per trivial run", "cold start")


@tool
def lookup(key: int) -> int:
    """A cheap host tool."""
    return key * 2


def plain_lookup(key: int) -> int:
    return key * 2


@tool
def search(page: int) -> list[dict[str, Any]]:
    """A host tool with a search-like result."""
    return ROWS


def plain_search(page: int) -> list[dict[str, Any]]:
    return ROWS


PLAIN_TOOLS = {"lookup": plain_lookup, "search": plain_search}


Runner = Callable[[str], Awaitable[object]]


async def _codeact_runner(executor: Executor, stack: contextlib.AsyncExitStack) -> Runner:
    registry = ToolRegistry()
    registry.register(lookup)
    registry.register(search)
    runtime = await stack.enter_async_context(
        Runtime(registry, mode="code", executor=executor, limits=USER_LIMITS)
    )
    numbers = itertools.count()

    async def run(source: str) -> object:
        call = ToolCall(f"c{next(numbers)}", "run_code", {"code": source})
        result = await runtime.execute(call)
        assert not result.is_error, result.text
        return result

    return run


def _sync_runner(action: Callable[[str], object]) -> Runner:
    async def run(source: str) -> object:
        return action(source)

    return run


async def _runners(stack: contextlib.AsyncExitStack) -> dict[str, Runner]:
    runners = {
        "codeact in-process": await _codeact_runner(InProcessExecutor(limits=USER_LIMITS), stack),
        "codeact process": await _codeact_runner(
            ProcessExecutor(limits=USER_LIMITS, warm=1), stack
        ),
    }
    try:
        import pydantic_monty

        pool = stack.enter_context(pydantic_monty.Monty(min_processes=1))
        session = stack.enter_context(pool.checkout(limits={"max_suspensions": 10**8}))
        runners["Monty 1.4 (worker)"] = _sync_runner(
            lambda source: session.feed_run(
                source, external_lookup=PLAIN_TOOLS, skip_type_check=True
            )
        )
    except ImportError:
        pass
    try:
        from smolagents.local_python_executor import LocalPythonExecutor

        smol = LocalPythonExecutor(additional_authorized_imports=[])
        smol.send_tools(PLAIN_TOOLS)  # type: ignore[arg-type]
        runners["smolagents"] = _sync_runner(smol)
    except ImportError:
        pass
    runners["CPython exec"] = _sync_runner(
        lambda source: exec(compile(source, "<cpython>", "exec"), dict(PLAIN_TOOLS))
    )
    return runners


async def through_runtime() -> dict[str, dict[str, list[float]]]:
    """Samples (seconds) per engine and metric, engines interleaved in every round."""
    samples: dict[str, dict[str, list[float]]] = {}
    async with contextlib.AsyncExitStack() as stack:
        runners = await _runners(stack)
        for run in runners.values():  # warm: workers started, caches filled
            await run(USER_LOOP)
            await run(ROW_LOOP)
            await run("1 + 1")
        for _ in range(USER_ROUNDS):
            for engine, run in runners.items():
                rows = samples.setdefault(engine, {})
                started = time.perf_counter()
                await run(USER_LOOP)
                rows.setdefault("per tool call", []).append(
                    (time.perf_counter() - started) / USER_CALLS
                )
                started = time.perf_counter()
                await run(ROW_LOOP)
                rows.setdefault("per call, 200 rows", []).append(
                    (time.perf_counter() - started) / ROW_CALLS
                )
                started = time.perf_counter()
                for _ in range(USER_RUNS):
                    await run("1 + 1")
                rows.setdefault("per trivial run", []).append(
                    (time.perf_counter() - started) / USER_RUNS
                )
    colds = {engine: COLD[engine] for engine in samples if engine in COLD}
    compiled_as_installed()  # the peers' bytecode was compiled when pip installed them
    for _ in range(COLD_ROUNDS):
        for engine, program in colds.items():
            samples[engine].setdefault("cold start", []).append(_cold(program))
    return samples


# A fresh interpreter: import, build, first result (it prints the seconds taken).
_COLD_CODEACT = """
import time
started = time.perf_counter()
from codeact import Runtime, ToolCall, ToolRegistry, tool
{executor}
@tool
def lookup(key: int) -> int:
    \"\"\"A cheap host tool.\"\"\"
    return key * 2
registry = ToolRegistry()
registry.register(lookup)
runtime = Runtime(registry, mode="code"{argument})
result = runtime.execute_sync(ToolCall("c", "run_code", {{"code": "lookup(1) + 1"}}))
assert not result.is_error, result.text
print(time.perf_counter() - started)
runtime.close()
"""
COLD = {
    "codeact in-process": _COLD_CODEACT.format(
        executor="from codeact import InProcessExecutor",
        argument=", executor=InProcessExecutor()",
    ),
    "codeact process": _COLD_CODEACT.format(executor="", argument=""),
    "Monty 1.4 (worker)": """
import time
started = time.perf_counter()
import pydantic_monty
with pydantic_monty.Monty(min_processes=1) as pool, pool.checkout() as session:
    value = session.feed_run("lookup(1) + 1", external_lookup={"lookup": lambda k: k * 2})
    assert value == 3, value
    print(time.perf_counter() - started)
""",
    "smolagents": """
import time
started = time.perf_counter()
from smolagents.local_python_executor import LocalPythonExecutor
executor = LocalPythonExecutor(additional_authorized_imports=[])
executor.send_tools({"lookup": lambda key: key * 2})
executor("lookup(1) + 1")
print(time.perf_counter() - started)
""",
    "CPython exec": """
import time
started = time.perf_counter()
exec(compile("lookup(1) + 1", "<cpython>", "exec"), {"lookup": lambda k: k * 2})
print(time.perf_counter() - started)
""",
}


def _cold(program: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def print_user_table(samples: dict[str, dict[str, list[float]]]) -> None:
    """Medians with the spread (lowest to highest) of the rounds, then codeact's ratios."""
    engines = [e for e in ENGINES if e in samples]
    print(f"{'':20}" + "".join(f"{engine:>27}" for engine in engines))
    for metric in METRICS:
        cells = []
        for engine in engines:
            values = samples[engine].get(metric)
            cells.append(_cell(values) if values else "")
        print(f"{metric:20}" + "".join(f"{cell:>27}" for cell in cells))
    rounds = f"{USER_ROUNDS} rounds ({COLD_ROUNDS} cold)"
    print(
        f"medians, [lowest-highest] of {rounds}; {USER_CALLS:,}-call loop, sync tool; "
        f"{ROW_CALLS}-call loop of a 200-row result"
    )
    for peer in ("Monty 1.4 (worker)", "smolagents"):
        if peer not in samples:
            continue
        for engine in ("codeact in-process", "codeact process"):
            ratios = []
            for metric in METRICS:
                mine, theirs = samples[engine].get(metric), samples[peer].get(metric)
                if mine and theirs:
                    ratio = statistics.median(mine) / statistics.median(theirs)
                    ratios.append(f"{metric} {ratio:.1f}x")
            print(f"{engine} / {peer}: " + ", ".join(ratios))


def _cell(values: list[float]) -> str:
    middle = statistics.median(values)
    return f"{_short(middle)} [{_short(min(values))}-{_short(max(values))}]"


def _short(seconds: float) -> str:
    if seconds >= 0.1:
        return f"{seconds:.2f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f}ms"
    return f"{seconds * 1e6:.1f}us"


def _shown(seconds: float) -> str:
    return f"{seconds * 1e3:9.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.2f} us"


# The interpreter alone -----------------------------------------------------------------


def measure_script(source: str) -> dict[str, float]:
    rows: dict[str, float] = {"plain CPython exec": median(cpython(source))}
    rows["codeact sandbox (interpreter alone)"] = median(codeact_sandbox(source))
    for kind in ("inprocess", "process"):
        runner = codeact_executor(source, kind)
        runner()
        rows[f"codeact {kind} executor, calls cross to the host"] = statistics.median(
            float(runner())
            for _ in range(3)  # type: ignore[arg-type]
        )
    rows.update(measure_peers(source, median))
    return rows


def measure_peers(
    source: str, measure: Callable[[Callable[[], object]], float]
) -> dict[str, float]:
    """smolagents and Monty on ``source``, each only if it is installed."""
    rows: dict[str, float] = {}
    smol = smolagents_executor(source)
    if smol is not None:
        rows["smolagents LocalPythonExecutor"] = measure(smol)
    made = monty(source)
    if made is not None:
        run, close = made
        try:
            rows["Monty 1.4.0 (worker process)"] = measure(run)
        finally:
            close()
    return rows


def measure_trivial() -> dict[str, float]:
    def per_run(action: Callable[[], object]) -> float:
        def batch() -> None:
            for _ in range(TRIVIAL_RUNS):
                action()

        return median(batch) / TRIVIAL_RUNS

    rows = {
        "plain CPython exec": per_run(cpython(TRIVIAL)),
        "codeact sandbox (interpreter alone)": per_run(codeact_sandbox(TRIVIAL)),
    }
    rows.update(measure_peers(TRIVIAL, per_run))
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    busy = int(argv[argv.index("--busy") + 1]) if "--busy" in argv else 0
    if busy:
        title = f"Peers under load ({busy} busy processes): what a user gets"
        print(header(title))
        with busy_cores(busy):
            print_user_table(anyio.run(through_runtime))
        return
    print(header("Peers: what a user gets, codeact through Runtime.execute and run_code"))
    print_user_table(anyio.run(through_runtime))
    print()
    print(header("Peers: the interpreter alone, medians, ratio to plain CPython exec"))
    results = {name: measure_script(source) for name, source in SCRIPTS.items()}
    results["trivial run (per run)"] = measure_trivial()
    for name, rows in results.items():
        base = rows["plain CPython exec"]
        print(f"\n{name}")
        for runner, seconds in rows.items():
            print(f"  {runner:<52} {_shown(seconds)}  {seconds / base:8.1f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
