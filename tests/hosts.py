"""Helpers for tests that run a second host process or wait for a server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import anyio.abc

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """Held by one test process of this machine at a time (the suite runs in several):
    for installing what every process shares, a package or a cached server."""
    import fcntl
    import tempfile

    path = Path(tempfile.gettempdir()) / f"codeact-tests-{name}.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def children_of(pid: int) -> set[int]:
    """Live (not zombie) child processes of ``pid``, read from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.add(int(entry))
    return found


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


async def stopped(process: anyio.abc.Process, seconds: float = 30) -> None:
    """End a server process the test started: SIGTERM, then SIGKILL past ``seconds``."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(seconds):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    await process.aclose()


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 from a thread; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
