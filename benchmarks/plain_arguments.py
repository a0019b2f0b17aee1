"""What checking a host function's arguments costs, in one run: ``python -m
benchmarks.plain_arguments``.

Each standard-library function a script calls is Python code offered behind
``plain_arguments`` (no script object reaches it). Measured in the host: the function
called directly (the baseline) and through the check a script's call goes through, for a
call of numbers only, one with a list (checked at its own level or item by item), and one
with a large list of floats.
"""

from __future__ import annotations

import html
import random
import statistics
from collections.abc import Callable
from typing import Any

from codeact.sandbox._plain_arguments import plain_arguments

from ._timing import header, per_call, table

DECK = list(range(52))
FLOATS = [float(i) for i in range(10_000)]
TEXT = "<p>fish & chips</p>" * 10

# name -> (the host function, its checked form, the arguments a script would pass)
RANDOM = random.Random(1)
CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    "random.randint(1, 6)": (RANDOM.randint, plain_arguments(RANDOM.randint), (1, 6)),
    "random.choice(52 cards)": (
        RANDOM.choice,
        plain_arguments(RANDOM.choice, held=("seq",)),
        (DECK,),
    ),
    "html.escape(200 chars)": (html.escape, plain_arguments(html.escape), (TEXT,)),
    "statistics.fmean(10k floats)": (
        statistics.fmean,
        plain_arguments(statistics.fmean, drained=("data",)),
        (FLOATS,),
    ),
}


def _calls(function: Callable[..., Any], arguments: tuple[Any, ...]) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            function(*arguments)

    return run


def main() -> None:
    print(header("Plain arguments: a host function called directly and through its check"))
    rows = []
    for name, (direct, checked, arguments) in CASES.items():
        batch = 200 if "10k" in name else 20_000
        base = per_call(_calls(direct, arguments), batch=batch)
        rows.append((f"{name}, direct", base, base))
        rows.append((f"{name}, checked", per_call(_calls(checked, arguments), batch=batch), base))
    print(table(rows, baseline="the direct call"))


if __name__ == "__main__":
    main()
