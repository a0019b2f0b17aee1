"""A worker with one more operation: run unrestricted Python, as a complete escape would.

Test-only: it lives in the test suite, is started only by tests that name this module
as the worker module, and no script or production setting can reach it.
"""

from __future__ import annotations

import socket  # noqa: F401 - loaded before the worker confines itself, as an escape
import subprocess  # noqa: F401 - would find them already imported in a real process
from typing import Any

from codeact.executors._worker import main


def escape(message: dict[str, Any]) -> dict[str, Any]:
    """Execute ``message["code"]`` with the real builtins; report its ``result`` or error."""
    namespace: dict[str, Any] = {}
    try:
        exec(message["code"], namespace)
    except BaseException as error:  # what the kernel refused, as the escaped code saw it
        return {
            "op": "escaped",
            "ok": False,
            "error": f"{type(error).__name__}: {error}",
            "errno": getattr(error, "errno", None),
        }
    return {"op": "escaped", "ok": True, "value": repr(namespace.get("result"))}


if __name__ == "__main__":
    main({"escape": escape})
