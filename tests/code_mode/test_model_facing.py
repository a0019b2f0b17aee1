"""What the model reads when something goes wrong: each fact once, in CPython's words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codeact import InProcessExecutor, Runtime, ToolCall, ToolError, ToolRegistry, tool


@pytest.fixture(params=["inprocess", "process"])
def runtime(request: pytest.FixtureRequest) -> Iterator[Runtime]:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        if key == "missing":
            raise ToolError(f"no entry {key!r}", "NOT_FOUND")
        return key.upper()

    registry = ToolRegistry()
    registry.register(lookup)
    executor = InProcessExecutor() if request.param == "inprocess" else None
    made = Runtime(registry, executor=executor)
    yield made
    made.close()


def read(runtime: Runtime, script: str) -> str:
    call = ToolCall("c1", "run_code", {"code": script})
    result = runtime.execute_sync(call, mode="code")
    assert result.is_error
    return result.text


def test_an_uncaught_tool_error_says_its_code_once(runtime: Runtime) -> None:
    text = read(runtime, "lookup('a')\nlookup('missing')")
    assert text.count("NOT_FOUND") == 1
    assert "ToolError [NOT_FOUND]: no entry 'missing'" in text
    assert "Tool calls made before the error: lookup (ok)" in text  # the call before it


def test_a_chained_exception_shows_its_cause_above_it_as_cpython_does(runtime: Runtime) -> None:
    direct = read(
        runtime,
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    raise ValueError('bad') from e",
    )
    assert (
        direct.index("ZeroDivisionError: division by zero")
        < direct.index("The above exception was the direct cause of the following exception:")
        < direct.index("ValueError: bad")
    )
    during = read(runtime, "try:\n    {}['k']\nexcept KeyError:\n    raise ValueError('worse')")
    assert (
        "KeyError: 'k'\n\nDuring handling of the above exception, another exception occurred:\n\nValueError: worse"
        in during
    )
    hidden = read(
        runtime, "try:\n    {}['k']\nexcept KeyError:\n    raise ValueError('alone') from None"
    )
    assert "KeyError" not in hidden
    assert "above exception" not in hidden


@pytest.mark.parametrize(
    ("script", "unit"),
    [
        ("'a' * 10**9", "characters"),
        ("b'a' * 10**9", "bytes"),
        ("[0] * 10**9", "items"),
        ("'-'.join(['ab'] * 6_000_000)", "characters"),
    ],
)
def test_a_size_limit_names_what_it_counts(runtime: Runtime, script: str, unit: str) -> None:
    text = read(runtime, script)
    assert "CODE_RESOURCE_LIMIT" in text
    assert f" {unit} (limit 10,000,000)" in text


def test_the_cause_of_a_worker_error_is_bounded_like_its_message(runtime: Runtime) -> None:
    text = read(
        runtime,
        "try:\n    raise KeyError('x' * 100_000)\nexcept KeyError as e:\n    raise ValueError('v') from e",
    )
    assert len(text) < 10_000
    assert "more characters]" in text
