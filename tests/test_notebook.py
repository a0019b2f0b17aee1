"""The comparison notebook executes from a clean kernel and shows the table and the plots."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_the_native_vs_code_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    import build  # notebooks/build.py

    executed = build.execute(build.build())
    outputs = [o for cell in executed.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "code                81/81" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2
    assert os.path.exists(NOTEBOOKS / "native_vs_code.ipynb")
    sys.modules.pop("build", None)
