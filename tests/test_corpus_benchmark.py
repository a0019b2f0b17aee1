"""``python -m benchmarks.corpus``: a folder of scripts run both ways, counted as it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPTS = {
    "prints.py": "print(sum([1, 2]), 'done')\n",
    "value.py": "items = {'a': 1}\nitems | {'b': 2}\n",
    "not_compiled.py": "break\n",
    "imports_a_socket.py": "import socket\nsocket.gethostname()\n",
    "needs_its_harness.py": "# call-external\nadd_ints(1, 2)\n",
    "closing_traceback.py": 'raise ValueError("told")\n"""\nTRACEBACK:\nValueError: told\n"""\n',
}


def test_a_folder_is_counted_and_what_differs_is_written_down(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, source in SCRIPTS.items():
        (corpus / name).write_text(source, encoding="utf-8")
    diffs = tmp_path / "diffs.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.corpus", str(corpus), "--diffs", str(diffs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    first = done.stdout.splitlines()[0]
    assert "4 of 5 scripts the same as CPython" in first, done.stdout
    assert "(1 skipped" in first
    differing = json.loads(diffs.read_text(encoding="utf-8"))
    assert [item["script"] for item in differing] == ["imports_a_socket.py"]
    (found,) = differing
    assert found["codeact"][2] == "ModuleNotFoundError: No module named 'socket'"
    assert found["cpython"][2] is None  # CPython has the module
    assert "different: imports_a_socket.py" in done.stdout
