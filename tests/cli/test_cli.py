"""The command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hosts import REPO


def codeact(
    *args: str,
    stdin: str | None = None,
    cwd: Path | None = None,
    installed: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The command line as a subprocess: ``python -m codeact`` with the tests' tools on the
    path, or (``installed``) the console script with nothing added to the path; ``env``
    adds to its environment."""
    if installed:
        command = [str(Path(sys.executable).parent / "codeact")]
        environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    else:
        command = [sys.executable, "-m", "codeact"]
        environment = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*command, *args],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**environment, **(env or {})},
        check=False,
    )


def test_run_prints_what_the_model_would_see(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("print('working')\ndouble(21)\n")
    done = codeact("run", str(script), "--tools", "tests.cli_tools:TOOLS")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Output:", "working", "Result: 42"]


def test_run_json_gives_the_whole_result(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("double(4)")
    done = codeact("run", str(script), "--tools", "tests.cli_tools:TOOLS", "--json")
    payload = json.loads(done.stdout)
    assert payload["is_error"] is False
    assert payload["value"] == {
        "result": 8,
        "output": "",
        "tool_calls": [{"name": "double", "ok": True}],
    }


def test_an_error_result_exits_one_with_the_code(tmp_path: Path) -> None:
    done = codeact("run", "-", "--json", stdin="import subprocess\n")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "CODE_SECURITY_VIOLATION"


def test_both_executors_give_the_same_result(tmp_path: Path) -> None:
    script = tmp_path / "act.py"
    script.write_text("total = sum(double(i) for i in range(5))\ntotal")
    values = []
    for executor in ("process", "inprocess"):
        done = codeact(
            "run", str(script), "--tools", "tests.cli_tools:TOOLS", "--executor", executor, "--json"
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
            "schemas", "--mode", "native", "--format", "openai", "--tools", "tests.cli_tools:TOOLS"
        ).stdout
    )
    assert [t["function"]["name"] for t in native] == ["double"]
    code = json.loads(
        codeact(
            "schemas", "--mode", "code", "--format", "anthropic", "--tools", "tests.cli_tools:TOOLS"
        ).stdout
    )
    assert [t["name"] for t in code] == ["run_code"]
    assert "def double(x: int) -> int:" in code[0]["description"]
    both = json.loads(
        codeact("schemas", "--mode", "both", "--tools", "tests.cli_tools:TOOLS").stdout
    )
    assert [t["name"] for t in both] == ["double", "run_code"]


def test_run_with_the_standard_tools_works_in_the_current_folder(tmp_path: Path) -> None:
    script = "write('hello.txt', 'hi there')\nread('hello.txt')['lines']"
    done = codeact("run", "-", "--stdlib", "--json", stdin=script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["result"] == ["hi there"]
    assert (tmp_path / "hello.txt").read_text() == "hi there"


def console(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return codeact(*args, stdin=stdin, cwd=cwd, installed=True)


MY_TOOLS = '''
from codeact import tool

@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()

TOOLS = [shout]
'''


def test_a_tools_module_in_the_current_folder_is_importable(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(MY_TOOLS)
    done = console(
        "run", "-", "--tools", "mytools:TOOLS", "--json", cwd=tmp_path, stdin="shout('hi')"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["result"] == "HI"


def test_app_dir_names_the_folder_tools_are_imported_from(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mytools.py").write_text(MY_TOOLS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = console(
        "schemas", "--tools", "mytools:TOOLS", "--app-dir", str(tmp_path / "lib"), cwd=elsewhere
    )
    assert done.returncode == 0, done.stderr
    assert [schema["name"] for schema in json.loads(done.stdout)] == ["shout", "run_code"]


BAD_TOOLS = {
    "broken": ("raise RuntimeError('no config')", "broken:TOOLS", "RuntimeError: no config"),
    "syntax": ("def (:", "syntax:TOOLS", "SyntaxError"),
    "missing": ("TOOLS = []", "missing:NOPE", "'missing' has no 'NOPE'"),
    "notatool": ("TOOLS = [3]", "notatool:TOOLS", "--tools notatool:TOOLS"),
    "nospec": ("", "nospec", "MODULE:ATTR"),
    "absent": ("", "absent_module_x:T", "No module named 'absent_module_x'"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOOLS))
def test_a_bad_tools_option_is_one_line_and_exit_two(tmp_path: Path, case: str) -> None:
    source, spec, expected = BAD_TOOLS[case]
    if source:
        (tmp_path / f"{case}.py").write_text(source)
    done = console("run", "-", "--tools", spec, cwd=tmp_path, stdin="1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert expected in done.stderr


@pytest.mark.parametrize("executor", ["process", "inprocess"])
def test_limit_flags_reach_the_executor(tmp_path: Path, executor: str) -> None:
    slow = "n = 0\nwhile True:\n    n += 1"
    done = console(
        "run",
        "-",
        "--executor",
        executor,
        "--wall-seconds",
        "0.5",
        "--cpu-seconds",
        "0.5",
        "--json",
        cwd=tmp_path,
        stdin=slow,
    )
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "CODE_RESOURCE_LIMIT"
    assert "(0.5 s)" in error["message"]  # the flag's limit, not the default's
    big = "blocks = []\nwhile True:\n    blocks.append('x' * 1_000_000)"
    done = console(
        "run", "-", "--executor", executor, "--memory-mb", "64", "--json", cwd=tmp_path, stdin=big
    )
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "CODE_RESOURCE_LIMIT"
    assert "memory (64 MiB)" in error["message"]


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_a_bad_limit_is_a_usage_error(tmp_path: Path, value: str) -> None:
    done = console("run", "-", "--wall-seconds", value, cwd=tmp_path, stdin="1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--wall-seconds" in done.stderr


def run_with_terminal_stderr(*args: str) -> tuple[int, str, str]:
    """``python -m codeact ARGS`` with stderr on a pseudo-terminal; (status, stdout, stderr)."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "codeact", *args],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        os.close(follower)
        follower = -1
        terminal = bytearray()
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the other side closed: the process is done writing
                break
            if not chunk:
                break
            terminal += chunk
        stdout, _ = process.communicate(timeout=120)
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    return process.returncode, stdout, terminal.decode(errors="replace")


def test_compare_shows_progress_on_a_terminal_and_is_quiet_in_a_pipe() -> None:
    status, stdout, terminal = run_with_terminal_stderr("compare", "--tasks", "2")
    assert status == 0, terminal
    assert "\r  1/2 tasks" in terminal
    assert "2/2 tasks  (native 2/2 ok" in terminal
    assert "code 2/2 ok" in terminal
    assert "tasks" not in stdout.splitlines()[-1]  # the results stay clean of it
    piped = codeact("compare", "--tasks", "2")
    assert piped.returncode == 0
    assert piped.stderr == ""


def test_version_prints_the_package_version() -> None:
    import codeact as package

    done = codeact("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"codeact {package.__version__}"


def test_commands_that_need_no_mcp_run_without_the_mcp_extra(tmp_path: Path) -> None:
    """The MCP SDK is an optional extra: ``run`` and ``schemas`` work where it is missing
    (here made unimportable in the subprocess), and only ``serve-mcp`` asks for it."""
    script = tmp_path / "action.py"
    script.write_text("print(1 + 1)")
    missing = "import sys; sys.modules['mcp'] = None; from codeact.cli._main import main; "
    for args in (["schemas", "--mode", "code"], ["run", str(script), "--executor", "inprocess"]):
        done = subprocess.run(
            [sys.executable, "-c", missing + f"sys.exit(main({args!r}))"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert ("run_code" if args[0] == "schemas" else "2") in done.stdout


def test_a_bad_flag_shows_the_usage_of_its_own_command() -> None:
    done = codeact("schemas", "--bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: codeact schemas")
    assert "unrecognized arguments: --bogus" in done.stderr


BAD_VALUES = {
    "styles": (["compare", "--styles", "bogus"], "unknown style bogus"),
    "tasks": (["compare", "--tasks", "0"], "--tasks: must be above 0"),
    "repeats": (["compare", "--repeats", "x"], "--repeats: not a number"),
    "replay-alone": (["compare", "--replay"], "--replay needs --cassette"),
    "replay-missing": (["compare", "--replay", "--cassette", "absent.jsonl"], "no such file"),
    "port-range": (["serve-mcp", "--http", "127.0.0.1:70000"], "port up to 65535"),
    "port-word": (["serve-mcp", "--http", "localhost:http"], "port up to 65535"),
    "mode": (["schemas", "--mode", "fast"], "invalid choice: 'fast'"),
    "approve": (["schemas", "--approve", "nothing"], "--approve names no registered tool"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_every_bad_value_is_one_line_and_exit_two(tmp_path: Path, case: str) -> None:
    arguments, expected = BAD_VALUES[case]
    done = codeact(*arguments, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly() -> None:
    # `true` reads nothing and is gone long before Python has started: every write fails
    command = f"{sys.executable} -m codeact schemas --stdlib --format openai | true"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120
    )
    assert done.stderr == ""
    assert done.returncode == 0


def test_unusable_standard_tools_are_left_out_until_a_flag_makes_them_usable() -> None:
    def names(*extra: str) -> set[str]:
        done = codeact("schemas", "--stdlib", "--mode", "native", *extra)
        assert done.returncode == 0, done.stderr
        return {schema["name"] for schema in json.loads(done.stdout)}

    plain = names()
    assert {"read", "write", "list_files"} <= plain
    assert "fetch" not in plain  # no host it may reach
    assert "shell" not in plain  # no one to approve it
    assert "fetch" in names("--allow-host", "example.org")
    assert "shell" in names("--approve", "shell")


def test_an_approved_shell_runs_from_a_script(tmp_path: Path) -> None:
    script = "shell('echo approved')['stdout']"
    done = console(
        "run", "-", "--stdlib", "--approve", "shell", "--json", cwd=tmp_path, stdin=script
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["value"]["result"] == "approved\n"


def test_serve_mcp_over_http_says_where_in_one_line_and_that_it_has_no_tools(
    tmp_path: Path,
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "codeact", "serve-mcp", "--http", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
    )
    assert process.stderr is not None
    with process.stderr:
        try:
            line = process.stderr.readline()  # the server runs until told to stop: its first line
        finally:
            process.terminate()
            process.wait(timeout=60)
        rest = process.stderr.read()
    assert line.startswith(f"codeact: serving MCP on http://127.0.0.1:{port}/mcp with no tools")
    assert "Traceback" not in rest
    # stopped the moment it said where: a clean stop, not the signal's default action and
    # not a signal lost before the server's own handlers were in place
    assert process.returncode == 0, rest


def test_make_says_what_it_is_doing_while_it_installs() -> None:
    outer = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")  # when the tests themselves run under make
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", ".venv/.installed"],
        cwd=REPO,
        env={key: value for key, value in os.environ.items() if key not in outer},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("echo")
    assert "installing" in first


TOOLS_OPTION = ("--tools", "tests.cli_ledger_tools:TOOLS")
PREVIEWED = """
for name in customers():
    remind(customer=name)
log_note(text="reminded everyone")
"done"
"""


def previewed(tmp_path: Path, answer: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``codeact run --preview`` of PREVIEWED answered with ``answer``: what it did, and
    the writes it made (by tool)."""
    script = tmp_path / "act.py"
    script.write_text(PREVIEWED)
    ledger = tmp_path / "ledger"
    done = codeact(
        "run",
        "--preview",
        str(script),
        *TOOLS_OPTION,
        stdin=answer,
        env={"CODEACT_TEST_LEDGER": str(ledger)},
    )
    written = ledger.read_text().splitlines() if ledger.exists() else []
    return done, [json.loads(line)[0] for line in written]


def test_run_preview_asks_again_when_the_answer_is_unclear(tmp_path: Path) -> None:
    done, made = previewed(tmp_path, "maybe\nremind=perhaps\ny\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("Make these writes?") == 3
    assert done.stderr.count("Please answer y or n") == 2
    assert made == ["remind"] * 3 + ["log_note"]
    assert done.stderr.count("Plan for run cli") == 1
    assert "Plan for run" not in done.stdout


@pytest.mark.parametrize(
    ("answer", "made"),
    [
        ("y\n", ["remind", "remind", "remind", "log_note"]),
        ("n\n", []),
        ("remind=y,log_note=n\n", ["remind", "remind", "remind"]),
    ],
)
def test_run_preview_shows_the_plan_and_makes_only_what_the_answer_approves(
    tmp_path: Path, answer: str, made: list[str]
) -> None:
    done, written = previewed(tmp_path, answer)
    assert "Plan for run cli: 4 writes (none made yet), after 1 read." in done.stderr
    assert "3 x remind, in the loop at line 2" in done.stderr
    assert done.stderr.count("Make these writes?") == 1  # one question for the whole plan
    assert "Plan for run" not in done.stdout  # shown once, before the question
    assert written == made
    if answer == "n\n":
        assert done.returncode == 1
        assert "none of its writes was made" in done.stdout
    elif "=n" in answer:  # the denied write reached the script, which did not catch it
        assert done.returncode == 1
        assert "ToolError [POLICY_DENIED]" in done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.rstrip().endswith('Result: "done"')


def test_run_preview_needs_a_script_file_and_worker_processes(tmp_path: Path) -> None:
    done = codeact("run", "--preview", "-", "--tools", "tests.cli_tools:TOOLS", stdin="double(1)")
    assert done.returncode == 2
    assert "--preview reads its decision from standard input" in done.stderr


def test_ctrl_c_while_a_script_runs_is_one_line_and_exit_130(tmp_path: Path) -> None:
    import signal
    import time

    script = tmp_path / "busy.py"
    script.write_text('log_note(text="started")\nwhile True:\n    pass\n')
    ledger = tmp_path / "ledger"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codeact",
            "run",
            str(script),
            *TOOLS_OPTION,
            "--wall-seconds",
            "120",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEACT_TEST_LEDGER": str(ledger)},
    )
    try:
        for _ in range(600):  # a bounded wait (a minute) for the script to be running
            if ledger.exists() and ledger.read_text():
                break
            time.sleep(0.1)
        assert ledger.read_text(), "the script never started"
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    assert err.strip() == "codeact: interrupted"


@pytest.mark.parametrize("command", ["run", "schemas", "serve-mcp", "doctor"])
def test_each_commands_help_says_what_it_does_and_what_mode_it_defaults_to(command: str) -> None:
    done = codeact(command, "--help")
    assert done.returncode == 0
    described = done.stdout.split("\n\n")[1].strip()  # the paragraph after the usage
    assert described[0].isupper(), described
    assert described.endswith("."), described
    if command in ("schemas", "serve-mcp"):
        assert "(default:" in done.stdout.split("--mode {native,code,both}", 2)[2][:200]


def test_doctor_says_whether_the_cpython_interpreter_can_run_and_what_it_lacks() -> None:
    done = codeact("doctor")
    worker = done.stdout.split("The template")[0].split("Workers are started afresh")[0]
    on = {line.split()[1].rstrip(":") for line in worker.splitlines() if line.startswith("  on ")}
    needed = {"no_new_privs", "landlock", "seccomp", "parent_death_signal"}
    if os.geteuid() == 0:
        needed.add("user")
    if needed <= on:
        assert "interpreter='cpython' can run here" in done.stdout, done.stdout
    else:
        refused = done.stdout.split("interpreter='cpython' would be refused here (")[1]
        for layer in needed - on:
            assert layer in refused.split(").")[0]


def test_run_with_the_cpython_interpreter_imports_a_named_package(tmp_path: Path) -> None:
    script = tmp_path / "numbers.py"
    script.write_text("import numpy as np\nprint(int(np.arange(4).sum()))\ndouble(21)\n")
    tools = ("--tools", "tests.cli_tools:TOOLS")
    done = codeact("run", str(script), *tools, "--interpreter", "cpython", "--package", "numpy")
    assert done.returncode == 0, done.stderr
    assert "6" in done.stdout
    assert "Result: 42" in done.stdout
    restricted = codeact("run", str(script), *tools)
    assert restricted.returncode == 1
    assert "No module named 'numpy'" in restricted.stdout
    misplaced = codeact("run", str(script), *tools, "--package", "numpy")
    assert misplaced.returncode == 2
    assert "--package is for --interpreter cpython" in misplaced.stderr
