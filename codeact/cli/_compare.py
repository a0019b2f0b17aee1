"""``codeact compare``: the built-in suite in each style, offline by default; against a real
endpoint with ``--model``, recorded to or replayed from a cassette."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from ..comparison._compare import STYLES
from ..comparison._faults import fault_table, run_faults
from ..comparison._real import Cassette, CassetteModel, paired, probe
from ..comparison._suite import planned_tasks, run_suite, table
from ..providers._http import OpenAIChatModel
from ..providers._models import Model
from ._parser import Parser, positive

MAX_FAILURES_SHOWN = 20


def main(argv: Sequence[str] | None = None) -> int:
    """``codeact compare``: offline by default; ``--model`` runs against a real endpoint."""
    parser = Parser(prog="codeact compare")
    parser.add_argument(
        "--model", default=os.environ.get("CODEACT_MODEL"), help="run against this model"
    )
    parser.add_argument(
        "--base-url", default=None, help="OpenAI-compatible base URL (or OPENAI_BASE_URL)"
    )
    parser.add_argument("--api-key", default=None, help="API key (or OPENAI_API_KEY)")
    parser.add_argument("--repeats", type=positive(int), default=1)
    parser.add_argument("--tasks", type=positive(int), default=None, help="only the first N tasks")
    parser.add_argument(
        "--styles", type=_styles, default=list(STYLES), help=f"of {', '.join(STYLES)}"
    )
    parser.add_argument(
        "--cassette", default=None, help="record to (or, with --replay, replay from) this file"
    )
    parser.add_argument(
        "--replay", action="store_true", help="replay the cassette offline, no endpoint"
    )
    options = parser.parse_args(argv)
    if options.replay and not options.cassette:
        parser.error("--replay needs --cassette FILE")
    if options.replay and not Path(options.cassette).is_file():
        parser.error(f"--cassette {options.cassette}: no such file to replay")
    tasks = planned_tasks()[: options.tasks]
    styles = options.styles
    model = _real_model(options)
    if model is None:
        print(
            f"Offline comparison on {len(tasks)} M3ToolEval tasks: the model's behaviour is "
            "generated from each task's plan, so this measures the runtime's mechanics, "
            "not a model's ability."
        )
    else:
        problem = None if options.replay else anyio.run(probe, model)
        if problem is not None:
            print(f"codeact compare: {problem}", file=sys.stderr)
            return 2
        print(
            f"Comparison on {len(tasks)} tasks with {model.name}, "
            f"{options.repeats} run(s) each, temperature 0."
        )
    name, results = anyio.run(
        lambda: run_suite(tasks, styles, model=model, repeats=options.repeats)
    )
    print(
        f"tokens: {name}; totals over all tasks, peak and time per task (median for time, tools ad)"
    )
    print(table(results))
    failed = [r for r in results if r.failure is not None]
    for record in failed[:MAX_FAILURES_SHOWN]:  # why, not only how many
        print(
            f"failed: {record.task} ({record.style}, run {record.repeat + 1}): "
            f"{(record.failure or '')[:300]}",
            file=sys.stderr,
        )
    if len(failed) > MAX_FAILURES_SHOWN:
        print(f"... and {len(failed) - MAX_FAILURES_SHOWN} more failed runs", file=sys.stderr)
    if results and len(failed) == len(results):
        print("codeact compare: every run failed (see above): nothing compared", file=sys.stderr)
        return 1
    if model is not None and len(styles) > 1:
        print(f"\nPaired differences per task ({styles[0]} minus others):")
        for other in styles[1:]:
            for field in ("round_trips", "prompt_tokens", "success"):
                p = paired(results, styles[0], other, field)
                print(
                    f"  {styles[0]} - {other:<16} {field:<14} mean {p['mean']:+.2f} "
                    f"(se {p['stderr']:.2f}, "
                    f"{p['right_lower']}/{p['tasks']} tasks lower in {other})"
                )
    else:
        print("\nFault injection (one bad action, then the model gives up):")
        print(fault_table(anyio.run(run_faults)))
    return 0


def _styles(text: str) -> list[str]:
    """``--styles a,b``: each one of STYLES."""
    styles = [style for style in text.split(",") if style]
    unknown = [style for style in styles if style not in STYLES]
    if unknown or not styles:
        raise argparse.ArgumentTypeError(
            f"unknown style {', '.join(unknown) or '(none)'}: choose from {', '.join(STYLES)}"
        )
    return styles


def _real_model(options: argparse.Namespace) -> Model | None:
    if not options.model and not options.replay:
        return None
    name = options.model or "replay"
    cassette = Cassette(options.cassette) if options.cassette else None
    if options.replay:
        assert cassette is not None  # main refused --replay without one
        return CassetteModel(cassette, None, name=name)
    endpoint = OpenAIChatModel(
        model=name, base_url=options.base_url, api_key=options.api_key, temperature=0
    )
    return CassetteModel(cassette, endpoint, name=name) if cassette else endpoint


__all__ = ["main"]
