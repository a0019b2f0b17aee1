"""What one run_code call costs an MCP client of ``codeact serve-mcp``, by client and transport.

Run: ``python -m benchmarks.mcp_clients``. The SDK's default client (protocol 2026-07-28,
stateless) beside the handshake era's client (``mode="legacy"``), over stdio and over
streamable HTTP, each against a real server process with worker processes. Over HTTP the
default client is measured twice: calls that pass no handle (each runs in a session of its
own, a worker forked and closed) and calls that pass a state handle (one session kept).
Rounds alternate the clients, so a noisy machine slows them alike; each figure is the
median over rounds of the mean per call, with its ratio to the legacy client on the same
transport. (What a client leaves behind in workers is the tests' to check, not a speed.)
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from codeact import tool

from ._timing import header

ROUNDS = 5
CALLS = 20
REPO = Path(__file__).resolve().parent.parent
SCRIPT = "double(21)"


@tool
def double(x: int) -> int:
    """Double a number."""
    return x * 2


TOOLS = [double]
SERVE = ["-m", "codeact", "serve-mcp", "--tools", "benchmarks.mcp_clients:TOOLS"]
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(REPO)}


Calls = Callable[[Client], Awaitable[None]]


def calls(arguments: dict[str, str] | None = None) -> Calls:
    async def make(client: Client) -> None:
        for _ in range(CALLS):
            result = await client.call_tool("run_code", {"code": SCRIPT, **(arguments or {})})
            assert not result.is_error, result

    return make


async def with_handle(client: Client) -> None:
    started = await client.call_tool("run_code", {"code": "1", "session": "new"})
    assert started.meta is not None
    await calls({"session": str(started.meta["codeact/session"])})(client)


async def measure(
    server: str | StdioServerParameters, clients: dict[str, tuple[str, Calls]]
) -> dict[str, float]:
    """Per client: the median over rounds of the seconds per call."""
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(ROUNDS):
        for name, (mode, make) in clients.items():
            async with Client(server, mode=mode) as client:
                await client.call_tool("run_code", {"code": "1"})  # connected and warm
                started = time.perf_counter()
                await make(client)
                samples[name].append((time.perf_counter() - started) / CALLS)
    return {name: statistics.median(taken) for name, taken in samples.items()}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def over_http() -> dict[str, float]:
    port = free_port()
    server = await anyio.open_process(
        [sys.executable, *SERVE, "--http", f"127.0.0.1:{port}"],
        env=ENVIRONMENT,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.1)
        clients = {
            "legacy client (MCP session)": ("legacy", calls()),
            "default client, no handle": ("auto", calls()),
            "default client, a handle": ("auto", with_handle),
        }
        return await measure(f"http://127.0.0.1:{port}/mcp", clients)
    finally:
        server.terminate()
        with anyio.move_on_after(60):
            await server.wait()
        await server.aclose()


async def over_stdio() -> dict[str, float]:
    server = StdioServerParameters(command=sys.executable, args=SERVE, env=ENVIRONMENT)
    clients = {"legacy client": ("legacy", calls()), "default client": ("auto", calls())}
    return await measure(server, clients)


def report(title: str, figures: dict[str, float]) -> None:
    baseline = next(iter(figures.values()))
    width = max(len(name) for name in figures)
    print(f"{title}:")
    print(f"  {'':{width}}  per call   ratio to legacy")
    for name, seconds in figures.items():
        print(f"  {name:{width}}  {seconds * 1e3:5.2f} ms  {seconds / baseline:14.2f}x")


def main() -> None:
    print(header(f"MCP clients of serve-mcp, run_code per call (medians of {ROUNDS} rounds)"))
    report("stdio", anyio.run(over_stdio))
    report("streamable HTTP", anyio.run(over_http))


if __name__ == "__main__":
    main()
