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
