"""Tokens spent advertising tools, by mode and catalog size, with a real offline BPE tokenizer.

Run: ``python -m benchmarks.advertisement`` (needs the ``bench`` extra: bpe-openai,
which ships OpenAI's o200k_base vocabulary). The catalog is generated: tools of
2 to 5 typed parameters with one-line descriptions and per-parameter docs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from codeact import InProcessExecutor, Mode, Runtime, Tool, ToolRegistry, openai_chat_tools

from ._timing import header

SIZES = (10, 50, 200, 1_000)
ENCODING = "o200k_base"
DOMAINS = (
    "invoice",
    "customer",
    "ticket",
    "shipment",
    "calendar",
    "document",
    "repository",
    "metric",
)
VERBS = ("get", "list", "create", "update", "delete", "search", "export", "archive")
PARAMETERS: list[tuple[str, dict[str, Any]]] = [
    ("id", {"type": "string", "description": "Identifier of the record."}),
    ("limit", {"type": "integer", "description": "Maximum number of results.", "default": 20}),
    (
        "status",
        {
            "type": "string",
            "enum": ["open", "closed", "pending"],
            "description": "Filter by status.",
        },
    ),
    (
        "since",
        {
            "type": "string",
            "format": "date",
            "description": "Only records changed after this date.",
        },
    ),
    ("tags", {"type": "array", "items": {"type": "string"}, "description": "Tags to match."}),
    (
        "include_archived",
        {"type": "boolean", "description": "Also return archived records.", "default": False},
    ),
]


def catalog(size: int) -> list[Tool]:
    tools = []
    for number in range(size):
        domain, verb = DOMAINS[number % len(DOMAINS)], VERBS[(number // len(DOMAINS)) % len(VERBS)]
        chosen = PARAMETERS[: 2 + number % 4]
        tools.append(
            Tool.from_schema(
                name=f"{verb}_{domain}_{number}",
                description=f"{verb.capitalize()} {domain} records in workspace {number % 13}.",
                parameters={
                    "type": "object",
                    "properties": dict(chosen),
                    "required": [chosen[0][0]],
                    "additionalProperties": False,
                },
                function=lambda **kwargs: kwargs,
                output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
            )
        )
    return tools


def counter() -> tuple[str, Callable[[str], int]]:
    import bpe_openai

    encoding = bpe_openai.get_encoding(ENCODING)
    return f"{ENCODING} (bpe-openai {bpe_openai.__version__})", lambda text: len(
        encoding.encode(text)
    )


def measure(size: int, count: Callable[[str], int]) -> dict[str, int]:
    registry = ToolRegistry()
    for made in catalog(size):
        registry.register(made)
    eager = Runtime(registry, executor=InProcessExecutor(), lazy_threshold=10**9)
    lazy = Runtime(registry, executor=InProcessExecutor(), lazy_threshold=0)

    def tokens(runtime: Runtime, mode: Mode) -> int:
        return count(json.dumps(openai_chat_tools(runtime.schemas(mode))))

    return {
        "native": tokens(eager, Mode.NATIVE),
        "code, stubs": tokens(eager, Mode.CODE),
        "code, lazy": tokens(lazy, Mode.CODE),
    }


def main() -> None:
    name, count = counter()
    print(header(f"Advertisement tokens by mode, tokenizer {name}"))
    columns = ("native", "code, stubs", "code, lazy")
    print(f"{'tools':>6}  " + "  ".join(f"{c:>12}" for c in columns) + "  stubs/native")
    for size in SIZES:
        row = measure(size, count)
        cells = "  ".join(f"{row[c]:>12,}" for c in columns)
        print(f"{size:>6}  {cells}  {row['code, stubs'] / row['native']:11.0%}")


if __name__ == "__main__":
    main()
