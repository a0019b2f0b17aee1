"""Builds (and executes) the notebooks: ``python notebooks/build.py``.

- ``native_vs_code.ipynb``: the built-in offline suite through the public comparison API.
- ``your_own_tools.ipynb``: a small shop's tools and five tasks, replayed from a cassette
  that ships with the repo, with the cell that runs them against a live endpoint instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent

SUITE = [
    (
        "markdown",
        "# Native vs code vs both, on the built-in suite\n\n"
        "M3ToolEval's tasks, each run in four styles over the same tools, through "
        "`codeact.compare`. **Offline: this measures the runtime's mechanics, not a model.** "
        "Each run's model is generated from the task's ground-truth plan (`planned_model`) "
        "and reads only what the runtime returns, so round trips, tokens, calls and time are "
        "what each style costs when the model knows what to do. Only a live endpoint "
        "measures a model's ability (see `your_own_tools.ipynb`).",
    ),
    (
        "code",
        "from codeact import compare\n"
        "from codeact.suite import STYLES, planned_model, suite_tasks, suite_tools\n\n"
        "tasks = suite_tasks()\n"
        "comparison = await compare(tasks, tools=suite_tools, model=planned_model, "
        "styles=STYLES, progress=False)\n"
        "print(f'{len(tasks)} tasks x {len(STYLES)} styles; tokens counted with', "
        "comparison.records[0].tokenizer)\n"
        "print(comparison.table())",
    ),
    (
        "markdown",
        "Paired differences over the same tasks, native minus each other style, with 95% "
        "bootstrap intervals (resampling tasks):",
    ),
    (
        "code",
        "for metric in ('round_trips', 'prompt_tokens'):\n"
        "    for pair, interval in comparison.differences(metric).items():\n"
        "        print(f'{metric:<14} {pair:<26} {interval}')",
    ),
    (
        "code",
        "import matplotlib.pyplot as plt\n"
        "from codeact.plots import plot_paired, plot_styles, plot_tokens_vs_round_trips\n\n"
        "fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))\n"
        "plot_styles(comparison, 'round_trips', ax=axes[0])\n"
        "plot_paired(comparison, 'round_trips', 'native', 'code', ax=axes[1])\n"
        "plot_tokens_vs_round_trips(comparison, ax=axes[2])\n"
        "fig.tight_layout()\n"
        "plt.show()",
    ),
    (
        "code",
        "success = {style: s['success'].mean for style, s in comparison.summary().items()}\n"
        "assert all(value == 1.0 for value in success.values()), success\n"
        "success",
    ),
    (
        "markdown",
        "## What the figures say\n\n"
        "Every style solved every task (the model knows the plan), so what differs is the "
        "cost of getting there. `round_trips` counts the model's turns: native calling "
        "needs one per dependent step, `native-parallel` batches the independent ones, and "
        "a code-mode script chains all of them in one turn (the second turn reads the "
        "result). `tool_calls` is the same in every style: the same work is done. "
        "`prompt_tokens` adds up what the model is sent over all its turns, so fewer turns "
        "mean less history sent again. `seconds` is the runtime's own time, milliseconds "
        "without a model; with a real one, each round trip adds the model's latency. The "
        "next cell says it in this run's numbers.",
    ),
    (
        "code",
        "summary = comparison.summary()\n"
        "native, code = summary['native'], summary['code']\n"
        "print(f\"Code mode: {code['round_trips'].mean:.2f} round trips per task against \"\n"
        "      f\"native's {native['round_trips'].mean:.2f} \"\n"
        "      f\"({native['round_trips'].mean / code['round_trips'].mean:.1f}x fewer), and \"\n"
        "      f\"{code['prompt_tokens'].mean:,.0f} prompt tokens against \"\n"
        "      f\"{native['prompt_tokens'].mean:,.0f} \"\n"
        "      f\"({native['prompt_tokens'].mean / code['prompt_tokens'].mean:.1f}x fewer), \"\n"
        "      f\"for the same {code['tool_calls'].mean:.2f} tool calls.\")",
    ),
]

OWN_TOOLS = [
    (
        "markdown",
        "# Comparing modes on your own tools\n\n"
        "A small shop (`shop.py`): four tools, five questions, each with its expected answer "
        "or a checker. The model here is **a recorded cassette** "
        "(`data/shop.cassette.jsonl`): it replays, offline, what an OpenAI-compatible "
        "server answered when it was recorded (`record_cassette.py`). That server is "
        "`standin.py`, a rule-based stand-in, **not a language model**: the figures show "
        "the API and what each style costs in round trips and tokens, not how well a model "
        "does. Replay refuses any request that differs from the recorded one (a changed "
        "prompt or tool schema); re-record after changing either.",
    ),
    (
        "code",
        "from codeact import Cassette, CassetteModel, compare\n"
        "from shop import TASKS, shop_tools\n\n"
        "model = CassetteModel(Cassette('data/shop.cassette.jsonl'), None, name='stand-in')\n"
        "comparison = await compare(TASKS, tools=shop_tools, model=model, "
        "styles=('native', 'code'), progress=False)\n"
        "print(comparison.table())",
    ),
    (
        "code",
        "frame = comparison.to_dataframe()\n"
        "frame[['task', 'style', 'success', 'round_trips', 'tool_calls', 'prompt_tokens', "
        "'tokenizer']]",
    ),
    (
        "code",
        "import matplotlib.pyplot as plt\n"
        "from codeact.plots import plot_paired, plot_styles, plot_tokens_vs_round_trips\n\n"
        "fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))\n"
        "plot_styles(comparison, 'success', ax=axes[0])\n"
        "plot_paired(comparison, 'round_trips', ax=axes[1])\n"
        "plot_tokens_vs_round_trips(comparison, ax=axes[2])\n"
        "fig.tight_layout()\n"
        "plt.show()",
    ),
    (
        "markdown",
        "## What the figures say\n\n"
        "`success` is the share of tasks whose answer matched; `round_trips` the model's "
        "turns, `tool_calls` the calls made, `prompt_tokens` what the model was sent over "
        "all its turns. The stand-in is not a language model, so success here says that "
        "both styles reach the tools correctly, not which one a model handles better; the "
        "round trips and tokens are what each style costs. The next cell puts this run's "
        "numbers in words.",
    ),
    (
        "code",
        "summary = comparison.summary()\n"
        "for style, metrics in summary.items():\n"
        "    print(f\"{style}: {metrics['success'].mean:.0%} of the tasks right, \"\n"
        "          f\"{metrics['round_trips'].mean:.1f} round trips and \"\n"
        "          f\"{metrics['prompt_tokens'].mean:,.0f} prompt tokens per task\")",
    ),
    (
        "markdown",
        "## Against a live endpoint\n\n"
        "Set `CODEACT_BASE_URL` (and `OPENAI_API_KEY`, `CODEACT_MODEL`) to any "
        "OpenAI-compatible endpoint and run the next cell: the same tasks, now measuring a "
        "model. Wrap the endpoint in `CassetteModel(Cassette(path), endpoint, name=...)` to "
        "record what it answers.",
    ),
    (
        "code",
        "import os\n"
        "from codeact import OpenAIChatModel\n\n"
        "if os.environ.get('CODEACT_BASE_URL'):\n"
        "    async with OpenAIChatModel(model=os.environ.get('CODEACT_MODEL', 'gpt-4o-mini'),\n"
        "                               base_url=os.environ['CODEACT_BASE_URL'],\n"
        "                               temperature=0) as live:\n"
        "        measured = await compare(TASKS, tools=shop_tools, model=live,\n"
        "                                 styles=('native', 'code'), repeats=3)\n"
        "    print(measured.table())\n"
        "else:\n"
        "    print('No live endpoint set (CODEACT_BASE_URL): nothing measured.')",
    ),
]

NOTEBOOKS = {"native_vs_code": SUITE, "your_own_tools": OWN_TOOLS}


def build(name: str = "native_vs_code") -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for kind, source in NOTEBOOKS[name]:
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
    for name in sys.argv[1:] or NOTEBOOKS:
        executed = execute(build(name))
        nbformat.write(executed, HERE / f"{name}.ipynb")
        print("wrote", HERE / f"{name}.ipynb")
