"""The README's comparison figures, written from one run rather than typed in.

``python -m benchmarks.readme`` runs the offline comparison (the same as ``codeact
compare``) and rewrites the block between the README's figure markers: the table, the
fault table and the sentence that reads them. ``--check`` rewrites nothing and says
whether the README still holds what a run gives (exit 1 if not). Run it where the tokens
are counted as the README's are: with the ``bench`` extra (tiktoken), as ``make demo`` does.
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import anyio

from codeact.comparison._compare import STYLES
from codeact.comparison._faults import fault_table, run_faults
from codeact.comparison._suite import Metrics, planned_tasks, run_suite, table

README = Path(__file__).resolve().parent.parent / "README.md"
START = "<!-- figures: python -m benchmarks.readme -->"
END = "<!-- /figures -->"
TIMING_COLUMNS = 1  # the last column of a row: milliseconds, never the same twice


@dataclass(frozen=True)
class Figures:
    tokenizer: str
    text: str


def measure() -> Figures:
    """One offline run of the suite and the faults, as the README shows them."""
    from codeact.stdlib import DEFAULT_MODULES

    tasks = planned_tasks()
    tokenizer, results = anyio.run(lambda: run_suite(tasks, STYLES))
    faults = fault_table(anyio.run(run_faults))
    native, code = _rows(results, "native"), _rows(results, "code")
    calls = sum(r.tool_calls for r in code)
    fewer_trips = sum(r.round_trips for r in native) / sum(r.round_trips for r in code)
    fewer_tokens = sum(r.prompt_tokens for r in native) / sum(r.prompt_tokens for r in code)
    text = "\n".join(
        [
            "```",
            f"tokens: {tokenizer}; totals over all tasks, peak and time per task "
            "(median for time, tools ad)",
            table(results),
            "",
            "Fault injection (one bad action, then the model gives up):",
            faults,
            "```",
            "",
            textwrap.fill(
                f"Same tools, same {calls} calls: code mode needs {fewer_trips:.1f} times "
                f"fewer model round trips than native calls made one at a time and sends "
                f"{fewer_tokens:.1f} times fewer prompt tokens (the run_code description "
                f"names the {len(DEFAULT_MODULES)} importable modules and the "
                "concurrent-call form).",
                width=88,
            ),
        ]
    )
    return Figures(tokenizer, text)


def _rows(results: list[Metrics], style: str) -> list[Metrics]:
    return [r for r in results if r.style == style]


def written() -> str:
    """The figures the README holds now."""
    text = README.read_text(encoding="utf-8")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def differences(measured: Figures, held: str) -> list[str]:
    """Where the README's figures differ from a run's, leaving out what a run cannot
    repeat: the timing column, and token counts when the tokenizer is another."""
    same_tokens = f"tokens: {measured.tokenizer};" in held
    problems = []
    (ours, our_words), (theirs, their_words) = _parts(measured.text), _parts(held)
    if not same_tokens:  # the tokens' ratio is another tokenizer's; the rest must hold
        our_words, their_words = _without_token_ratio(our_words), _without_token_ratio(their_words)
    if our_words != their_words:
        problems.append(f"README: {' '.join(their_words)}\nrun:    {' '.join(our_words)}")
    if len(ours) != len(theirs):
        return [*problems, f"{len(theirs)} table lines in the README, {len(ours)} from a run"]
    for mine, its in zip(ours, theirs, strict=True):
        if mine.startswith("tokens:"):
            continue
        mine_cells, its_cells = mine.split(), its.split()
        if mine.startswith(STYLES) and len(mine_cells) > 5:  # a row of the table
            kept = len(mine_cells) - TIMING_COLUMNS if same_tokens else 5
            mine_cells, its_cells = mine_cells[:kept], its_cells[:kept]
        if mine_cells != its_cells:
            problems.append(f"README: {its.strip()}\nrun:    {mine.strip()}")
    return problems


def _parts(figures: str) -> tuple[list[str], list[str]]:
    """The lines of the fenced tables, and the words of the sentence after them."""
    fenced, sentence = figures.rsplit("```", 1)
    return fenced.splitlines(), sentence.split()


def _without_token_ratio(words: list[str]) -> list[str]:
    """The sentence's words, the number of times fewer prompt tokens left out."""
    return [
        "N" if words[i + 1 : i + 4] == ["times", "fewer", "prompt"] else word
        for i, word in enumerate(words)
    ]


def main(argv: list[str]) -> int:
    measured = measure()
    if "--check" in argv:
        problems = differences(measured, written())
        print("\n".join(problems) or f"the README's figures hold ({measured.tokenizer})")
        return 1 if problems else 0
    text = README.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    README.write_text(f"{before}{START}\n{measured.text}\n{END}{after}", encoding="utf-8")
    print(measured.text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
