"""What the worker tests share: a secret outside any worker's folder, and a TCP server
on 127.0.0.1 that records whether anyone reached it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("host-secret-41d2")
    path.chmod(0o644)
    return path


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, threading.Event]]:
    """A TCP server on 127.0.0.1 that records whether anyone connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    connected = threading.Event()
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            connected.set()
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], connected
    stop.set()
    thread.join(5)
    server.close()
