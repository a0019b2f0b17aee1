"""Helpers for tests that run a second host process or wait for a server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent


def start_host(folder: Path, body: str) -> subprocess.Popen[str]:
    """Run ``body`` as a program that imports this checkout; its stdout is a text pipe."""
    script = folder / "host.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\n{body}")
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)


async def wait_until_listening(port: int, seconds: float = 60) -> None:
    """Return once something accepts TCP connections on 127.0.0.1:``port``."""
    with anyio.fail_after(seconds):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.1)
