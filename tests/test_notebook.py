"""Both notebooks execute from a clean kernel and show their tables and plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def executed(name: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.delenv("CODEACT_BASE_URL", raising=False)
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    import build  # notebooks/build.py

    try:
        notebook = build.execute(build.build(name))
    finally:
        sys.modules.pop("build", None)
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    assert (NOTEBOOKS / f"{name}.ipynb").exists()  # the executed copy is in the repo
    return outputs


def text_of(outputs: list[dict[str, Any]]) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)


def test_the_built_in_suite_notebook_executes_with_its_table_intervals_and_plots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = executed("native_vs_code", monkeypatch)
    text = text_of(outputs)
    assert "81 tasks x 4 styles" in text
    assert "code             " in text
    assert "round_trips    native - code" in text  # paired differences, with intervals
    assert "[" in text.split("native - code")[1].splitlines()[0]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1  # one figure of three plots
    # it ends saying what the table means, in this run's own numbers
    closing = text.split("Code mode: ")[1].splitlines()[0]
    assert "round trips per task against native's 7.16" in closing
    assert "x fewer" in closing


def test_the_your_own_tools_notebook_replays_its_cassette_with_plots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = executed("your_own_tools", monkeypatch)
    text = text_of(outputs)
    assert "native" in text
    assert "No live endpoint set" in text  # the live cell ran, honestly, without one
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "reorder-low" in html  # the DataFrame of every run
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1
    for style in ("native", "code"):  # it ends with each style's figures in words
        assert f"{style}: 100% of the tasks right" in text
