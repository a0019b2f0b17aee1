"""A user's own file type-checks against the installed package: both packages ship
``py.typed``, and the types are real (a misuse is reported, not let through as Any)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.hosts import REPO

USER_FILE = '''
"""A user's first file: their own tool, code mode through Runtime."""

from codeact import Runtime, ToolCall, ToolExecutionResult, ToolRegistry, tool


@tool
def price(item: str, quantity: int = 1) -> float:
    """The price of ``quantity`` of ``item``."""
    return 2.5 * quantity


def main() -> str:
    registry = ToolRegistry()
    registry.register(price)
    with Runtime(registry, mode="code") as runtime:
        call = ToolCall("c1", "run_code", {"code": "price('pen', 2)"})
        result: ToolExecutionResult = runtime.execute_sync(call)
    return result.text
'''
MISUSE = """
def wrong() -> int:
    registry = ToolRegistry()
    with Runtime(registry) as runtime:
        count: int = runtime.execute_sync(ToolCall("c1", "run_code", {"code": "1"}))
    return count
"""


def test_a_users_file_passes_mypy_strict_and_a_misuse_is_reported(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(USER_FILE)
    (tmp_path / "wrong.py").write_text(USER_FILE + MISUSE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "clean.py", "wrong.py"],
        cwd=tmp_path,  # outside the checkout: codeact is found where it is installed
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = checked.stdout + checked.stderr
    assert checked.returncode == 1, report
    assert "clean.py" not in report  # the user's file as it should be: no finding at all
    assert "wrong.py" in report
    assert "Incompatible types in assignment" in report
    assert "import-untyped" not in report
    assert "Found 1 error in 1 file" in report


def test_the_wheel_ships_py_typed_for_both_packages(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("codeact-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"codeact/py.typed", "stdlib_bindings/py.typed"} <= names
