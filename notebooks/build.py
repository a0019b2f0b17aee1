"""Builds (and executes) notebooks/native_vs_code.ipynb: ``python notebooks/build.py``."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent

CELLS = [
    (
        "markdown",
        "# Native vs code vs both\n\n"
        "The 81 tasks of M3ToolEval, each run in four styles over the same tools. Offline, "
        "the model's behaviour is generated from a ground-truth plan per task and reads only "
        "what the runtime returns: this measures the runtime's mechanics (round trips, tokens, "
        "calls, time), not a model's ability. Point `OpenAIChatModel` at an endpoint to "
        "measure a real model.",
    ),
    (
        "code",
        "import anyio\n"
        "from codeact.suite import planned_tasks, run_suite, table\n\n"
        "tokenizer_name, results = await run_suite(planned_tasks())\n"
        "print('tokens:', tokenizer_name)\n"
        "print(table(results))",
    ),
    (
        "code",
        "from collections import defaultdict\n"
        "import matplotlib.pyplot as plt\n\n"
        "styles = list(dict.fromkeys(r.style for r in results))\n"
        "metrics = [('round_trips', 'model round trips'), ('prompt_tokens', 'prompt tokens'),\n"
        "           ('tool_output_tokens', 'tool output tokens')]\n"
        "fig, axes = plt.subplots(1, len(metrics), figsize=(13, 3.5))\n"
        "for axis, (field, label) in zip(axes, metrics, strict=True):\n"
        "    totals = [sum(getattr(r, field) for r in results if r.style == s) for s in styles]\n"
        "    axis.bar(styles, totals, color=['#4c72b0', '#55a868', '#c44e52', '#8172b2'])\n"
        "    axis.set_title(label)\n"
        "    axis.tick_params(axis='x', rotation=20)\n"
        "fig.tight_layout()\n"
        "plt.show()",
    ),
    (
        "code",
        "by_domain = defaultdict(lambda: defaultdict(int))\n"
        "for r in results:\n"
        "    by_domain[r.task.split('/')[0]][r.style] += r.round_trips\n"
        "fig, axis = plt.subplots(figsize=(10, 3.5))\n"
        "width = 0.2\n"
        "domains = sorted(by_domain)\n"
        "positions = range(len(domains))\n"
        "for i, style in enumerate(styles):\n"
        "    heights = [by_domain[d][style] for d in domains]\n"
        "    axis.bar([p + i * width for p in positions], heights, width, label=style)\n"
        "axis.set_xticks([p + 1.5 * width for p in positions], [d[:18] for d in domains])\n"
        "axis.set_ylabel('round trips')\n"
        "axis.legend()\n"
        "fig.tight_layout()\n"
        "plt.show()",
    ),
    (
        "code",
        "success = {s: sum(r.success for r in results if r.style == s) for s in styles}\n"
        "assert all(v == len(planned_tasks()) for v in success.values()), success\n"
        "success",
    ),
]


def build() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for kind, source in CELLS:
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        notebook.cells.append(maker(source))
    return notebook


def execute(notebook: nbformat.NotebookNode, *, timeout: int = 600) -> nbformat.NotebookNode:
    NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(HERE)}},
    ).execute()
    return notebook


if __name__ == "__main__":
    executed = execute(build())
    nbformat.write(executed, HERE / "native_vs_code.ipynb")
    print("wrote", HERE / "native_vs_code.ipynb")
