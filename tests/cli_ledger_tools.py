"""Tools for the command line's preview tests: every write is a line in the file that
``CODEACT_TEST_LEDGER`` names, so the test counts effects from outside the command."""

from __future__ import annotations

import json
import os

from codeact import tool


@tool(read_only=True)
def customers() -> list[str]:
    """The customers' names."""
    return ["ann", "bob", "cy"]


@tool(destructive=True)
def remind(customer: str) -> str:
    """Send a customer a reminder."""
    _write("remind", customer)
    return f"reminded {customer}"


@tool(destructive=True)
def log_note(text: str) -> bool:
    """Keep a note."""
    _write("log_note", text)
    return True


def _write(name: str, value: str) -> None:
    with open(os.environ["CODEACT_TEST_LEDGER"], "a", encoding="utf-8") as ledger:
        ledger.write(json.dumps([name, value]) + "\n")


TOOLS = [customers, remind, log_note]
