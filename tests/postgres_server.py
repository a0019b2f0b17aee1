"""A real PostgreSQL server for the tests, started here in a temporary folder.

The server binaries come from the Debian package; where they are missing and this runs
as root with apt, the package is installed first. Where neither works, the tests that
need the server are skipped, saying why.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hosts import machine_lock

INSTALL_SECONDS = 600
START_SECONDS = 60


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def install() -> str | None:
    """Install Debian's PostgreSQL; None when it worked, else why not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "PostgreSQL is not installed and cannot be (needs root and apt-get)"
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql"],
    ):
        done = subprocess.run(
            command, env=environment, capture_output=True, text=True, timeout=INSTALL_SECONDS
        )
        if done.returncode != 0:
            return f"installing PostgreSQL failed: {done.stderr.strip()[-300:]}"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server() -> Iterator[str]:
    """A PostgreSQL server of its own, for as long as the block runs: its conninfo.

    Raises ``LookupError`` (with the reason) where no server can be had.
    """
    with machine_lock("apt"):  # one process installs it; the others wait, then find it
        binaries = server_binaries()
        problem = None if binaries is not None else install()
        binaries = server_binaries()
    if binaries is None:
        raise LookupError(problem or "PostgreSQL's server binaries were not found")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="codeact-pg-"))
    if as_postgres:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    subprocess.run(
        [
            *as_postgres,
            str(binaries / "initdb"),
            "-D",
            str(data),
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
        timeout=START_SECONDS,
    )
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(
        [
            *as_postgres,
            str(binaries / "postgres"),
            "-D",
            str(data),
            "-k",
            str(folder),
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    conninfo = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    try:
        _wait_until_ready(conninfo, server)
        yield conninfo
    finally:
        server.terminate()  # a smart shutdown: it finishes and leaves
        try:
            server.wait(timeout=START_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_until_ready(conninfo: str, server: subprocess.Popen[bytes]) -> None:
    import psycopg

    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            psycopg.connect(conninfo, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def fresh_database(conninfo: str, name: str) -> str:
    """An empty database of its own on the server: its conninfo."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return conninfo.replace("dbname=postgres", f"dbname={name}")
