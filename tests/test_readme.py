"""The README's Python snippets run as written."""

from __future__ import annotations

import gc
import re
import tempfile
import time
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
ROOT = README.parent
GUIDES = sorted((ROOT / "docs").rglob("*.md"))
SNIPPETS = [
    (page, snippet)
    for page in [README, *GUIDES]
    for snippet in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
]


def test_readme_has_python_snippets() -> None:
    assert any(page == README for page, _ in SNIPPETS)
    assert any(page != README for page, _ in SNIPPETS)  # and the guides have theirs


@pytest.mark.parametrize(
    ("page", "snippet"), SNIPPETS, ids=lambda value: value.name if isinstance(value, Path) else ""
)
def test_readme_snippet_runs(
    page: Path,
    snippet: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # what the snippet leaves shows
    namespace = {"__name__": "readme"}
    exec(compile(snippet, str(page), "exec"), namespace)
    assert capsys.readouterr().err == ""
    namespace.clear()
    gc.collect()  # a runtime the snippet left open closes as it is collected, in its own thread
    bound = time.monotonic() + LEFTOVER_BOUND_SECONDS
    while list(tmp_path.iterdir()) and time.monotonic() < bound:
        time.sleep(0.05)
    assert list(tmp_path.iterdir()) == []  # a reader who runs it is left no folder or file


LEFTOVER_BOUND_SECONDS = 60.0  # a generous bound on a closing runtime's cleanup, not a timing


def test_the_reference_lists_every_public_name() -> None:
    import codeact
    import codeact.mcp

    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    entries = [line[4:] for line in reference.splitlines() if line.startswith("::: ")]
    names = {entry.rsplit(".", 1)[1] for entry in entries if not entry.startswith(BRIDGES)}
    mcp_names = {entry.rsplit(".", 1)[1] for entry in entries if entry.startswith(MCP)}
    assert names - mcp_names == set(codeact.__all__) - {"__version__"}
    assert mcp_names == set(codeact.mcp.__all__)
    bridges = {path.stem for path in (ROOT / "codeact" / "bridges").glob("[!_]*.py")}
    assert {entry.removeprefix(BRIDGES) for entry in entries if entry.startswith(BRIDGES)} == (
        bridges
    )


BRIDGES = "codeact.bridges."
MCP = "codeact.mcp."


def test_every_guide_is_in_the_sites_navigation() -> None:
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in GUIDES:
        assert str(page.relative_to(ROOT / "docs")) in site, page


USER_FACING = [
    README,
    *GUIDES,
    *sorted((ROOT / "examples").glob("*.py")),
    ROOT / "codeact" / "demo.py",
]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda path: path.name)
def test_what_users_read_imports_public_names_only(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"(from|import)\s+codeact\._", text), path
    assert not re.search(r"from\s+\.\_", text), path


def test_the_notebooks_import_public_names_only() -> None:
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert "codeact._" not in notebook.read_text(encoding="utf-8"), notebook


def test_the_install_line_works_from_outside_the_checkout(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    (line,) = re.findall(r'^pip install "codeact\[.*?\] @ file://.*"$', README.read_text(), re.M)
    requirement = line.removeprefix("pip install ").strip('"')
    requirement = requirement.replace("/absolute/path/to/codeact", str(ROOT))
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--quiet",
            "--report",
            str(report),
            requirement,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (installed,) = json.loads(report.read_text())["install"]
    assert installed["metadata"]["name"] == "codeact"
    assert set(installed["requested_extras"]) == {"mcp", "pydantic-ai"}


def test_every_extra_the_readme_names_exists() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = re.search(r"with the extras\nyou need \((.*?)\):", README.read_text(), re.S)
    assert named is not None
    for extra in re.findall(r"`([a-z-]+)`", named.group(1)):
        assert extra in extras, extra
    assert {"notebook", "openai-agents", "pydantic-ai", "langchain", "smolagents"} <= set(extras)
    assert any(
        requirement.startswith(("notebook", "nbconvert")) for requirement in extras["notebook"]
    )


def test_the_environment_make_builds_has_no_broken_requirements() -> None:
    """A user who adds an extra to it (``pip install -e ".[notebook]"``) meets no resolver
    error about a package installed without its requirements."""
    import subprocess
    import sys

    checked = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_readmes_comparison_figures_are_what_a_run_gives() -> None:
    """The table is written by ``python -m benchmarks.readme``, not typed in: a run here
    gives the same successes, round trips, calls, errors and faults (and the same tokens
    where they are counted the same way)."""
    from benchmarks import readme

    measured = readme.measure()
    assert readme.differences(measured, readme.written()) == []
