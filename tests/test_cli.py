"""The command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def codeact(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "codeact", *args],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_run_prints_what_the_model_would_see(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("print('working')\ndouble(21)\n")
    done = codeact("run", str(script), "--tools", "cli_tools:TOOLS")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Output:", "working", "Result: 42"]


def test_run_json_gives_the_whole_result(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("double(4)")
    done = codeact("run", str(script), "--tools", "cli_tools:TOOLS", "--json")
    payload = json.loads(done.stdout)
    assert payload["is_error"] is False
    assert payload["value"] == {
        "result": 8,
        "output": "",
        "tool_calls": [{"name": "double", "ok": True}],
    }


def test_an_error_result_exits_one_with_the_code(tmp_path: Path) -> None:
    done = codeact("run", "-", "--json", stdin="import os\n")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "CODE_SECURITY_VIOLATION"


def test_both_executors_give_the_same_result(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("total = sum(double(i) for i in range(5))\ntotal")
    values = []
    for executor in ("process", "inprocess"):
        done = codeact(
            "run", str(script), "--tools", "cli_tools:TOOLS", "--executor", executor, "--json"
        )
        assert done.returncode == 0, done.stderr
        values.append(json.loads(done.stdout)["value"]["result"])
    assert values == [20, 20]


def test_bad_usage_exits_two() -> None:
    assert codeact("run").returncode == 2
    assert codeact("run", "missing-file.py").returncode == 2
    assert codeact("run", "-", "--tools", "no_such_module:X", stdin="1").returncode == 2


def test_schemas_prints_each_mode_in_each_format() -> None:
    native = json.loads(
        codeact(
            "schemas", "--mode", "native", "--format", "openai", "--tools", "cli_tools:TOOLS"
        ).stdout
    )
    assert [t["function"]["name"] for t in native] == ["double"]
    code = json.loads(
        codeact(
            "schemas", "--mode", "code", "--format", "anthropic", "--tools", "cli_tools:TOOLS"
        ).stdout
    )
    assert [t["name"] for t in code] == ["run_code"]
    assert "def double(x: int) -> int:" in code[0]["description"]
    both = json.loads(codeact("schemas", "--mode", "both", "--tools", "cli_tools:TOOLS").stdout)
    assert [t["name"] for t in both] == ["double", "run_code"]


def test_run_with_the_standard_tools_works_in_the_current_folder(tmp_path: Path) -> None:
    script = "write('hello.txt', 'hi there')\nread('hello.txt')['lines']"
    done = codeact("run", "-", "--stdlib", "--json", stdin=script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["result"] == ["hi there"]
    assert (tmp_path / "hello.txt").read_text() == "hi there"
