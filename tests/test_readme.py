"""The README's Python snippets run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_python_snippets() -> None:
    assert SNIPPETS


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_readme_snippet_runs(snippet: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(snippet, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().err == ""


ROOT = README.parent
USER_FACING = [README, *sorted((ROOT / "examples").glob("*.py")), ROOT / "codeact" / "demo.py"]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda path: path.name)
def test_what_users_read_imports_public_names_only(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"(from|import)\s+codeact\._", text), path
    assert not re.search(r"from\s+\.\_", text), path


def test_the_notebooks_import_public_names_only() -> None:
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert "codeact._" not in notebook.read_text(encoding="utf-8"), notebook
