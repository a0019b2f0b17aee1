"""codeact inside a loop written with the official ``openai`` client.

The loop is yours; codeact supplies the advertisement, parses the model's tool
calls, runs them (natively or as scripts) and renders the results as messages.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... python -m examples.openai_loop
"""

from __future__ import annotations

import os
from typing import Any

from openai import OpenAI

from codeact import (
    InProcessExecutor,
    Mode,
    Runtime,
    ToolRegistry,
    calls_from_openai_chat,
    openai_chat_results,
    openai_chat_tools,
    tool,
)

MAX_STEPS = 8


@tool
def stock(item: str) -> int:
    """How many units of an item are in stock."""
    return {"apples": 12, "pears": 5}.get(item, 0)


@tool
def price(item: str) -> float:
    """Unit price of an item in euros."""
    return {"apples": 0.5, "pears": 0.8}.get(item, 0.0)


def answer(question: str, *, client: OpenAI, model: str, mode: Mode = Mode.CODE) -> str:
    """Ask ``question``; run every tool call the model makes until it answers in text."""
    registry = ToolRegistry()
    registry.register(stock)
    registry.register(price)
    runtime = Runtime(registry, mode=mode, executor=InProcessExecutor())
    messages: list[Any] = [{"role": "user", "content": question}]
    try:
        for _ in range(MAX_STEPS):
            completion = client.chat.completions.create(
                model=model,
                messages=messages,
                tools=openai_chat_tools(runtime.schemas()),  # type: ignore[arg-type]
                temperature=0,
            )
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            calls = calls_from_openai_chat(message.model_dump())
            if not calls:
                return message.content or ""
            messages.extend(openai_chat_results(runtime.execute_many_sync(calls)))
        return "(no answer within the step limit)"
    finally:
        runtime.close()


def main() -> None:
    client = OpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ.get("OPENAI_API_KEY", "none")
    )
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    print(answer("What is all our stock of apples and pears worth?", client=client, model=model))


if __name__ == "__main__":
    main()
