"""Tools for the MCP approval tests, loaded with ``--tools tests.mcp.approval_tools:REGISTRY``.

Every effect is a line appended to the file ``CODEACT_TEST_EFFECTS`` names, so a test
counts effects outside the server.
"""

from __future__ import annotations

import os
import time

from codeact import RulePolicy, ToolRegistry, ask, tool


def _effect(line: str) -> None:
    with open(os.environ["CODEACT_TEST_EFFECTS"], "a", encoding="utf-8") as effects:
        effects.write(line + "\n")


@tool
def charge(amount: int) -> str:
    """Charge the card (asks first)."""
    _effect(f"charge {amount}")
    return f"charged {amount}"


@tool
def note(text: str) -> str:
    """Write a note (never asks)."""
    _effect(f"note {text}")
    return f"noted {text}"


@tool
def tick(number: int) -> int:
    """One step of a long job: a short pause, then the step is counted."""
    time.sleep(0.05)
    _effect(f"tick {number}")
    return number


REGISTRY = ToolRegistry(policy=RulePolicy([ask("charge")]))
for _made in (charge, note, tick):
    REGISTRY.register(_made)
